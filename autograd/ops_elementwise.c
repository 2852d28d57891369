// Elementwise ops: the shape checks and nodes here; each op's arithmetic,
// forward and backward side by side, in ops_elementwise_t.h, compiled once
// per dtype. n = number of elements; shapes are the inputs' own.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>

#define TS_TEMPLATE "autograd/ops_elementwise_t.h"
#include "tensor/dtype_twice.h"

static ts_tensor *binary(ts_ctx *ctx, int op, ts_tensor *a, ts_tensor *b) {
    if (!a || !b) return NULL;
    if (!ts_same_shape(a, b)) {
        char sa[48], sb[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: shapes %s and %s differ", ts_op_names[op],
                           SHAPE(a, sa), SHAPE(b, sb));
    }
    ts_tensor *src[2] = {a, b};
    return ts_node(ctx, op, a->ndim, a->shape, 2, src);
}

static ts_tensor *unary(ts_ctx *ctx, int op, ts_tensor *a) {
    if (!a) return NULL;
    return ts_node(ctx, op, a->ndim, a->shape, 1, &a);
}

ts_tensor *ts_add(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) { return TS_FORWARD(ctx, binary(ctx, TS_OP_ADD, a, b), add_forward); }
ts_tensor *ts_sub(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) { return TS_FORWARD(ctx, binary(ctx, TS_OP_SUB, a, b), sub_forward); }
ts_tensor *ts_mul(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) { return TS_FORWARD(ctx, binary(ctx, TS_OP_MUL, a, b), mul_forward); }

ts_tensor *ts_scale(ts_ctx *ctx, ts_tensor *a, double s) {
    ts_tensor *y = unary(ctx, TS_OP_SCALE, a);
    if (y) y->darg[0] = s;
    return TS_FORWARD(ctx, y, scale_forward);
}

ts_tensor *ts_add_bias(ts_ctx *ctx, ts_tensor *a, ts_tensor *bias) {
    if (!a || !bias) return NULL;
    int cols = ts_cols(a);
    if ((int)bias->size != cols) {
        char sa[48], sb[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "add_bias: input %s needs a bias of %d, got %s",
                           SHAPE(a, sa), cols, SHAPE(bias, sb));
    }
    ts_tensor *src[2] = {a, bias};
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_ADD_BIAS, a->ndim, a->shape, 2, src), add_bias_forward);
}

ts_tensor *ts_tanh(ts_ctx *ctx, ts_tensor *a) { return TS_FORWARD(ctx, unary(ctx, TS_OP_TANH, a), tanh_forward); }
ts_tensor *ts_sigmoid(ts_ctx *ctx, ts_tensor *a) { return TS_FORWARD(ctx, unary(ctx, TS_OP_SIGMOID, a), sigmoid_forward); }
ts_tensor *ts_relu(ts_ctx *ctx, ts_tensor *a) { return TS_FORWARD(ctx, unary(ctx, TS_OP_RELU, a), relu_forward); }
ts_tensor *ts_exp(ts_ctx *ctx, ts_tensor *a) { return TS_FORWARD(ctx, unary(ctx, TS_OP_EXP, a), exp_forward); }
ts_tensor *ts_log(ts_ctx *ctx, ts_tensor *a) { return TS_FORWARD(ctx, unary(ctx, TS_OP_LOG, a), log_forward); }
