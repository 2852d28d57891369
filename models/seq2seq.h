// The model callers hold, of any architecture (models/model.h): making and
// freeing it, its parameter layout, and the training loss; decoding is
// models/search.h, which builds on this header (its argmax).
// Each function dispatches through the model's row of the model table.
//
// Legend: B batch, T target length (with <eos>), V target vocabulary.
// Batches are time-major: ids (S, B) and (T, B).
#ifndef TS_SEQ2SEQ_H
#define TS_SEQ2SEQ_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"
#include "autograd/params.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/model.h"
#include "tensor/tokens.h"

// The Transformer's count bounds it: 8 + 30 per layer (models/transformer.h).
enum { TS_SEQ2SEQ_MAX_PARAMS = 8 + 30 * TS_MODEL_MAX_LAYERS };

// What ts_seq2seq_new(cfg) would allocate, without allocating it: fills
// out[0..*n) (room for TS_SEQ2SEQ_MAX_PARAMS) with every parameter's name and
// shape in registration order, so that a loader can check a file against the
// configuration before trusting its sizes. TS_OK, or TS_ERR_ARG for a bad cfg.
int ts_seq2seq_layout(const ts_model_config *cfg, ts_param_shape *out, int *n);

// A model of cfg's architecture with every parameter registered and
// initialised from rng as its layers declare (for the GRU:
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases, PyTorch's GRU
// and Linear default, N(0, 1) for embeddings); rng NULL: zeros, for a model
// whose values are loaded next. NULL on a bad config or no memory (message
// in ts_last_error()). Free with ts_seq2seq_free.
ts_seq2seq *ts_seq2seq_new(const ts_model_config *cfg, gsl_rng *rng);
void ts_seq2seq_free(ts_seq2seq *model);

// The number of parameter values ts_seq2seq_new would allocate for cfg
// (ts_params_size of the model), without allocating them; 0 for a bad cfg.
size_t ts_seq2seq_param_count(const ts_model_config *cfg);

// The training loss of a batch: mean cross-entropy over non-pad targets.
// tf is the teacher-forcing ratio in [0, 1]; below 1, each sentence's next
// input is its gold token with probability tf (drawn from rng), else its own
// argmax. reg (may be NULL) adds dropout and label smoothing; dropout masks
// are drawn from rng too, so a run stays reproducible from its seed.
// *n_tokens (may be NULL) receives the number of non-pad targets.
// ts_cross_entropy_nll(loss) is the plain cross-entropy when smoothing.
// The step runs in the model's dtype (ctx->dtype is set to it); the loss
// tensor is of that dtype (ts_value reads it). NULL on failure (ctx->status
// says why).
ts_tensor *ts_seq2seq_loss(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, double tf,
                           gsl_rng *rng, const ts_regularizer *reg, int *n_tokens);

// ts_seq2seq_loss that also hands out the pass's cross-attention into *tap
// (models/model.h: every head's weights, and/or one head on the tape): the
// same loss and the same random draws as without. tap NULL is
// ts_seq2seq_loss. A tap's head outside the model's (ts_model_cross_heads)
// fails with TS_ERR_ARG.
ts_tensor *ts_seq2seq_loss_tapped(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, double tf, gsl_rng *rng,
                                  const ts_regularizer *reg, ts_attention_tap *tap, int *n_tokens);

#endif
