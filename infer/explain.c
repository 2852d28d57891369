// Attributions of a translation (infer/explain.h).
#include "infer/explain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ts_attribution_free(ts_attribution *a) {
    free(a->raw);  // one allocation holds raw, weights and the log-probabilities
    memset(a, 0, sizeof *a);
}

double ts_attribution_completeness_gap(const ts_attribution *a, int *row) {
    double gap = -1.0;
    *row = -1;
    if (!a->log_prob || !a->baseline_log_prob) return gap;
    for (int t = 0; t < a->T; t++) {
        double sum = 0.0;
        for (int s = 0; s < a->S; s++) sum += a->raw[(size_t)t * a->S + s];
        double off = fabs(sum - (a->log_prob[t] - a->baseline_log_prob[t]));
        if (off > gap) gap = off, *row = t;
    }
    return gap;
}

// *a sized for (T, S) with the log-probabilities when `with_log_prob`.
static int attribution_alloc(ts_attribution *a, int T, int S, int with_log_prob) {
    size_t cells = (size_t)T * S;
    double *all = malloc((2 * cells + (with_log_prob ? 2 * (size_t)T : 0)) * sizeof *all);
    if (!all) return ts_fail(TS_ERR_NOMEM, "explain: cannot allocate %d x %d attributions", T, S);
    a->T = T;
    a->S = S;
    a->raw = all;
    a->weights = all + cells;
    a->log_prob = with_log_prob ? all + 2 * cells : NULL;
    a->baseline_log_prob = with_log_prob ? all + 2 * cells + T : NULL;
    return TS_OK;
}

int ts_attribution_compute(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len, int method,
                           int steps, ts_attribution *out) {
    memset(out, 0, sizeof *out);
    if (S < 1 || len < 0) return ts_fail(TS_ERR_ARG, "explain: source length %d, output length %d", S, len);
    int ig = method == TS_EXPLAIN_IG, rc = attribution_alloc(out, len + 1, S, ig);
    out->method = method;
    out->steps = ig ? steps : 0;
    if (!rc) rc = ts_explain(m, ctx, src, S, tokens, len, method, steps, out->raw);
    if (!rc && ig) rc = ts_explain_log_probs(m, ctx, src, S, tokens, len, NULL, out->log_prob);
    if (!rc && ig) {
        int E = m->kind->source_embedding(m)->shape[1];
        double *zeros = calloc((size_t)S * E, sizeof *zeros);  // (S, E) the baseline
        rc = zeros ? ts_explain_log_probs(m, ctx, src, S, tokens, len, zeros, out->baseline_log_prob)
                   : ts_fail(TS_ERR_NOMEM, "explain: out of memory");
        free(zeros);
    }
    if (!rc) ts_explain_normalize(out->raw, out->T, S, out->weights);
    if (rc) ts_attribution_free(out);
    return rc;
}

int ts_attribution_of_translation(const ts_translator *t, ts_ctx *ctx, const char *const *words, int S,
                                  const ts_hypothesis *h, int method, int steps, ts_attribution *out) {
    memset(out, 0, sizeof *out);
    int *src = malloc((size_t)(S > 0 ? S : 1) * sizeof *src);  // (S) as the model read them
    if (!src) return ts_fail(TS_ERR_NOMEM, "cannot allocate the source ids");
    for (int k = 0; k < S; k++) src[k] = ts_vocab_id(t->src_vocab, words[k]);
    int rc = ts_attribution_compute(t->model, ctx, src, S, h->tokens, h->len, method, steps, out);
    free(src);
    return rc;
}

int ts_attribution_replace(ts_attribution *a, const double *raw, int T, int S) {
    ts_attribution merged = {0};
    if (attribution_alloc(&merged, T, S, 0)) return TS_ERR_NOMEM;
    memcpy(merged.raw, raw, (size_t)T * S * sizeof *raw);
    ts_explain_normalize(merged.raw, T, S, merged.weights);
    merged.method = a->method;
    merged.steps = a->steps;
    ts_attribution_free(a);
    *a = merged;
    return TS_OK;
}
