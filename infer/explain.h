// Attributions of a translation (models/explain.h) for attend, eval, the
// report and the C API: the source read as the model read it, the raw
// values and their rows normalised as attention's.
//
// S source tokens (pieces for a subword model), T = output tokens + 1 (the
// <eos> step).
#ifndef TS_INFER_EXPLAIN_H
#define TS_INFER_EXPLAIN_H

#include "infer/load.h"
#include "models/explain.h"
#include "models/search.h"

typedef struct {
    int T, S;
    int method;                 // enum ts_explain_method
    int steps;                  // ig: the quadrature's points (0 for grad)
    double *raw;                // (T, S) the attributions
    double *weights;            // (T, S) raw's rows normalised (ts_explain_normalize)
    double *log_prob;           // (T) ig: log p of each output step, else NULL
    double *baseline_log_prob;  // (T) ig: the same with zero source embeddings, else NULL
} ts_attribution;

// The attributions of hypothesis h (its tokens, then <eos>) to the source
// words[0..S) as attend labels them (a "<unk>:word" label, or a word t's
// source vocabulary lacks, is read as <unk>), by `method` with `steps`
// points for integrated gradients (which also fills the log-probabilities
// that completeness compares with). ctx's arena is reset before and after;
// *out owns malloc'd buffers (ts_attribution_free). TS_OK; the errors of
// ts_explain, TS_ERR_NOMEM; *out is then zeroed.
int ts_attribution_of_translation(const ts_translator *t, ts_ctx *ctx, const char *const *words, int S,
                                  const ts_hypothesis *h, int method, int steps, ts_attribution *out);

// The same for source ids src[0..S) and output tokens[0..len) (a forced
// reference: eval).
int ts_attribution_compute(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len, int method,
                           int steps, ts_attribution *out);

// Replaces a's values by raw (T, S) (a's merged into words by
// ts_attention_words: attend --words), normalising its rows again; the
// log-probabilities, per piece, are dropped. TS_OK or TS_ERR_NOMEM (a
// unchanged).
int ts_attribution_replace(ts_attribution *a, const double *raw, int T, int S);

// Integrated gradients' completeness gap: the largest |sum_s raw[t, s] -
// (log_prob[t] - baseline_log_prob[t])| over a's rows, in nats, and its row
// in *row; -1 (*row -1) when a has no log-probabilities (grad, --words).
// The quadrature's error: more steps narrow it (docs/attention.md).
double ts_attribution_completeness_gap(const ts_attribution *a, int *row);

void ts_attribution_free(ts_attribution *a);

#endif
