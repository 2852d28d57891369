// Matrix product through gsl_blas_dgemm (tensor/kernels.c).
// m, n, k: y is (m, n) and the inner dimension is k.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

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
