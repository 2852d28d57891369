// The model callers hold (models/seq2seq.h): what every architecture shares
// (the parameter registry, the checks of a batch's targets), the rest
// through the model's row of the table (models/model.h).
#include "models/seq2seq.h"

#include "tensor/kernels.h"

#include <stdlib.h>
#include <string.h>

ts_seq2seq *ts_seq2seq_new(const ts_model_config *cfg, gsl_rng *rng) {
    if (ts_model_config_check(cfg) != TS_OK) return NULL;
    ts_seq2seq *m = calloc(1, sizeof *m);
    const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
    if (m) m->layers = calloc(1, kind->layers_size);
    if (!m || !m->layers) {
        free(m);
        ts_fail(TS_ERR_NOMEM, "cannot allocate a model");
        return NULL;
    }
    m->cfg = *cfg;
    m->kind = kind;
    ts_params_init(&m->params);
    ts_param_spec specs[TS_SEQ2SEQ_MAX_PARAMS];
    int n = kind->specs(m->layers, cfg, specs);
    // Initialised in float64 whatever the dtype, then converted: a float32
    // model starts from its float64 twin's values rounded, the same draws.
    // Without draws (a model loaded next) the parameters are made in the
    // model's dtype: no float64 buffers to fault in, convert and free.
    if (ts_param_specs_create(&m->params, rng, cfg->dtype, specs, n) != TS_OK ||
        ts_params_convert(&m->params, cfg->dtype) != TS_OK) {
        ts_seq2seq_free(m);
        return NULL;
    }
    return m;
}

int ts_seq2seq_layout(const ts_model_config *cfg, ts_param_shape *out, int *n) {
    int rc = ts_model_config_check(cfg);
    if (rc) return rc;
    const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
    void *scratch = calloc(1, kind->layers_size);  // the specs' slots point into it; no parameter is allocated
    if (!scratch) return ts_fail(TS_ERR_NOMEM, "cannot allocate a model's layers");
    ts_param_spec specs[TS_SEQ2SEQ_MAX_PARAMS];
    *n = kind->specs(scratch, cfg, specs);
    for (int i = 0; i < *n; i++) out[i] = specs[i].shape;
    free(scratch);
    return TS_OK;
}

void ts_seq2seq_free(ts_seq2seq *m) {
    if (!m) return;
    ts_params_free(&m->params);
    free(m->layers);
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

ts_tensor *ts_seq2seq_loss(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                           const ts_regularizer *reg, int *n_tokens) {
    return ts_seq2seq_loss_tapped(m, ctx, bv, tf, rng, reg, NULL, n_tokens);
}

ts_tensor *ts_seq2seq_loss_tapped(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                                  const ts_regularizer *reg, ts_attention_tap *tap, int *n_tokens) {
    int B = bv->B, T = bv->T, V = m->cfg.tgt_vocab;
    const ts_regularizer none = {0};
    if (!reg) reg = &none;
    ctx->dtype = m->cfg.dtype;  // what the step's constants are made in
    if (reg->dropout > 0.0 && !rng) return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: dropout %g needs a random generator", reg->dropout);
    if (T < 1) return ts_ctx_fail(ctx, TS_ERR_SHAPE, "loss: target length %d", T);
    if (!ts_model_check_ids(ctx, "target input", bv->tgt_in, (size_t)T * B, V) ||
        !ts_model_check_ids(ctx, "target output", bv->tgt_out, (size_t)T * B, V))
        return NULL;
    if (n_tokens) {
        *n_tokens = 0;
        for (size_t i = 0; i < (size_t)T * B; i++) *n_tokens += bv->tgt_out[i] != TS_PAD;
    }
    if (tap) {
        int layers, heads = m->kind->cross_heads(&m->cfg, &layers);
        tap->chosen = NULL;
        memset(tap->every_layer, 0, sizeof tap->every_layer);
        if (tap->layer >= 0 && (tap->layer >= layers || tap->head < 0 || tap->head >= heads))
            return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: no cross-attention head %d of layer %d (the model has %d layer%s of %d)",
                               tap->head, tap->layer, layers, layers == 1 ? "" : "s", heads);
    }
    if (m->kind->teacher_forced && tf < 1.0)
        return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: %s trains in one teacher-forced pass: teacher forcing %g must be 1",
                           m->kind->name, tf);
    return m->kind->loss(m, ctx, bv, tf, rng, reg, tap);
}
