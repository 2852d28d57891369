// Multi-head scaled dot-product attention as one fused node.
// B = batch, T = queries, S = keys, D = model width, H = heads, Dh = D / H.
// Head h is the column block [h Dh, (h + 1) Dh) of q, keys and values, so no
// head is ever copied out: every product is a ts_gemm_ld on a block with
// leading dimension D, and the weights (B, H, T, S) are the one buffer kept.
// docs/design.md says why fused (instruction counts against the composition
// split_heads -> bmm -> scale -> softmax -> bmm -> merge_heads).
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <math.h>
#include <string.h>

// visible (T, S) = 1 where query t may see key s: a real key (key_mask of
// this sentence, NULL: all) and, if causal, s <= t.
static void visible_keys(double *visible, const double *key_mask, int T, int S, int causal) {
    for (int t = 0; t < T; t++)
        for (int s = 0; s < S; s++)
            visible[(size_t)t * S + s] = (key_mask ? key_mask[s] != 0.0 : 1) && (!causal || s <= t);
}

// One sentence, every head: weights (H, T, S), out (T, D).
static int mha_forward(double *out, double *weights, const double *q, const double *keys, const double *values,
                       const double *visible, int T, int S, int D, int H) {
    int Dh = D / H;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H; h++) {
        double *w = weights + (size_t)h * T * S;  // (T, S)
        int rc = ts_gemm_ld(0, 1, T, S, Dh, scale, q + h * Dh, D, keys + h * Dh, D, 0.0, w, S);
        if (rc) return rc;
        ts_softmax_rows(w, w, (size_t)T, (size_t)S, visible);
        rc = ts_gemm_ld(0, 0, T, Dh, S, 1.0, w, S, values + h * Dh, D, 0.0, out + h * Dh, D);
        if (rc) return rc;
    }
    return TS_OK;
}

// One sentence, every head, given dout (T, D); dweights (T, S) is scratch.
//   dW = dout_h values_h^T;  dvalues_h += W^T dout_h
//   dE = W * (dW - rowsum(dW * W)) / sqrt(Dh)  (the softmax's backward, scale folded in)
//   dq_h += dE keys_h;  dkeys_h += dE^T q_h
static int mha_backward(double *dq, double *dkeys, double *dvalues, double *dweights, const double *dout,
                        const double *weights, const double *q, const double *keys, const double *values, int T,
                        int S, int D, int H) {
    int Dh = D / H, rc = TS_OK;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H && !rc; h++) {
        const double *w = weights + (size_t)h * T * S;
        if (dvalues) rc = ts_gemm_ld(1, 0, S, Dh, T, 1.0, w, S, dout + h * Dh, D, 1.0, dvalues + h * Dh, D);
        if (rc || (!dq && !dkeys)) continue;
        rc = ts_gemm_ld(0, 1, T, S, Dh, 1.0, dout + h * Dh, D, values + h * Dh, D, 0.0, dweights, S);
        if (rc) break;
        for (int t = 0; t < T; t++) {
            const double *wr = w + (size_t)t * S;
            double *gr = dweights + (size_t)t * S;
            double dot = 0.0;
            for (int s = 0; s < S; s++) dot += gr[s] * wr[s];
            for (int s = 0; s < S; s++) gr[s] = scale * wr[s] * (gr[s] - dot);
        }
        if (dq) rc = ts_gemm_ld(0, 0, T, Dh, S, 1.0, dweights, S, keys + h * Dh, D, 1.0, dq + h * Dh, D);
        if (!rc && dkeys) rc = ts_gemm_ld(1, 0, S, Dh, T, 1.0, dweights, S, q + h * Dh, D, 1.0, dkeys + h * Dh, D);
    }
    return rc;
}

// iarg[0] = H, iarg[1] = causal; aux = the copied key mask (B, S) or NULL;
// saved = the weights (B, H, T, S).
ts_tensor *ts_mha(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                  const double *key_mask, int causal) {
    if (!q || !keys || !values) return NULL;
    char sq[48], sk[48], sv[48];
    if (q->ndim != 3 || keys->ndim != 3 || !ts_same_shape(keys, values) || keys->shape[0] != q->shape[0] ||
        keys->shape[2] != q->shape[2])
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: q %s, keys %s, values %s do not fit (B, T, D), (B, S, D), (B, S, D)",
                           SHAPE(q, sq), SHAPE(keys, sk), SHAPE(values, sv));
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = q->shape[2];
    if (heads < 1 || D % heads)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: %d heads do not divide the width %d", heads, D);
    ts_tensor *src[3] = {q, keys, values};
    ts_tensor *out = ts_node(ctx, TS_OP_MHA, 3, q->shape, 3, src);
    if (!out) return NULL;
    double *weights = ts_arena_alloc(ctx->arena, (size_t)B * heads * T * S * sizeof(double));
    double *visible = ts_arena_alloc(ctx->arena, (size_t)T * S * sizeof(double));
    double *mask = key_mask ? ts_arena_alloc(ctx->arena, (size_t)B * S * sizeof(double)) : NULL;
    if (!weights || !visible || (key_mask && !mask)) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (mask) memcpy(mask, key_mask, (size_t)B * S * sizeof(double));
    for (int b = 0; b < B; b++) {
        visible_keys(visible, mask ? mask + (size_t)b * S : NULL, T, S, causal);
        int rc = mha_forward(out->data + (size_t)b * T * D, weights + (size_t)b * heads * T * S,
                             q->data + (size_t)b * T * D, keys->data + (size_t)b * S * D,
                             values->data + (size_t)b * S * D, visible, T, S, D, heads);
        if (rc) return ts_ctx_fail(ctx, rc, "mha: %s", ts_last_error());
    }
    out->iarg[0] = heads;
    out->iarg[1] = causal;
    out->aux = mask;
    out->saved = weights;
    return out;
}

const double *ts_mha_weights(const ts_tensor *out) { return out && out->op == TS_OP_MHA ? out->saved : NULL; }

int ts_mha_backward(ts_ctx *ctx, ts_tensor *out) {
    ts_tensor *q = out->src[0], *keys = out->src[1], *values = out->src[2];
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = q->shape[2], H = out->iarg[0];
    double *dq = input_grad(ctx, out, 0), *dkeys = input_grad(ctx, out, 1), *dvalues = input_grad(ctx, out, 2);
    double *dweights = ts_arena_alloc(ctx->arena, (size_t)T * S * sizeof(double));  // (T, S)
    if (!dweights && !ctx->status) ctx->status = TS_ERR_ARENA;
    if (ctx->status) return ctx->status;
    const double *weights = out->saved;
    for (int b = 0; b < B; b++) {
        size_t qo = (size_t)b * T * D, ko = (size_t)b * S * D;
        int rc = mha_backward(dq ? dq + qo : NULL, dkeys ? dkeys + ko : NULL, dvalues ? dvalues + ko : NULL, dweights,
                              out->grad + qo, weights + (size_t)b * H * T * S, q->data + qo, keys->data + ko,
                              values->data + ko, T, S, D, H);
        if (rc) return ctx->status = rc;
    }
    return ctx->status;
}

// The same attention from primitive ops, for tests and for the instruction
// count that chose the fused node: split_heads, bmm, scale, masked softmax,
// bmm, merge_heads.
ts_tensor *ts_mha_composed(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                           const double *key_mask, int causal) {
    if (!q || !keys || !values || ctx->status) return NULL;
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = q->shape[2];
    double *visible = ts_arena_alloc(ctx->arena, (size_t)B * heads * T * S * sizeof(double));  // (B H T, S)
    if (!visible) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < heads; h++)
            visible_keys(visible + ((size_t)b * heads + h) * T * S, key_mask ? key_mask + (size_t)b * S : NULL, T, S,
                         causal);
    ts_tensor *scores = ts_bmm(ctx, ts_split_heads(ctx, q, heads), ts_split_heads(ctx, keys, heads), 0, 1);
    ts_tensor *weights = ts_softmax(ctx, ts_scale(ctx, scores, 1.0 / sqrt((double)D / heads)), visible);
    return ts_merge_heads(ctx, ts_bmm(ctx, weights, ts_split_heads(ctx, values, heads), 0, 0), heads);
}
