// Layer normalisation over the last dimension (torch.nn.LayerNorm).
// N = rows, D = the normalised width. The check and node here; the kernels,
// forward and backward side by side, in ops_norm_t.h, compiled once per dtype.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"
#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>
#include <string.h>

// One forward or backward, split over rows by tensor/parallel.h past
// TS_PARALLEL_MIN_ELEMENTS entries: a training batch's (B*T, D) has ~2e5;
// decoding's few rows are not worth a wake. The backward goes by blocks of
// NORM_BLOCK rows, each summing its own share of dgamma and dbeta: one pass
// over dy and x, where summing those by columns over every row on each
// thread read them twice (docs/performance.md, "Measurements behind the
// code's constants").
#define NORM_BLOCK 32
typedef struct {
    const ts_tensor *y;
    void *dx, *dgamma, *dbeta;  // backward: the inputs' gradients or NULL
    double *sums;               // backward: (blocks, 2, D) each block's sums of dgamma, dbeta
} norm_job;

static size_t norm_blocks(size_t rows) { return (rows + NORM_BLOCK - 1) / NORM_BLOCK; }

static void norm_run(norm_job *job, ts_part_fn part) {
    ts_parallel_run(ts_parallel_parts(job->y->size, (int)norm_blocks(ts_rows(job->y))), part, job);
}

#define TS_TEMPLATE "autograd/ops_norm_t.h"
#include "tensor/dtype_twice.h"

// y = (x - mean) / sqrt(var + eps) * gamma + beta per row
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
    y->darg[0] = eps;
    return TS_FORWARD(ctx, y, layer_norm_forward);
}
