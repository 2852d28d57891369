// Reductions to a single number; their arithmetic, forward and backward side
// by side, is ops_reduce_t.h, compiled once per dtype.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#define TS_TEMPLATE "autograd/ops_reduce_t.h"
#include "tensor/dtype_twice.h"

ts_tensor *ts_sum(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_SUM, 1, (int[]){1}, 1, &a), sum_forward);
}

ts_tensor *ts_mean(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_MEAN, 1, (int[]){1}, 1, &a), mean_forward);
}
