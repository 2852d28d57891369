// Dropout for one dtype, compiled twice by ops_dropout.c (tensor/dtype_twice.h).

// y = a * keep, keep = m / (1 - p) saved (REAL, drawn by ts_dropout);  da += dy * keep
static void FN(dropout_span)(const ts_tensor *y, void *const *grads, size_t begin, size_t end) {
    (void)grads;
    const REAL *a = DATA(y->src[0]), *keep = y->saved;
    for (size_t i = begin; i < end; i++) DATA(y)[i] = a[i] * keep[i];
}
static int FN(dropout_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_span_run(y, NULL, y->size, y->size, FN(dropout_span));
    return ctx->status;
}
static void FN(dropout_backward_span)(const ts_tensor *y, void *const *grads, size_t begin, size_t end) {
    REAL *da = grads[0];
    const REAL *keep = y->saved, *dy = GRAD(y);
    for (size_t i = begin; i < end; i++) da[i] += dy[i] * keep[i];
}
int FN(ts_dropout_backward)(ts_ctx *ctx, ts_tensor *y) {
    void *da = input_grad(ctx, y, 0);
    if (da) ts_span_run(y, &da, y->size, y->size, FN(dropout_backward_span));
    return ctx->status;
}

// The mask: the same draws, in the same order, in both dtypes.
static void FN(draw_keep)(REAL *keep, size_t n, double p, gsl_rng *rng) {
    double scale = 1.0 / (1.0 - p);
    for (size_t i = 0; i < n; i++) keep[i] = gsl_rng_uniform(rng) < p ? 0.0 : scale;
}
