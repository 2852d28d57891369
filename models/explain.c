// Attributions of output words to source words (models/explain.h).
//
// S source tokens, T = len + 1 output steps, E source embedding width,
// N quadrature points (1 for gradient x input), R = N T replicas.
#include "models/explain.h"

#include "autograd/ops.h"
#include "tensor/tokens.h"

#include <gsl/gsl_integration.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const ts_explain_info ts_explain_methods[TS_EXPLAIN_COUNT] = {
    [TS_EXPLAIN_GRAD] = {"grad", "gradient x input"},
    [TS_EXPLAIN_IG] = {"ig", "integrated gradients"},
};

int ts_explain_parse(const char *name) {
    for (int k = 0; k < TS_EXPLAIN_COUNT; k++)
        if (!strcmp(name, ts_explain_methods[k].name)) return k;
    return -1;
}

void ts_explain_normalize(const double *raw, int T, int S, double *out) {
    for (int t = 0; t < T; t++) {
        const double *row = raw + (size_t)t * S;
        double total = 0.0;
        for (int s = 0; s < S; s++) total += fabs(row[s]);
        for (int s = 0; s < S; s++) out[(size_t)t * S + s] = total > 0.0 ? fabs(row[s]) / total : 1.0 / S;
    }
}

// The table's rows of src[0..S) as float64, malloc'd into *rows (S, E).
static int source_rows(const ts_seq2seq *m, const int *src, int S, double **rows, int *E) {
    const ts_tensor *table = m->kind->source_embedding(m);  // (Vs, E)
    int V = table->shape[0];
    *E = table->shape[1];
    *rows = NULL;
    for (int s = 0; s < S; s++)
        if (src[s] < 0 || src[s] >= V) return ts_fail(TS_ERR_ARG, "explain: source id %d at %d outside 0..%d", src[s], s, V - 1);
    double *e = malloc((size_t)S * *E * sizeof *e);
    if (!e) return ts_fail(TS_ERR_NOMEM, "explain: cannot allocate %d source rows", S);
    for (int s = 0; s < S; s++)
        ts_values_convert(e + (size_t)s * *E, TS_F64, (const char *)table->raw + (size_t)src[s] * *E * ts_dtype_size(table->dtype),
                          table->dtype, (size_t)*E);
    *rows = e;
    return TS_OK;
}

// The points alpha[0..N) and weights w[0..N) (summing to 1) at which the
// path from the baseline to the input is read: 1 and 1 for the gradient,
// N-point Gauss-Legendre on [0, 1] for integrated gradients.
static int path_points(int method, int N, double *alpha, double *w) {
    if (method == TS_EXPLAIN_GRAD) {
        alpha[0] = w[0] = 1.0;
        return TS_OK;
    }
    gsl_integration_glfixed_table *rule = gsl_integration_glfixed_table_alloc((size_t)N);
    if (!rule) return ts_fail(TS_ERR_NOMEM, "explain: cannot make a %d-point quadrature", N);
    for (int i = 0; i < N; i++) gsl_integration_glfixed_point(0.0, 1.0, (size_t)i, &alpha[i], &w[i], rule);
    gsl_integration_glfixed_table_free(rule);
    return TS_OK;
}

// The target of output step t: y_{t+1}, then <eos>.
static int target_at(const int *tokens, int len, int t) { return t < len ? tokens[t] : TS_EOS; }

// The source rows as a leaf (S*R, E) time-major in ctx's dtype: row s R + b
// is alpha[b / T] e_s, replica b = i T + t being on the path at alpha_i.
static ts_tensor *source_leaf(ts_ctx *ctx, const double *e, int S, int E, int R, int T, const double *alpha) {
    ts_tensor *leaf = ts_node(ctx, TS_OP_LEAF, 2, (int[]){S * R, E}, 0, NULL);
    double *row = leaf ? ts_arena_alloc(ctx->arena, (size_t)E * sizeof *row) : NULL;  // (E)
    if (leaf && !row) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (!leaf) return NULL;
    size_t bytes = (size_t)E * ts_dtype_size(leaf->dtype);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < R; b++) {
            for (int k = 0; k < E; k++) row[k] = alpha[b / T] * e[(size_t)s * E + k];
            ts_values_convert((char *)leaf->raw + ((size_t)s * R + b) * bytes, leaf->dtype, row, TS_F64, (size_t)E);
        }
    snprintf(leaf->name, sizeof leaf->name, "source embeddings");
    return leaf;
}

int ts_explain(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len, int method, int steps,
               double *out) {
    if (S < 1 || len < 0) return ts_fail(TS_ERR_ARG, "explain: source length %d, output length %d", S, len);
    if (method < 0 || method >= TS_EXPLAIN_COUNT) return ts_fail(TS_ERR_ARG, "explain: method %d", method);
    if (method == TS_EXPLAIN_IG && (steps < 1 || steps > TS_IG_STEPS_MAX))
        return ts_fail(TS_ERR_ARG, "explain: %d integrated-gradient steps, 1..%d", steps, TS_IG_STEPS_MAX);
    int N = method == TS_EXPLAIN_IG ? steps : 1, T = len + 1, R = N * T, E;
    double *e;  // (S, E)
    int rc = source_rows(m, src, S, &e, &E);
    if (rc) return rc;
    double *alpha = malloc((size_t)N * sizeof *alpha), *w = malloc((size_t)N * sizeof *w);  // (N), (N)
    unsigned char *trained = malloc((size_t)m->params.count + 1);  // (params) their requires_grad
    rc = alpha && w && trained ? path_points(method, N, alpha, w) : ts_fail(TS_ERR_NOMEM, "explain: out of memory");

    int grad_before = ts_set_grad_enabled(ctx, 1);
    ts_ctx_reset(ctx);
    ctx->dtype = m->cfg.dtype;
    // The batch, time-major: ids (S, R), lengths (R), target in and out (T, R).
    int *ids = rc ? NULL : ts_arena_alloc(ctx->arena, (size_t)(S + 1 + 2 * T) * R * sizeof(int));
    if (!rc && !ids) rc = ts_fail(TS_ERR_ARENA, "%s", ts_last_error());
    ts_tensor *rows = NULL;
    if (!rc) {
        int *src_len = ids + (size_t)S * R, *tgt_in = src_len + R, *tgt_out = tgt_in + (size_t)T * R;
        for (int b = 0; b < R; b++) {
            int t = b % T;  // replica b = i T + t reads alpha_i and keeps target t only
            src_len[b] = S;
            for (int s = 0; s < S; s++) ids[(size_t)s * R + b] = src[s];
            for (int k = 0; k < T; k++) {
                tgt_in[(size_t)k * R + b] = k ? tokens[k - 1] : TS_SOS;
                tgt_out[(size_t)k * R + b] = k == t ? target_at(tokens, len, t) : TS_PAD;
            }
        }
        rows = source_leaf(ctx, e, S, E, R, T, alpha);  // (S*R, E)
        if (rows) rows->requires_grad = 1;
        rc = ctx->status;
        // Frozen parameters: backward computes the rows' gradient alone.
        for (int i = 0; i < m->params.count; i++) {
            trained[i] = m->params.items[i]->requires_grad;
            m->params.items[i]->requires_grad = 0;
        }
        ts_batch_view bv = {.B = R, .S = S, .T = T, .src = ids, .src_len = src_len, .tgt_in = tgt_in,
                            .tgt_out = tgt_out, .src_embedded = rows};
        ts_tensor *loss = rc ? NULL : ts_seq2seq_loss(m, ctx, &bv, 1.0, NULL, NULL, NULL);
        // loss = -(1/R) sum_b f_b: seeding it with -R gives the gradients of sum_b f_b.
        if (!rc) rc = loss ? ts_backward_weighted(ctx, loss, -(double)R) : ctx->status;
        for (int i = 0; i < m->params.count; i++) m->params.items[i]->requires_grad = trained[i];
    }
    if (!rc) {
        double *g = ts_arena_alloc(ctx->arena, (size_t)E * sizeof *g);  // (E) one row's gradient
        if (!g) rc = ts_fail(TS_ERR_ARENA, "%s", ts_last_error());
        size_t bytes = (size_t)E * ts_dtype_size(rows->dtype);
        for (int t = 0; !rc && t < T; t++)
            for (int s = 0; s < S; s++) {
                double sum = 0.0;
                for (int i = 0; i < N; i++) {
                    size_t r = (size_t)s * R + (size_t)i * T + t;
                    if (rows->grad_raw) ts_values_convert(g, TS_F64, (const char *)rows->grad_raw + r * bytes, rows->dtype, (size_t)E);
                    else memset(g, 0, (size_t)E * sizeof *g);  // nothing flowed into the rows
                    double dot = 0.0;
                    for (int k = 0; k < E; k++) dot += e[(size_t)s * E + k] * g[k];
                    sum += w[i] * dot;
                }
                out[(size_t)t * S + s] = sum;
            }
    }
    ts_ctx_reset(ctx);
    ts_set_grad_enabled(ctx, grad_before);
    free(e);
    free(alpha);
    free(w);
    free(trained);
    return rc;
}

int ts_explain_log_probs(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len,
                         const double *embedded, double *out) {
    if (S < 1 || len < 0) return ts_fail(TS_ERR_ARG, "explain: source length %d, output length %d", S, len);
    int T = len + 1, V = m->cfg.tgt_vocab, E = m->kind->source_embedding(m)->shape[1];
    int grad_before = ts_set_grad_enabled(ctx, 0);
    ts_ctx_reset(ctx);
    ctx->dtype = m->cfg.dtype;
    ts_tensor *rows = embedded ? source_leaf(ctx, embedded, S, E, 1, 1, (const double[]){1.0}) : NULL;  // (S, E)
    ts_batch_view bv = {.B = 1, .S = S, .src = src, .src_len = &S, .src_embedded = rows};
    void *memory = ctx->status ? NULL : m->kind->encode(m, ctx, &bv);
    void *state = memory ? m->kind->start(m, ctx, memory, 1, T) : NULL;
    int token = TS_SOS;
    for (int t = 0; state && t < T; t++) {
        void *next = NULL;
        const ts_tensor *logits = ts_to_f64(ctx, m->kind->step(m, ctx, state, &token, 1, &next, NULL));  // (1, V)
        if (!logits) break;
        token = target_at(tokens, len, t);
        if (token < 0 || token >= V) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "explain: output id %d at %d outside 0..%d", token, t, V - 1);
            break;
        }
        double max = logits->data[0], sum = 0.0;
        for (int v = 1; v < V; v++) max = fmax(max, logits->data[v]);
        for (int v = 0; v < V; v++) sum += exp(logits->data[v] - max);
        out[t] = logits->data[token] - max - log(sum);
        state = next;
    }
    int rc = ctx->status;
    ts_ctx_reset(ctx);
    ts_set_grad_enabled(ctx, grad_before);
    return rc;
}
