// Attention: a table of scoring functions, one row per ts_attn_type (the
// table is in models/attention.c). A row is the function's name, its
// parameters, its keys (the memory's share of the score, computed once per
// batch) and its score of queries against those keys. Softmax over the
// unmasked positions and the context are the same for every row.
//
// To add a scoring function: one enum value in models/config.h, its specs,
// keys and score functions in attention.c and one line in the table there
// (raise TS_ATTENTION_MAX_PARAMS if it needs more than 4 parameters).
// Its name, parsing, the parameter layout and count, the CLI, checkpoints
// and gradcheck (which loop to TS_ATTN_COUNT) then pick it up.
//
// Legend: B batch, S source length, H hidden (the query width), M memory
// width, A the width keys share with the (projected) query: H, or M for
// plain dot over a unidirectional memory (M = H).
#ifndef TS_MODELS_ATTENTION_H
#define TS_MODELS_ATTENTION_H

#include "models/encoder.h"

// The parameters of one attention layer; which are used depends on type.
typedef struct {
    ts_attn_type type;
    int H;
    ts_tensor *key_weight;    // (H, M): general's W, additive W_k, bidirectional dot's K
    ts_tensor *key_bias;      // (H): additive only
    ts_tensor *query_weight;  // (H, H): additive only
    ts_tensor *v;             // (H): additive only
} ts_attention;

// One row of the table. keys and score are NULL for `none`.
typedef struct {
    const char *name;  // the user-visible name: CLI flags, checkpoints, npz
    // Declares the row's parameters into out in registration order; returns how many.
    int (*specs)(ts_attention *a, int H, int M, int bidirectional, ts_param_spec *out);
    // memory (B, S, M) -> keys (B, S, A)
    ts_tensor *(*keys)(ts_ctx *ctx, const ts_attention *a, ts_tensor *memory);
    // q (B, H), keys (B, S, A) -> scores (B, S), before the softmax
    ts_tensor *(*score)(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys);
} ts_attention_row;

// The row of type (which must be in range).
const ts_attention_row *ts_attention_kind(ts_attn_type type);

// "none", "dot", "scaled-dot", "general", "concat", "bahdanau"; "?" out of range.
const char *ts_attn_name(int type);
// TS_OK and *type, or TS_ERR_ARG naming the accepted names. "additive" is
// accepted for "bahdanau".
int ts_attn_parse(const char *name, ts_attn_type *type);

enum { TS_ATTENTION_MAX_PARAMS = 4 };  // additive: W_q, W_k, b, v

// Sets a's type and sizes from cfg and declares its parameters into out
// (room for TS_ATTENTION_MAX_PARAMS) in registration order, each
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
// Returns how many (0 for the types without parameters).
int ts_attention_specs(ts_attention *a, const ts_model_config *cfg, ts_param_spec *out);

// The keys of a memory (B, S, M) for a's type: W m_j for every j at once
// (general, additive, bidirectional dot) or the memory itself; NULL for
// `none` or a NULL memory.
ts_tensor *ts_attention_keys(ts_ctx *ctx, const ts_attention *a, ts_tensor *memory);

// The scores (B, S) of queries q (B, H) against keys (B, S, A), unmasked.
ts_tensor *ts_attention_score(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys);

// The context (B, M) for queries q (B, H) over enc->keys / enc->memory
// with enc->mask: softmax of the scores, then the weighted memory. *weights
// (may be NULL) receives the weights (B, S). NULL on failure (ctx->status).
ts_tensor *ts_attend(ts_ctx *ctx, const ts_attention *a, const ts_encoded *enc, ts_tensor *q, ts_tensor **weights);

#endif
