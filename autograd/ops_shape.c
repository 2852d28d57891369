// Shape ops: concatenation and slicing along the last dimension, row gather
// (embedding lookup), slices along the first dimension and reshapes (views).
// The checks and nodes here; the copies, forward and backward side by side,
// in ops_shape_t.h, compiled once per dtype.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include <string.h>

#define TS_TEMPLATE "autograd/ops_shape_t.h"
#include "tensor/dtype_twice.h"

// y = [x_0, x_1, ...] along the last dimension; dx_i += dy[..., offset_i : offset_i + cols_i]
ts_tensor *ts_concat(ts_ctx *ctx, ts_tensor *const *xs, int n) {
    if (n < 1 || n > TS_MAX_SRC)
        return ts_ctx_fail(ctx, TS_ERR_ARG, "concat: %d inputs (1 to %d)", n, TS_MAX_SRC);
    for (int i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    int dims[TS_MAX_DIMS];
    int ndim = xs[0]->ndim;
    memcpy(dims, xs[0]->shape, sizeof dims);
    dims[ndim - 1] = 0;
    for (int i = 0; i < n; i++) {
        int same = xs[i]->ndim == ndim;
        for (int d = 0; same && d < ndim - 1; d++) same = xs[i]->shape[d] == xs[0]->shape[d];
        if (!same) {
            char s0[48], si[48];
            return ts_ctx_fail(ctx, TS_ERR_SHAPE, "concat: input %d has shape %s, input 0 %s", i,
                               SHAPE(xs[i], si), SHAPE(xs[0], s0));
        }
        dims[ndim - 1] += ts_cols(xs[i]);
    }
    ts_tensor *y = ts_node(ctx, TS_OP_CONCAT, ndim, dims, n, xs);
    if (!y) return NULL;
    y->iarg[0] = n;
    return TS_FORWARD(ctx, y, concat_forward);
}
// y = a[..., start : start + n];  da[..., start : start + n] += dy
ts_tensor *ts_slice_cols(ts_ctx *ctx, ts_tensor *a, int start, int n) {
    if (!a) return NULL;
    int cols = ts_cols(a);
    if (start < 0 || n < 1 || start > cols - n)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "slice_cols: columns [%d, %d) outside 0..%d", start,
                           start + n, cols);
    int dims[TS_MAX_DIMS];
    memcpy(dims, a->shape, sizeof dims);
    dims[a->ndim - 1] = n;
    ts_tensor *y = ts_node(ctx, TS_OP_SLICE_COLS, a->ndim, dims, 1, &a);
    if (!y) return NULL;
    y->iarg[0] = start;
    return TS_FORWARD(ctx, y, slice_cols_forward);
}
// y[i] = table[ids[i]];  dtable[ids[i]] += dy[i] unless ids[i] == no_grad_id
ts_tensor *ts_gather_rows(ts_ctx *ctx, ts_tensor *table, const int *ids, int n, int no_grad_id) {
    if (!table) return NULL;
    if (table->ndim != 2 || n < 1) {
        char st[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "gather_rows: table %s must be 2-D and n (%d) > 0",
                           SHAPE(table, st), n);
    }
    int rows = table->shape[0], cols = table->shape[1];
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= rows)
            return ts_ctx_fail(ctx, TS_ERR_ARG, "gather_rows: ids[%d] = %d outside the table's %d rows",
                               i, ids[i], rows);
    ts_tensor *y = ts_node(ctx, TS_OP_GATHER_ROWS, 2, (int[]){n, cols}, 1, &table);
    if (!y) return NULL;
    int *saved_ids = ts_arena_alloc(ctx->arena, (size_t)n * sizeof(int));
    if (!saved_ids) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(saved_ids, ids, (size_t)n * sizeof(int));
    y->aux = saved_ids;
    y->iarg[0] = no_grad_id;
    return TS_FORWARD(ctx, y, gather_rows_forward);
}
// y = a[start : start + n] along the first dimension (a view into a's data);
// da[start : start + n] += dy
ts_tensor *ts_slice_rows(ts_ctx *ctx, ts_tensor *a, int start, int n) {
    if (!a) return NULL;
    if (start < 0 || n < 1 || start > a->shape[0] - n)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "slice_rows: rows [%d, %d) outside 0..%d", start,
                           start + n, a->shape[0]);
    int dims[TS_MAX_DIMS];
    memcpy(dims, a->shape, sizeof dims);
    dims[0] = n;
    size_t stride = a->size / (size_t)a->shape[0];
    ts_tensor *y = ts_node_view(ctx, TS_OP_SLICE_ROWS, a->ndim, dims, a,
                                 (char *)a->raw + (size_t)start * stride * ts_dtype_size(a->dtype));
    if (y) y->iarg[0] = start;
    return y;
}
// y = a viewed with another shape;  da += dy (same layout)
ts_tensor *ts_reshape(ts_ctx *ctx, ts_tensor *a, int ndim, const int *dims) {
    if (!a) return NULL;
    ts_tensor *y = ts_node_view(ctx, TS_OP_RESHAPE, ndim, dims, a, a->raw);
    if (y && y->size != a->size) {
        char sa[48], sy[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "reshape: %s has %zu elements, %s has %zu",
                           SHAPE(a, sa), a->size, SHAPE(y, sy), y->size);
    }
    return y;
}
// y = [x_0; ...; x_{n-1}] along the first dimension; dx_i += dy[rows of x_i]
// The input list lives in the arena (aux); src[] holds only its first entries.
ts_tensor *ts_stack_rows(ts_ctx *ctx, ts_tensor *const *xs, int n) {
    if (n < 1) return ts_ctx_fail(ctx, TS_ERR_ARG, "stack_rows: no inputs");
    for (int i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    int dims[TS_MAX_DIMS];
    memcpy(dims, xs[0]->shape, sizeof dims);
    dims[0] = 0;
    for (int i = 0; i < n; i++) {
        int same = xs[i]->ndim == xs[0]->ndim;
        for (int d = 1; same && d < xs[0]->ndim; d++) same = xs[i]->shape[d] == xs[0]->shape[d];
        if (!same) {
            char s0[48], si[48];
            return ts_ctx_fail(ctx, TS_ERR_SHAPE, "stack_rows: input %d has shape %s, input 0 %s", i,
                               SHAPE(xs[i], si), SHAPE(xs[0], s0));
        }
        dims[0] += xs[i]->shape[0];
    }
    ts_tensor *y = ts_node(ctx, TS_OP_STACK_ROWS, xs[0]->ndim, dims, n, xs);
    ts_tensor **list = y ? ts_arena_alloc(ctx->arena, (size_t)n * sizeof *list) : NULL;
    if (!list) return y ? ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()) : NULL;
    memcpy(list, xs, (size_t)n * sizeof *list);
    y->aux = list;
    y->iarg[0] = n;
    return TS_FORWARD(ctx, y, stack_rows_forward);
}
// y[j, i, :] = a[i, j, :] for a (I, J, K);  da[i, j, :] += dy[j, i, :]
ts_tensor *ts_swap01(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    if (a->ndim != 3) {
        char sa[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "swap01: %s is not 3-D", SHAPE(a, sa));
    }
    int I = a->shape[0], J = a->shape[1], K = a->shape[2];
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_SWAP01, 3, (int[]){J, I, K}, 1, &a), swap01_forward);
}
static ts_tensor *heads_node(ts_ctx *ctx, int op, ts_tensor *x, int heads) {
    if (!x) return NULL;
    int split = op == TS_OP_SPLIT_HEADS;
    int width = split ? x->shape[2] : x->shape[2] * heads;
    if (x->ndim != 3 || heads < 1 || width % heads || (!split && x->shape[0] % heads)) {
        char sx[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: %s does not hold %d heads", ts_op_names[op], SHAPE(x, sx), heads);
    }
    int B = split ? x->shape[0] : x->shape[0] / heads, T = x->shape[1], Dh = width / heads;
    int dims[3] = {split ? B * heads : B, T, split ? Dh : width};
    ts_tensor *y = ts_node(ctx, op, 3, dims, 1, &x);
    if (!y) return NULL;
    y->iarg[0] = heads;
    return TS_FORWARD(ctx, y, heads_forward);
}
ts_tensor *ts_split_heads(ts_ctx *ctx, ts_tensor *x, int heads) { return heads_node(ctx, TS_OP_SPLIT_HEADS, x, heads); }
ts_tensor *ts_merge_heads(ts_ctx *ctx, ts_tensor *x, int heads) { return heads_node(ctx, TS_OP_MERGE_HEADS, x, heads); }
