// Matrix products: the shape checks and nodes here; the products, forward
// and backward side by side, in ops_matmul_t.h, compiled once per dtype.
// m, n, k: y is (m, n) and the inner dimension is k.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <string.h>

#define TS_TEMPLATE "autograd/ops_matmul_t.h"
#include "tensor/dtype_twice.h"

// y = op(a) op(b), iarg[0] = trans_a, iarg[1] = trans_b
ts_tensor *ts_matmul(ts_ctx *ctx, ts_tensor *a, ts_tensor *b, int trans_a, int trans_b) {
    if (!a || !b) return NULL;
    char sa[48], sb[48];
    if (a->ndim != 2 || b->ndim != 2)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "matmul: inputs must be 2-D, got %s and %s",
                           SHAPE(a, sa), SHAPE(b, sb));
    int m = trans_a ? a->shape[1] : a->shape[0];
    int k = trans_a ? a->shape[0] : a->shape[1];
    int kb = trans_b ? b->shape[1] : b->shape[0];
    int n = trans_b ? b->shape[0] : b->shape[1];
    if (k != kb)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "matmul: %s%s times %s%s: inner sizes %d and %d differ",
                           SHAPE(a, sa), trans_a ? "^T" : "", SHAPE(b, sb), trans_b ? "^T" : "", k, kb);
    ts_tensor *src[2] = {a, b};
    ts_tensor *y = ts_node(ctx, TS_OP_MATMUL, 2, (int[]){m, n}, 2, src);
    if (!y) return NULL;
    y->iarg[0] = trans_a;
    y->iarg[1] = trans_b;
    return TS_FORWARD(ctx, y, matmul_forward);
}

// y = x W[:, c0 : c0 + k]^T + bias + addend (bias, addend optional), then
// max(y, 0) when relu
static ts_tensor *linear(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, int col0, ts_tensor *bias, ts_tensor *addend,
                         int relu) {
    if (!x || !w) return NULL;
    char sx[48], sw[48], sb[48], sa[48];
    int N = x->ndim == 2 ? x->shape[0] : 0, K = ts_cols(x);
    int out = w->shape[0], in = w->ndim == 2 ? w->shape[1] : 0;
    if (x->ndim != 2 || w->ndim != 2 || col0 < 0 || col0 + K > in)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "linear: x %s does not fit columns %d..%d of W %s", SHAPE(x, sx), col0,
                           col0 + K - 1, SHAPE(w, sw));
    if (bias && (int)bias->size != out)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "linear: bias %s for W %s", SHAPE(bias, sb), SHAPE(w, sw));
    if (addend && (addend->ndim != 2 || addend->shape[0] != N || addend->shape[1] != out))
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "linear: addend %s is not (%d, %d)", SHAPE(addend, sa), N, out);
    ts_tensor *src[4] = {x, w};
    int n_src = 2, bias_at = -1, addend_at = -1;
    if (bias) src[bias_at = n_src++] = bias;
    if (addend) src[addend_at = n_src++] = addend;
    ts_tensor *y = ts_node(ctx, TS_OP_LINEAR, 2, (int[]){N, out}, n_src, src);
    if (!y) return NULL;
    y->iarg[0] = col0;
    y->iarg[1] = bias_at;
    y->iarg[2] = addend_at;
    y->iarg[3] = relu;
    return TS_FORWARD(ctx, y, linear_forward);
}

ts_tensor *ts_linear(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, int col0, ts_tensor *bias, ts_tensor *addend) {
    return linear(ctx, x, w, col0, bias, addend, 0);
}

ts_tensor *ts_linear_relu(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *bias) {
    return linear(ctx, x, w, 0, bias, NULL, 1);
}

// y[g] (m, n) = op(a[g]) op(b[g]) for g < G, iarg[0] = trans_a, iarg[1] = trans_b
ts_tensor *ts_bmm(ts_ctx *ctx, ts_tensor *a, ts_tensor *b, int trans_a, int trans_b) {
    if (!a || !b) return NULL;
    char sa[48], sb[48];
    if (a->ndim != 3 || b->ndim != 3 || a->shape[0] != b->shape[0])
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "bmm: inputs must be (G, ., .) with one G, got %s and %s",
                           SHAPE(a, sa), SHAPE(b, sb));
    int G = a->shape[0];
    int m = trans_a ? a->shape[2] : a->shape[1], k = trans_a ? a->shape[1] : a->shape[2];
    int kb = trans_b ? b->shape[2] : b->shape[1], n = trans_b ? b->shape[1] : b->shape[2];
    if (k != kb)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "bmm: %s%s times %s%s: inner sizes %d and %d differ", SHAPE(a, sa),
                           trans_a ? "^T" : "", SHAPE(b, sb), trans_b ? "^T" : "", k, kb);
    ts_tensor *src[2] = {a, b};
    ts_tensor *y = ts_node(ctx, TS_OP_BMM, 3, (int[]){G, m, n}, 2, src);
    if (!y) return NULL;
    y->iarg[0] = trans_a;
    y->iarg[1] = trans_b;
    return TS_FORWARD(ctx, y, bmm_forward);
}
