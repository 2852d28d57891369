// Softmax, log-softmax and the cross-entropy losses for one dtype, compiled
// twice by ops_softmax.c (tensor/dtype_twice.h). Row maxima, sums and the
// loss are double in both dtypes. N = rows, V = columns.

// y = softmax(a) per row (masked entries 0): ts_softmax_rows;  da = y * (dy - sum(dy * y))
int FN(ts_softmax_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y), cols = (size_t)ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        const REAL *yr = DATA(y) + r * cols, *gr = GRAD(y) + r * cols;
        double dot = 0.0;
        for (size_t c = 0; c < cols; c++) dot += gr[c] * yr[c];
        for (size_t c = 0; c < cols; c++) da[r * cols + c] += yr[c] * (gr[c] - dot);
    }
    return ctx->status;
}

// y = a - logsumexp(a) per row: ts_log_softmax_rows;  da = dy - exp(y) * sum(dy)
int FN(ts_log_softmax_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y), cols = (size_t)ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        const REAL *yr = DATA(y) + r * cols, *gr = GRAD(y) + r * cols;
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) sum += gr[c];
        for (size_t c = 0; c < cols; c++) da[r * cols + c] += gr[c] - exp(yr[c]) * sum;
    }
    return ctx->status;
}

// Cross-entropy with label smoothing (ops_softmax.c has the formulas).
// aux = the targets (N) copied; saved = softmax(a) (N, V) when a gradient is
// needed; iarg[0] = ignore index; fills iarg[1] = K, darg[1] = the plain
// cross-entropy and y = the smoothed loss.
static int FN(cross_entropy_forward)(ts_ctx *ctx, ts_tensor *y) {
    const ts_tensor *logits = y->src[0];
    size_t n = ts_rows(logits), v = (size_t)ts_cols(logits);
    const int *targets = y->aux;
    int ignore_index = y->iarg[0];
    double smoothing = y->darg[0];
    REAL *probs = y->requires_grad ? ts_arena_alloc(ctx->arena, n * v * sizeof(REAL)) : NULL;
    if (y->requires_grad && !probs) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    double total = 0.0, smooth = 0.0;  // sums of log Z - a_t and of log Z - mean(a)
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == ignore_index) continue;
        const REAL *row = DATA(logits) + i * v;
        double max = FN(ts_max_array)(row, v), sum;
        double mean = smoothing > 0.0 ? FN(ts_sum_array)(row, v) / (double)v : 0.0;
        if (probs) {  // the exponentials once, kept and normalised for the backward
            REAL *p = probs + i * v;
            memcpy(p, row, v * sizeof(REAL));
            sum = FN(ts_exp_shift_sum)(p, v, max);
            double inv = 1.0 / sum;
            for (size_t c = 0; c < v; c++) p[c] *= inv;
        } else {
            sum = FN(ts_sum_exp_shift)(row, v, max);
        }
        total += log(sum) - (row[targets[i]] - max);  // log Z = max + log(sum), kept apart to avoid cancellation
        if (smoothing > 0.0) smooth += log(sum) - (mean - max);
        count++;
    }
    double nll = count ? total / count : 0.0;
    DATA(y)[0] = smoothing > 0.0 ? (1.0 - smoothing) * nll + smoothing * smooth / count : nll;
    y->saved = probs;
    y->iarg[1] = count;
    y->darg[1] = nll;
    return ctx->status;
}
int FN(ts_cross_entropy_backward)(ts_ctx *ctx, ts_tensor *y) {
    REAL *da = input_grad(ctx, y, 0);
    if (!da || y->iarg[1] == 0) return ctx->status;
    ts_tensor *logits = y->src[0];
    size_t n = ts_rows(logits), v = (size_t)ts_cols(logits);
    const int *targets = y->aux;
    const REAL *probs = y->saved;
    double scale = GRAD(y)[0] / y->iarg[1];
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == y->iarg[0]) continue;
        REAL *row = da + i * v;
        double uniform = scale * y->darg[0] / (double)v;  // the smoothed target's e / V share
        for (size_t c = 0; c < v; c++) row[c] += scale * probs[i * v + c] - uniform;
        row[targets[i]] -= scale * (1.0 - y->darg[0]);
    }
    return ctx->status;
}

// The output projection and the loss as one node (ops_softmax.c has the
// plan of its passes). aux = linear_ce_saved (targets, 1 / sum per row),
// saved = z (N, V), which the backward turns into dz in place.

// The forward's passes over rows [begin, end) of part `part`: bias, max,
// exp(z - max) and its sum; each row's terms of the loss go to pass->nll
// and pass->smooth, summed in row order by the caller.
static void FN(linear_ce_forward_rows)(void *arg, int part, int parts) {
    const linear_ce_pass *a = arg;
    const int *targets = a->sv->targets;
    size_t begin, end;
    ts_part_range(a->n, part, parts, &begin, &end);
    for (size_t i = begin; i < end; i++) {
        REAL *row = (REAL *)a->z + i * a->v;
        if (targets[i] == a->ignore_index) {
            memset(row, 0, a->v * sizeof(REAL));
            a->sv->inv_sum[i] = 0.0;
            continue;
        }
        double max = a->bias ? FN(ts_add_max_array)(row, a->bias, a->v) : FN(ts_max_array)(row, a->v);
        double target_logit = row[targets[i]];
        double mean = a->smoothing > 0.0 ? FN(ts_sum_array)(row, a->v) / (double)a->v : 0.0;
        double sum = FN(ts_exp_shift_sum)(row, a->v, max);  // row = exp(z - max)
        a->nll[i] = log(sum) - (target_logit - max);          // log Z - z_t, with log Z = max + log(sum)
        a->smooth[i] = a->smoothing > 0.0 ? log(sum) - (mean - max) : 0.0;
        a->sv->inv_sum[i] = 1.0 / sum;
    }
}

static int FN(linear_cross_entropy_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    const ts_tensor *bias = y->iarg[2] ? y->src[2] : NULL;
    size_t n = (size_t)x->shape[0], v = (size_t)w->shape[0];
    int H = x->shape[1];
    const linear_ce_saved *sv = y->aux;
    double smoothing = y->darg[0];
    REAL *z = ts_arena_alloc(ctx->arena, n * v * sizeof(REAL));  // (N, V)
    double *terms = ts_arena_alloc(ctx->arena, 2 * n * sizeof(double));  // (2, N): nll, smooth
    if (!z || !terms) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    int rc = FN(ts_gemm)(0, 1, (int)n, (int)v, H, 1.0, DATA(x), DATA(w), 0.0, z);
    if (rc) return ts_ctx_fail(ctx, rc, "linear_cross_entropy: %s", ts_last_error()), ctx->status;
    linear_ce_pass pass = {.z = z, .bias = bias ? DATA(bias) : NULL, .sv = sv, .ignore_index = y->iarg[0],
                           .smoothing = smoothing, .n = n, .v = v, .nll = terms, .smooth = terms + n};
    ts_parallel_run(ts_parallel_parts(n * v, (int)n), FN(linear_ce_forward_rows), &pass);
    double total = 0.0, smooth = 0.0;  // sums of log Z - z_t and of log Z - mean(z)
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (sv->targets[i] == pass.ignore_index) continue;
        total += pass.nll[i];
        smooth += pass.smooth[i];
        count++;
    }
    double nll = count ? total / count : 0.0;
    DATA(y)[0] = smoothing > 0.0 ? (1.0 - smoothing) * nll + smoothing * smooth / count : nll;
    y->darg[1] = nll;
    y->saved = z;
    y->iarg[1] = count;
    return ctx->status;
}

// The backward's pass over columns [c0, c1) of part `part`, every row: dz =
// p - q and db's columns, each column summed over the rows in row order,
// as with one part.
static void FN(linear_ce_backward_cols)(void *arg, int part, int parts) {
    const linear_ce_pass *a = arg;
    const linear_ce_saved *sv = a->sv;
    size_t c0, c1;
    ts_part_range(a->v, part, parts, &c0, &c1);
    size_t width = c1 - c0;
    double e = a->smoothing, uniform = e / (double)a->v, scale = a->scale;  // q = (1 - e) onehot + e / V
    REAL *db = a->db ? (REAL *)a->db + c0 : NULL;
    for (size_t i = 0; i < a->n; i++) {
        if (sv->targets[i] == a->ignore_index) continue;  // a zero row
        REAL *row = (REAL *)a->z + i * a->v + c0;
        if (db)
            FN(ts_scale_accumulate)(row, sv->inv_sum[i], db, scale, width);  // row *= 1/sum; db += scale row
        else
            for (size_t c = 0; c < width; c++) row[c] *= sv->inv_sum[i];
        if (e > 0.0)
            for (size_t c = 0; c < width; c++) row[c] -= uniform;
        size_t t = (size_t)sv->targets[i];
        if (t < c0 || t >= c1) continue;
        row[t - c0] -= 1.0 - e;
        if (db) db[t - c0] -= scale * (1.0 - e);
    }
    if (db && e > 0.0)  // the e / V share of every kept row, added once
        for (size_t c = 0; c < width; c++) db[c] -= scale * uniform * a->count;
}

int FN(ts_linear_cross_entropy_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    if (y->iarg[3]) {
        ctx->status = ts_fail(TS_ERR_ARG, "linear_cross_entropy: backward ran twice on one tape");
        return ctx->status;
    }
    y->iarg[3] = 1;
    double dx_beta;
    REAL *dx = input_grad_written(ctx, y, 0, &dx_beta), *dw = input_grad(ctx, y, 1);
    REAL *db = y->iarg[2] ? input_grad(ctx, y, 2) : NULL;
    if (dx && dx_beta == 0.0 && !ctx->status && y->iarg[1] == 0)  // every target ignored: no product writes dx
        memset(dx, 0, ts_tensor_bytes(x));
    if (ctx->status || y->iarg[1] == 0) return ctx->status;
    size_t n = (size_t)x->shape[0], v = (size_t)w->shape[0];
    int H = x->shape[1];
    REAL *dz = y->saved;  // exp(z - max), becoming p - q
    double scale = GRAD(y)[0] / y->iarg[1];
    linear_ce_pass pass = {.z = dz, .sv = y->aux, .ignore_index = y->iarg[0], .smoothing = y->darg[0],
                           .n = n, .v = v, .db = db, .scale = scale, .count = y->iarg[1]};
    ts_parallel_run(ts_parallel_parts(n * v, (int)v), FN(linear_ce_backward_cols), &pass);
    FN(ts_product) dx_product = {0, 0, (int)n, H, (int)v, scale, dz, (int)v, DATA(w), H, dx_beta, dx, H, 0, NULL, NULL, 0};
    FN(ts_product) dw_product = {1, 0, (int)v, H, (int)n, scale, dz, (int)v, DATA(x), H, 1.0, dw, H, 0, NULL, NULL, 0};
    // side by side on two threads; dW on this one, which has the serial passes between products to do besides
    int rc = FN(ts_gemm_two)(dw ? &dw_product : NULL, dx ? &dx_product : NULL);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
