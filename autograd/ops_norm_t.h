// Layer normalisation for one dtype, compiled twice by ops_norm.c
// (tensor/dtype_twice.h). N = rows, D = the normalised width; the row
// statistics (mean, rstd) and their sums are double in both dtypes.

// y (N, D) = (x - mean) rstd gamma + beta per row, rstd = 1 / sqrt(var + eps),
// var the biased variance (two passes: no cancellation). Keeps mean, rstd (N).
static void FN(layer_norm_rows)(REAL *y, double *mean, double *rstd, const REAL *x, const REAL *gamma,
                                const REAL *beta, size_t N, size_t D, double eps) {
    for (size_t r = 0; r < N; r++) {
        const REAL *xr = x + r * D;
        double sum = 0.0;
        for (size_t c = 0; c < D; c++) sum += xr[c];
        double mu = sum / (double)D, sq = 0.0;
        for (size_t c = 0; c < D; c++) sq += (xr[c] - mu) * (xr[c] - mu);
        double inv = 1.0 / sqrt(sq / (double)D + eps);
        REAL *yr = y + r * D;
        for (size_t c = 0; c < D; c++) yr[c] = (xr[c] - mu) * inv * gamma[c] + beta[c];
        mean[r] = mu;
        rstd[r] = inv;
    }
}

// With xhat = (x - mean) rstd and g = dy gamma:
//   dgamma += sum_rows dy xhat;  dbeta += sum_rows dy;
//   dx += rstd (g - mean_c(g) - xhat mean_c(g xhat))
static void FN(layer_norm_rows_backward)(REAL *dx, REAL *dgamma, REAL *dbeta, const REAL *dy, const REAL *x,
                                         const double *mean, const double *rstd, const REAL *gamma, size_t N,
                                         size_t D) {
    for (size_t r = 0; r < N; r++) {
        const REAL *xr = x + r * D, *gr = dy + r * D;
        double g_mean = 0.0, gx_mean = 0.0;
        for (size_t c = 0; c < D; c++) {
            double xhat = (xr[c] - mean[r]) * rstd[r], g = gr[c] * gamma[c];
            g_mean += g;
            gx_mean += g * xhat;
            if (dgamma) dgamma[c] += gr[c] * xhat;
            if (dbeta) dbeta[c] += gr[c];
        }
        g_mean /= (double)D;
        gx_mean /= (double)D;
        if (!dx) continue;
        REAL *dxr = dx + r * D;
        for (size_t c = 0; c < D; c++) {
            double xhat = (xr[c] - mean[r]) * rstd[r];
            dxr[c] += rstd[r] * (gr[c] * gamma[c] - g_mean - xhat * gx_mean);
        }
    }
}

// saved: mean (N) then rstd (N), double; darg[0] = eps
static int FN(layer_norm_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *x = y->src[0];
    size_t N = ts_rows(x);
    double *stats = ts_arena_alloc(ctx->arena, 2 * N * sizeof(double));  // mean (N), rstd (N)
    if (!stats) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    FN(layer_norm_rows)(DATA(y), stats, stats + N, DATA(x), DATA(y->src[1]), DATA(y->src[2]), N, (size_t)ts_cols(x),
                        y->darg[0]);
    y->saved = stats;
    return ctx->status;
}
int FN(ts_layer_norm_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *gamma = y->src[1];
    REAL *dx = input_grad(ctx, y, 0), *dgamma = input_grad(ctx, y, 1), *dbeta = input_grad(ctx, y, 2);
    if (ctx->status) return ctx->status;
    size_t N = ts_rows(x);
    const double *stats = y->saved;
    FN(layer_norm_rows_backward)(dx, dgamma, dbeta, GRAD(y), DATA(x), stats, stats + N, DATA(gamma), N,
                                 (size_t)ts_cols(x));
    return ctx->status;
}
