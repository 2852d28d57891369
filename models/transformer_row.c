// The Transformer's row of the model table (models/model.h): what the
// table's callers ask of an architecture, answered from the layers of
// models/transformer.c.
#include "models/transformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_tensor *transformer_loss(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                                   const ts_regularizer *reg, ts_attention_tap *tap) {
    (void)tf;  // teacher_forced: ts_seq2seq_loss refuses a tf below 1
    return ts_transformer_loss(m->layers, ctx, bv, rng, reg, tap, NULL);
}

static int transformer_cross_heads(const ts_model_config *cfg, int *layers) {
    *layers = cfg->layers;
    return cfg->heads;
}

static void *transformer_encode(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv) {
    ts_transformer_source *src = ctx->status ? NULL : ts_arena_alloc(ctx->arena, sizeof *src);
    if (!src && !ctx->status) ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    return src && !ts_transformer_prepare(m->layers, ctx, bv, src) ? src : NULL;
}

// The cache is not allocated up front: each step copies it one position
// longer into its own arena, which the search keeps until the step after next.
static void *transformer_start(const ts_seq2seq *m, ts_ctx *ctx, void *memory, int B, int max_len) {
    (void)m, (void)B, (void)max_len;
    return memory ? ts_transformer_start(ctx, memory) : NULL;
}

static ts_tensor *transformer_step(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *tokens, int B,
                                   void **next, ts_tensor **weights) {
    const ts_transformer_state *st = state;
    *next = NULL;
    if (B != st->src->B) return ts_ctx_fail(ctx, TS_ERR_ARG, "step: %d tokens for %d rows", B, st->src->B);
    ts_transformer_state *after = NULL;
    ts_tensor *logits = ts_transformer_step(m->layers, ctx, st, tokens, &after, weights, NULL);
    *next = after;
    return logits;
}

static void *transformer_reorder(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *rows, int n,
                                 int group) {
    return ts_transformer_reorder(m->layers, ctx, state, rows, n, group);
}

// Per row and layer: the cache copied one position longer (2 S D, a guess
// at its length) and a position's activations; the logits. Plus 1 MB.
static size_t transformer_step_bytes(const ts_model_config *c, int B, int S) {
    size_t D = (size_t)c->d_model, per_layer = 4 * (size_t)S * D + 24 * D + 2 * (size_t)c->ff + 4 * (size_t)c->heads * S;
    size_t per_row = (size_t)c->layers * per_layer + 4 * (size_t)c->tgt_vocab;
    return (size_t)B * per_row * sizeof(double) + ((size_t)1 << 20);
}

static ts_tensor *transformer_source_embedding(const ts_seq2seq *m) {
    return ((const ts_transformer *)m->layers)->src_embedding;
}

static void transformer_describe(const ts_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, "transformer, d_model %d, %d heads, %d layers per stack, feed-forward %d", c->d_model, c->heads,
             c->layers, c->ff);
}

// The search keeps the last layer's cross-attention head mean.
static void transformer_attention_title(const ts_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, "transformer cross-attention, layer %d (the last of %d), mean of %d heads", c->layers - 1, c->layers,
             c->heads);
}

// A Transformer's sizes when not given, written once here (Vaswani et al.'s
// ff = 4 d_model); train's recipe for --arch transformer (train/options.c)
// names heads and layers too, so that config.txt records them, and
// tests/test_options.c checks that it names these.
#define TRANSFORMER_HEADS 2
#define TRANSFORMER_LAYERS 2
#define TRANSFORMER_FF_PER_D_MODEL 4

static void transformer_default_sizes(ts_model_config *c) {
    if (!c->d_model) c->d_model = c->hidden;
    if (!c->heads) c->heads = TRANSFORMER_HEADS;
    if (!c->layers) c->layers = TRANSFORMER_LAYERS;
    if (!c->ff) c->ff = TRANSFORMER_FF_PER_D_MODEL * c->d_model;
}

// Heads are column blocks of d_model.
static int transformer_check(const ts_model_config *c, int flags) {
    if (!(c->d_model % c->heads)) return TS_OK;
    return flags ? ts_fail(TS_ERR_ARG, "--heads %d does not divide the model width %d (--d-model, else --hidden)",
                           c->heads, c->d_model)
                 : ts_fail(TS_ERR_ARG, "heads %d do not divide d_model %d", c->heads, c->d_model);
}

static int transformer_every_head(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *source, const int *decoder_in,
                                  int T, ts_tensor **cross, ts_tensor **enc_self, ts_tensor **dec_self) {
    const ts_transformer *tm = m->layers;
    ts_transformer_attention attn = {0};
    ts_transformer_memory mem;
    int rc = ts_transformer_encode(tm, ctx, source, 0.0, NULL, &mem, &attn);
    if (!rc && !ts_transformer_decode(tm, ctx, &mem, decoder_in, T, 0.0, NULL, &attn)) rc = ctx->status;
    for (int l = 0; !rc && l < m->cfg.layers; l++) {
        cross[l] = attn.cross[l];
        enc_self[l] = attn.enc_self[l];
        dec_self[l] = attn.dec_self[l];
    }
    return rc;
}

const ts_model_kind ts_transformer_kind = {
    .name = "transformer",
    .layers_size = sizeof(ts_transformer),
    .specs = ts_transformer_specs,
    .loss = transformer_loss,
    .encode = transformer_encode,
    .start = transformer_start,
    .step = transformer_step,
    .reorder = transformer_reorder,
    .cross_heads = transformer_cross_heads,
    .step_bytes = transformer_step_bytes,
    .describe = transformer_describe,
    .attention_title = transformer_attention_title,
    .default_sizes = transformer_default_sizes,
    .check = transformer_check,
    .teacher_forced = 1,
    .every_head = transformer_every_head,
    .source_embedding = transformer_source_embedding,
};
