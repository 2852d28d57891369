// The encoder: source embedding, a forward recurrent layer (its cell a row
// of models/cell.h) and (bidirectional) a backward one whose final outputs
// a bridge maps to the decoder's s_0.
//
// Legend: B batch, S source length, T target length (with <eos>), E
// embedding, H hidden, M memory width (H, or 2H when bidirectional), Vs
// source vocabulary. Batches are time-major: ids (S, B) and (T, B).
#ifndef TS_MODELS_ENCODER_H
#define TS_MODELS_ENCODER_H

#include "models/cell.h"
#include "models/model.h"

typedef struct {
    int vocab, bidirectional;
    ts_tensor *embedding;                    // (Vs, E)
    ts_cell fwd, bwd;                        // bwd only when bidirectional
    ts_tensor *bridge_weight, *bridge_bias;  // (H, 2H), (H): bidirectional only
} ts_encoder;

// What the encoder hands the decoder; lives in the step arena.
typedef struct {
    int B, S;
    int per_source;     // the decoder's rows per memory row: its row r reads row r / per_source
                        // (a beam's K hypotheses share their sentence's; 1 otherwise)
    ts_tensor *memory;  // (B, S, M)
    ts_tensor *keys;    // (B, S, H) or (B, S, M) for plain dot: what queries are scored
                        // against (ts_attention_keys; NULL for `none`)
    ts_tensor *init;    // (P B, H): the decoder's initial cell state (models/cell.h)
    double *mask;       // (B * per_source, S): each decoder row's 1 for real source
                        // positions, 0 for padding
} ts_encoded;

enum { TS_ENCODER_MAX_PARAMS = 11 };  // embedding, two recurrent layers, the bridge

// Declares the encoder's parameters for cfg into out (room for
// TS_ENCODER_MAX_PARAMS) in registration order: embedding N(0, 1), the
// recurrent layers, the bridge U(-1/sqrt(2H), 1/sqrt(2H)). Returns how many.
int ts_encoder_specs(ts_encoder *enc, const ts_model_config *cfg, ts_param_spec *out);

// Encodes the source of batch into *out (keys left NULL). With dropout
// p > 0 (training) the source embeddings and the memory are dropped out with
// masks drawn from rng. TS_OK, or the failure (also in ctx->status): ids
// outside the vocabulary, a length outside 1..S, a full arena.
int ts_encoder_run(ts_ctx *ctx, const ts_encoder *enc, const ts_batch_view *batch, double p, gsl_rng *rng,
                   ts_encoded *out);

#endif
