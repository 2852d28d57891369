// The seq2seq model: the layers composed, their parameters, and the
// training loss. The math is docs/models.md; the legend is in seq2seq.h.
#include "models/seq2seq.h"

#include "autograd/ops.h"

#include <stdlib.h>
#include <string.h>

// Every parameter of m for cfg, in registration order: the encoder's, the
// attention's, the decoder's. ts_seq2seq_new, ts_seq2seq_layout and
// ts_seq2seq_param_count all read this one list. cfg must be checked.
_Static_assert(TS_ENCODER_MAX_PARAMS + TS_ATTENTION_MAX_PARAMS + TS_DECODER_MAX_PARAMS <= TS_SEQ2SEQ_MAX_PARAMS,
               "room for every parameter");

static int model_specs(ts_seq2seq *m, const ts_model_config *cfg, ts_param_spec *out) {
    int n = ts_encoder_specs(&m->enc, cfg, out);
    n += ts_attention_specs(&m->attn, cfg, out + n);
    n += ts_decoder_specs(&m->dec, cfg, out + n);
    return n;
}

ts_seq2seq *ts_seq2seq_new(const ts_model_config *cfg, gsl_rng *rng) {
    if (ts_model_config_check(cfg) != TS_OK) return NULL;
    ts_seq2seq *m = calloc(1, sizeof *m);
    if (!m) {
        ts_fail(TS_ERR_NOMEM, "cannot allocate a model");
        return NULL;
    }
    m->cfg = *cfg;
    ts_params_init(&m->params);
    ts_param_spec specs[TS_SEQ2SEQ_MAX_PARAMS];
    int n = model_specs(m, cfg, specs);
    if (ts_param_specs_create(&m->params, rng, specs, n) != TS_OK) {
        ts_seq2seq_free(m);
        return NULL;
    }
    // The <pad> rows start at zero and never learn (as torch's padding_idx).
    int E = cfg->emb;
    memset(m->enc.embedding->data + (size_t)TS_PAD * E, 0, (size_t)E * sizeof(double));
    memset(m->dec.embedding->data + (size_t)TS_PAD * E, 0, (size_t)E * sizeof(double));
    return m;
}

int ts_seq2seq_layout(const ts_model_config *cfg, ts_param_shape *out, int *n) {
    int rc = ts_model_config_check(cfg);
    if (rc) return rc;
    ts_seq2seq scratch;  // the specs' slots point into it; nothing is allocated
    ts_param_spec specs[TS_SEQ2SEQ_MAX_PARAMS];
    *n = model_specs(&scratch, cfg, specs);
    for (int i = 0; i < *n; i++) out[i] = specs[i].shape;
    return TS_OK;
}

void ts_seq2seq_free(ts_seq2seq *m) {
    if (!m) return;
    ts_params_free(&m->params);
    free(m);
}

size_t ts_seq2seq_param_count(const ts_model_config *cfg) {
    ts_param_shape layout[TS_SEQ2SEQ_MAX_PARAMS];
    int n;
    if (ts_seq2seq_layout(cfg, layout, &n) != TS_OK) return 0;
    size_t count = 0;
    for (int i = 0; i < n; i++)
        count += (size_t)layout[i].shape[0] * (size_t)(layout[i].ndim == 2 ? layout[i].shape[1] : 1);
    return count;
}

// The encoder; with dropout p > 0 (training) the source embeddings and the
// memory are dropped out with masks drawn from rng.
static int encode(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double p, gsl_rng *rng, ts_encoded *out) {
    int rc = ts_encoder_run(ctx, &m->enc, bv, p, rng, out);
    if (rc) return rc;
    out->keys = ts_attention_keys(ctx, &m->attn, out->memory);
    return ctx->status;
}

int ts_seq2seq_encode(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, ts_encoded *out) {
    return encode(m, ctx, bv, 0.0, NULL, out);
}

int ts_seq2seq_argmax_token(const double *row, int n) {
    int best = TS_EOS;
    for (int i = TS_EOS + 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

ts_tensor *ts_seq2seq_loss(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                           const ts_regularizer *reg, int *n_tokens) {
    const ts_decoder *dec = &m->dec;
    int B = bv->B, T = bv->T, V = m->cfg.tgt_vocab;
    double p = reg ? reg->dropout : 0.0, smoothing = reg ? reg->label_smoothing : 0.0;
    if (p > 0.0 && !rng) return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: dropout %g needs a random generator", p);
    if (T < 1) return ts_ctx_fail(ctx, TS_ERR_SHAPE, "loss: target length %d", T);
    if (!ts_model_check_ids(ctx, "target input", bv->tgt_in, (size_t)T * B, V) ||
        !ts_model_check_ids(ctx, "target output", bv->tgt_out, (size_t)T * B, V))
        return NULL;
    ts_encoded enc;
    if (encode(m, ctx, bv, p, rng, &enc)) return NULL;
    ts_decoder_state st;
    ts_decoder_start(ctx, dec, &enc, &st);
    int forced = tf >= 1.0;
    // Teacher forcing: every input is known, so the embeddings and their
    // share of the GRU input projection run for all T steps at once.
    ts_tensor *embedded = forced ? ts_dropout(ctx, ts_gather_rows(ctx, dec->embedding, bv->tgt_in, T * B, TS_PAD), p, rng)
                                 : NULL;  // (T*B, E)
    ts_tensor *emb_gates = forced ? ts_decoder_input_gates(ctx, dec, embedded) : NULL;  // (T*B, 3H)
    ts_tensor **steps = ts_arena_alloc(ctx->arena, (size_t)T * sizeof *steps);
    int *inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int));
    if (!steps || !inputs) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(inputs, bv->tgt_in, (size_t)B * sizeof(int));
    for (int t = 0; t < T; t++) {
        ts_tensor *gates = forced ? ts_slice_rows(ctx, emb_gates, t * B, B)
                                  : ts_decoder_input_gates(ctx, dec, ts_dropout(ctx, ts_gather_rows(ctx, dec->embedding, inputs, B, TS_PAD),
                                                                                p, rng));
        ts_tensor *o = ts_decoder_step_gates(ctx, dec, &m->attn, &enc, &st, gates, NULL);
        if (forced) {
            steps[t] = o;  // projected all at once below
            continue;
        }
        ts_tensor *logits = ts_decoder_logits(ctx, dec, ts_dropout(ctx, o, p, rng));  // (B, V)
        if (!logits) return NULL;
        steps[t] = logits;
        for (int b = 0; t + 1 < T && b < B; b++) {
            int gold = bv->tgt_in[(size_t)(t + 1) * B + b];
            // Past a sentence's end its input is padding either way.
            inputs[b] = gold == TS_PAD || gsl_rng_uniform(rng) < tf ? gold
                                                                    : ts_seq2seq_argmax_token(logits->data + (size_t)b * V, V);
        }
    }
    ts_tensor *stacked = ts_stack_rows(ctx, steps, T);  // (T*B, H) or (T*B, V)
    if (forced) stacked = ts_dropout(ctx, stacked, p, rng);  // the pre-output layer
    if (n_tokens) {
        *n_tokens = 0;
        for (size_t i = 0; i < (size_t)T * B; i++) *n_tokens += bv->tgt_out[i] != TS_PAD;
    }
    // Forced: the output projection of all steps and the loss in one node.
    return forced ? ts_linear_cross_entropy(ctx, stacked, dec->out_weight, dec->out_bias, bv->tgt_out, TS_PAD, smoothing)
                  : ts_cross_entropy(ctx, stacked, bv->tgt_out, TS_PAD, smoothing);
}
