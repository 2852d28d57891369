// The fused LSTM cell: PyTorch's formulation (docs/models.md), gates i, f,
// g, o. B = batch rows, H = hidden size. Its state is one tensor of two
// parts, (2B, H) = [h; c] (models/cell.h), in and out, so the step is one
// node, and h' and c' are views of its rows. The gates are computed in one
// pass and the backward is written by hand, both in ops_lstm_t.h, compiled
// once per dtype.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>
#include <string.h>

// The forward's gate pass, cut into parts over the batch rows
// (tensor/parallel.h): a row's gates are its own, the same bits in any part.
typedef struct {
    const ts_tensor *y;  // the node: its inputs, mask (aux) and output
    void *gates;         // (B, 4H) [i f g o] after their activations, written
    void *tanh_c;        // (B, H) tanh(c'), written
    const void *gh;      // (B, 4H) h W_hh^T + b_hh
} lstm_pass;

// Each gate value costs about four plain passes (an exp or a tanh, the adds
// around it), as the GRU's (ops_gru.c).
static int lstm_parts(int B, int H) { return ts_parallel_parts(4 * (size_t)B * 4 * (size_t)H, B); }

#define TS_TEMPLATE "autograd/ops_lstm_t.h"
#include "tensor/dtype_twice.h"

// [h'; c'] = LSTM(gates_x, [h; c]) with W_hh, b_hh; rows with mask[b] == 0 keep h and c.
ts_tensor *ts_lstm_cell(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *state, ts_tensor *w_hh, ts_tensor *b_hh,
                        const double *mask) {
    if (!gates_x || !state || !w_hh || !b_hh) return NULL;
    int B = state->shape[0] / 2, H = ts_cols(state);
    char s1[48], s2[48], s3[48], s4[48];
    if (state->ndim != 2 || state->shape[0] % 2 || gates_x->ndim != 2 || gates_x->shape[0] != B ||
        gates_x->shape[1] != 4 * H || w_hh->ndim != 2 || w_hh->shape[0] != 4 * H || w_hh->shape[1] != H ||
        (int)b_hh->size != 4 * H)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE,
                           "lstm_cell: gates_x %s, state %s, w_hh %s, b_hh %s do not fit (B, 4H), (2B, H), (4H, H), (4H)",
                           SHAPE(gates_x, s1), SHAPE(state, s2), SHAPE(w_hh, s3), SHAPE(b_hh, s4));
    ts_tensor *src[4] = {gates_x, state, w_hh, b_hh};
    ts_tensor *y = ts_node(ctx, TS_OP_LSTM_CELL, 2, (int[]){2 * B, H}, 4, src);
    if (!y) return NULL;
    if (mask) {  // copied: nothing on the tape points into the caller's buffers
        double *mask_copy = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(double));
        if (!mask_copy) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        memcpy(mask_copy, mask, (size_t)B * sizeof(double));
        y->aux = mask_copy;
    }
    return TS_FORWARD(ctx, y, lstm_cell_forward);
}
