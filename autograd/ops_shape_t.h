// Shape ops for one dtype, compiled twice by ops_shape.c
// (tensor/dtype_twice.h): copies forward, sums of gradients backward.

// y = [x_0, x_1, ...] along the last dimension (iarg[0] inputs);
// dx_i += dy[..., offset_i : offset_i + cols_i]
static int FN(concat_forward)(ts_ctx *ctx, ts_tensor *y) {
    size_t rows = ts_rows(y);
    int cols = ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        REAL *row = DATA(y) + r * cols;
        for (int i = 0; i < y->iarg[0]; i++) {
            int ci = ts_cols(y->src[i]);
            memcpy(row, DATA(y->src[i]) + r * ci, (size_t)ci * sizeof(REAL));
            row += ci;
        }
    }
    return ctx->status;
}
int FN(ts_concat_backward)(ts_ctx *ctx, ts_tensor *y) {
    size_t rows = ts_rows(y);
    int cols = ts_cols(y), offset = 0;
    const REAL *dy = GRAD(y);
    for (int i = 0; i < y->iarg[0]; i++) {
        int ci = ts_cols(y->src[i]);
        REAL *dx = input_grad(ctx, y, i);
        if (dx)
            for (size_t r = 0; r < rows; r++)
                for (int c = 0; c < ci; c++) dx[r * ci + c] += dy[r * cols + offset + c];
        offset += ci;
    }
    return ctx->status;
}

// y = a[..., start : start + n] (start = iarg[0]);  da[..., start : start + n] += dy
static int FN(slice_cols_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *a = y->src[0];
    size_t rows = ts_rows(a);
    int n = ts_cols(y), cols = ts_cols(a), start = y->iarg[0];
    for (size_t r = 0; r < rows; r++)
        memcpy(DATA(y) + r * n, DATA(a) + r * cols + start, (size_t)n * sizeof(REAL));
    return ctx->status;
}
int FN(ts_slice_cols_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y);
    int n = ts_cols(y), cols = ts_cols(y->src[0]), start = y->iarg[0];
    const REAL *dy = GRAD(y);
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < n; c++) da[r * cols + start + c] += dy[r * n + c];
    return ctx->status;
}

// y[i] = table[ids[i]] (ids = aux);  dtable[ids[i]] += dy[i] unless ids[i] == iarg[0]
static int FN(gather_rows_forward)(ts_ctx *ctx, ts_tensor *y) {
    const int *ids = y->aux;
    int n = y->shape[0], cols = y->shape[1];
    for (int i = 0; i < n; i++)
        memcpy(DATA(y) + (size_t)i * cols, DATA(y->src[0]) + (size_t)ids[i] * cols, (size_t)cols * sizeof(REAL));
    return ctx->status;
}
int FN(ts_gather_rows_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *dtable = input_grad(ctx, y, 0);
    if (!dtable) return ctx->status;
    const int *ids = y->aux;
    int n = y->shape[0], cols = y->shape[1];
    for (int i = 0; i < n; i++) {
        if (ids[i] == y->iarg[0]) continue;  // the padding row learns nothing
        REAL *row = dtable + (size_t)ids[i] * cols;
        const REAL *g = GRAD(y) + (size_t)i * cols;
        for (int c = 0; c < cols; c++) row[c] += g[c];
    }
    return ctx->status;
}

// y = a[start : start + n] along the first dimension, a view (no forward);
// da[start : start + n] += dy
int FN(ts_slice_rows_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    ts_tensor *a = y->src[0];
    REAL *dst = da + (size_t)y->iarg[0] * (a->size / (size_t)a->shape[0]);
    const REAL *dy = GRAD(y);
    for (size_t i = 0; i < y->size; i++) dst[i] += dy[i];
    return ctx->status;
}

// y = a viewed with another shape (no forward);  da += dy (same layout)
int FN(ts_reshape_backward)(ts_ctx *ctx, ts_tensor *y) {
    if (share_grad(y, 0)) return ctx->status;
    REAL *da = input_grad(ctx, y, 0);
    const REAL *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i];
    return ctx->status;
}

// y = [x_0; ...; x_{n-1}] along the first dimension (the list is aux, n = iarg[0]);
// dx_i += dy[rows of x_i]
static int FN(stack_rows_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *const *list = y->aux;
    REAL *dst = DATA(y);
    for (int i = 0; i < y->iarg[0]; i++) {
        memcpy(dst, DATA(list[i]), list[i]->size * sizeof(REAL));
        dst += list[i]->size;
    }
    return ctx->status;
}
int FN(ts_stack_rows_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *const *list = y->aux;
    const REAL *g = GRAD(y);
    for (int i = 0; i < y->iarg[0]; i++) {
        ts_tensor *x = list[i];
        REAL *dx = x->requires_grad ? ts_grad(ctx, x) : NULL;
        if (dx)
            for (size_t k = 0; k < x->size; k++) dx[k] += g[k];
        g += x->size;
    }
    return ctx->status;
}

// y[j, i, :] = a[i, j, :] for a (I, J, K);  da[i, j, :] += dy[j, i, :]
static int FN(swap01_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *a = y->src[0];
    int I = a->shape[0], J = a->shape[1], K = a->shape[2];
    for (int i = 0; i < I; i++)
        for (int j = 0; j < J; j++)
            memcpy(DATA(y) + ((size_t)j * I + i) * K, DATA(a) + ((size_t)i * J + j) * K, (size_t)K * sizeof(REAL));
    return ctx->status;
}
int FN(ts_swap01_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    int J = y->shape[0], I = y->shape[1], K = y->shape[2];
    for (int i = 0; i < I; i++)
        for (int j = 0; j < J; j++) {
            REAL *dst = da + ((size_t)i * J + j) * K;
            const REAL *g = GRAD(y) + ((size_t)j * I + i) * K;
            for (int k = 0; k < K; k++) dst[k] += g[k];
        }
    return ctx->status;
}

// Heads: x (B, T, H Dh) <-> (B H, T, Dh). One copy kernel serves all four
// directions: `to_heads` says which side the heads are split on.
static void FN(permute_heads)(REAL *dst, const REAL *src, int B, int T, int H, int Dh, int to_heads, int add) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                size_t merged = ((size_t)b * T + t) * H * Dh + (size_t)h * Dh;  // x[b, t, h Dh]
                size_t split = (((size_t)b * H + h) * T + t) * Dh;              // y[b H + h, t, 0]
                REAL *d = dst + (to_heads ? split : merged);
                const REAL *s = src + (to_heads ? merged : split);
                for (int j = 0; j < Dh; j++) d[j] = add ? d[j] + s[j] : s[j];
            }
}
// iarg[0] = heads; split: y (B H, T, Dh) from x (B, T, H Dh), merge the other way
static int FN(heads_forward)(ts_ctx *ctx, ts_tensor *y) {
    int split = y->op == TS_OP_SPLIT_HEADS, H = y->iarg[0], T = y->shape[1];
    int B = split ? y->shape[0] / H : y->shape[0], Dh = split ? y->shape[2] : y->shape[2] / H;
    FN(permute_heads)(DATA(y), DATA(y->src[0]), B, T, H, Dh, split, 0);
    return ctx->status;
}
static int FN(heads_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *dx = input_grad(ctx, y, 0);
    if (!dx) return ctx->status;
    int split = y->op == TS_OP_SPLIT_HEADS, H = y->iarg[0], T = y->shape[1];
    int B = split ? y->shape[0] / H : y->shape[0], Dh = split ? y->shape[2] : y->shape[2] / H;
    FN(permute_heads)(dx, GRAD(y), B, T, H, Dh, !split, 1);
    return ctx->status;
}
int FN(ts_split_heads_backward)(ts_ctx *ctx, ts_tensor *y) { return FN(heads_backward)(ctx, y); }
int FN(ts_merge_heads_backward)(ts_ctx *ctx, ts_tensor *y) { return FN(heads_backward)(ctx, y); }
