// Matrix products for one dtype, compiled twice by ops_matmul.c
// (tensor/dtype_twice.h): FN(ts_gemm) is ts_gemm (cblas_dgemm) or
// ts_gemm_f32 (cblas_sgemm). m, n, k: y is (m, n), the inner dimension k.

// y = op(a) op(b), iarg[0] = trans_a, iarg[1] = trans_b
static int FN(matmul_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int m = y->shape[0], n = y->shape[1], k = ta ? a->shape[0] : a->shape[1];
    int rc = FN(ts_gemm)(ta, tb, m, n, k, 1.0, DATA(a), DATA(b), 0.0, DATA(y));
    if (rc) ts_ctx_fail(ctx, rc, "matmul: %s", ts_last_error());
    return ctx->status;
}
// For y = op(a) op(b) with upstream dy (m, n):
//   a plain (m, k):  da += dy b'         where b' = op(b)^T
//   a^T  (k, m):     da += op(b) dy^T
//   b plain (k, n):  db += op(a)^T dy
//   b^T  (n, k):     db += dy^T op(a)
int FN(ts_matmul_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int m = y->shape[0], n = y->shape[1];
    int k = ta ? a->shape[0] : a->shape[1];
    REAL *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    const REAL *dy = GRAD(y);
    int rc = TS_OK;
    if (da && !ta)  // (m, k) = dy (m, n) . op(b)^T (n, k)
        rc = FN(ts_gemm)(0, !tb, m, k, n, 1.0, dy, DATA(b), 1.0, da);
    else if (da)    // (k, m) = op(b) (k, n) . dy^T (n, m)
        rc = FN(ts_gemm)(tb, 1, k, m, n, 1.0, DATA(b), dy, 1.0, da);
    if (!rc && db && !tb)  // (k, n) = op(a)^T (k, m) . dy (m, n)
        rc = FN(ts_gemm)(!ta, 0, k, n, m, 1.0, DATA(a), dy, 1.0, db);
    else if (!rc && db)    // (n, k) = dy^T (n, m) . op(a) (m, k)
        rc = FN(ts_gemm)(1, ta, n, k, m, 1.0, dy, DATA(a), 1.0, db);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}

// y = x W[:, c0 : c0 + k]^T + bias + addend (bias, addend optional), then
// max(y, 0) if iarg[3]; iarg[0] = c0, iarg[1] / iarg[2] = where bias / addend sit in src[] (-1: absent).
// Each row of y starts as the addend's row plus the bias and the product is
// accumulated onto it by gemm (beta = 1), then clamped: all inside the part
// of the product that computes the row (ts_gemm_product), no separate pass.
static int FN(linear_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    const ts_tensor *bias = y->iarg[1] >= 0 ? y->src[y->iarg[1]] : NULL;
    const ts_tensor *addend = y->iarg[2] >= 0 ? y->src[y->iarg[2]] : NULL;
    int N = y->shape[0], out = y->shape[1], K = ts_cols(x), in = w->shape[1], col0 = y->iarg[0];
    FN(ts_product) product = {0, 1, N, out, K, 1.0, DATA(x), K, DATA(w) + col0, in, bias || addend ? 1.0 : 0.0, DATA(y),
                              out, 0, bias ? DATA(bias) : NULL, addend ? DATA(addend) : NULL, y->iarg[3]};
    int rc = FN(ts_gemm_product)(&product);
    if (rc) ts_ctx_fail(ctx, rc, "linear: %s", ts_last_error());
    return ctx->status;
}
// With the ReLU: dy *= [y > 0] first, in y's own gradient (read by no one else).
// dx += dy W_c  (N, k);  dW_c += dy^T x  (out, k), W_c = W[:, c0 : c0 + k];
// dbias += sum over rows of dy;  daddend += dy
int FN(ts_linear_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    int N = y->shape[0], out = y->shape[1], K = ts_cols(x), in = w->shape[1], col0 = y->iarg[0];
    double dx_beta;
    REAL *dx = input_grad_written(ctx, y, 0, &dx_beta), *dw = input_grad(ctx, y, 1);
    REAL *db = y->iarg[1] >= 0 ? input_grad(ctx, y, y->iarg[1]) : NULL;
    REAL *dadd = y->iarg[2] >= 0 ? input_grad(ctx, y, y->iarg[2]) : NULL;
    if (ctx->status) return ctx->status;
    if (y->iarg[3]) {
        REAL *g = GRAD(y);
        const REAL *yd = DATA(y);
        for (size_t i = 0; i < y->size; i++) g[i] = yd[i] > 0 ? g[i] : 0;
    }
    const REAL *dy = GRAD(y);
    FN(ts_product) dx_product = {0, 0, N, K, out, 1.0, dy, out, DATA(w) + col0, in, dx_beta, dx, K, 0, NULL, NULL, 0};
    FN(ts_product) dw_product = {1, 0, out, K, N, 1.0, dy, out, DATA(x), K, 1.0, dw ? dw + col0 : NULL, in, 0, NULL, NULL, 0};
    // side by side on two threads; dW on this one, which has the serial passes between products to do besides
    int rc = FN(ts_gemm_two)(dw ? &dw_product : NULL, dx ? &dx_product : NULL);
    if (db)
        for (int r = 0; r < N; r++)
            for (int c = 0; c < out; c++) db[c] += dy[(size_t)r * out + c];
    if (dadd)
        for (size_t i = 0; i < y->size; i++) dadd[i] += dy[i];
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}

// y[g] (m, n) = op(a[g]) op(b[g]) for g < G, iarg[0] = trans_a, iarg[1] = trans_b
static int FN(bmm_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int G = y->shape[0], m = y->shape[1], n = y->shape[2], k = ta ? a->shape[1] : a->shape[2];
    size_t a_size = (size_t)m * k, b_size = (size_t)k * n, y_size = (size_t)m * n;
    for (int g = 0; g < G; g++) {
        int rc = FN(ts_gemm)(ta, tb, m, n, k, 1.0, DATA(a) + g * a_size, DATA(b) + g * b_size, 0.0,
                             DATA(y) + g * y_size);
        if (rc) return ts_ctx_fail(ctx, rc, "bmm: %s", ts_last_error()), ctx->status;
    }
    return ctx->status;
}
// Per g, as ts_matmul_backward.
int FN(ts_bmm_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *a = y->src[0], *b = y->src[1];
    int ta = y->iarg[0], tb = y->iarg[1];
    int G = y->shape[0], m = y->shape[1], n = y->shape[2];
    int k = ta ? a->shape[1] : a->shape[2];
    REAL *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    size_t a_size = (size_t)m * k, b_size = (size_t)k * n, y_size = (size_t)m * n;
    int rc = TS_OK;
    for (int g = 0; g < G && !rc; g++) {
        const REAL *ag = DATA(a) + g * a_size, *bg = DATA(b) + g * b_size, *dy = GRAD(y) + g * y_size;
        if (da && !ta) rc = FN(ts_gemm)(0, !tb, m, k, n, 1.0, dy, bg, 1.0, da + g * a_size);
        else if (da) rc = FN(ts_gemm)(tb, 1, k, m, n, 1.0, bg, dy, 1.0, da + g * a_size);
        if (!rc && db && !tb) rc = FN(ts_gemm)(!ta, 0, k, n, m, 1.0, ag, dy, 1.0, db + g * b_size);
        else if (!rc && db) rc = FN(ts_gemm)(1, ta, n, k, m, 1.0, dy, ag, 1.0, db + g * b_size);
    }
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
