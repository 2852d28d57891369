// Dropout for one dtype, compiled twice by ops_dropout.c (tensor/dtype_twice.h).

// y = a * keep, keep = m / (1 - p) saved (REAL, drawn by ts_dropout);  da += dy * keep
static int FN(dropout_forward)(ts_ctx *ctx, ts_tensor *y) {
    const REAL *a = DATA(y->src[0]), *keep = y->saved;
    for (size_t i = 0; i < y->size; i++) DATA(y)[i] = a[i] * keep[i];
    return ctx->status;
}
int FN(ts_dropout_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *keep = y->saved, *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i] * keep[i];
    return ctx->status;
}

// The mask: the same draws, in the same order, in both dtypes.
static void FN(draw_keep)(REAL *keep, size_t n, double p, gsl_rng *rng) {
    double scale = 1.0 / (1.0 - p);
    for (size_t i = 0; i < n; i++) keep[i] = gsl_rng_uniform(rng) < p ? 0.0 : scale;
}
