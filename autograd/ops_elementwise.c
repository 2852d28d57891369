// Elementwise ops: forward and backward side by side.
// n = number of elements; shapes are the inputs' own.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <math.h>

static ts_tensor *binary(ts_ctx *ctx, int op, ts_tensor *a, ts_tensor *b) {
    if (!a || !b) return NULL;
    if (!ts_same_shape(a, b)) {
        char sa[48], sb[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: shapes %s and %s differ", ts_ops[op].name,
                           SHAPE(a, sa), SHAPE(b, sb));
    }
    ts_tensor *src[2] = {a, b};
    return ts_node(ctx, op, a->ndim, a->shape, 2, src);
}

static ts_tensor *unary(ts_ctx *ctx, int op, ts_tensor *a) {
    if (!a) return NULL;
    return ts_node(ctx, op, a->ndim, a->shape, 1, &a);
}

// y = a + b;  da += dy, db += dy
ts_tensor *ts_add(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) {
    ts_tensor *y = binary(ctx, TS_OP_ADD, a, b);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = a->data[i] + b->data[i];
    return y;
}
int ts_add_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    for (size_t i = 0; i < y->size; i++) {
        if (da) da[i] += y->grad[i];
        if (db) db[i] += y->grad[i];
    }
    return ctx->status;
}

// y = a - b;  da += dy, db -= dy
ts_tensor *ts_sub(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) {
    ts_tensor *y = binary(ctx, TS_OP_SUB, a, b);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = a->data[i] - b->data[i];
    return y;
}
int ts_sub_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    for (size_t i = 0; i < y->size; i++) {
        if (da) da[i] += y->grad[i];
        if (db) db[i] -= y->grad[i];
    }
    return ctx->status;
}

// y = a * b;  da += dy * b, db += dy * a
ts_tensor *ts_mul(ts_ctx *ctx, ts_tensor *a, ts_tensor *b) {
    ts_tensor *y = binary(ctx, TS_OP_MUL, a, b);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = a->data[i] * b->data[i];
    return y;
}
int ts_mul_backward(ts_ctx *ctx, ts_tensor *y) {
    const double *a = y->src[0]->data, *b = y->src[1]->data;
    double *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    for (size_t i = 0; i < y->size; i++) {
        if (da) da[i] += y->grad[i] * b[i];
        if (db) db[i] += y->grad[i] * a[i];
    }
    return ctx->status;
}

// y = s * a;  da += s * dy
ts_tensor *ts_scale(ts_ctx *ctx, ts_tensor *a, double s) {
    ts_tensor *y = unary(ctx, TS_OP_SCALE, a);
    if (!y) return NULL;
    y->darg[0] = s;
    for (size_t i = 0; i < y->size; i++) y->data[i] = s * a->data[i];
    return y;
}
int ts_scale_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->darg[0] * y->grad[i];
    return ctx->status;
}

// y[r, c] = a[r, c] + bias[c];  da += dy, dbias[c] += sum_r dy[r, c]
ts_tensor *ts_add_bias(ts_ctx *ctx, ts_tensor *a, ts_tensor *bias) {
    if (!a || !bias) return NULL;
    int cols = ts_cols(a);
    if ((int)bias->size != cols) {
        char sa[48], sb[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "add_bias: input %s needs a bias of %d, got %s",
                           SHAPE(a, sa), cols, SHAPE(bias, sb));
    }
    ts_tensor *src[2] = {a, bias};
    ts_tensor *y = ts_node(ctx, TS_OP_ADD_BIAS, a->ndim, a->shape, 2, src);
    if (!y) return NULL;
    size_t rows = ts_rows(a);
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) y->data[r * cols + c] = a->data[r * cols + c] + bias->data[c];
    return y;
}
int ts_add_bias_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0), *dbias = input_grad(ctx, y, 1);
    size_t rows = ts_rows(y);
    int cols = ts_cols(y);
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double g = y->grad[r * cols + c];
            if (da) da[r * cols + c] += g;
            if (dbias) dbias[c] += g;
        }
    return ctx->status;
}

// y = tanh(a);  da += dy * (1 - y^2)
ts_tensor *ts_tanh(ts_ctx *ctx, ts_tensor *a) {
    ts_tensor *y = unary(ctx, TS_OP_TANH, a);
    if (y)
        ts_tanh_array(y->data, a->data, y->size);
    return y;
}
int ts_tanh_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i] * (1.0 - y->data[i] * y->data[i]);
    return ctx->status;
}

// y = 1 / (1 + exp(-a));  da += dy * y * (1 - y)
ts_tensor *ts_sigmoid(ts_ctx *ctx, ts_tensor *a) {
    ts_tensor *y = unary(ctx, TS_OP_SIGMOID, a);
    if (y)
        ts_sigmoid_array(y->data, a->data, y->size);
    return y;
}
int ts_sigmoid_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i] * y->data[i] * (1.0 - y->data[i]);
    return ctx->status;
}

// y = max(a, 0);  da += dy * [a > 0]
ts_tensor *ts_relu(ts_ctx *ctx, ts_tensor *a) {
    ts_tensor *y = unary(ctx, TS_OP_RELU, a);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = a->data[i] > 0 ? a->data[i] : 0.0;
    return y;
}
int ts_relu_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    const double *a = y->src[0]->data;
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += a[i] > 0 ? y->grad[i] : 0.0;
    return ctx->status;
}

// y = exp(a);  da += dy * y
ts_tensor *ts_exp(ts_ctx *ctx, ts_tensor *a) {
    ts_tensor *y = unary(ctx, TS_OP_EXP, a);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = exp(a->data[i]);
    return y;
}
int ts_exp_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i] * y->data[i];
    return ctx->status;
}

// y = log(a);  da += dy / a
ts_tensor *ts_log(ts_ctx *ctx, ts_tensor *a) {
    ts_tensor *y = unary(ctx, TS_OP_LOG, a);
    if (y)
        for (size_t i = 0; i < y->size; i++) y->data[i] = log(a->data[i]);
    return y;
}
int ts_log_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    const double *a = y->src[0]->data;
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i] / a[i];
    return ctx->status;
}
