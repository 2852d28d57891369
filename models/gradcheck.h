// The whole model's gradients against central finite differences
// (autograd/gradcheck.h) on a tiny model and a tiny padded batch: what
// `tinyseq gradcheck` and the Python API's gradcheck() run.
#ifndef TS_MODELS_GRADCHECK_H
#define TS_MODELS_GRADCHECK_H

#include "autograd/gradcheck.h"
#include "models/seq2seq.h"

// The tiny model: vocabularies of 7 and 8 words; the GRU architecture with
// embedding 3, hidden 4 and the attention, decoder, encoder and cell given;
// the Transformer with d_model 4, 2 heads, 2 layers per stack, feed-forward
// 6 (it has no attention, decoder, direction or cell to choose: those are
// ignored).
ts_model_config ts_gradcheck_config(ts_model_arch arch, ts_attn_type attn, ts_decoder_type decoder,
                                    int bidirectional, ts_cell_type cell);

// Checks d loss / d parameter for every parameter of m (a model of a
// ts_gradcheck_config) on a batch of three sentences of unequal lengths
// (sources 5, 3, 2 tokens), teacher forcing ratio tf (the same draws at
// every evaluation, from rng). results: m->params.count entries. TS_OK when
// the check ran (pass or fail is in the results), else the failure.
int ts_seq2seq_gradcheck(ts_seq2seq *m, ts_ctx *ctx, double tf, gsl_rng *rng, const ts_gradcheck_opts *opts,
                         ts_gradcheck_result *results);

#endif
