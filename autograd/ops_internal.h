// For op implementations only: every op's backward, referenced by the op
// table in graph.c, and small helpers the op files share.
#ifndef TS_OPS_INTERNAL_H
#define TS_OPS_INTERNAL_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"

int ts_add_backward(ts_ctx *ctx, ts_tensor *out);
int ts_add_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_sub_backward(ts_ctx *ctx, ts_tensor *out);
int ts_sub_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_mul_backward(ts_ctx *ctx, ts_tensor *out);
int ts_mul_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_scale_backward(ts_ctx *ctx, ts_tensor *out);
int ts_scale_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_add_bias_backward(ts_ctx *ctx, ts_tensor *out);
int ts_add_bias_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_matmul_backward(ts_ctx *ctx, ts_tensor *out);
int ts_matmul_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_linear_backward(ts_ctx *ctx, ts_tensor *out);
int ts_linear_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_tanh_backward(ts_ctx *ctx, ts_tensor *out);
int ts_tanh_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_sigmoid_backward(ts_ctx *ctx, ts_tensor *out);
int ts_sigmoid_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_relu_backward(ts_ctx *ctx, ts_tensor *out);
int ts_relu_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_exp_backward(ts_ctx *ctx, ts_tensor *out);
int ts_exp_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_log_backward(ts_ctx *ctx, ts_tensor *out);
int ts_log_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_sum_backward(ts_ctx *ctx, ts_tensor *out);
int ts_sum_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_mean_backward(ts_ctx *ctx, ts_tensor *out);
int ts_mean_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_concat_backward(ts_ctx *ctx, ts_tensor *out);
int ts_concat_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_slice_cols_backward(ts_ctx *ctx, ts_tensor *out);
int ts_slice_cols_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_gather_rows_backward(ts_ctx *ctx, ts_tensor *out);
int ts_gather_rows_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_slice_rows_backward(ts_ctx *ctx, ts_tensor *out);
int ts_slice_rows_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_reshape_backward(ts_ctx *ctx, ts_tensor *out);
int ts_reshape_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_softmax_backward(ts_ctx *ctx, ts_tensor *out);
int ts_softmax_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_log_softmax_backward(ts_ctx *ctx, ts_tensor *out);
int ts_log_softmax_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_cross_entropy_backward(ts_ctx *ctx, ts_tensor *out);
int ts_cross_entropy_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_linear_cross_entropy_backward(ts_ctx *ctx, ts_tensor *out);
int ts_linear_cross_entropy_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_dropout_backward(ts_ctx *ctx, ts_tensor *out);
int ts_dropout_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_swap01_backward(ts_ctx *ctx, ts_tensor *out);
int ts_swap01_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_stack_rows_backward(ts_ctx *ctx, ts_tensor *out);
int ts_stack_rows_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_gru_cell_backward(ts_ctx *ctx, ts_tensor *out);
int ts_gru_cell_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_lstm_cell_backward(ts_ctx *ctx, ts_tensor *out);
int ts_lstm_cell_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_attn_dot_backward(ts_ctx *ctx, ts_tensor *out);
int ts_attn_dot_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_attn_additive_backward(ts_ctx *ctx, ts_tensor *out);
int ts_attn_additive_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_attn_context_backward(ts_ctx *ctx, ts_tensor *out);
int ts_attn_context_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_bmm_backward(ts_ctx *ctx, ts_tensor *out);
int ts_bmm_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_split_heads_backward(ts_ctx *ctx, ts_tensor *out);
int ts_split_heads_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_merge_heads_backward(ts_ctx *ctx, ts_tensor *out);
int ts_merge_heads_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_layer_norm_backward(ts_ctx *ctx, ts_tensor *out);
int ts_layer_norm_backward_f32(ts_ctx *ctx, ts_tensor *out);
int ts_mha_backward(ts_ctx *ctx, ts_tensor *out);
int ts_mha_backward_f32(ts_ctx *ctx, ts_tensor *out);

// The gradient of input i of `out` if it needs one (allocating it), else NULL.
// Backward code: `REAL *da = input_grad(ctx, out, 0); if (da) ...`.
// When the arena is full ctx->status is set; backward functions return it.
static inline void *input_grad(ts_ctx *ctx, ts_tensor *out, int i) {
    ts_tensor *in = out->src[i];
    return in && in->requires_grad ? ts_grad(ctx, in) : NULL;
}

// For a backward whose input i's gradient is dy itself (reshape; either
// side of an add): when nothing else reads that input and it has no
// gradient yet, the input takes out's gradient buffer as its own and 1 is
// returned (nothing to add). Its gradient would be 0 + dy, and a gradient
// summed from +0 never holds -0: the same bits, without a buffer to zero
// and a pass to add. Nothing writes out's gradient after out's backward.
static inline int share_grad(ts_tensor *out, int i) {
    ts_tensor *in = out->src[i];
    if (!in->requires_grad || in->grad_raw || in->uses != 1 || in->persistent) return 0;
    in->grad_raw = out->grad_raw;
    return 1;
}

// For a backward whose product writes input i's whole gradient: when
// nothing else reads that input and it has no gradient yet, its buffer is
// allocated without zeroing and *beta is 0 (the product zeroes as it
// writes, on whichever thread runs it; OpenBLAS takes other kernels for beta
// 0, so the sums round differently from beta 1 on zeros, never reading the
// stale memory: tests/test_ops.c poisons it); else input_grad's, *beta = 1.
// NULL when the input needs no gradient or the arena is full (ctx->status).
static inline void *input_grad_written(ts_ctx *ctx, ts_tensor *out, int i, double *beta) {
    ts_tensor *in = out->src[i];
    *beta = 1.0;
    if (!in || !in->requires_grad) return NULL;
    if (!in->grad_raw && in->uses == 1 && !in->persistent) {
        in->grad_raw = ts_arena_alloc(ctx->arena, ts_tensor_bytes(in));
        if (!in->grad_raw) return ctx->status ? NULL : (ctx->status = TS_ERR_ARENA, NULL);
        *beta = 0.0;
        return in->grad_raw;
    }
    return ts_grad(ctx, in);
}

// A forward's arithmetic for one dtype (an op's *_t.h template): fills y
// from y->src (and y->iarg, darg); returns ctx->status, set through
// ts_ctx_fail when it fails (a full arena).
typedef int (*ts_forward_fn)(ts_ctx *ctx, ts_tensor *y);

// Runs f's instance for y's dtype on a node just made; returns y, or NULL
// when y is NULL or the forward failed.
static inline ts_tensor *ts_forward(ts_ctx *ctx, ts_tensor *y, ts_forward_fn f64, ts_forward_fn f32) {
    if (!y) return NULL;
    return (y->dtype == TS_F32 ? f32 : f64)(ctx, y) ? NULL : y;
}
#define TS_FORWARD(ctx, y, f) ts_forward((ctx), (y), f, f##_f32)

// How many query rows share each row of an input that holds `shared` rows
// for `rows` queries (autograd/ops.h, "Shared memory"): rows / shared when
// it divides and gradients are off (no backward sums over the sharing rows),
// 1 when they are equal; else 0 with ctx failed naming op.
static inline int ts_shared_rows(ts_ctx *ctx, const char *op, int rows, int shared) {
    if (rows == shared) return 1;
    if (shared > 0 && rows % shared == 0 && !ctx->grad_enabled) return rows / shared;
    ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: %d rows cannot share %d rows of memory%s", op, rows, shared,
                ctx->grad_enabled ? " with gradients on" : "");
    return 0;
}

// keep[i] = 0 with probability p, else 1 / (1 - p), for i < n, in `dtype`,
// drawn from rng in order: inverted dropout's factors (ts_dropout, and
// ts_mha_dropout on the attention weights).
void ts_dropout_keep(void *keep, int dtype, size_t n, double p, gsl_rng *rng);

// "(2, 3)" for messages, in a caller-provided buffer.
#define SHAPE(t, buf) ts_shape_str((t), (buf), sizeof(buf))

#endif
