#include "autograd/graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// The name of each op's nodes, in graph dumps and error messages; its
// backward is the op's row of autograd/backward.c's table.
const char *const ts_op_names[TS_OP_COUNT] = {
    [TS_OP_LEAF] = "leaf",
    [TS_OP_ADD] = "add",
    [TS_OP_SUB] = "sub",
    [TS_OP_MUL] = "mul",
    [TS_OP_SCALE] = "scale",
    [TS_OP_ADD_BIAS] = "add_bias",
    [TS_OP_MATMUL] = "matmul",
    [TS_OP_LINEAR] = "linear",
    [TS_OP_TANH] = "tanh",
    [TS_OP_SIGMOID] = "sigmoid",
    [TS_OP_RELU] = "relu",
    [TS_OP_EXP] = "exp",
    [TS_OP_LOG] = "log",
    [TS_OP_SUM] = "sum",
    [TS_OP_MEAN] = "mean",
    [TS_OP_CONCAT] = "concat",
    [TS_OP_SLICE_COLS] = "slice_cols",
    [TS_OP_GATHER_ROWS] = "gather_rows",
    [TS_OP_SLICE_ROWS] = "slice_rows",
    [TS_OP_RESHAPE] = "reshape",
    [TS_OP_SOFTMAX] = "softmax",
    [TS_OP_LOG_SOFTMAX] = "log_softmax",
    [TS_OP_CROSS_ENTROPY] = "cross_entropy",
    [TS_OP_LINEAR_CROSS_ENTROPY] = "linear_cross_entropy",
    [TS_OP_DROPOUT] = "dropout",
    [TS_OP_SWAP01] = "swap01",
    [TS_OP_STACK_ROWS] = "stack_rows",
    [TS_OP_GRU_CELL] = "gru_cell",
    [TS_OP_LSTM_CELL] = "lstm_cell",
    [TS_OP_ATTN_DOT] = "attn_dot",
    [TS_OP_ATTN_ADDITIVE] = "attn_additive",
    [TS_OP_ATTN_CONTEXT] = "attn_context",
    [TS_OP_BMM] = "bmm",
    [TS_OP_SPLIT_HEADS] = "split_heads",
    [TS_OP_MERGE_HEADS] = "merge_heads",
    [TS_OP_LAYER_NORM] = "layer_norm",
    [TS_OP_MHA] = "mha",
};
_Static_assert(sizeof ts_op_names / sizeof ts_op_names[0] == TS_OP_COUNT, "one name per op");

void ts_ctx_init(ts_ctx *ctx, ts_arena *arena) {
    ctx->arena = arena;
    ctx->tape = NULL;
    ctx->grad_enabled = 1;
    ctx->status = TS_OK;
    ctx->dtype = TS_F64;
    memset(ctx->scratch, 0, sizeof ctx->scratch);
    ctx->keep_scratch = 0;
}

void ts_ctx_free_scratch(ts_ctx *ctx) {
    for (int i = 0; i < TS_SCRATCH_ARENAS; i++) {
        ts_arena_free(ctx->scratch[i]);
        ctx->scratch[i] = NULL;
    }
}

void ts_ctx_reset(ts_ctx *ctx) {
    ts_arena_reset(ctx->arena);
    ctx->tape = NULL;
    ctx->status = TS_OK;
}

int ts_set_grad_enabled(ts_ctx *ctx, int enabled) {
    int before = ctx->grad_enabled;
    ctx->grad_enabled = enabled;
    return before;
}

ts_tensor *ts_ctx_fail(ts_ctx *ctx, int status, const char *fmt, ...) {
    if (ctx->status == TS_OK) {
        char message[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof message, fmt, ap);
        va_end(ap);
        ctx->status = ts_fail(status, "%s", message);
    }
    return NULL;
}

// An arena failure has already written its message; make it the step's status.
static ts_tensor *arena_failed(ts_ctx *ctx) {
    if (ctx->status == TS_OK) ctx->status = TS_ERR_ARENA;
    return NULL;
}

void *ts_grad(ts_ctx *ctx, ts_tensor *t) {
    if (!t->grad_raw) {
        t->grad_raw = ts_arena_calloc(ctx->arena, t->size, ts_dtype_size(t->dtype));
        if (!t->grad_raw) arena_failed(ctx);
    }
    return t->grad_raw;
}

static ts_tensor *node_header(ts_ctx *ctx, int op, int ndim, const int *dims, int nsrc,
                              ts_tensor *const *src) {
    ts_tensor *t = ts_arena_alloc(ctx->arena, sizeof *t);
    if (!t) return arena_failed(ctx);
    memset(t, 0, sizeof *t);
    if (ts_shape_set(t, ndim, dims, ts_op_names[op]) != TS_OK)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s", ts_last_error());
    t->op = op;
    t->dtype = nsrc ? src[0]->dtype : ctx->dtype;
    int needs_grad = 0;
    for (int i = 0; i < nsrc; i++) {
        if (src[i]->dtype != t->dtype)
            return ts_ctx_fail(ctx, TS_ERR_ARG, "%s: input 0 is %s, input %d %s", ts_op_names[op],
                               ts_dtype_name(t->dtype), i, ts_dtype_name(src[i]->dtype));
        if (i < TS_MAX_SRC) t->src[i] = src[i];
        needs_grad |= src[i]->requires_grad;
    }
    snprintf(t->name, sizeof t->name, "%s", ts_op_names[op]);
    if (ctx->grad_enabled && needs_grad) {
        t->requires_grad = 1;
        t->tape_prev = ctx->tape;
        ctx->tape = t;
        for (int i = 0; i < nsrc && i < TS_MAX_SRC; i++)
            if (src[i]->uses < 2) src[i]->uses++;
    }
    return t;
}

ts_tensor *ts_node(ts_ctx *ctx, int op, int ndim, const int *dims, int nsrc, ts_tensor *const *src) {
    if (ctx->status) return NULL;
    ts_tensor *t = node_header(ctx, op, ndim, dims, nsrc, src);
    if (!t) return NULL;
    t->raw = ts_arena_alloc(ctx->arena, ts_tensor_bytes(t));
    if (!t->raw) {
        // The header may already be on the tape; take it off again.
        if (ctx->tape == t) ctx->tape = t->tape_prev;
        return arena_failed(ctx);
    }
    return t;
}

ts_tensor *ts_node_view(ts_ctx *ctx, int op, int ndim, const int *dims, ts_tensor *src,
                        void *data) {
    if (ctx->status) return NULL;
    ts_tensor *t = node_header(ctx, op, ndim, dims, 1, &src);
    if (t) t->raw = data;
    return t;
}

ts_tensor *ts_constant(ts_ctx *ctx, int ndim, const int *dims, const double *values) {
    ts_tensor *t = ts_node(ctx, TS_OP_LEAF, ndim, dims, 0, NULL);  // no inputs: never on the tape
    if (!t) return NULL;
    ts_values_convert(t->raw, t->dtype, values, TS_F64, t->size);
    snprintf(t->name, sizeof t->name, "constant");
    return t;
}

ts_tensor *ts_to_f64(ts_ctx *ctx, ts_tensor *t) {
    if (!t || t->dtype == TS_F64) return t;
    ts_tensor *copy = ts_tensor_new_dtype(ctx->arena, TS_F64, t->ndim, t->shape);
    if (!copy) return arena_failed(ctx);
    ts_values_convert(copy->data, TS_F64, t->raw, t->dtype, t->size);
    snprintf(copy->name, sizeof copy->name, "%s", t->name);
    return copy;
}
