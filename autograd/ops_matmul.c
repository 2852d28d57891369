// Matrix product through gsl_blas_dgemm (tensor/kernels.c).
// m, n, k: y is (m, n) and the inner dimension is k.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <string.h>

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
    int rc = ts_gemm(trans_a, trans_b, m, n, k, 1.0, a->data, b->data, 0.0, y->data);
    return rc ? ts_ctx_fail(ctx, rc, "matmul: %s", ts_last_error()) : y;
}

// For y = op(a) op(b) with upstream dy (m, n):
//   a plain (m, k):  da += dy b'         where b' = op(b)^T
//   a^T  (k, m):     da += op(b) dy^T
//   b plain (k, n):  db += op(a)^T dy
//   b^T  (n, k):     db += dy^T op(a)
int ts_matmul_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int m = y->shape[0], n = y->shape[1];
    int k = ta ? a->shape[0] : a->shape[1];
    double *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    int rc = TS_OK;
    if (da && !ta)  // (m, k) = dy (m, n) . op(b)^T (n, k)
        rc = ts_gemm(0, !tb, m, k, n, 1.0, y->grad, b->data, 1.0, da);
    else if (da)    // (k, m) = op(b) (k, n) . dy^T (n, m)
        rc = ts_gemm(tb, 1, k, m, n, 1.0, b->data, y->grad, 1.0, da);
    if (!rc && db && !tb)  // (k, n) = op(a)^T (k, m) . dy (m, n)
        rc = ts_gemm(!ta, 0, k, n, m, 1.0, a->data, y->grad, 1.0, db);
    else if (!rc && db)    // (n, k) = dy^T (n, m) . op(a) (m, k)
        rc = ts_gemm(1, ta, n, k, m, 1.0, y->grad, a->data, 1.0, db);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}

// y = x W[:, c0 : c0 + k]^T + bias + addend (bias, addend optional)
// iarg[0] = c0, iarg[1] / iarg[2] = where bias / addend sit in src[] (-1: absent).
// The bias (or the addend) is written into y first and the product is
// accumulated onto it by dgemm (beta = 1): no separate add pass or node.
ts_tensor *ts_linear(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, int col0, ts_tensor *bias, ts_tensor *addend) {
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
    if (addend) memcpy(y->data, addend->data, y->size * sizeof(double));
    if (bias)
        for (int r = 0; r < N; r++) {
            double *row = y->data + (size_t)r * out;
            if (addend)
                for (int c = 0; c < out; c++) row[c] += bias->data[c];
            else
                memcpy(row, bias->data, (size_t)out * sizeof(double));
        }
    int rc = ts_gemm_ld(0, 1, N, out, K, 1.0, x->data, K, w->data + col0, in, bias || addend ? 1.0 : 0.0, y->data, out);
    return rc ? ts_ctx_fail(ctx, rc, "linear: %s", ts_last_error()) : y;
}

// dx += dy W_c  (N, k);  dW_c += dy^T x  (out, k), W_c = W[:, c0 : c0 + k];
// dbias += sum over rows of dy;  daddend += dy
int ts_linear_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    int N = y->shape[0], out = y->shape[1], K = ts_cols(x), in = w->shape[1], col0 = y->iarg[0];
    double *dx = input_grad(ctx, y, 0), *dw = input_grad(ctx, y, 1);
    double *db = y->iarg[1] >= 0 ? input_grad(ctx, y, y->iarg[1]) : NULL;
    double *dadd = y->iarg[2] >= 0 ? input_grad(ctx, y, y->iarg[2]) : NULL;
    if (ctx->status) return ctx->status;
    const double *dy = y->grad;
    int rc = TS_OK;
    if (dx) rc = ts_gemm_ld(0, 0, N, K, out, 1.0, dy, out, w->data + col0, in, 1.0, dx, K);
    if (!rc && dw) rc = ts_gemm_ld(1, 0, out, K, N, 1.0, dy, out, x->data, K, 1.0, dw + col0, in);
    if (db)
        for (int r = 0; r < N; r++)
            for (int c = 0; c < out; c++) db[c] += dy[(size_t)r * out + c];
    if (dadd)
        for (size_t i = 0; i < y->size; i++) dadd[i] += dy[i];
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
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
    size_t a_size = (size_t)m * k, b_size = (size_t)k * n, y_size = (size_t)m * n;
    for (int g = 0; g < G; g++) {
        int rc = ts_gemm(trans_a, trans_b, m, n, k, 1.0, a->data + g * a_size, b->data + g * b_size, 0.0,
                         y->data + g * y_size);
        if (rc) return ts_ctx_fail(ctx, rc, "bmm: %s", ts_last_error());
    }
    return y;
}
// Per g, as ts_matmul_backward.
int ts_bmm_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int G = y->shape[0], m = y->shape[1], n = y->shape[2];
    int k = ta ? a->shape[1] : a->shape[2];
    double *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    size_t a_size = (size_t)m * k, b_size = (size_t)k * n, y_size = (size_t)m * n;
    int rc = TS_OK;
    for (int g = 0; g < G && !rc; g++) {
        const double *ag = a->data + g * a_size, *bg = b->data + g * b_size, *dy = y->grad + g * y_size;
        if (da && !ta) rc = ts_gemm(0, !tb, m, k, n, 1.0, dy, bg, 1.0, da + g * a_size);
        else if (da) rc = ts_gemm(tb, 1, k, m, n, 1.0, bg, dy, 1.0, da + g * a_size);
        if (!rc && db && !tb) rc = ts_gemm(!ta, 0, k, n, m, 1.0, ag, dy, 1.0, db + g * b_size);
        else if (!rc && db) rc = ts_gemm(1, ta, n, k, m, 1.0, dy, ag, 1.0, db + g * b_size);
    }
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
