// Shape ops: concatenation and slicing along the last dimension, row gather
// (embedding lookup), slices along the first dimension and reshapes (views).
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include <string.h>

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
    size_t rows = ts_rows(y);
    int cols = ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        double *row = y->data + r * cols;
        for (int i = 0; i < n; i++) {
            int ci = ts_cols(xs[i]);
            memcpy(row, xs[i]->data + r * ci, (size_t)ci * sizeof(double));
            row += ci;
        }
    }
    return y;
}
int ts_concat_backward(ts_ctx *ctx, ts_tensor *y) {
    size_t rows = ts_rows(y);
    int cols = ts_cols(y), offset = 0;
    for (int i = 0; i < y->iarg[0]; i++) {
        int ci = ts_cols(y->src[i]);
        double *dx = input_grad(ctx, y, i);
        if (dx)
            for (size_t r = 0; r < rows; r++)
                for (int c = 0; c < ci; c++) dx[r * ci + c] += y->grad[r * cols + offset + c];
        offset += ci;
    }
    return ctx->status;
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
    size_t rows = ts_rows(a);
    for (size_t r = 0; r < rows; r++)
        memcpy(y->data + r * n, a->data + r * cols + start, (size_t)n * sizeof(double));
    return y;
}
int ts_slice_cols_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y);
    int n = ts_cols(y), cols = ts_cols(y->src[0]), start = y->iarg[0];
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < n; c++) da[r * cols + start + c] += y->grad[r * n + c];
    return ctx->status;
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
    for (int i = 0; i < n; i++)
        memcpy(y->data + (size_t)i * cols, table->data + (size_t)ids[i] * cols,
               (size_t)cols * sizeof(double));
    return y;
}
int ts_gather_rows_backward(ts_ctx *ctx, ts_tensor *y) {
    double *dtable = input_grad(ctx, y, 0);
    if (!dtable) return ctx->status;
    const int *ids = y->aux;
    int n = y->shape[0], cols = y->shape[1];
    for (int i = 0; i < n; i++) {
        if (ids[i] == y->iarg[0]) continue;  // the padding row learns nothing
        double *row = dtable + (size_t)ids[i] * cols;
        const double *g = y->grad + (size_t)i * cols;
        for (int c = 0; c < cols; c++) row[c] += g[c];
    }
    return ctx->status;
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
    ts_tensor *y = ts_node_view(ctx, TS_OP_SLICE_ROWS, a->ndim, dims, a, a->data + (size_t)start * stride);
    if (y) y->iarg[0] = start;
    return y;
}
int ts_slice_rows_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    ts_tensor *a = y->src[0];
    double *dst = da + (size_t)y->iarg[0] * (a->size / (size_t)a->shape[0]);
    for (size_t i = 0; i < y->size; i++) dst[i] += y->grad[i];
    return ctx->status;
}

// y = a viewed with another shape;  da += dy (same layout)
ts_tensor *ts_reshape(ts_ctx *ctx, ts_tensor *a, int ndim, const int *dims) {
    if (!a) return NULL;
    ts_tensor *y = ts_node_view(ctx, TS_OP_RESHAPE, ndim, dims, a, a->data);
    if (y && y->size != a->size) {
        char sa[48], sy[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "reshape: %s has %zu elements, %s has %zu",
                           SHAPE(a, sa), a->size, SHAPE(y, sy), y->size);
    }
    return y;
}
int ts_reshape_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i];
    return ctx->status;
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
    double *dst = y->data;
    for (int i = 0; i < n; i++) {
        memcpy(dst, xs[i]->data, xs[i]->size * sizeof(double));
        dst += xs[i]->size;
    }
    return y;
}
int ts_stack_rows_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *const *list = y->aux;
    const double *g = y->grad;
    for (int i = 0; i < y->iarg[0]; i++) {
        ts_tensor *x = list[i];
        double *dx = x->requires_grad ? ts_grad(ctx, x) : NULL;
        if (dx)
            for (size_t k = 0; k < x->size; k++) dx[k] += g[k];
        g += x->size;
    }
    return ctx->status;
}

// y[j, i, :] = a[i, j, :] for a (I, J, K);  da[i, j, :] += dy[j, i, :]
ts_tensor *ts_swap01(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    if (a->ndim != 3) {
        char sa[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "swap01: %s is not 3-D", SHAPE(a, sa));
    }
    int I = a->shape[0], J = a->shape[1], K = a->shape[2];
    ts_tensor *y = ts_node(ctx, TS_OP_SWAP01, 3, (int[]){J, I, K}, 1, &a);
    if (!y) return NULL;
    for (int i = 0; i < I; i++)
        for (int j = 0; j < J; j++)
            memcpy(y->data + ((size_t)j * I + i) * K, a->data + ((size_t)i * J + j) * K, (size_t)K * sizeof(double));
    return y;
}
int ts_swap01_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    int J = y->shape[0], I = y->shape[1], K = y->shape[2];
    for (int i = 0; i < I; i++)
        for (int j = 0; j < J; j++) {
            double *dst = da + ((size_t)i * J + j) * K;
            const double *g = y->grad + ((size_t)j * I + i) * K;
            for (int k = 0; k < K; k++) dst[k] += g[k];
        }
    return ctx->status;
}

// Heads: x (B, T, H Dh) <-> (B H, T, Dh). One copy kernel serves all four
// directions: `to_heads` says which side the heads are split on.
static void permute_heads(double *dst, const double *src, int B, int T, int H, int Dh, int to_heads, int add) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                size_t merged = ((size_t)b * T + t) * H * Dh + (size_t)h * Dh;  // x[b, t, h Dh]
                size_t split = (((size_t)b * H + h) * T + t) * Dh;              // y[b H + h, t, 0]
                double *d = dst + (to_heads ? split : merged);
                const double *s = src + (to_heads ? merged : split);
                for (int j = 0; j < Dh; j++) d[j] = add ? d[j] + s[j] : s[j];
            }
}

static ts_tensor *heads_node(ts_ctx *ctx, int op, ts_tensor *x, int heads) {
    if (!x) return NULL;
    int split = op == TS_OP_SPLIT_HEADS;
    int width = split ? x->shape[2] : x->shape[2] * heads;
    if (x->ndim != 3 || heads < 1 || width % heads || (!split && x->shape[0] % heads)) {
        char sx[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: %s does not hold %d heads", ts_ops[op].name, SHAPE(x, sx), heads);
    }
    int B = split ? x->shape[0] : x->shape[0] / heads, T = x->shape[1], Dh = width / heads;
    int dims[3] = {split ? B * heads : B, T, split ? Dh : width};
    ts_tensor *y = ts_node(ctx, op, 3, dims, 1, &x);
    if (!y) return NULL;
    y->iarg[0] = heads;
    permute_heads(y->data, x->data, B, T, heads, Dh, split, 0);
    return y;
}
static int heads_backward(ts_ctx *ctx, ts_tensor *y, int split) {
    double *dx = input_grad(ctx, y, 0);
    if (!dx) return ctx->status;
    int H = y->iarg[0], T = y->shape[1];
    int B = split ? y->shape[0] / H : y->shape[0], Dh = split ? y->shape[2] : y->shape[2] / H;
    permute_heads(dx, y->grad, B, T, H, Dh, !split, 1);
    return ctx->status;
}

ts_tensor *ts_split_heads(ts_ctx *ctx, ts_tensor *x, int heads) { return heads_node(ctx, TS_OP_SPLIT_HEADS, x, heads); }
int ts_split_heads_backward(ts_ctx *ctx, ts_tensor *y) { return heads_backward(ctx, y, 1); }
ts_tensor *ts_merge_heads(ts_ctx *ctx, ts_tensor *x, int heads) { return heads_node(ctx, TS_OP_MERGE_HEADS, x, heads); }
int ts_merge_heads_backward(ts_ctx *ctx, ts_tensor *y) { return heads_backward(ctx, y, 0); }
