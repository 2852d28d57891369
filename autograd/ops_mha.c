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

// The weights that mix the values: w itself, or w * keep in `mixing` (T, S)
// under attention dropout.
static const double *dropped(double *mixing, const double *w, const double *keep, size_t n) {
    if (!keep) return w;
    for (size_t i = 0; i < n; i++) mixing[i] = w[i] * keep[i];
    return mixing;
}

// One sentence, every head: weights (H, T, S), out (T, D). keep (H, T, S) or
// NULL: the dropout factors (0 or 1 / (1 - p)); mixing (T, S) is scratch.
static int mha_forward(double *out, double *weights, const double *keep, double *mixing, const double *q,
                       const double *keys, const double *values, const double *visible, int T, int S, int D, int H) {
    int Dh = D / H;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H; h++) {
        double *w = weights + (size_t)h * T * S;  // (T, S)
        int rc = ts_gemm_ld(0, 1, T, S, Dh, scale, q + h * Dh, D, keys + h * Dh, D, 0.0, w, S);
        if (rc) return rc;
        ts_softmax_rows(w, w, (size_t)T, (size_t)S, visible);
        const double *mix = dropped(mixing, w, keep ? keep + (size_t)h * T * S : NULL, (size_t)T * S);
        rc = ts_gemm_ld(0, 0, T, Dh, S, 1.0, mix, S, values + h * Dh, D, 0.0, out + h * Dh, D);
        if (rc) return rc;
    }
    return TS_OK;
}

// One sentence, every head, given dout (T, D); dweights (T, S) is scratch.
// With dropout, M = keep (the factors) mixes the values:
//   dW = (dout_h values_h^T) * M;  dvalues_h += (W * M)^T dout_h
//   dE = W * (dW - rowsum(dW * W)) / sqrt(Dh)  (the softmax's backward, scale folded in)
//   dq_h += dE keys_h;  dkeys_h += dE^T q_h
static int mha_backward(double *dq, double *dkeys, double *dvalues, double *dweights, const double *dout,
                        const double *weights, const double *keep, const double *q, const double *keys,
                        const double *values, int T, int S, int D, int H) {
    int Dh = D / H, rc = TS_OK;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H && !rc; h++) {
        const double *w = weights + (size_t)h * T * S, *m = keep ? keep + (size_t)h * T * S : NULL;
        if (dvalues)
            rc = ts_gemm_ld(1, 0, S, Dh, T, 1.0, dropped(dweights, w, m, (size_t)T * S), S, dout + h * Dh, D, 1.0,
                            dvalues + h * Dh, D);
        if (rc || (!dq && !dkeys)) continue;
        rc = ts_gemm_ld(0, 1, T, S, Dh, 1.0, dout + h * Dh, D, values + h * Dh, D, 0.0, dweights, S);
        if (rc) break;
        if (m)
            for (size_t i = 0; i < (size_t)T * S; i++) dweights[i] *= m[i];
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

// iarg[0] = H, iarg[1] = causal, iarg[2] = 1 with dropout; aux = the copied
// key mask (B, S) or NULL; saved = the weights (B, H, T, S), then with
// dropout the factors keep (B, H, T, S), drawn in that order.
ts_tensor *ts_mha_dropout(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                          const double *key_mask, int causal, double p, gsl_rng *rng) {
    if (!q || !keys || !values) return NULL;
    if (!(p >= 0.0 && p < 1.0) || (p > 0.0 && !rng))
        return ts_ctx_fail(ctx, TS_ERR_ARG, "mha: attention dropout p = %g outside [0, 1) or without a generator", p);
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
    size_t cells = (size_t)B * heads * T * S;
    double *weights = ts_arena_alloc(ctx->arena, (p > 0.0 ? 2 : 1) * cells * sizeof(double));  // (B, H, T, S) [x 2]
    double *visible = ts_arena_alloc(ctx->arena, (size_t)T * S * sizeof(double));               // (T, S)
    double *mixing = p > 0.0 ? ts_arena_alloc(ctx->arena, (size_t)T * S * sizeof(double)) : NULL;  // (T, S)
    double *mask = key_mask ? ts_arena_alloc(ctx->arena, (size_t)B * S * sizeof(double)) : NULL;
    if (!weights || !visible || (p > 0.0 && !mixing) || (key_mask && !mask))
        return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (mask) memcpy(mask, key_mask, (size_t)B * S * sizeof(double));
    double *keep = p > 0.0 ? weights + cells : NULL;
    for (size_t i = 0; keep && i < cells; i++) keep[i] = gsl_rng_uniform(rng) < p ? 0.0 : 1.0 / (1.0 - p);
    for (int b = 0; b < B; b++) {
        size_t wo = (size_t)b * heads * T * S;
        visible_keys(visible, mask ? mask + (size_t)b * S : NULL, T, S, causal);
        int rc = mha_forward(out->data + (size_t)b * T * D, weights + wo, keep ? keep + wo : NULL, mixing,
                             q->data + (size_t)b * T * D, keys->data + (size_t)b * S * D,
                             values->data + (size_t)b * S * D, visible, T, S, D, heads);
        if (rc) return ts_ctx_fail(ctx, rc, "mha: %s", ts_last_error());
    }
    out->iarg[0] = heads;
    out->iarg[1] = causal;
    out->iarg[2] = keep != NULL;
    out->aux = mask;
    out->saved = weights;
    return out;
}

ts_tensor *ts_mha(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                  const double *key_mask, int causal) {
    return ts_mha_dropout(ctx, q, keys, values, heads, key_mask, causal, 0.0, NULL);
}

const double *ts_mha_weights(const ts_tensor *out) { return out && out->op == TS_OP_MHA ? out->saved : NULL; }

int ts_mha_backward(ts_ctx *ctx, ts_tensor *out) {
    ts_tensor *q = out->src[0], *keys = out->src[1], *values = out->src[2];
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = q->shape[2], H = out->iarg[0];
    double *dq = input_grad(ctx, out, 0), *dkeys = input_grad(ctx, out, 1), *dvalues = input_grad(ctx, out, 2);
    double *dweights = ts_arena_alloc(ctx->arena, (size_t)T * S * sizeof(double));  // (T, S)
    if (!dweights && !ctx->status) ctx->status = TS_ERR_ARENA;
    if (ctx->status) return ctx->status;
    const double *weights = out->saved, *keep = out->iarg[2] ? weights + (size_t)B * H * T * S : NULL;
    for (int b = 0; b < B; b++) {
        size_t qo = (size_t)b * T * D, ko = (size_t)b * S * D, wo = (size_t)b * H * T * S;
        int rc = mha_backward(dq ? dq + qo : NULL, dkeys ? dkeys + ko : NULL, dvalues ? dvalues + ko : NULL, dweights,
                              out->grad + qo, weights + wo, keep ? keep + wo : NULL, q->data + qo, keys->data + ko,
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
