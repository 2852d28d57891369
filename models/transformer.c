// The Transformer (models/transformer.h). Forward only: every op records its
// backward on the tape (autograd/). Legend in the header.
#include "models/transformer.h"

#include "autograd/ops.h"
#include "tensor/tokens.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FF = 65536 };
static const double LN_EPS = 1e-5;  // torch.nn.Transformer's layer_norm_eps

int ts_transformer_config_check(const ts_transformer_config *c) {
    if (c->src_vocab < TS_MODEL_MIN_VOCAB || c->src_vocab > TS_MODEL_MAX_VOCAB)
        return ts_fail(TS_ERR_ARG, "source vocabulary of %d words", c->src_vocab);
    if (c->tgt_vocab < TS_MODEL_MIN_VOCAB || c->tgt_vocab > TS_MODEL_MAX_VOCAB)
        return ts_fail(TS_ERR_ARG, "target vocabulary of %d words", c->tgt_vocab);
    if (c->d_model < 1 || c->d_model > TS_MODEL_MAX_HIDDEN)
        return ts_fail(TS_ERR_ARG, "d_model %d (1 to %d)", c->d_model, TS_MODEL_MAX_HIDDEN);
    if (c->heads < 1 || c->heads > c->d_model || c->d_model % c->heads)
        return ts_fail(TS_ERR_ARG, "heads %d do not divide d_model %d", c->heads, c->d_model);
    if (c->layers < 1 || c->layers > TS_TRANSFORMER_MAX_LAYERS)
        return ts_fail(TS_ERR_ARG, "layers %d (1 to %d per stack)", c->layers, TS_TRANSFORMER_MAX_LAYERS);
    if (c->ff < 1 || c->ff > MAX_FF) return ts_fail(TS_ERR_ARG, "feed-forward width %d (1 to %d)", c->ff, MAX_FF);
    return TS_OK;
}

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

// gamma is declared with bound 0 (zeros) and set to 1 by ts_transformer_new.
static int norm_specs(ts_norm_params *norm, int D, const char *prefix, const char *name, ts_param_spec *out) {
    int n = 0;
    n += ts_param_spec_set(&out[n], &norm->weight, 0.0, 1, D, 0, "%s.%s.weight", prefix, name);
    n += ts_param_spec_set(&out[n], &norm->bias, 0.0, 1, D, 0, "%s.%s.bias", prefix, name);
    return n;
}

// Every parameter in registration order: embeddings, the encoder stack, the
// decoder stack, decoder.out. cfg must be checked.
static int model_specs(ts_transformer *m, const ts_transformer_config *c, ts_param_spec *out) {
    int D = c->d_model, F = c->ff, n = 0;
    char prefix[64];
    n += ts_param_spec_set(&out[n], &m->src_embedding, -1, 2, c->src_vocab, D, "encoder.embedding.weight");
    n += ts_param_spec_set(&out[n], &m->tgt_embedding, -1, 2, c->tgt_vocab, D, "decoder.embedding.weight");
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

int ts_transformer_layout(const ts_transformer_config *cfg, ts_param_shape *out, int *n) {
    int rc = ts_transformer_config_check(cfg);
    if (rc) return rc;
    ts_transformer *scratch = malloc(sizeof *scratch);  // the specs' slots point into it
    ts_param_spec *specs = malloc(TS_TRANSFORMER_MAX_PARAMS * sizeof *specs);
    if (!scratch || !specs) {
        free(scratch);
        free(specs);
        return ts_fail(TS_ERR_NOMEM, "cannot list the Transformer's parameters");
    }
    *n = model_specs(scratch, cfg, specs);
    for (int i = 0; i < *n; i++) out[i] = specs[i].shape;
    free(scratch);
    free(specs);
    return TS_OK;
}

static void fill(ts_tensor *t, double value) {
    for (size_t i = 0; i < t->size; i++) t->data[i] = value;
}

ts_transformer *ts_transformer_new(const ts_transformer_config *cfg, gsl_rng *rng) {
    if (ts_transformer_config_check(cfg) != TS_OK) return NULL;
    ts_transformer *m = calloc(1, sizeof *m);
    ts_param_spec *specs = malloc(TS_TRANSFORMER_MAX_PARAMS * sizeof *specs);
    if (!m || !specs) {
        free(m);
        free(specs);
        ts_fail(TS_ERR_NOMEM, "cannot allocate a Transformer");
        return NULL;
    }
    m->cfg = *cfg;
    ts_params_init(&m->params);
    int n = model_specs(m, cfg, specs);
    int rc = ts_param_specs_create(&m->params, rng, specs, n);
    free(specs);
    if (rc != TS_OK) {
        ts_transformer_free(m);
        return NULL;
    }
    for (int l = 0; l < cfg->layers; l++) {
        fill(m->enc[l].norm1.weight, 1.0);
        fill(m->enc[l].norm2.weight, 1.0);
        fill(m->dec[l].norm1.weight, 1.0);
        fill(m->dec[l].norm2.weight, 1.0);
        fill(m->dec[l].norm3.weight, 1.0);
    }
    fill(m->enc_norm.weight, 1.0);
    fill(m->dec_norm.weight, 1.0);
    // The <pad> rows start at zero and never learn (torch's padding_idx).
    int D = cfg->d_model;
    memset(m->src_embedding->data + (size_t)TS_PAD * D, 0, (size_t)D * sizeof(double));
    memset(m->tgt_embedding->data + (size_t)TS_PAD * D, 0, (size_t)D * sizeof(double));
    return m;
}

void ts_transformer_free(ts_transformer *m) {
    if (!m) return;
    ts_params_free(&m->params);
    free(m);
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

// ids (B, T) batch-major -> (B*T, D) = table[ids] sqrt(D) + PE[t], then dropout.
static ts_tensor *embed(ts_ctx *ctx, ts_tensor *table, const int *ids, int B, int T, double p, gsl_rng *rng) {
    if (ctx->status) return NULL;
    int D = table->shape[1];
    double *pe = ts_arena_alloc(ctx->arena, (size_t)B * T * D * sizeof(double));  // (B*T, D)
    if (!pe) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_transformer_positions(pe, 0, T, D);
    for (int b = 1; b < B; b++) memcpy(pe + (size_t)b * T * D, pe, (size_t)T * D * sizeof(double));
    ts_tensor *x = ts_scale(ctx, ts_gather_rows(ctx, table, ids, B * T, TS_PAD), sqrt((double)D));
    return ts_dropout(ctx, ts_add(ctx, x, ts_constant(ctx, 2, (int[]){B * T, D}, pe)), p, rng);
}

static ts_tensor *layer_norm(ts_ctx *ctx, const ts_norm_params *n, ts_tensor *x) {
    return ts_layer_norm(ctx, x, n->weight, n->bias, LN_EPS);
}

// torch.nn.MultiheadAttention: queries from x (B*T, D), keys and values from
// kv (B*S, D), each through its block of rows of the packed in-projection;
// heads side by side; out_proj. *node (may be NULL) gets the ts_mha node.
static ts_tensor *attention(ts_ctx *ctx, const ts_attention_params *a, ts_tensor *x, ts_tensor *kv, int B, int T,
                            int S, int heads, const double *key_mask, int causal, ts_tensor **node) {
    int D = a->out_proj.weight->shape[0];
    ts_tensor *proj[3];  // q (B*T, D), k, v (B*S, D)
    for (int i = 0; i < 3; i++)
        proj[i] = ts_linear(ctx, i ? kv : x, ts_slice_rows(ctx, a->in_proj_weight, i * D, D), 0,
                            ts_slice_rows(ctx, a->in_proj_bias, i * D, D), NULL);
    ts_tensor *q = ts_reshape(ctx, proj[0], 3, (int[]){B, T, D});
    ts_tensor *k = ts_reshape(ctx, proj[1], 3, (int[]){B, S, D});
    ts_tensor *v = ts_reshape(ctx, proj[2], 3, (int[]){B, S, D});
    ts_tensor *mixed = ts_mha(ctx, q, k, v, heads, key_mask, causal);  // (B, T, D)
    if (node) *node = mixed;
    return ts_linear(ctx, ts_reshape(ctx, mixed, 2, (int[]){B * T, D}), a->out_proj.weight, 0, a->out_proj.bias, NULL);
}

// linear2(dropout(relu(linear1(x))))
static ts_tensor *feed_forward(ts_ctx *ctx, const ts_linear_params *l1, const ts_linear_params *l2, ts_tensor *x,
                               double p, gsl_rng *rng) {
    ts_tensor *hidden = ts_dropout(ctx, ts_relu(ctx, ts_linear(ctx, x, l1->weight, 0, l1->bias, NULL)), p, rng);
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
    x = residual(ctx, x, attention(ctx, &e->self_attn, h, h, B, S, S, heads, key_mask, 0, attn), p, rng);
    return residual(ctx, x, feed_forward(ctx, &e->linear1, &e->linear2, layer_norm(ctx, &e->norm2, x), p, rng), p, rng);
}

// One pre-LN decoder layer on y (B*T, D) with the encoder's memory (B*S, D).
static ts_tensor *decoder_layer(ts_ctx *ctx, const ts_decoder_layer *d, ts_tensor *y, ts_tensor *memory, int B,
                                int T, int S, int heads, const double *key_mask, double p, gsl_rng *rng,
                                ts_tensor **self_attn, ts_tensor **cross_attn) {
    ts_tensor *h = layer_norm(ctx, &d->norm1, y);
    y = residual(ctx, y, attention(ctx, &d->self_attn, h, h, B, T, T, heads, NULL, 1, self_attn), p, rng);
    h = layer_norm(ctx, &d->norm2, y);
    y = residual(ctx, y, attention(ctx, &d->multihead_attn, h, memory, B, T, S, heads, key_mask, 0, cross_attn), p,
                 rng);
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
    ts_tensor *x = embed(ctx, m->src_embedding, ids, B, S, p, rng);
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
    ts_tensor *y = embed(ctx, m->tgt_embedding, tokens, B, T, p, rng);
    for (int l = 0; l < m->cfg.layers; l++)
        y = decoder_layer(ctx, &m->dec[l], y, mem->memory, B, T, mem->S, m->cfg.heads, mem->mask, p, rng,
                          attn ? &attn->dec_self[l] : NULL, attn ? &attn->cross[l] : NULL);
    return layer_norm(ctx, &m->dec_norm, y);
}

ts_tensor *ts_transformer_loss(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *bv, gsl_rng *rng,
                               const ts_regularizer *reg, int *n_tokens) {
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
    ts_tensor *y = ts_transformer_decode(m, ctx, &mem, tokens, T, p, rng, NULL);
    return ts_linear_cross_entropy(ctx, y, m->out.weight, m->out.bias, targets, TS_PAD, smoothing);
}
