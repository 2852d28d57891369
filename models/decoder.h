// The decoder: target embedding, a recurrent cell per step (a row of
// models/cell.h), attention used Bahdanau's way (attend with s_{t-1}, feed
// the context into the cell) or
// Luong's (attend with s_t, combine into h~_t, feed h~_t to the next step's
// input), and the output projection to logits.
//
// Legend: B batch (N rows), S source length, E embedding, H hidden, M
// memory width, Vt target vocabulary.
#ifndef TS_MODELS_DECODER_H
#define TS_MODELS_DECODER_H

#include "models/attention.h"

typedef struct {
    ts_decoder_type type;
    int attends;  // 0 for attention `none`: then both types are the same plain recurrent decoder
    int E, M;
    ts_tensor *embedding;                // (Vt, E)
    ts_cell cell;                        // weight_ih (G, E + M | E + H | E)
    ts_tensor *combine_weight;           // (H, M + H): Luong with attention
    ts_tensor *out_weight, *out_bias;    // (Vt, H), (Vt)
} ts_decoder;

// The decoder's recurrent state between steps.
typedef struct {
    ts_tensor *state;  // the cell's state (P B, H), whose part 0 is s (B, H) (models/cell.h)
    ts_tensor *feed;   // h~ (B, H), Luong input feeding; NULL otherwise
} ts_decoder_state;

enum { TS_DECODER_MAX_PARAMS = 8 };  // embedding, cell, combination, projection

// Declares the decoder's parameters for cfg into out (room for
// TS_DECODER_MAX_PARAMS) in registration order: embedding N(0, 1), the cell,
// the Luong combination U(-1/sqrt(M + H), ..), the output projection
// U(-1/sqrt(H), ..). Returns how many.
int ts_decoder_specs(ts_decoder *dec, const ts_model_config *cfg, ts_param_spec *out);

// s_0 = enc->init (and h~_0 = 0 for Luong with attention).
void ts_decoder_start(ts_ctx *ctx, const ts_decoder *dec, const ts_encoded *enc, ts_decoder_state *st);

// The embedding's share of the cell's input projection, W_ih[:, :E] e + b_ih
// (N, G) for embeddings e (N, E): it does not depend on the recurrence, so
// under teacher forcing it runs once for every step of a batch.
ts_tensor *ts_decoder_input_gates(ts_ctx *ctx, const ts_decoder *dec, ts_tensor *emb);

// One step given ts_decoder_input_gates of the step's embeddings (B, G):
// updates st and returns the output o_t (B, H) the projection reads. When
// weights is not NULL it receives the attention weights (B, S) (NULL for
// `none`). NULL on failure (ctx->status).
ts_tensor *ts_decoder_step_gates(ts_ctx *ctx, const ts_decoder *dec, const ts_attention *attn, const ts_encoded *enc,
                                 ts_decoder_state *st, ts_tensor *input_gates, ts_tensor **weights);

// The same from the step's input embeddings emb (B, E).
ts_tensor *ts_decoder_step(ts_ctx *ctx, const ts_decoder *dec, const ts_attention *attn, const ts_encoded *enc,
                           ts_decoder_state *st, ts_tensor *emb, ts_tensor **weights);

// logits (N, Vt) = o (N, H) W_out^T + b_out
ts_tensor *ts_decoder_logits(ts_ctx *ctx, const ts_decoder *dec, ts_tensor *o);

#endif
