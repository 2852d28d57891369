// The attention table (models/attention.h). Forward only: the scores,
// softmax and context are fused ops whose backward sits beside their
// forward in autograd/ops_attention.c and autograd/ops_softmax.c.
#include "models/attention.h"

#include "autograd/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// ---- parameters --------------------------------------------------------------

static int no_params(ts_attention *a, int H, int M, int bidirectional, ts_param_spec *out) {
    (void)a, (void)H, (void)M, (void)bidirectional, (void)out;
    return 0;
}

// Dot over a bidirectional memory (M = 2H) first maps it to H with K.
static int dot_params(ts_attention *a, int H, int M, int bidirectional, ts_param_spec *out) {
    if (!bidirectional) return 0;
    return ts_param_spec_set(out, &a->key_weight, 1.0 / sqrt((double)M), 2, H, M, "decoder.attention.key.weight");
}

static int general_params(ts_attention *a, int H, int M, int bidirectional, ts_param_spec *out) {
    (void)bidirectional;
    return ts_param_spec_set(out, &a->key_weight, 1.0 / sqrt((double)M), 2, H, M, "decoder.attention.W.weight");
}

// The additive score's W_q, W_k, b and v (concat and bahdanau alike).
static int additive_params(ts_attention *a, int H, int M, int bidirectional, ts_param_spec *out) {
    (void)bidirectional;
    double inv_h = 1.0 / sqrt((double)H), inv_m = 1.0 / sqrt((double)M);
    int n = 0;
    n += ts_param_spec_set(&out[n], &a->query_weight, inv_h, 2, H, H, "decoder.attention.query.weight");
    n += ts_param_spec_set(&out[n], &a->key_weight, inv_m, 2, H, M, "decoder.attention.key.weight");
    n += ts_param_spec_set(&out[n], &a->key_bias, inv_m, 1, H, 0, "decoder.attention.key.bias");
    n += ts_param_spec_set(&out[n], &a->v, inv_h, 1, H, 0, "decoder.attention.v.weight");
    return n;
}

// ---- keys ----------------------------------------------------------------------

// keys (B, S, H) = memory (B, S, M) W^T (+ b), every j in one product; the
// memory itself when there is no key weight (plain dot).
static ts_tensor *projected_keys(ts_ctx *ctx, const ts_attention *a, ts_tensor *memory) {
    if (!memory || !a->key_weight) return memory;
    int B = memory->shape[0], S = memory->shape[1], M = memory->shape[2];
    ts_tensor *flat = ts_reshape(ctx, memory, 2, (int[]){B * S, M});
    return ts_reshape(ctx, ts_linear(ctx, flat, a->key_weight, 0, a->key_bias, NULL), 3, (int[]){B, S, a->H});
}

// ---- scores ----------------------------------------------------------------------

// e = q . k (dot, general: the keys already carry W)
static ts_tensor *dot_score(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys) {
    (void)a;
    return ts_attn_dot(ctx, q, keys);
}

// e = q . k / sqrt(H)
static ts_tensor *scaled_dot_score(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys) {
    return ts_scale(ctx, ts_attn_dot(ctx, q, keys), 1.0 / sqrt((double)a->H));
}

// e = v . tanh(W_q q + (W_k m + b)): the additive score, keys = W_k m + b
static ts_tensor *additive_score(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys) {
    return ts_attn_additive(ctx, ts_matmul(ctx, q, a->query_weight, 0, 1), keys, a->v);
}

// ---- the table ---------------------------------------------------------------------

// One line per scoring function, in ts_attn_type's order. concat and
// bahdanau are the same additive score under two names (docs/models.md).
static const ts_attention_row table[] = {
    [TS_ATTN_NONE] = {"none", no_params, NULL, NULL},
    [TS_ATTN_DOT] = {"dot", dot_params, projected_keys, dot_score},
    [TS_ATTN_SCALED_DOT] = {"scaled-dot", dot_params, projected_keys, scaled_dot_score},
    [TS_ATTN_GENERAL] = {"general", general_params, projected_keys, dot_score},
    [TS_ATTN_CONCAT] = {"concat", additive_params, projected_keys, additive_score},
    [TS_ATTN_BAHDANAU] = {"bahdanau", additive_params, projected_keys, additive_score},
};
_Static_assert(sizeof table / sizeof table[0] == TS_ATTN_COUNT, "one row per ts_attn_type");

const ts_attention_row *ts_attention_kind(ts_attn_type type) { return &table[type]; }

const char *ts_attn_name(int type) { return type >= 0 && type < TS_ATTN_COUNT ? table[type].name : "?"; }

// "additive" is the score's other name.
const ts_names ts_attn_names = {.what = "attention", .count = TS_ATTN_COUNT, .name = ts_attn_name, .alias = "additive", .alias_value = TS_ATTN_BAHDANAU};

int ts_attn_parse(const char *name, ts_attn_type *type) {
    int v, rc = ts_names_parse(&ts_attn_names, name, &v);
    if (!rc) *type = (ts_attn_type)v;
    return rc;
}

int ts_attention_specs(ts_attention *a, const ts_model_config *c, ts_param_spec *out) {
    *a = (ts_attention){.type = c->attn, .H = c->hidden};
    return table[c->attn].specs(a, c->hidden, ts_model_memory_width(c), c->bidirectional, out);
}

ts_tensor *ts_attention_keys(ts_ctx *ctx, const ts_attention *a, ts_tensor *memory) {
    return table[a->type].keys ? table[a->type].keys(ctx, a, memory) : NULL;
}

ts_tensor *ts_attention_score(ts_ctx *ctx, const ts_attention *a, ts_tensor *q, ts_tensor *keys) {
    if (!table[a->type].score) return ts_ctx_fail(ctx, TS_ERR_ARG, "attention 'none' has no scores");
    return table[a->type].score(ctx, a, q, keys);
}

ts_tensor *ts_attend(ts_ctx *ctx, const ts_attention *a, const ts_encoded *enc, ts_tensor *q, ts_tensor **weights) {
    ts_tensor *w = ts_softmax(ctx, ts_attention_score(ctx, a, q, enc->keys), enc->mask);  // (B, S)
    if (weights) *weights = w;
    return ts_attn_context(ctx, w, enc->memory);
}
