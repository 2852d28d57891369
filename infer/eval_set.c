// The pairs of a corpus file an evaluation scores (see eval_set.h).
#include "infer/eval_set.h"

#include "infer/translate.h"

#include <stdlib.h>
#include <string.h>

int ts_eval_set_read(const ts_translator *t, const char *corpus_path, const char *align_path, int skip_bad,
                     int max_len, ts_eval_set *out) {
    memset(out, 0, sizeof *out);
    if (!corpus_path) return ts_fail(TS_ERR_ARG, "no corpus file");
    // Read everything and filter below: a gold file's lines follow the pairs as read.
    ts_corpus_opts copts = {.max_len = 0, .skip_bad = skip_bad, .normalisation = t->normalisation};
    int rc = ts_corpus_read(corpus_path, &copts, &out->corpus);
    if (!rc) rc = ts_translator_units(t, out->corpus, corpus_path, &out->units);
    if (!rc && align_path) rc = ts_gold_read(align_path, corpus_path, out->corpus, &out->gold);
    size_t n = rc ? 0 : out->corpus->n_pairs;
    if (!rc && (!(out->rows = malloc(n * sizeof *out->rows + 1)) ||
                (align_path && (!(out->row_gold = malloc(n * sizeof *out->row_gold + 1)) ||
                                !(out->row_counts = malloc(n * sizeof *out->row_counts + 1))))))
        rc = ts_fail(TS_ERR_NOMEM, "%s: no memory for its rows", corpus_path);
    if (rc) {
        ts_eval_set_free(out);
        return rc;
    }
    int limit = max_len >= 0 ? max_len : t->max_len;
    if (limit == 0 || limit > TS_MAX_SENTENCE_TOKENS) limit = TS_MAX_SENTENCE_TOKENS;  // bounds time and memory
    out->limit = limit;
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = &out->corpus->pairs[i];
        if (p->src_len > limit || p->tgt_len > limit) continue;
        if (align_path) {
            out->row_gold[out->n_rows] = out->gold.links[i];
            out->row_counts[out->n_rows] = out->gold.counts[i];
        }
        out->rows[out->n_rows++] = i;
    }
    return TS_OK;
}

void ts_eval_set_free(ts_eval_set *s) {
    ts_corpus_free(s->corpus);
    ts_corpus_free(s->units);
    ts_gold_free(&s->gold);
    free(s->rows);
    free(s->row_gold);
    free(s->row_counts);
    memset(s, 0, sizeof *s);
}
