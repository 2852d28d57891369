// The fused GRU cell: PyTorch's formulation (docs/models.md), gates r, z, n.
// B = batch rows, H = hidden size. One node instead of ~15 primitive ones:
// the gates are computed in one pass and the backward is written by hand,
// both in ops_gru_t.h, compiled once per dtype.
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
    void *gates;         // (B, 3H) [r z n], written
    const void *gh;      // (B, 3H) h W_hh^T + b_hh
} gru_pass;

// Each gate value costs about four plain passes (an exp or a tanh, the adds
// around it), so a batch of 64 rows at H 256 is cut where a plain pass of
// 2e5 values would be.
static int gru_parts(int B, int H) { return ts_parallel_parts(4 * (size_t)B * 3 * (size_t)H, B); }

#define TS_TEMPLATE "autograd/ops_gru_t.h"
#include "tensor/dtype_twice.h"

// h' = GRU(gates_x, h) with W_hh, b_hh; rows with mask[b] == 0 keep h.
ts_tensor *ts_gru_cell(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *h, ts_tensor *w_hh,
                       ts_tensor *b_hh, const double *mask) {
    if (!gates_x || !h || !w_hh || !b_hh) return NULL;
    int B = h->shape[0], H = ts_cols(h);
    char s1[48], s2[48], s3[48], s4[48];
    if (h->ndim != 2 || gates_x->ndim != 2 || gates_x->shape[0] != B || gates_x->shape[1] != 3 * H ||
        w_hh->ndim != 2 || w_hh->shape[0] != 3 * H || w_hh->shape[1] != H || (int)b_hh->size != 3 * H)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE,
                           "gru_cell: gates_x %s, h %s, w_hh %s, b_hh %s do not fit (B, 3H), (B, H), (3H, H), (3H)",
                           SHAPE(gates_x, s1), SHAPE(h, s2), SHAPE(w_hh, s3), SHAPE(b_hh, s4));
    ts_tensor *src[4] = {gates_x, h, w_hh, b_hh};
    ts_tensor *y = ts_node(ctx, TS_OP_GRU_CELL, 2, (int[]){B, H}, 4, src);
    if (!y) return NULL;
    if (mask) {  // copied: nothing on the tape points into the caller's buffers
        double *mask_copy = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(double));
        if (!mask_copy) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        memcpy(mask_copy, mask, (size_t)B * sizeof(double));
        y->aux = mask_copy;
    }
    return TS_FORWARD(ctx, y, gru_cell_forward);
}
