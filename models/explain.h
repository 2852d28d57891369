// Attributions: how much each source word moved the log-probability of each
// output word, for any architecture (written once against the model
// interface, models/model.h). Beside attention weights they answer the
// question attention is often taken to answer ("which source words did
// this word depend on?"; docs/attention.md, "Attributions").
//
// Legend: S source tokens, T = len + 1 output steps (y_1 .. y_len, then the
// <eos> step), E the source embedding width, N integrated-gradient steps,
// R = N T replicas of the sentence decoded as one batch.
//
// The input of word s is its row e_s of the source embedding table (what
// the encoder looks up; a Transformer then scales it by sqrt(D) and adds the
// position). f_t = log p(y_t | y_<t, x), teacher-forced.
//   gradient x input:      a[t, s] = sum_k e_s[k] df_t/de_s[k]
//   integrated gradients:  a[t, s] = sum_k e_s[k] int_0^1 df_t/de_s[k](alpha e) d alpha,
// the baseline being every source embedding zero (captum's default; a
// Transformer's baseline still carries the positions), the integral by
// N-point Gauss-Legendre quadrature on [0, 1] (captum's default method).
// Completeness: sum_s a[t, s] = f_t(e) - f_t(0) up to the quadrature error.
//
// One batched forward and backward computes them all: the sentence is
// replicated R times along the batch (replica i T + t at alpha_i, keeping
// only target t), the loss is the replicas' summed log-probabilities, and
// the gradient of each replica's source rows is that replica's df_t/de. The
// model's parameters are frozen for the call (no parameter gradient is
// computed or touched).
#ifndef TS_MODELS_EXPLAIN_H
#define TS_MODELS_EXPLAIN_H

#include "models/seq2seq.h"

enum ts_explain_method { TS_EXPLAIN_GRAD, TS_EXPLAIN_IG, TS_EXPLAIN_COUNT };

typedef struct {
    const char *name;   // "grad", "ig": attend's and eval's --explain values, JSON and Python names
    const char *title;  // "gradient x input", ... for figures and messages
} ts_explain_info;

extern const ts_explain_info ts_explain_methods[TS_EXPLAIN_COUNT];

// The default and the limit of --ig-steps.
enum { TS_IG_STEPS_DEFAULT = 64, TS_IG_STEPS_MAX = 1024 };

// The method named `name`, or -1.
int ts_explain_parse(const char *name);

// The raw attributions out (T, S), T = len + 1, of model m's teacher-forced
// output tokens[0..len) (then <eos>) for source ids src[0..S), by `method`
// (steps: the quadrature points of TS_EXPLAIN_IG, 1..TS_IG_STEPS_MAX;
// ignored for TS_EXPLAIN_GRAD). Runs in ctx's arena (reset before and after,
// the tape on for the call); out is caller-owned. TS_OK; TS_ERR_ARG (S < 1,
// len < 0, a bad method or steps), TS_ERR_ARENA (a bigger arena helps), the
// model's errors (ids outside the vocabulary).
int ts_explain(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len, int method, int steps,
               double *out);

// The log-probabilities out (T) of the same teacher-forced output with the
// source rows `embedded` (S, E) float64 in place of the table's (NULL: the
// table's; what attributions explain), decoded step by step through the
// model's row. For checks: completeness against zero rows, finite
// differences. ctx as ts_explain. Errors as ts_explain.
int ts_explain_log_probs(ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len,
                         const double *embedded, double *out);

// Attributions raw (T, S) as attention is drawn and scored: each row's
// absolute values over their sum (a row of zeros becomes uniform, 1 / S),
// into out (T, S) (may be raw).
void ts_explain_normalize(const double *raw, int T, int S, double *out);

#endif
