// The attention of a reference, force-decoded: the model reads a source and
// a given target (teacher forcing: <sos> y_1 .. y_n in, y_1 .. y_n <eos> to
// predict) in one pass, and every cross-attention head's weights of that
// pass are copied out. This is the reading alignment papers score
// (`eval --align`'s aer_forced=): the attention each word of the reference
// gets, whatever the search would have output. Any architecture, through the
// model table (ts_attention_tap, ts_model_cross_heads; no code here asks
// which): the GRU has one layer of one head, a Transformer cfg.layers of
// cfg.heads.
//
// L layers, H heads, S source tokens, T = target tokens + 1: row t is the
// step that predicts y_{t+1}, the last row the <eos> step.
#ifndef TS_INFER_FORCED_H
#define TS_INFER_FORCED_H

#include "models/seq2seq.h"

typedef struct {
    int layers, heads, S, T;
    double *weights;  // (L, H, T, S) float64 for a model of either dtype
    double *mean;     // (L, T, S) each layer's mean over its heads
} ts_forced_attention;

// Every cross-attention head of model m force-decoding target ids
// tgt[0..len) (without <eos>) from source ids src[0..S). Runs in ctx's
// arena (reset before and after; the tape off) and copies the weights out:
// *out owns malloc'd buffers (ts_forced_attention_free). TS_OK; TS_ERR_ARG
// (a model without attention, S < 1, len < 0, ids outside the vocabularies),
// TS_ERR_ARENA (a bigger arena helps), TS_ERR_NOMEM; *out is then zeroed.
int ts_forced_attention_compute(const ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tgt, int len,
                                ts_forced_attention *out);

// Sentence b of a batch pass that filled tap->every_layer (layers of
// `heads` heads, ts_model_cross_heads): its first S source columns and T
// rows copied into *out (owned, as above). TS_OK or TS_ERR_NOMEM (*out zeroed).
int ts_forced_attention_of_batch(const ts_attention_tap *tap, int layers, int heads, int b, int S, int T,
                                 ts_forced_attention *out);

void ts_forced_attention_free(ts_forced_attention *f);

// The (T, S) matrix of layer l, head k; k = -1: the layer's head mean.
const double *ts_forced_matrix(const ts_forced_attention *f, int l, int k);

#endif
