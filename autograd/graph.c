#include "autograd/graph.h"

#include "autograd/ops_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// One row per op; the size check keeps the table and the enum in step.
// An op written once for both dtypes has {f, f_f32}; {f} alone: float64 only.
const ts_op_info ts_ops[TS_OP_COUNT] = {
    [TS_OP_LEAF] = {"leaf", {NULL}},
    [TS_OP_ADD] = {"add", {ts_add_backward, ts_add_backward_f32}},
    [TS_OP_SUB] = {"sub", {ts_sub_backward, ts_sub_backward_f32}},
    [TS_OP_MUL] = {"mul", {ts_mul_backward, ts_mul_backward_f32}},
    [TS_OP_SCALE] = {"scale", {ts_scale_backward, ts_scale_backward_f32}},
    [TS_OP_ADD_BIAS] = {"add_bias", {ts_add_bias_backward, ts_add_bias_backward_f32}},
    [TS_OP_MATMUL] = {"matmul", {ts_matmul_backward, ts_matmul_backward_f32}},
    [TS_OP_LINEAR] = {"linear", {ts_linear_backward, ts_linear_backward_f32}},
    [TS_OP_TANH] = {"tanh", {ts_tanh_backward, ts_tanh_backward_f32}},
    [TS_OP_SIGMOID] = {"sigmoid", {ts_sigmoid_backward, ts_sigmoid_backward_f32}},
    [TS_OP_RELU] = {"relu", {ts_relu_backward, ts_relu_backward_f32}},
    [TS_OP_EXP] = {"exp", {ts_exp_backward, ts_exp_backward_f32}},
    [TS_OP_LOG] = {"log", {ts_log_backward, ts_log_backward_f32}},
    [TS_OP_SUM] = {"sum", {ts_sum_backward, ts_sum_backward_f32}},
    [TS_OP_MEAN] = {"mean", {ts_mean_backward, ts_mean_backward_f32}},
    [TS_OP_CONCAT] = {"concat", {ts_concat_backward, ts_concat_backward_f32}},
    [TS_OP_SLICE_COLS] = {"slice_cols", {ts_slice_cols_backward, ts_slice_cols_backward_f32}},
    [TS_OP_GATHER_ROWS] = {"gather_rows", {ts_gather_rows_backward, ts_gather_rows_backward_f32}},
    [TS_OP_SLICE_ROWS] = {"slice_rows", {ts_slice_rows_backward, ts_slice_rows_backward_f32}},
    [TS_OP_RESHAPE] = {"reshape", {ts_reshape_backward, ts_reshape_backward_f32}},
    [TS_OP_SOFTMAX] = {"softmax", {ts_softmax_backward, ts_softmax_backward_f32}},
    [TS_OP_LOG_SOFTMAX] = {"log_softmax", {ts_log_softmax_backward, ts_log_softmax_backward_f32}},
    [TS_OP_CROSS_ENTROPY] = {"cross_entropy", {ts_cross_entropy_backward, ts_cross_entropy_backward_f32}},
    [TS_OP_LINEAR_CROSS_ENTROPY] = {"linear_cross_entropy", {ts_linear_cross_entropy_backward, ts_linear_cross_entropy_backward_f32}},
    [TS_OP_DROPOUT] = {"dropout", {ts_dropout_backward, ts_dropout_backward_f32}},
    [TS_OP_SWAP01] = {"swap01", {ts_swap01_backward, ts_swap01_backward_f32}},
    [TS_OP_STACK_ROWS] = {"stack_rows", {ts_stack_rows_backward, ts_stack_rows_backward_f32}},
    [TS_OP_GRU_CELL] = {"gru_cell", {ts_gru_cell_backward, ts_gru_cell_backward_f32}},
    [TS_OP_LSTM_CELL] = {"lstm_cell", {ts_lstm_cell_backward, ts_lstm_cell_backward_f32}},
    [TS_OP_ATTN_DOT] = {"attn_dot", {ts_attn_dot_backward, ts_attn_dot_backward_f32}},
    [TS_OP_ATTN_ADDITIVE] = {"attn_additive", {ts_attn_additive_backward, ts_attn_additive_backward_f32}},
    [TS_OP_ATTN_CONTEXT] = {"attn_context", {ts_attn_context_backward, ts_attn_context_backward_f32}},
    [TS_OP_BMM] = {"bmm", {ts_bmm_backward, ts_bmm_backward_f32}},
    [TS_OP_SPLIT_HEADS] = {"split_heads", {ts_split_heads_backward, ts_split_heads_backward_f32}},
    [TS_OP_MERGE_HEADS] = {"merge_heads", {ts_merge_heads_backward, ts_merge_heads_backward_f32}},
    [TS_OP_LAYER_NORM] = {"layer_norm", {ts_layer_norm_backward, ts_layer_norm_backward_f32}},
    [TS_OP_MHA] = {"mha", {ts_mha_backward, ts_mha_backward_f32}},
};
_Static_assert(sizeof ts_ops / sizeof ts_ops[0] == TS_OP_COUNT, "one table row per op");

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
    if (ts_shape_set(t, ndim, dims, ts_ops[op].name) != TS_OK)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s", ts_last_error());
    t->op = op;
    t->dtype = nsrc ? src[0]->dtype : ctx->dtype;
    int needs_grad = 0;
    for (int i = 0; i < nsrc; i++) {
        if (src[i]->dtype != t->dtype)
            return ts_ctx_fail(ctx, TS_ERR_ARG, "%s: input 0 is %s, input %d %s", ts_ops[op].name,
                               ts_dtype_name(t->dtype), i, ts_dtype_name(src[i]->dtype));
        if (i < TS_MAX_SRC) t->src[i] = src[i];
        needs_grad |= src[i]->requires_grad;
    }
    if (op != TS_OP_LEAF && !ts_ops[op].backward[t->dtype])
        return ts_ctx_fail(ctx, TS_ERR_ARG, "%s: not written for %s yet", ts_ops[op].name, ts_dtype_name(t->dtype));
    snprintf(t->name, sizeof t->name, "%s", ts_ops[op].name);
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

int ts_backward(ts_ctx *ctx, ts_tensor *loss) { return ts_backward_weighted(ctx, loss, 1.0); }

int ts_backward_weighted(ts_ctx *ctx, ts_tensor *loss, double weight) {
    if (ctx->status) return ctx->status;
    if (!loss) return ts_fail(TS_ERR_ARG, "backward: no loss tensor");
    if (loss->size != 1) {
        char shape[48];
        return ctx->status = ts_fail(TS_ERR_SHAPE, "backward: the loss has shape %s; it must be a single number",
                                     ts_shape_str(loss, shape, sizeof shape));
    }
    if (!loss->requires_grad)
        return ctx->status = ts_fail(TS_ERR_ARG, "backward: the loss depends on nothing that requires a gradient"
                                                 " (grad mode off?)");
    if (!ts_grad(ctx, loss)) return ctx->status;
    if (loss->dtype == TS_F32) loss->grad_f32[0] += (float)weight;
    else loss->grad[0] += weight;
    for (ts_tensor *node = ctx->tape; node; node = node->tape_prev) {
        if (!node->grad_raw) continue;  // nothing flows from the loss through this node
        int rc = ts_ops[node->op].backward[node->dtype](ctx, node);
        if (rc) return ctx->status ? ctx->status : (ctx->status = rc);
    }
    return TS_OK;
}
