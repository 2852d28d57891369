// Softmax, log-softmax and the fused log-softmax + cross-entropy loss.
// N = rows, V = columns (the vocabulary for the loss).
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <math.h>
#include <string.h>

// y = softmax(a) per row (masked entries 0);  da = y * (dy - sum(dy * y))
ts_tensor *ts_softmax(ts_ctx *ctx, ts_tensor *a, const double *mask) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_SOFTMAX, a->ndim, a->shape, 1, &a);
    if (y) ts_softmax_rows(y->data, a->data, ts_rows(a), (size_t)ts_cols(a), mask);
    return y;
}
int ts_softmax_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y), cols = (size_t)ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        const double *yr = y->data + r * cols, *gr = y->grad + r * cols;
        double dot = 0.0;
        for (size_t c = 0; c < cols; c++) dot += gr[c] * yr[c];
        for (size_t c = 0; c < cols; c++) da[r * cols + c] += yr[c] * (gr[c] - dot);
    }
    return ctx->status;
}

// y = a - logsumexp(a) per row;  da = dy - exp(y) * sum(dy)
ts_tensor *ts_log_softmax(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_LOG_SOFTMAX, a->ndim, a->shape, 1, &a);
    if (y) ts_log_softmax_rows(y->data, a->data, ts_rows(a), (size_t)ts_cols(a));
    return y;
}
int ts_log_softmax_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da) return ctx->status;
    size_t rows = ts_rows(y), cols = (size_t)ts_cols(y);
    for (size_t r = 0; r < rows; r++) {
        const double *yr = y->data + r * cols, *gr = y->grad + r * cols;
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) sum += gr[c];
        for (size_t c = 0; c < cols; c++) da[r * cols + c] += gr[c] - exp(yr[c]) * sum;
    }
    return ctx->status;
}

// With label smoothing e (PyTorch's CrossEntropyLoss(label_smoothing=e)) the
// target of row i is q_i = (1 - e) onehot(t_i) + e / V:
// loss = (1/K) sum_{i: t_i != ignore} -sum_c q_ic log softmax(a_i)_c
//      = (1/K) sum_i (1 - e) (log Z_i - a_it) + e (log Z_i - mean_c a_ic),  K = kept rows
// da_i = dloss * (softmax(a_i) - q_i) / K for kept rows, 0 for ignored ones.
// The forward keeps softmax(a) (N, V) in `saved`; darg[0] = e, darg[1] = the
// plain cross-entropy (e = 0) of the same rows, for perplexity.
static int check_smoothing(ts_ctx *ctx, const char *op, double e) {
    if (e >= 0.0 && e < 1.0) return 1;
    ts_ctx_fail(ctx, TS_ERR_ARG, "%s: label smoothing %g outside [0, 1)", op, e);
    return 0;
}

ts_tensor *ts_cross_entropy(ts_ctx *ctx, ts_tensor *logits, const int *targets, int ignore_index, double smoothing) {
    if (!logits) return NULL;
    if (!check_smoothing(ctx, "cross_entropy", smoothing)) return NULL;
    size_t n = ts_rows(logits), v = (size_t)ts_cols(logits);
    for (size_t i = 0; i < n; i++)
        if (targets[i] != ignore_index && (targets[i] < 0 || (size_t)targets[i] >= v))
            return ts_ctx_fail(ctx, TS_ERR_ARG, "cross_entropy: target[%zu] = %d outside 0..%zu",
                               i, targets[i], v - 1);
    ts_tensor *y = ts_node(ctx, TS_OP_CROSS_ENTROPY, 1, (int[]){1}, 1, &logits);
    if (!y) return NULL;
    int *kept = ts_arena_alloc(ctx->arena, n * sizeof(int));
    double *probs = y->requires_grad ? ts_arena_alloc(ctx->arena, n * v * sizeof(double)) : NULL;
    if (!kept || (y->requires_grad && !probs)) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(kept, targets, n * sizeof(int));
    double total = 0.0, smooth = 0.0;  // sums of log Z - a_t and of log Z - mean(a)
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == ignore_index) continue;
        const double *row = logits->data + i * v;
        double max = ts_max_array(row, v), sum;
        double mean = smoothing > 0.0 ? ts_sum_array(row, v) / (double)v : 0.0;
        if (probs) {  // the exponentials once, kept and normalised for the backward
            double *p = probs + i * v;
            memcpy(p, row, v * sizeof(double));
            sum = ts_exp_shift_sum(p, v, max);
            double inv = 1.0 / sum;
            for (size_t c = 0; c < v; c++) p[c] *= inv;
        } else {
            sum = ts_sum_exp_shift(row, v, max);
        }
        total += log(sum) - (row[targets[i]] - max);  // log Z = max + log(sum), kept apart to avoid cancellation
        if (smoothing > 0.0) smooth += log(sum) - (mean - max);
        count++;
    }
    double nll = count ? total / count : 0.0;
    y->data[0] = smoothing > 0.0 ? (1.0 - smoothing) * nll + smoothing * smooth / count : nll;
    y->aux = kept;
    y->saved = probs;
    y->iarg[0] = ignore_index;
    y->iarg[1] = count;
    y->darg[0] = smoothing;
    y->darg[1] = nll;
    return y;
}
double ts_cross_entropy_nll(const ts_tensor *loss) {
    int fused = loss->op == TS_OP_CROSS_ENTROPY || loss->op == TS_OP_LINEAR_CROSS_ENTROPY;
    return fused ? loss->darg[1] : loss->data[0];
}

int ts_cross_entropy_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    if (!da || y->iarg[1] == 0) return ctx->status;
    ts_tensor *logits = y->src[0];
    size_t n = ts_rows(logits), v = (size_t)ts_cols(logits);
    const int *targets = y->aux;
    const double *probs = y->saved;
    double scale = y->grad[0] / y->iarg[1];
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == y->iarg[0]) continue;
        double *row = da + i * v;
        double uniform = scale * y->darg[0] / (double)v;  // the smoothed target's e / V share
        for (size_t c = 0; c < v; c++) row[c] += scale * probs[i * v + c] - uniform;
        row[targets[i]] -= scale * (1.0 - y->darg[0]);
    }
    return ctx->status;
}

// The output projection and the loss as one node:
//   z_i = x_i W^T + b                           (N, V), never a tensor of its own
//   loss = -(1/K) sum_{i: t_i != ignore} sum_c q_ic log softmax(z_i)_c,
//   q_i = (1 - e) onehot(t_i) + e / V           (label smoothing e; e = 0: plain)
// One (N, V) buffer does everything, in as few passes over it as can be:
// forward: dgemm writes z; one pass adds b and finds each row's max; one pass
//   takes exp(z - max) and sums it. The rows stay unnormalised; 1 / sum is
//   kept per row (ignored rows are zeroed).
// backward: one pass makes p = exp(z - max) / sum and adds the column sums
//   of dz into db; then dz = (p - q) dloss / K is applied through
//   the dgemms' alpha: dx += dz W (N, H), dW += dz^T x (V, H).
// iarg[0] = ignore index, iarg[1] = K, iarg[2] = 1 with a bias, iarg[3] = 1
// once the backward has consumed the buffer (a tape is walked once);
// darg[0] = e, darg[1] = the plain cross-entropy (for perplexity).
typedef struct {
    int *targets;     // (N) copied
    double *inv_sum;  // (N) 1 / sum_c exp(z_ic - max_i); 0 for ignored rows
} linear_ce_saved;

ts_tensor *ts_linear_cross_entropy(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *bias, const int *targets,
                                   int ignore_index, double smoothing) {
    if (!x || !w) return NULL;
    if (!check_smoothing(ctx, "linear_cross_entropy", smoothing)) return NULL;
    char sx[48], sw[48], sb[48];
    if (x->ndim != 2 || w->ndim != 2 || x->shape[1] != w->shape[1] || (bias && (int)bias->size != w->shape[0]))
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "linear_cross_entropy: x %s, W %s, bias %s do not fit (N, H), (V, H), (V)",
                           SHAPE(x, sx), SHAPE(w, sw), bias ? SHAPE(bias, sb) : "none");
    size_t n = (size_t)x->shape[0], v = (size_t)w->shape[0];
    int H = x->shape[1];
    for (size_t i = 0; i < n; i++)
        if (targets[i] != ignore_index && (targets[i] < 0 || (size_t)targets[i] >= v))
            return ts_ctx_fail(ctx, TS_ERR_ARG, "cross_entropy: target[%zu] = %d outside 0..%zu", i, targets[i], v - 1);
    ts_tensor *src[3] = {x, w, bias};
    ts_tensor *y = ts_node(ctx, TS_OP_LINEAR_CROSS_ENTROPY, 1, (int[]){1}, bias ? 3 : 2, src);
    if (!y) return NULL;
    linear_ce_saved *sv = ts_arena_alloc(ctx->arena, sizeof *sv);
    int *kept = ts_arena_alloc(ctx->arena, n * sizeof(int));
    double *inv_sum = ts_arena_alloc(ctx->arena, n * sizeof(double));
    double *z = ts_arena_alloc(ctx->arena, n * v * sizeof(double));  // (N, V)
    if (!sv || !kept || !inv_sum || !z) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(kept, targets, n * sizeof(int));
    *sv = (linear_ce_saved){.targets = kept, .inv_sum = inv_sum};
    int rc = ts_gemm(0, 1, (int)n, (int)v, H, 1.0, x->data, w->data, 0.0, z);
    if (rc) return ts_ctx_fail(ctx, rc, "linear_cross_entropy: %s", ts_last_error());
    double total = 0.0, smooth = 0.0;  // sums of log Z - z_t and of log Z - mean(z)
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        double *row = z + i * v;
        if (targets[i] == ignore_index) {
            memset(row, 0, v * sizeof(double));
            inv_sum[i] = 0.0;
            continue;
        }
        double max = bias ? ts_add_max_array(row, bias->data, v) : ts_max_array(row, v);
        double target_logit = row[targets[i]];
        double mean = smoothing > 0.0 ? ts_sum_array(row, v) / (double)v : 0.0;
        double sum = ts_exp_shift_sum(row, v, max);  // row = exp(z - max)
        total += log(sum) - (target_logit - max);    // log Z - z_t, with log Z = max + log(sum)
        if (smoothing > 0.0) smooth += log(sum) - (mean - max);
        count++;
        inv_sum[i] = 1.0 / sum;
    }
    double nll = count ? total / count : 0.0;
    y->data[0] = smoothing > 0.0 ? (1.0 - smoothing) * nll + smoothing * smooth / count : nll;
    y->darg[0] = smoothing;
    y->darg[1] = nll;
    y->aux = sv;
    y->saved = z;
    y->iarg[0] = ignore_index;
    y->iarg[1] = count;
    y->iarg[2] = bias != NULL;
    return y;
}
int ts_linear_cross_entropy_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *x = y->src[0], *w = y->src[1];
    if (y->iarg[3]) {
        ctx->status = ts_fail(TS_ERR_ARG, "linear_cross_entropy: backward ran twice on one tape");
        return ctx->status;
    }
    y->iarg[3] = 1;
    double *dx = input_grad(ctx, y, 0), *dw = input_grad(ctx, y, 1);
    double *db = y->iarg[2] ? input_grad(ctx, y, 2) : NULL;
    if (ctx->status || y->iarg[1] == 0) return ctx->status;
    size_t n = (size_t)x->shape[0], v = (size_t)w->shape[0];
    int H = x->shape[1];
    const linear_ce_saved *sv = y->aux;
    double *dz = y->saved;  // exp(z - max), becoming p - q
    double scale = y->grad[0] / y->iarg[1];
    double e = y->darg[0], uniform = e / (double)v;  // q = (1 - e) onehot + e / V
    for (size_t i = 0; i < n; i++) {
        if (sv->targets[i] == y->iarg[0]) continue;  // a zero row
        double *row = dz + i * v;
        if (db)
            ts_scale_accumulate(row, sv->inv_sum[i], db, scale, v);  // row *= 1/sum; db += scale row
        else
            for (size_t c = 0; c < v; c++) row[c] *= sv->inv_sum[i];
        if (e > 0.0)
            for (size_t c = 0; c < v; c++) row[c] -= uniform;
        row[sv->targets[i]] -= 1.0 - e;
        if (db) db[sv->targets[i]] -= scale * (1.0 - e);
    }
    if (db && e > 0.0)  // the e / V share of every kept row, added once
        for (size_t c = 0; c < v; c++) db[c] -= scale * uniform * y->iarg[1];
    int rc = TS_OK;
    if (dx) rc = ts_gemm(0, 0, (int)n, H, (int)v, scale, dz, w->data, 1.0, dx);
    if (!rc && dw) rc = ts_gemm(1, 0, (int)v, H, (int)n, scale, dz, x->data, 1.0, dw);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
