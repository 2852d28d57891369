// Layer normalisation over the last dimension (torch.nn.LayerNorm).
// N = rows, D = the normalised width. The kernels work on raw buffers with
// explicit sizes, so a float32 build can instantiate them unchanged.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include <math.h>

// y (N, D) = (x - mean) rstd gamma + beta per row, rstd = 1 / sqrt(var + eps),
// var the biased variance (two passes: no cancellation). Keeps mean, rstd (N).
static void layer_norm_rows(double *y, double *mean, double *rstd, const double *x, const double *gamma,
                            const double *beta, size_t N, size_t D, double eps) {
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * D;
        double sum = 0.0;
        for (size_t c = 0; c < D; c++) sum += xr[c];
        double mu = sum / (double)D, sq = 0.0;
        for (size_t c = 0; c < D; c++) sq += (xr[c] - mu) * (xr[c] - mu);
        double inv = 1.0 / sqrt(sq / (double)D + eps);
        double *yr = y + r * D;
        for (size_t c = 0; c < D; c++) yr[c] = (xr[c] - mu) * inv * gamma[c] + beta[c];
        mean[r] = mu;
        rstd[r] = inv;
    }
}

// With xhat = (x - mean) rstd and g = dy gamma:
//   dgamma += sum_rows dy xhat;  dbeta += sum_rows dy;
//   dx += rstd (g - mean_c(g) - xhat mean_c(g xhat))
static void layer_norm_rows_backward(double *dx, double *dgamma, double *dbeta, const double *dy, const double *x,
                                     const double *mean, const double *rstd, const double *gamma, size_t N,
                                     size_t D) {
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * D, *gr = dy + r * D;
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
        double *dxr = dx + r * D;
        for (size_t c = 0; c < D; c++) {
            double xhat = (xr[c] - mean[r]) * rstd[r];
            dxr[c] += rstd[r] * (gr[c] * gamma[c] - g_mean - xhat * gx_mean);
        }
    }
}

// saved: mean (N) then rstd (N); darg[0] = eps
ts_tensor *ts_layer_norm(ts_ctx *ctx, ts_tensor *x, ts_tensor *gamma, ts_tensor *beta, double eps) {
    if (!x || !gamma || !beta) return NULL;
    int D = ts_cols(x);
    if ((int)gamma->size != D || (int)beta->size != D) {
        char sx[48], sg[48], sb[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "layer_norm: x %s, gamma %s, beta %s do not fit (N, D), (D), (D)",
                           SHAPE(x, sx), SHAPE(gamma, sg), SHAPE(beta, sb));
    }
    if (!(eps > 0.0)) return ts_ctx_fail(ctx, TS_ERR_ARG, "layer_norm: eps %g must be positive", eps);
    ts_tensor *src[3] = {x, gamma, beta};
    ts_tensor *y = ts_node(ctx, TS_OP_LAYER_NORM, x->ndim, x->shape, 3, src);
    if (!y) return NULL;
    size_t N = ts_rows(x);
    double *stats = ts_arena_alloc(ctx->arena, 2 * N * sizeof(double));  // mean (N), rstd (N)
    if (!stats) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    layer_norm_rows(y->data, stats, stats + N, x->data, gamma->data, beta->data, N, (size_t)D, eps);
    y->saved = stats;
    y->darg[0] = eps;
    return y;
}
int ts_layer_norm_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *gamma = y->src[1];
    double *dx = input_grad(ctx, y, 0), *dgamma = input_grad(ctx, y, 1), *dbeta = input_grad(ctx, y, 2);
    if (ctx->status) return ctx->status;
    size_t N = ts_rows(x);
    const double *stats = y->saved;
    layer_norm_rows_backward(dx, dgamma, dbeta, y->grad, x->data, stats, stats + N, gamma->data, N,
                             (size_t)ts_cols(x));
    return ctx->status;
}
