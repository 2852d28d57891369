// The Transformer (models/transformer.h). Forward only: every op records its
// backward on the tape (autograd/). Legend in the header.
#include "models/transformer.h"

#include "autograd/ops.h"
#include "tensor/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double LN_EPS = 1e-5;  // torch.nn.Transformer's layer_norm_eps

// ---- parameters ----

// Xavier-uniform bound of a (fan_out, fan_in) matrix, as nn.Transformer's _reset_parameters.
static double xavier(int fan_out, int fan_in) { return sqrt(6.0 / (fan_in + fan_out)); }

static int attention_specs(ts_attention_params *a, int D, const char *prefix, ts_param_spec *out) {
    int n = 0;
    n += ts_param_spec_set(&out[n], &a->in_proj_weight, xavier(3 * D, D), 2, 3 * D, D, "%s.in_proj_weight", prefix);
    n += ts_param_spec_set(&out[n], &a->in_proj_bias, 0.0, 1, 3 * D, 0, "%s.in_proj_bias", prefix);
    n += ts_param_spec_set(&out[n], &a->out_proj.weight, xavier(D, D), 2, D, D, "%s.out_proj.weight", prefix);
    n += ts_param_spec_set(&out[n], &a->out_proj.bias, 0.0, 1, D, 0, "%s.out_proj.bias", prefix);
    return n;
}

// linear1 (F, D) and linear2 (D, F): Xavier weights, biases U(+-1/sqrt(in)).
static int feed_forward_specs(ts_linear_params *l1, ts_linear_params *l2, int D, int F, const char *prefix,
                              ts_param_spec *out) {
    int n = 0;
    n += ts_param_spec_set(&out[n], &l1->weight, xavier(F, D), 2, F, D, "%s.linear1.weight", prefix);
    n += ts_param_spec_set(&out[n], &l1->bias, 1.0 / sqrt(D), 1, F, 0, "%s.linear1.bias", prefix);
    n += ts_param_spec_set(&out[n], &l2->weight, xavier(D, F), 2, D, F, "%s.linear2.weight", prefix);
    n += ts_param_spec_set(&out[n], &l2->bias, 1.0 / sqrt(F), 1, D, 0, "%s.linear2.bias", prefix);
    return n;
}

static int norm_specs(ts_norm_params *norm, int D, const char *prefix, const char *name, ts_param_spec *out) {
    int n = 0;
    n += ts_param_spec_set(&out[n], &norm->weight, TS_INIT_ONES, 1, D, 0, "%s.%s.weight", prefix, name);
    n += ts_param_spec_set(&out[n], &norm->bias, 0.0, 1, D, 0, "%s.%s.bias", prefix, name);
    return n;
}

// Every parameter in registration order: embeddings, the encoder stack, the
// decoder stack, decoder.out. cfg must be checked.
static int model_specs(ts_transformer *m, const ts_transformer_config *c, ts_param_spec *out) {
    int D = c->d_model, F = c->ff, n = 0;
    char prefix[64];
    n += ts_param_spec_set(&out[n], &m->src_embedding, TS_INIT_EMBEDDING_SCALED, 2, c->src_vocab, D, "encoder.embedding.weight");
    n += ts_param_spec_set(&out[n], &m->tgt_embedding, TS_INIT_EMBEDDING_SCALED, 2, c->tgt_vocab, D, "decoder.embedding.weight");
    for (int l = 0; l < c->layers; l++) {
        ts_encoder_layer *e = &m->enc[l];
        snprintf(prefix, sizeof prefix, "transformer.encoder.layers.%d", l);
        char attn[80];
        snprintf(attn, sizeof attn, "%s.self_attn", prefix);
        n += attention_specs(&e->self_attn, D, attn, &out[n]);
        n += feed_forward_specs(&e->linear1, &e->linear2, D, F, prefix, &out[n]);
        n += norm_specs(&e->norm1, D, prefix, "norm1", &out[n]);
        n += norm_specs(&e->norm2, D, prefix, "norm2", &out[n]);
    }
    n += norm_specs(&m->enc_norm, D, "transformer.encoder", "norm", &out[n]);
    for (int l = 0; l < c->layers; l++) {
        ts_decoder_layer *d = &m->dec[l];
        snprintf(prefix, sizeof prefix, "transformer.decoder.layers.%d", l);
        char attn[80];
        snprintf(attn, sizeof attn, "%s.self_attn", prefix);
        n += attention_specs(&d->self_attn, D, attn, &out[n]);
        snprintf(attn, sizeof attn, "%s.multihead_attn", prefix);
        n += attention_specs(&d->multihead_attn, D, attn, &out[n]);
        n += feed_forward_specs(&d->linear1, &d->linear2, D, F, prefix, &out[n]);
        n += norm_specs(&d->norm1, D, prefix, "norm1", &out[n]);
        n += norm_specs(&d->norm2, D, prefix, "norm2", &out[n]);
        n += norm_specs(&d->norm3, D, prefix, "norm3", &out[n]);
    }
    n += norm_specs(&m->dec_norm, D, "transformer.decoder", "norm", &out[n]);
    n += ts_param_spec_set(&out[n], &m->out.weight, 1.0 / sqrt(D), 2, c->tgt_vocab, D, "decoder.out.weight");
    n += ts_param_spec_set(&out[n], &m->out.bias, 1.0 / sqrt(D), 1, c->tgt_vocab, 0, "decoder.out.bias");
    return n;
}

// ---- layers ----

void ts_transformer_positions(double *pe, int first, int n, int D) {
    for (int r = 0; r < n; r++) {
        double p = first + r;
        for (int i = 0; 2 * i < D; i++) {
            double angle = p / pow(10000.0, (2.0 * i) / D);
            pe[(size_t)r * D + 2 * i] = sin(angle);
            if (2 * i + 1 < D) pe[(size_t)r * D + 2 * i + 1] = cos(angle);
        }
    }
}

// rows (B*T, D) batch-major, the embeddings of positions first .. first + T - 1
// -> (B*T, D) = rows sqrt(D) + PE[first + t], then dropout.
static ts_tensor *embed_rows(ts_ctx *ctx, ts_tensor *rows, int B, int T, int first, double p, gsl_rng *rng) {
    if (ctx->status || !rows) return NULL;
    int D = rows->shape[1];
    double *pe = ts_arena_alloc(ctx->arena, (size_t)B * T * D * sizeof(double));  // (B*T, D)
    if (!pe) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_transformer_positions(pe, first, T, D);
    for (int b = 1; b < B; b++) memcpy(pe + (size_t)b * T * D, pe, (size_t)T * D * sizeof(double));
    ts_tensor *x = ts_scale(ctx, rows, sqrt((double)D));
    return ts_dropout(ctx, ts_add(ctx, x, ts_constant(ctx, 2, (int[]){B * T, D}, pe)), p, rng);
}

// ids (B, T) batch-major at positions first .. first + T - 1 ->
// (B*T, D) = table[ids] sqrt(D) + PE[first + t], then dropout.
static ts_tensor *embed(ts_ctx *ctx, ts_tensor *table, const int *ids, int B, int T, int first, double p,
                        gsl_rng *rng) {
    if (ctx->status) return NULL;
    return embed_rows(ctx, ts_gather_rows(ctx, table, ids, B * T, TS_PAD), B, T, first, p, rng);
}

static ts_tensor *layer_norm(ts_ctx *ctx, const ts_norm_params *n, ts_tensor *x) {
    return ts_layer_norm(ctx, x, n->weight, n->bias, LN_EPS);
}

// x (N, D) times blocks first .. first + n - 1 (0 q, 1 k, 2 v) of the packed
// in-projection's rows, in one product: (N, n D), [q | k | v] as far as asked.
static ts_tensor *project(ts_ctx *ctx, const ts_attention_params *a, ts_tensor *x, int first, int n) {
    int D = a->out_proj.weight->shape[0];
    if (first == 0 && n == 3) return ts_linear(ctx, x, a->in_proj_weight, 0, a->in_proj_bias, NULL);
    return ts_linear(ctx, x, ts_slice_rows(ctx, a->in_proj_weight, first * D, n * D), 0,
                     ts_slice_rows(ctx, a->in_proj_bias, first * D, n * D), NULL);
}

// torch.nn.MultiheadAttention after its in-projection: the D columns of q
// (B, T, .) from q_col against the keys' and values' columns of kv (B, S, .)
// from k_col and v_col (q and kv may be the one packed projection), heads
// side by side, dropout p on the attention weights, out_proj: (B*T, D).
// *node (may be NULL) gets the ts_mha node (its weights).
static ts_tensor *attend(ts_ctx *ctx, const ts_attention_params *a, ts_tensor *q, int q_col, ts_tensor *kv, int k_col,
                         int v_col, int heads, const double *key_mask, int causal, double p, gsl_rng *rng,
                         ts_tensor **node) {
    int D = a->out_proj.weight->shape[0];
    ts_tensor *mixed = ts_mha_blocks(ctx, q, kv, kv, (int[]){q_col, k_col, v_col}, D, heads, key_mask, causal, p,
                                     rng);  // (B, T, D)
    if (node) *node = mixed;
    if (!mixed) return NULL;
    return ts_linear(ctx, ts_reshape(ctx, mixed, 2, (int[]){mixed->shape[0] * mixed->shape[1], D}), a->out_proj.weight,
                     0, a->out_proj.bias, NULL);
}

// Self-attention of x (B*T, D) over itself: one product gives [q | k | v].
static ts_tensor *self_attention(ts_ctx *ctx, const ts_attention_params *a, ts_tensor *x, int B, int T, int heads,
                                 const double *key_mask, int causal, double p, gsl_rng *rng, ts_tensor **node) {
    int D = a->out_proj.weight->shape[0];
    ts_tensor *qkv = ts_reshape(ctx, project(ctx, a, x, 0, 3), 3, (int[]){B, T, 3 * D});
    return attend(ctx, a, qkv, 0, qkv, D, 2 * D, heads, key_mask, causal, p, rng, node);
}

// linear2(dropout(relu(linear1(x))))
static ts_tensor *feed_forward(ts_ctx *ctx, const ts_linear_params *l1, const ts_linear_params *l2, ts_tensor *x,
                               double p, gsl_rng *rng) {
    ts_tensor *hidden = ts_dropout(ctx, ts_linear_relu(ctx, x, l1->weight, l1->bias), p, rng);
    return ts_linear(ctx, hidden, l2->weight, 0, l2->bias, NULL);
}

// x + dropout(branch): every pre-LN block ends so.
static ts_tensor *residual(ts_ctx *ctx, ts_tensor *x, ts_tensor *branch, double p, gsl_rng *rng) {
    return ts_add(ctx, x, ts_dropout(ctx, branch, p, rng));
}

// One pre-LN encoder layer on x (B*S, D).
static ts_tensor *encoder_layer(ts_ctx *ctx, const ts_encoder_layer *e, ts_tensor *x, int B, int S, int heads,
                                const double *key_mask, double p, gsl_rng *rng, ts_tensor **attn) {
    ts_tensor *h = layer_norm(ctx, &e->norm1, x);
    x = residual(ctx, x, self_attention(ctx, &e->self_attn, h, B, S, heads, key_mask, 0, p, rng, attn), p, rng);
    return residual(ctx, x, feed_forward(ctx, &e->linear1, &e->linear2, layer_norm(ctx, &e->norm2, x), p, rng), p, rng);
}

// The cross-attention keys and values of one decoder layer: the memory
// (B*S, D) through its k and v blocks, once per source: (B*S, 2D).
static ts_tensor *cross_project(ts_ctx *ctx, const ts_decoder_layer *d, ts_tensor *memory) {
    return project(ctx, &d->multihead_attn, memory, 1, 2);
}

// [past (B, P, C); now (B*T, C) as (B, T, C)] along positions, as (B, P+T, C).
static ts_tensor *append_positions(ts_ctx *ctx, ts_tensor *past, ts_tensor *now, int B, int T) {
    int C = ts_cols(now);
    ts_tensor *n = ts_reshape(ctx, now, 3, (int[]){B, T, C});
    if (!past) return n;
    int P = past->shape[1];
    ts_tensor *rows[2] = {ts_reshape(ctx, past, 2, (int[]){B, P * C}), ts_reshape(ctx, n, 2, (int[]){B, T * C})};
    return ts_reshape(ctx, ts_concat(ctx, rows, 2), 3, (int[]){B, P + T, C});
}

// One pre-LN decoder layer on y (B*T, D) against cross_kv (B*S, 2D). Without
// a cache (training) the T positions attend causally among themselves; with
// one (decoding, T = 1) the position attends to every cached one and itself,
// and *cache (B, P, 2D) becomes the cache with its keys and values appended.
static ts_tensor *decoder_layer(ts_ctx *ctx, const ts_decoder_layer *d, ts_tensor *y, int B, int T, ts_tensor **cache,
                                ts_tensor *cross_kv, int S, int heads, const double *key_mask, double p, gsl_rng *rng,
                                ts_tensor **self_attn, ts_tensor **cross_attn, ts_tensor **cross_inputs) {
    const ts_attention_params *a = &d->self_attn;
    int D = a->out_proj.weight->shape[0];
    ts_tensor *h = layer_norm(ctx, &d->norm1, y), *branch;
    if (cache) {  // q alone, and [k | v] appended to the cache (B, P + 1, 2D)
        *cache = append_positions(ctx, *cache, project(ctx, a, h, 1, 2), B, T);
        branch = attend(ctx, a, ts_reshape(ctx, project(ctx, a, h, 0, 1), 3, (int[]){B, T, D}), 0, *cache, 0, D,
                        heads, NULL, 0, p, rng, self_attn);
    } else {
        branch = self_attention(ctx, a, h, B, T, heads, NULL, 1, p, rng, self_attn);
    }
    y = residual(ctx, y, branch, p, rng);
    h = layer_norm(ctx, &d->norm2, y);
    const ts_attention_params *c = &d->multihead_attn;
    ts_tensor *queries = ts_reshape(ctx, project(ctx, c, h, 0, 1), 3, (int[]){B, T, D});
    ts_tensor *kv = cross_kv ? ts_reshape(ctx, cross_kv, 3, (int[]){cross_kv->shape[0] / S, S, 2 * D}) : NULL;  // B / g rows
    if (cross_inputs) cross_inputs[0] = queries, cross_inputs[1] = kv;
    y = residual(ctx, y, attend(ctx, c, queries, 0, kv, 0, D, heads, key_mask, 0, p, rng, cross_attn), p, rng);
    return residual(ctx, y, feed_forward(ctx, &d->linear1, &d->linear2, layer_norm(ctx, &d->norm3, y), p, rng), p, rng);
}

// ---- the model ----

int ts_transformer_encode(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *bv, double p, gsl_rng *rng,
                          ts_transformer_memory *out, ts_transformer_attention *attn) {
    int B = bv->B, S = bv->S;
    if (ctx->status) return ctx->status;
    if (B < 1 || S < 1) return (ts_ctx_fail(ctx, TS_ERR_SHAPE, "encode: batch of %d x %d", S, B), ctx->status);
    if (!ts_model_check_ids(ctx, "source", bv->src, (size_t)S * B, m->cfg.src_vocab)) return ctx->status;
    int *ids = ts_arena_alloc(ctx->arena, (size_t)B * S * sizeof(int));         // (B, S)
    double *mask = ts_arena_alloc(ctx->arena, (size_t)B * S * sizeof(double));  // (B, S)
    if (!ids || !mask) return (ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status);
    for (int b = 0; b < B; b++) {
        if (bv->src_len[b] < 1 || bv->src_len[b] > S)
            return (ts_ctx_fail(ctx, TS_ERR_ARG, "source length %d of sentence %d outside 1..%d", bv->src_len[b], b, S),
                    ctx->status);
        for (int s = 0; s < S; s++) {
            ids[(size_t)b * S + s] = bv->src[(size_t)s * B + b];
            mask[(size_t)b * S + s] = s < bv->src_len[b];
        }
    }
    // Given rows (S*B, D) time-major (attributions) are read batch-major like the ids.
    ts_tensor *x = bv->src_embedded ? embed_rows(ctx, ts_reshape(ctx, ts_swap01(ctx, ts_reshape(ctx, bv->src_embedded, 3, (int[]){S, B, m->cfg.d_model})),
                                                                  2, (int[]){B * S, m->cfg.d_model}),
                                                 B, S, 0, p, rng)
                                    : embed(ctx, m->src_embedding, ids, B, S, 0, p, rng);
    for (int l = 0; l < m->cfg.layers; l++)
        x = encoder_layer(ctx, &m->enc[l], x, B, S, m->cfg.heads, mask, p, rng, attn ? &attn->enc_self[l] : NULL);
    *out = (ts_transformer_memory){.B = B, .S = S, .memory = layer_norm(ctx, &m->enc_norm, x), .mask = mask};
    return ctx->status;
}

ts_tensor *ts_transformer_decode(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_memory *mem,
                                 const int *tokens, int T, double p, gsl_rng *rng, ts_transformer_attention *attn) {
    int B = mem->B;
    if (ctx->status) return NULL;
    if (T < 1) return ts_ctx_fail(ctx, TS_ERR_SHAPE, "decode: target length %d", T);
    if (!ts_model_check_ids(ctx, "target input", tokens, (size_t)B * T, m->cfg.tgt_vocab)) return NULL;
    ts_tensor *y = embed(ctx, m->tgt_embedding, tokens, B, T, 0, p, rng);
    for (int l = 0; l < m->cfg.layers; l++) {
        ts_tensor *cross_inputs[2] = {0};
        y = decoder_layer(ctx, &m->dec[l], y, B, T, NULL, cross_project(ctx, &m->dec[l], mem->memory), mem->S,
                          m->cfg.heads, mem->mask, p, rng, attn ? &attn->dec_self[l] : NULL, attn ? &attn->cross[l] : NULL,
                          cross_inputs);
        if (attn) attn->cross_queries[l] = cross_inputs[0], attn->cross_kv[l] = cross_inputs[1];
    }
    return layer_norm(ctx, &m->dec_norm, y);
}

ts_tensor *ts_transformer_cross_head(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_attention *attn,
                                     const double *key_mask, int l, int k) {
    ts_tensor *queries = attn->cross_queries[l], *kv = attn->cross_kv[l];  // (B, T, D), (B, S, 2D)
    if (!queries || !kv) return ctx->status ? NULL : ts_ctx_fail(ctx, TS_ERR_ARG, "cross_head: layer %d did not run", l);
    int B = queries->shape[0], T = queries->shape[1], S = kv->shape[1], Dh = m->cfg.d_model / m->cfg.heads;
    double *visible = ts_arena_alloc(ctx->arena, (size_t)B * T * S * sizeof(double));  // (B, T, S): 1 = a real key
    if (!visible) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) memcpy(visible + ((size_t)b * T + t) * S, key_mask + (size_t)b * S, (size_t)S * sizeof(double));
    ts_tensor *scores = ts_bmm(ctx, ts_slice_cols(ctx, queries, k * Dh, Dh), ts_slice_cols(ctx, kv, k * Dh, Dh), 0, 1);  // (B, T, S)
    return ts_softmax(ctx, ts_scale(ctx, scores, 1.0 / sqrt((double)Dh)), visible);
}

// A copy (B * H, T, S) of the weights of a ts_mha node (B, T, D) over S keys, with no gradient.
static ts_tensor *weights_copy(ts_ctx *ctx, const ts_tensor *node, int H, int S) {
    const void *w = ts_mha_weights(node);
    ts_tensor *copy = w ? ts_node(ctx, TS_OP_LEAF, 3, (int[]){node->shape[0] * H, node->shape[1], S}, 0, NULL) : NULL;
    if (copy) memcpy(copy->raw, w, copy->size * ts_dtype_size(copy->dtype));
    return copy;
}

ts_tensor *ts_transformer_loss(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *bv, gsl_rng *rng,
                               const ts_regularizer *reg, ts_attention_tap *tap, int *n_tokens) {
    int B = bv->B, T = bv->T;
    double p = reg ? reg->dropout : 0.0, smoothing = reg ? reg->label_smoothing : 0.0;
    if (p > 0.0 && !rng) return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: dropout %g needs a random generator", p);
    if (T < 1) return ts_ctx_fail(ctx, TS_ERR_SHAPE, "loss: target length %d", T);
    if (!ts_model_check_ids(ctx, "target output", bv->tgt_out, (size_t)T * B, m->cfg.tgt_vocab)) return NULL;
    ts_transformer_memory mem;
    if (ts_transformer_encode(m, ctx, bv, p, rng, &mem, NULL)) return NULL;
    int *tokens = ts_arena_alloc(ctx->arena, (size_t)B * T * sizeof(int));   // (B, T) <sos> y_1 ..
    int *targets = ts_arena_alloc(ctx->arena, (size_t)B * T * sizeof(int));  // (B, T) y_1 .. <eos>
    if (!tokens || !targets) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            tokens[(size_t)b * T + t] = bv->tgt_in[(size_t)t * B + b];
            targets[(size_t)b * T + t] = bv->tgt_out[(size_t)t * B + b];
        }
    if (n_tokens) {
        *n_tokens = 0;
        for (size_t i = 0; i < (size_t)T * B; i++) *n_tokens += targets[i] != TS_PAD;
    }
    ts_transformer_attention attn = {0};
    ts_tensor *y = ts_transformer_decode(m, ctx, &mem, tokens, T, p, rng, tap ? &attn : NULL);
    if (tap && tap->every)
        for (int l = 0; l < m->cfg.layers; l++) tap->every_layer[l] = weights_copy(ctx, attn.cross[l], m->cfg.heads, mem.S);
    if (tap && tap->layer >= 0) tap->chosen = ts_transformer_cross_head(m, ctx, &attn, mem.mask, tap->layer, tap->head);
    return ts_linear_cross_entropy(ctx, y, m->out.weight, m->out.bias, targets, TS_PAD, smoothing);
}

// ---- incremental decoding ----

int ts_transformer_prepare(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *batch,
                           ts_transformer_source *out) {
    ts_transformer_memory mem;
    memset(out, 0, sizeof *out);
    if (ts_transformer_encode(m, ctx, batch, 0.0, NULL, &mem, NULL)) return ctx->status;
    out->B = mem.B;
    out->S = mem.S;
    out->per_source = 1;
    out->mask = mem.mask;
    for (int l = 0; l < m->cfg.layers; l++) out->cross_kv[l] = cross_project(ctx, &m->dec[l], mem.memory);
    return ctx->status;
}

static ts_transformer_state *new_state(ts_ctx *ctx, const ts_transformer_source *src, int t) {
    ts_transformer_state *st = ctx->status ? NULL : ts_arena_alloc(ctx->arena, sizeof *st);
    if (!st && !ctx->status) ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (!st) return NULL;
    memset(st, 0, sizeof *st);
    st->src = src;
    st->t = t;
    return st;
}

ts_transformer_state *ts_transformer_start(ts_ctx *ctx, const ts_transformer_source *src) {
    return new_state(ctx, src, 0);
}

// The heads' mean of one row of weights (B, H, 1, S) -> (B, S), no gradient.
static ts_tensor *head_mean(ts_ctx *ctx, const ts_tensor *node, int B, int H, int S) {
    const void *w = ts_mha_weights(node);  // of the model's dtype
    double *mean = w ? ts_arena_zeros(ctx->arena, (size_t)B * S) : NULL;
    if (!mean) return ctx->status ? NULL : ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                size_t i = ((size_t)b * H + h) * S + s;
                mean[(size_t)b * S + s] += (node->dtype == TS_F32 ? ((const float *)w)[i] : ((const double *)w)[i]) / H;
            }
    return ts_constant(ctx, 2, (int[]){B, S}, mean);
}

ts_tensor *ts_transformer_step(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_state *state,
                               const int *tokens, ts_transformer_state **next, ts_tensor **weights,
                               ts_transformer_attention *attn) {
    *next = NULL;
    if (weights) *weights = NULL;
    const ts_transformer_source *src = state->src;
    int B = src->B, L = m->cfg.layers, H = m->cfg.heads;
    if (!ts_model_check_ids(ctx, "token", tokens, (size_t)B, m->cfg.tgt_vocab)) return NULL;
    ts_transformer_state *after = new_state(ctx, src, state->t + 1);
    ts_tensor *cross[TS_TRANSFORMER_MAX_LAYERS] = {0};
    ts_tensor *y = embed(ctx, m->tgt_embedding, tokens, B, 1, state->t, 0.0, NULL);  // (B, D)
    for (int l = 0; l < L && after; l++) {
        ts_tensor *cache = state->kv[l];
        y = decoder_layer(ctx, &m->dec[l], y, B, 1, &cache, src->cross_kv[l], src->S, H, src->mask, 0.0, NULL,
                          attn ? &attn->dec_self[l] : NULL, &cross[l], NULL);
        after->kv[l] = cache;
        if (attn) attn->cross[l] = cross[l];
    }
    ts_tensor *logits = ts_linear(ctx, layer_norm(ctx, &m->dec_norm, y), m->out.weight, 0, m->out.bias, NULL);
    if (weights && logits) *weights = head_mean(ctx, cross[L - 1], B, H, src->S);
    if (ctx->status) return NULL;
    *next = after;
    return logits;
}

// Rows rows[0..n) of t (B, ...) viewed as (B, rest), without a gradient: (n, ...).
static ts_tensor *select_rows(ts_ctx *ctx, ts_tensor *t, int B, const int *rows, int n) {
    if (!t) return NULL;
    int rest = (int)(t->size / (size_t)B), dims[TS_MAX_DIMS];
    memcpy(dims, t->shape, sizeof dims);
    dims[0] = t->shape[0] / B * n;  // (B*S, D) -> (n*S, D); (B, t, D) -> (n, t, D)
    ts_tensor *picked = ts_gather_rows(ctx, ts_reshape(ctx, t, 2, (int[]){B, rest}), rows, n, -1);
    return ts_reshape(ctx, picked, t->ndim, dims);
}

ts_transformer_state *ts_transformer_reorder(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_state *state,
                                             const int *rows, int n, int group) {
    const ts_transformer_source *src = state->src;
    int B = src->B, L = m->cfg.layers;
    if (n < 1 || (!group && n != B) || group < 0) {
        ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: %d rows of %d in runs of %d (keeping the source needs all %d)", n, B,
                    group, B);
        return NULL;
    }
    for (int k = 0; k < n; k++)
        if (rows[k] < 0 || rows[k] >= B) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: row %d of %d", rows[k], B);
            return NULL;
        }
    if (group) {  // one source row per run of `group` rows
        int runs = n / group, before = src->B / src->per_source;
        int *sources = ts_reorder_sources(ctx, rows, n, group, src->per_source);  // (runs)
        ts_transformer_source *picked = sources ? ts_arena_alloc(ctx->arena, sizeof *picked) : NULL;
        double *mask = picked ? ts_arena_alloc(ctx->arena, (size_t)runs * src->S * sizeof(double)) : NULL;  // (runs, S)
        if (!mask && !ctx->status) ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        if (!mask) return NULL;
        *picked = (ts_transformer_source){.B = n, .S = src->S, .per_source = group, .mask = mask};
        for (int j = 0; j < runs; j++)
            memcpy(mask + (size_t)j * src->S, src->mask + (size_t)sources[j] * src->S, (size_t)src->S * sizeof(double));
        for (int l = 0; l < L; l++) picked->cross_kv[l] = select_rows(ctx, src->cross_kv[l], before, sources, runs);
        src = picked;
    }
    ts_transformer_state *after = new_state(ctx, src, state->t);
    for (int l = 0; l < L && after; l++) after->kv[l] = select_rows(ctx, state->kv[l], B, rows, n);
    return ctx->status ? NULL : after;
}

int ts_transformer_specs(void *layers, const ts_model_config *c, ts_param_spec *out) {
    ts_transformer *t = layers;
    t->cfg = (ts_transformer_config){c->src_vocab, c->tgt_vocab, c->d_model, c->heads, c->layers, c->ff};
    return model_specs(t, &t->cfg, out);
}
