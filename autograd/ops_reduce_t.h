// Reductions to a single number for one dtype, compiled twice by
// ops_reduce.c (tensor/dtype_twice.h). The sums run in double in both.

// y = sum_i a_i;  da_i += dy
static int FN(sum_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *a = y->src[0];
    const REAL *x = DATA(a);
    double total = 0.0;
    for (size_t i = 0; i < a->size; i++) total += x[i];
    DATA(y)[0] = total;
    return ctx->status;
}
int FN(ts_sum_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->src[0]->size; i++) da[i] += GRAD(y)[0];
    return ctx->status;
}

// y = sum_i a_i / n;  da_i += dy / n
static int FN(mean_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *a = y->src[0];
    const REAL *x = DATA(a);
    double total = 0.0;
    for (size_t i = 0; i < a->size; i++) total += x[i];
    DATA(y)[0] = total / (double)a->size;
    return ctx->status;
}
int FN(ts_mean_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    size_t n = y->src[0]->size;
    if (da)
        for (size_t i = 0; i < n; i++) da[i] += GRAD(y)[0] / (double)n;
    return ctx->status;
}
