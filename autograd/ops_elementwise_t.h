// Elementwise ops for one dtype: each forward's arithmetic and its backward,
// side by side, compiled twice by ops_elementwise.c (tensor/dtype_twice.h).
// n = number of elements; y's inputs are y->src[0] (a) and y->src[1] (b).

// Part `part` of an add's pass: out = a + b, or out += a (and out2 += a)
// over its share of the entries; a training step's (B*T, D) adds split
// over the threads (an entry is its own sum: the same bits either way).
typedef struct {
    REAL *out, *out2;
    const REAL *a, *b;  // b NULL: accumulate a into out (and out2)
    size_t n;
} FN(add_pass);

static void FN(add_part)(void *arg, int part, int parts) {
    const FN(add_pass) *p = arg;
    size_t i0, i1;
    ts_part_range(p->n, part, parts, &i0, &i1);
    if (p->b) {
        for (size_t i = i0; i < i1; i++) p->out[i] = p->a[i] + p->b[i];
        return;
    }
    if (p->out)
        for (size_t i = i0; i < i1; i++) p->out[i] += p->a[i];
    if (p->out2)
        for (size_t i = i0; i < i1; i++) p->out2[i] += p->a[i];
}

static void FN(add_run)(FN(add_pass) *p) { ts_parallel_run(ts_parallel_parts(p->n, 0), FN(add_part), p); }

// y = a + b;  da += dy, db += dy
static int FN(add_forward)(ts_ctx *ctx, ts_tensor *y) {
    FN(add_run)(&(FN(add_pass)){DATA(y), NULL, DATA(y->src[0]), DATA(y->src[1]), y->size});
    return ctx->status;
}
int FN(ts_add_backward)(ts_ctx *ctx, ts_tensor *y) {
    // One side at most takes dy's buffer (a residual's branch): with both,
    // the one whose backward runs first could change it in place (a ReLU's
    // mask) before the other read it.
    int side = y->src[0] == y->src[1] ? -1 : share_grad(y, 1) ? 1 : share_grad(y, 0) ? 0 : -1;
    REAL *da = side == 0 ? NULL : input_grad(ctx, y, 0), *db = side == 1 ? NULL : input_grad(ctx, y, 1);
    if (!ctx->status && (da || db)) FN(add_run)(&(FN(add_pass)){da, db, GRAD(y), NULL, y->size});
    return ctx->status;
}

// y = a - b;  da += dy, db -= dy
static int FN(sub_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]), *b = DATA(y->src[1]);
    for (size_t i = 0; i < y->size; i++) out[i] = a[i] - b[i];
    return ctx->status;
}
int FN(ts_sub_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    const REAL *dy = GRAD(y);
    for (size_t i = 0; i < y->size; i++) {
        if (da) da[i] += dy[i];
        if (db) db[i] -= dy[i];
    }
    return ctx->status;
}

// y = a * b;  da += dy * b, db += dy * a
static int FN(mul_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]), *b = DATA(y->src[1]);
    for (size_t i = 0; i < y->size; i++) out[i] = a[i] * b[i];
    return ctx->status;
}
int FN(ts_mul_backward)(ts_ctx *ctx, ts_tensor *y) {
    const REAL *a = DATA(y->src[0]), *b = DATA(y->src[1]), *dy = GRAD(y);
    REAL *da = input_grad(ctx, y, 0), *db = input_grad(ctx, y, 1);
    for (size_t i = 0; i < y->size; i++) {
        if (da) da[i] += dy[i] * b[i];
        if (db) db[i] += dy[i] * a[i];
    }
    return ctx->status;
}

// y = s * a (s = darg[0]);  da += s * dy
static int FN(scale_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]);
    for (size_t i = 0; i < y->size; i++) out[i] = y->darg[0] * a[i];
    return ctx->status;
}
int FN(ts_scale_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->darg[0] * dy[i];
    return ctx->status;
}

// y[r, c] = a[r, c] + bias[c];  da += dy, dbias[c] += sum_r dy[r, c]
static int FN(add_bias_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]), *bias = DATA(y->src[1]);
    size_t rows = ts_rows(y);
    int cols = ts_cols(y);
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) out[r * cols + c] = a[r * cols + c] + bias[c];
    return ctx->status;
}
int FN(ts_add_bias_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0), *dbias = input_grad(ctx, y, 1);
    const REAL *dy = GRAD(y);
    size_t rows = ts_rows(y);
    int cols = ts_cols(y);
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            REAL g = dy[r * cols + c];
            if (da) da[r * cols + c] += g;
            if (dbias) dbias[c] += g;
        }
    return ctx->status;
}

// y = tanh(a);  da += dy * (1 - y^2)
static int FN(tanh_forward)(ts_ctx *ctx, ts_tensor *y) {
    FN(ts_tanh_array)(DATA(y), DATA(y->src[0]), y->size);
    return ctx->status;
}
int FN(ts_tanh_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *out = DATA(y), *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i] * (1 - out[i] * out[i]);
    return ctx->status;
}

// y = 1 / (1 + exp(-a));  da += dy * y * (1 - y)
static int FN(sigmoid_forward)(ts_ctx *ctx, ts_tensor *y) {
    FN(ts_sigmoid_array)(DATA(y), DATA(y->src[0]), y->size);
    return ctx->status;
}
int FN(ts_sigmoid_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *out = DATA(y), *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i] * out[i] * (1 - out[i]);
    return ctx->status;
}

// y = max(a, 0);  da += dy * [a > 0]
static int FN(relu_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]);
    for (size_t i = 0; i < y->size; i++) out[i] = a[i] > 0 ? a[i] : 0.0;
    return ctx->status;
}
int FN(ts_relu_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *a = DATA(y->src[0]), *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += a[i] > 0 ? dy[i] : 0.0;
    return ctx->status;
}

// y = exp(a);  da += dy * y
static int FN(exp_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]);
    for (size_t i = 0; i < y->size; i++) out[i] = exp(a[i]);
    return ctx->status;
}
int FN(ts_exp_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *out = DATA(y), *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i] * out[i];
    return ctx->status;
}

// y = log(a);  da += dy / a
static int FN(log_forward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *out = DATA(y);
    const REAL *a = DATA(y->src[0]);
    for (size_t i = 0; i < y->size; i++) out[i] = log(a[i]);
    return ctx->status;
}
int FN(ts_log_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    const REAL *a = DATA(y->src[0]), *dy = GRAD(y);
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += dy[i] / a[i];
    return ctx->status;
}
