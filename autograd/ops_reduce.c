// Reductions to a single number.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

// y = sum_i a_i;  da_i += dy
ts_tensor *ts_sum(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_SUM, 1, (int[]){1}, 1, &a);
    if (!y) return NULL;
    double total = 0.0;
    for (size_t i = 0; i < a->size; i++) total += a->data[i];
    y->data[0] = total;
    return y;
}
int ts_sum_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->src[0]->size; i++) da[i] += y->grad[0];
    return ctx->status;
}

// y = sum_i a_i / n;  da_i += dy / n
ts_tensor *ts_mean(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_MEAN, 1, (int[]){1}, 1, &a);
    if (!y) return NULL;
    double total = 0.0;
    for (size_t i = 0; i < a->size; i++) total += a->data[i];
    y->data[0] = total / (double)a->size;
    return y;
}
int ts_mean_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    size_t n = y->src[0]->size;
    if (da)
        for (size_t i = 0; i < n; i++) da[i] += y->grad[0] / (double)n;
    return ctx->status;
}
