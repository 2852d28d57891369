// The tape walked backwards: the op table's backward functions, a row per
// op, and ts_backward, which calls them. It sits above the ops' files (their
// forwards make nodes through autograd/graph.c, below them), so the library's
// symbols point one way (docs/design.md, "The house").
#include "autograd/graph.h"

#include "autograd/ops_internal.h"

// One row per op; the size check keeps the table and the enum in step.
// An op written once for both dtypes has {f, f_f32}; {f} alone: float64 only.
const ts_op_backward ts_op_backwards[TS_OP_COUNT] = {
    [TS_OP_LEAF] = {{NULL}},
    [TS_OP_ADD] = {{ts_add_backward, ts_add_backward_f32}},
    [TS_OP_SUB] = {{ts_sub_backward, ts_sub_backward_f32}},
    [TS_OP_MUL] = {{ts_mul_backward, ts_mul_backward_f32}},
    [TS_OP_SCALE] = {{ts_scale_backward, ts_scale_backward_f32}},
    [TS_OP_ADD_BIAS] = {{ts_add_bias_backward, ts_add_bias_backward_f32}},
    [TS_OP_MATMUL] = {{ts_matmul_backward, ts_matmul_backward_f32}},
    [TS_OP_LINEAR] = {{ts_linear_backward, ts_linear_backward_f32}},
    [TS_OP_TANH] = {{ts_tanh_backward, ts_tanh_backward_f32}},
    [TS_OP_SIGMOID] = {{ts_sigmoid_backward, ts_sigmoid_backward_f32}},
    [TS_OP_RELU] = {{ts_relu_backward, ts_relu_backward_f32}},
    [TS_OP_EXP] = {{ts_exp_backward, ts_exp_backward_f32}},
    [TS_OP_LOG] = {{ts_log_backward, ts_log_backward_f32}},
    [TS_OP_SUM] = {{ts_sum_backward, ts_sum_backward_f32}},
    [TS_OP_MEAN] = {{ts_mean_backward, ts_mean_backward_f32}},
    [TS_OP_CONCAT] = {{ts_concat_backward, ts_concat_backward_f32}},
    [TS_OP_SLICE_COLS] = {{ts_slice_cols_backward, ts_slice_cols_backward_f32}},
    [TS_OP_GATHER_ROWS] = {{ts_gather_rows_backward, ts_gather_rows_backward_f32}},
    [TS_OP_SLICE_ROWS] = {{ts_slice_rows_backward, ts_slice_rows_backward_f32}},
    [TS_OP_RESHAPE] = {{ts_reshape_backward, ts_reshape_backward_f32}},
    [TS_OP_SOFTMAX] = {{ts_softmax_backward, ts_softmax_backward_f32}},
    [TS_OP_LOG_SOFTMAX] = {{ts_log_softmax_backward, ts_log_softmax_backward_f32}},
    [TS_OP_CROSS_ENTROPY] = {{ts_cross_entropy_backward, ts_cross_entropy_backward_f32}},
    [TS_OP_LINEAR_CROSS_ENTROPY] = {{ts_linear_cross_entropy_backward, ts_linear_cross_entropy_backward_f32}},
    [TS_OP_DROPOUT] = {{ts_dropout_backward, ts_dropout_backward_f32}},
    [TS_OP_SWAP01] = {{ts_swap01_backward, ts_swap01_backward_f32}},
    [TS_OP_STACK_ROWS] = {{ts_stack_rows_backward, ts_stack_rows_backward_f32}},
    [TS_OP_GRU_CELL] = {{ts_gru_cell_backward, ts_gru_cell_backward_f32}},
    [TS_OP_LSTM_CELL] = {{ts_lstm_cell_backward, ts_lstm_cell_backward_f32}},
    [TS_OP_ATTN_DOT] = {{ts_attn_dot_backward, ts_attn_dot_backward_f32}},
    [TS_OP_ATTN_ADDITIVE] = {{ts_attn_additive_backward, ts_attn_additive_backward_f32}},
    [TS_OP_ATTN_CONTEXT] = {{ts_attn_context_backward, ts_attn_context_backward_f32}},
    [TS_OP_BMM] = {{ts_bmm_backward, ts_bmm_backward_f32}},
    [TS_OP_SPLIT_HEADS] = {{ts_split_heads_backward, ts_split_heads_backward_f32}},
    [TS_OP_MERGE_HEADS] = {{ts_merge_heads_backward, ts_merge_heads_backward_f32}},
    [TS_OP_LAYER_NORM] = {{ts_layer_norm_backward, ts_layer_norm_backward_f32}},
    [TS_OP_MHA] = {{ts_mha_backward, ts_mha_backward_f32}},
};
_Static_assert(sizeof ts_op_backwards / sizeof ts_op_backwards[0] == TS_OP_COUNT, "one table row per op");

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
        ts_backward_fn backward = ts_op_backwards[node->op].of[node->dtype];
        if (!backward)
            return ctx->status = ts_fail(TS_ERR_ARG, "%s: no backward for %s yet", ts_op_names[node->op],
                                         ts_dtype_name(node->dtype));
        int rc = backward(ctx, node);
        if (rc) return ctx->status ? ctx->status : (ctx->status = rc);
    }
    return TS_OK;
}
