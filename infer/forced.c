// The attention of a reference, force-decoded (infer/forced.h).
#include "infer/forced.h"

#include "tensor/dtype.h"

#include <stdlib.h>
#include <string.h>

void ts_forced_attention_free(ts_forced_attention *f) {
    free(f->weights);  // one allocation holds the weights and the means
    memset(f, 0, sizeof *f);
}

const double *ts_forced_matrix(const ts_forced_attention *f, int l, int k) {
    size_t cells = (size_t)f->T * (size_t)f->S;
    return k < 0 ? f->mean + (size_t)l * cells : f->weights + ((size_t)l * f->heads + (size_t)k) * cells;
}

int ts_forced_attention_of_batch(const ts_attention_tap *tap, int layers, int heads, int b, int S, int T,
                                 ts_forced_attention *out) {
    const ts_tensor *first = tap->every_layer[0];  // (B * H, T_batch, S_batch)
    int H = heads, T_batch = first->shape[1], S_batch = first->shape[2];
    size_t cells = (size_t)T * S, total = (size_t)layers * (H + 1) * cells;
    *out = (ts_forced_attention){.layers = layers, .heads = H, .S = S, .T = T};
    if (!(out->weights = malloc(total * sizeof(double)))) {
        memset(out, 0, sizeof *out);
        return ts_fail(TS_ERR_NOMEM, "forced attention: cannot allocate %zu weights", total);
    }
    out->mean = out->weights + (size_t)layers * H * cells;
    for (int l = 0; l < layers; l++) {
        const ts_tensor *w = tap->every_layer[l];
        size_t item = ts_dtype_size(w->dtype);
        double *mean = out->mean + (size_t)l * cells;  // (T, S)
        memset(mean, 0, cells * sizeof(double));
        for (int k = 0; k < H; k++) {
            double *dst = out->weights + ((size_t)l * H + k) * cells;  // (T, S)
            for (int t = 0; t < T; t++) {
                size_t at = (((size_t)b * H + k) * T_batch + t) * S_batch;  // row t of sentence b, head k
                ts_values_convert(dst + (size_t)t * S, TS_F64, (const char *)w->raw + at * item, w->dtype, (size_t)S);
            }
            for (size_t c = 0; c < cells; c++) mean[c] += dst[c] / H;
        }
    }
    return TS_OK;
}

int ts_forced_attention_compute(const ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tgt, int len,
                                ts_forced_attention *out) {
    memset(out, 0, sizeof *out);
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    if (!heads) return ts_fail(TS_ERR_ARG, "forced attention: the model has no attention");
    if (S < 1 || len < 0) return ts_fail(TS_ERR_ARG, "forced attention: source length %d, target length %d", S, len);
    int T = len + 1, grad_before = ts_set_grad_enabled(ctx, 0);
    ts_ctx_reset(ctx);
    int *tgt_in = ts_arena_alloc(ctx->arena, (size_t)T * sizeof(int));   // (T, 1): <sos> y_1 .. y_n
    int *tgt_out = ts_arena_alloc(ctx->arena, (size_t)T * sizeof(int));  // (T, 1): y_1 .. y_n <eos>
    int rc = TS_OK;
    if (!tgt_in || !tgt_out) {
        rc = ts_fail(TS_ERR_ARENA, "%s", ts_last_error());
    } else {
        tgt_in[0] = TS_SOS;
        memcpy(tgt_in + 1, tgt, (size_t)len * sizeof(int));
        memcpy(tgt_out, tgt, (size_t)len * sizeof(int));
        tgt_out[len] = TS_EOS;
        ts_batch_view one = {.B = 1, .S = S, .T = T, .src = src, .src_len = &S, .tgt_in = tgt_in, .tgt_out = tgt_out};
        ts_attention_tap tap = {.layer = -1, .every = 1};
        if (!ts_seq2seq_loss_tapped(m, ctx, &one, 1.0, NULL, NULL, &tap, NULL)) rc = ctx->status ? ctx->status : TS_ERR_ARG;
        else rc = ts_forced_attention_of_batch(&tap, layers, heads, 0, S, T, out);
    }
    ts_ctx_reset(ctx);
    ts_set_grad_enabled(ctx, grad_before);
    return rc;
}
