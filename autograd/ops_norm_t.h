// Layer normalisation for one dtype, compiled twice by ops_norm.c
// (tensor/dtype_twice.h). N = rows, D = the normalised width; the row
// statistics (mean, rstd) and their sums are double in both dtypes.

// Sums of a row in eight running double sums, combined in a fixed order (as
// ts_sum_array): deterministic, and vectorised without reassociating anything
// (one chain of dependent additions per row did not vectorise).
#define SUM8(acc) (((acc)[0] + (acc)[1]) + ((acc)[2] + (acc)[3])) + (((acc)[4] + (acc)[5]) + ((acc)[6] + (acc)[7]))

// y (N, D) = (x - mean) rstd gamma + beta per row, rstd = 1 / sqrt(var + eps),
// var the biased variance (two passes: no cancellation). Keeps mean, rstd (N).
TS_VECTOR_CLONES
static void FN(layer_norm_rows)(REAL *y, double *mean, double *rstd, const REAL *x, const REAL *gamma,
                                const REAL *beta, size_t N, size_t D, double eps) {
    for (size_t r = 0; r < N; r++) {
        const REAL *xr = x + r * D;
        double mu = FN(ts_sum_array)(xr, D) / (double)D, acc[8] = {0}, sq = 0.0;
        size_t c = 0;
        for (; c + 8 <= D; c += 8)
            for (int j = 0; j < 8; j++) acc[j] += (xr[c + j] - mu) * (xr[c + j] - mu);
        for (; c < D; c++) sq += (xr[c] - mu) * (xr[c] - mu);
        double inv = 1.0 / sqrt((SUM8(acc) + sq) / (double)D + eps);
        REAL *yr = y + r * D;
        for (c = 0; c < D; c++) yr[c] = (xr[c] - mu) * inv * gamma[c] + beta[c];
        mean[r] = mu;
        rstd[r] = inv;
    }
}

// With xhat = (x - mean) rstd and g = dy gamma, for rows [0, n) of a block:
//   sums[c] += sum_rows dy xhat, sums[D + c] += sum_rows dy   (dgamma, dbeta: in double, rows in order)
//   dx += rstd (g - mean_c(g) - xhat mean_c(g xhat))          (the rows of dx)
// One pass over dy and x does both; the two row means are eight running sums each.
TS_VECTOR_CLONES
static void FN(layer_norm_rows_backward)(REAL *dx, double *sums, const REAL *dy, const REAL *x, const double *mean,
                                         const double *rstd, const REAL *gamma, size_t n, size_t D) {
    for (size_t r = 0; r < n; r++) {
        const REAL *xr = x + r * D, *gr = dy + r * D;
        double m = mean[r], s = rstd[r];
        if (sums)
            for (size_t c = 0; c < D; c++) {
                sums[c] += gr[c] * ((xr[c] - m) * s);
                sums[D + c] += gr[c];
            }
        if (!dx) continue;
        double g_acc[8] = {0}, gx_acc[8] = {0}, g_sum = 0.0, gx_sum = 0.0;
        size_t c = 0;
        for (; c + 8 <= D; c += 8)
            for (int j = 0; j < 8; j++) {
                double g = gr[c + j] * gamma[c + j];
                g_acc[j] += g;
                gx_acc[j] += g * ((xr[c + j] - m) * s);
            }
        for (; c < D; c++) {
            double g = gr[c] * gamma[c];
            g_sum += g;
            gx_sum += g * ((xr[c] - m) * s);
        }
        double g_mean = (SUM8(g_acc) + g_sum) / (double)D, gx_mean = (SUM8(gx_acc) + gx_sum) / (double)D;
        REAL *dxr = dx + r * D;
        for (c = 0; c < D; c++) dxr[c] += s * (gr[c] * gamma[c] - g_mean - (xr[c] - m) * s * gx_mean);
    }
}
#undef SUM8

// Part `part` of a forward: its rows. saved: mean (N) then rstd (N), double;
// darg[0] = eps.
static void FN(layer_norm_forward_part)(void *arg, int part, int parts) {
    const norm_job *job = arg;
    const ts_tensor *y = job->y, *x = y->src[0];
    size_t N = ts_rows(x), D = (size_t)ts_cols(x), first, end;
    double *stats = y->saved;
    ts_part_range(N, part, parts, &first, &end);
    FN(layer_norm_rows)(DATA(y) + first * D, stats + first, stats + N + first, DATA(x) + first * D, DATA(y->src[1]),
                        DATA(y->src[2]), end - first, D, y->darg[0]);
}

// Part `part` of a backward: its blocks of NORM_BLOCK rows, each with its
// own sums of dgamma and dbeta (job->sums, 2 D doubles a block).
static void FN(layer_norm_backward_part)(void *arg, int part, int parts) {
    const norm_job *job = arg;
    const ts_tensor *y = job->y, *x = y->src[0];
    size_t N = ts_rows(x), D = (size_t)ts_cols(x), b0, b1;
    const double *stats = y->saved;
    ts_part_range(norm_blocks(N), part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        size_t first = b * NORM_BLOCK, n = N - first < NORM_BLOCK ? N - first : NORM_BLOCK;
        double *sums = job->sums ? job->sums + b * 2 * D : NULL;
        if (sums) memset(sums, 0, 2 * D * sizeof *sums);
        FN(layer_norm_rows_backward)(job->dx ? (REAL *)job->dx + first * D : NULL, sums, GRAD(y) + first * D,
                                     DATA(x) + first * D, stats + first, stats + N + first, DATA(y->src[1]), n, D);
    }
}

static int FN(layer_norm_forward)(ts_ctx *ctx, ts_tensor *y) {
    size_t N = ts_rows(y->src[0]);
    y->saved = ts_arena_alloc(ctx->arena, 2 * N * sizeof(double));  // mean (N), rstd (N)
    if (!y->saved) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    norm_run(&(norm_job){.y = y}, FN(layer_norm_forward_part));
    return ctx->status;
}
// The blocks' sums of dgamma and dbeta are added in block order: the same
// sums in the same order whatever the number of parts.
int FN(ts_layer_norm_backward)(ts_ctx *ctx, ts_tensor *y) {
    norm_job job = {y, input_grad(ctx, y, 0), input_grad(ctx, y, 1), input_grad(ctx, y, 2), NULL};
    size_t N = ts_rows(y), D = (size_t)ts_cols(y), blocks = norm_blocks(N);
    if (!ctx->status && (job.dgamma || job.dbeta) &&
        !(job.sums = ts_arena_alloc(ctx->arena, blocks * 2 * D * sizeof(double))))  // (blocks, 2, D)
        ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (ctx->status) return ctx->status;
    norm_run(&job, FN(layer_norm_backward_part));
    REAL *dgamma = job.dgamma, *dbeta = job.dbeta;
    for (size_t c = 0; job.sums && c < D; c++) {
        double g = 0.0, b = 0.0;
        for (size_t k = 0; k < blocks; k++) g += job.sums[k * 2 * D + c], b += job.sums[k * 2 * D + D + c];
        if (dgamma) dgamma[c] += g;
        if (dbeta) dbeta[c] += b;
    }
    return ctx->status;
}
