// The recurrent encoder-decoder (models/rnn.h): the layers composed, their
// parameters, the training loss and the decoding steps, as the model
// table's row "gru". The math is docs/models.md.
#include "models/rnn.h"

#include "autograd/ops.h"
#include "models/seq2seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(TS_ENCODER_MAX_PARAMS + TS_ATTENTION_MAX_PARAMS + TS_DECODER_MAX_PARAMS <= TS_SEQ2SEQ_MAX_PARAMS,
               "room for every parameter");

// Every parameter in registration order: the encoder's, the attention's,
// the decoder's.
static int rnn_specs(void *layers, const ts_model_config *cfg, ts_param_spec *out) {
    ts_rnn *r = layers;
    int n = ts_encoder_specs(&r->enc, cfg, out);
    n += ts_attention_specs(&r->attn, cfg, out + n);
    n += ts_decoder_specs(&r->dec, cfg, out + n);
    return n;
}

// The encoder and the attention keys; with dropout p > 0 (training) the
// source embeddings and the memory are dropped out with masks drawn from rng.
static int encode(const ts_rnn *r, ts_ctx *ctx, const ts_batch_view *bv, double p, gsl_rng *rng, ts_encoded *out) {
    int rc = ts_encoder_run(ctx, &r->enc, bv, p, rng, out);
    if (rc) return rc;
    out->keys = ts_attention_keys(ctx, &r->attn, out->memory);
    return ctx->status;
}

// The attention rows of every step, weights[t] (B, S), as the tap asks:
// its one layer of one head, (B, T, S) both.
static void tap_steps(ts_ctx *ctx, ts_tensor *const *weights, int T, int B, int S, ts_attention_tap *tap) {
    ts_tensor *by_step = ts_reshape(ctx, ts_stack_rows(ctx, weights, T), 3, (int[]){T, B, S});  // (T, B, S)
    ts_tensor *by_sentence = ts_swap01(ctx, by_step);                                            // (B, T, S)
    if (tap->layer == 0) tap->chosen = by_sentence;
    if (tap->every) tap->every_layer[0] = by_sentence;
}

static ts_tensor *rnn_loss(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                           const ts_regularizer *reg, ts_attention_tap *tap) {
    const ts_rnn *r = m->layers;
    const ts_decoder *dec = &r->dec;
    int B = bv->B, T = bv->T, V = m->cfg.tgt_vocab;
    double p = reg->dropout;
    ts_encoded enc;
    if (encode(r, ctx, bv, p, rng, &enc)) return NULL;
    ts_decoder_state st;
    ts_decoder_start(ctx, dec, &enc, &st);
    int forced = tf >= 1.0;
    // Teacher forcing: every input is known, so the embeddings and their
    // share of the cell's input projection run for all T steps at once.
    ts_tensor *embedded = forced ? ts_dropout(ctx, ts_gather_rows(ctx, dec->embedding, bv->tgt_in, T * B, TS_PAD), p, rng)
                                 : NULL;  // (T*B, E)
    ts_tensor *emb_gates = forced ? ts_decoder_input_gates(ctx, dec, embedded) : NULL;  // (T*B, G)
    ts_tensor **steps = ts_arena_alloc(ctx->arena, (size_t)T * sizeof *steps);
    int tapped = tap && r->attn.type != TS_ATTN_NONE;
    ts_tensor **weights = tapped ? ts_arena_alloc(ctx->arena, (size_t)T * sizeof *weights) : NULL;  // T of (B, S)
    int *inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int));
    if (!steps || !inputs || (tapped && !weights)) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(inputs, bv->tgt_in, (size_t)B * sizeof(int));
    for (int t = 0; t < T; t++) {
        ts_tensor *gates = forced ? ts_slice_rows(ctx, emb_gates, t * B, B)
                                  : ts_decoder_input_gates(ctx, dec, ts_dropout(ctx, ts_gather_rows(ctx, dec->embedding, inputs, B, TS_PAD),
                                                                                p, rng));
        ts_tensor *o = ts_decoder_step_gates(ctx, dec, &r->attn, &enc, &st, gates, tapped ? &weights[t] : NULL);
        if (forced) {
            steps[t] = o;  // projected all at once below
            continue;
        }
        ts_tensor *logits = ts_decoder_logits(ctx, dec, ts_dropout(ctx, o, p, rng));  // (B, V)
        const ts_tensor *scores = ts_to_f64(ctx, logits);  // the argmax reads float64 in either dtype
        if (!scores) return NULL;
        steps[t] = logits;
        for (int b = 0; t + 1 < T && b < B; b++) {
            int gold = bv->tgt_in[(size_t)(t + 1) * B + b];
            // Past a sentence's end its input is padding either way.
            inputs[b] = gold == TS_PAD || gsl_rng_uniform(rng) < tf ? gold
                                                                    : ts_argmax_token(scores->data + (size_t)b * V, V);
        }
    }
    if (tapped) tap_steps(ctx, weights, T, B, enc.S, tap);
    ts_tensor *stacked = ts_stack_rows(ctx, steps, T);  // (T*B, H) or (T*B, V)
    if (forced) stacked = ts_dropout(ctx, stacked, p, rng);  // the pre-output layer
    // Forced: the output projection of all steps and the loss in one node.
    return forced ? ts_linear_cross_entropy(ctx, stacked, dec->out_weight, dec->out_bias, bv->tgt_out, TS_PAD,
                                            reg->label_smoothing)
                  : ts_cross_entropy(ctx, stacked, bv->tgt_out, TS_PAD, reg->label_smoothing);
}

// Decoding: the memory is a ts_encoded, a state a ts_rnn_decoding, both in
// the arena of the call that made them.

// NULL, with ctx failed for a full arena.
static void *arena_full(ts_ctx *ctx) {
    ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    return NULL;
}

static void *rnn_encode(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv) {
    ts_encoded *enc = ts_arena_alloc(ctx->arena, sizeof *enc);
    if (!enc) return arena_full(ctx);
    return encode(m->layers, ctx, bv, 0.0, NULL, enc) ? NULL : enc;
}

static ts_rnn_decoding *new_decoding(ts_ctx *ctx, const ts_encoded *enc) {
    ts_rnn_decoding *d = ctx->status ? NULL : ts_arena_alloc(ctx->arena, sizeof *d);
    if (!d) return ctx->status ? NULL : arena_full(ctx);
    d->enc = enc;
    return d;
}

static void *rnn_start(const ts_seq2seq *m, ts_ctx *ctx, void *memory, int B, int max_len) {
    (void)B, (void)max_len;  // the state does not grow: the cell's (P B, H) and h~ (B, H) at every step
    const ts_rnn *r = m->layers;
    ts_rnn_decoding *d = memory ? new_decoding(ctx, memory) : NULL;
    if (d) ts_decoder_start(ctx, &r->dec, d->enc, &d->dec);
    return ctx->status ? NULL : d;
}

static ts_tensor *rnn_step(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *tokens, int B, void **next,
                           ts_tensor **weights) {
    const ts_rnn *r = m->layers;
    const ts_rnn_decoding *before = state;
    *next = NULL;
    if (weights) *weights = NULL;
    ts_rnn_decoding *d = before ? new_decoding(ctx, before->enc) : NULL;
    if (!d) return NULL;
    d->dec = before->dec;  // the step replaces d->dec's tensors, never writes into them
    ts_tensor *emb = ts_gather_rows(ctx, r->dec.embedding, tokens, B, -1);  // (B, E)
    ts_tensor *logits = ts_decoder_logits(ctx, &r->dec, ts_decoder_step(ctx, &r->dec, &r->attn, d->enc, &d->dec, emb, weights));
    *next = d;
    return logits;
}

// The source of rows rows[0..n) in runs of `group` rows that decode one
// sentence (reorder's group >= 1), as a ts_encoded in ctx's arena: one
// memory row per run, shared by its rows, and each row's mask.
static const ts_encoded *gather_encoded(ts_ctx *ctx, const ts_encoded *enc, const int *rows, int n, int group) {
    int *sources = ts_reorder_sources(ctx, rows, n, group, enc->per_source);  // (n / group) memory rows
    if (!sources) return NULL;
    int runs = n / group;
    ts_encoded *out = ts_arena_alloc(ctx->arena, sizeof *out);
    double *mask = ts_arena_alloc(ctx->arena, (size_t)n * enc->S * sizeof(double));  // (n, S)
    if (!out || !mask) return arena_full(ctx);
    for (int k = 0; k < n; k++)
        memcpy(mask + (size_t)k * enc->S, enc->mask + (size_t)rows[k] * enc->S, (size_t)enc->S * sizeof(double));
    *out = (ts_encoded){.B = runs, .S = enc->S, .per_source = group, .memory = ts_rows_select(ctx, enc->memory, sources, runs),
                        .keys = ts_rows_select(ctx, enc->keys, sources, runs),  // NULL for `none`
                        .init = NULL, .mask = mask};
    return ctx->status ? NULL : out;
}

static void *rnn_reorder(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *rows, int n, int group) {
    const ts_rnn *r = m->layers;
    const ts_rnn_decoding *before = state;
    const ts_encoded *enc = before && group ? gather_encoded(ctx, before->enc, rows, n, group) : before ? before->enc : NULL;
    ts_rnn_decoding *d = enc ? new_decoding(ctx, enc) : NULL;
    if (!d) return NULL;
    d->dec.state = ts_cell_rows_select(ctx, &r->dec.cell, before->dec.state, rows, n);  // every part of the cell's state
    d->dec.feed = ts_rows_select(ctx, before->dec.feed, rows, n);  // NULL without input feeding
    return ctx->status ? NULL : d;
}

// One layer of one head, or none.
static int rnn_cross_heads(const ts_model_config *cfg, int *layers) { return *layers = cfg->attn != TS_ATTN_NONE; }

// Per row: S attention weights and scores, the logits and their softmax, a
// cell step's gates and states, the embedding; plus 1 MB for the rest.
static size_t rnn_step_bytes(const ts_model_config *c, int B, int S) {
    size_t per_row = 4 * (size_t)S + 4 * (size_t)c->tgt_vocab + 32 * (size_t)c->hidden + 4 * (size_t)c->emb;
    return (size_t)B * per_row * sizeof(double) + ((size_t)1 << 20);
}

static void rnn_describe(const ts_model_config *c, char *buf, size_t n) {
    const char *cell = ts_cell_kind_of(c->cell)->described;
    snprintf(buf, n, "%s attention, %s decoder, %s encoder%s%s, embedding %d, hidden %d",
             c->attn == TS_ATTN_NONE ? "no" : ts_attn_name(c->attn), ts_decoder_name(c->decoder),
             c->bidirectional ? "bidirectional" : "unidirectional", cell ? ", " : "", cell ? cell : "", c->emb, c->hidden);
}

static const char *rnn_attention_name(const ts_model_config *c) { return ts_attn_name(c->attn); }

static void rnn_attention_title(const ts_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, "%s (%s decoder)", ts_attn_name(c->attn), ts_decoder_name(c->decoder));
}

// Measured on the toy corpus (docs/attention.md section 7): gold links point
// "le" at "the", whose left-to-right memory has not seen the noun "le" agrees with.
static const char *rnn_guided_caveat(const ts_model_config *c) {
    return c->bidirectional ? NULL
                            : "the unidirectional encoder's memory at a source word has not read the words after it, so "
                              "obeying gold links can cost BLEU (0.000-0.037 on the toy corpus); --bidirectional avoids "
                              "it (docs/attention.md section 7)";
}

static ts_tensor *rnn_source_embedding(const ts_seq2seq *m) { return ((const ts_rnn *)m->layers)->enc.embedding; }

const ts_model_kind ts_rnn_kind = {
    .name = "gru",
    .layers_size = sizeof(ts_rnn),
    .specs = rnn_specs,
    .loss = rnn_loss,
    .encode = rnn_encode,
    .start = rnn_start,
    .step = rnn_step,
    .reorder = rnn_reorder,
    .cross_heads = rnn_cross_heads,
    .step_bytes = rnn_step_bytes,
    .describe = rnn_describe,
    .attention_name = rnn_attention_name,
    .attention_title = rnn_attention_title,
    .guided_caveat = rnn_guided_caveat,
    .source_embedding = rnn_source_embedding,
};
