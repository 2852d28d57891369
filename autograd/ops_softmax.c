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

// loss = -(1/K) sum_{i: t_i != ignore} log softmax(a_i)[t_i], K = number of such rows
// da_i = dloss * (softmax(a_i) - onehot(t_i)) / K for kept rows, 0 for ignored ones.
// The forward keeps softmax(a) (N, V) in `saved` for the backward.
ts_tensor *ts_cross_entropy(ts_ctx *ctx, ts_tensor *logits, const int *targets, int ignore_index) {
    if (!logits) return NULL;
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
    double total = 0.0;
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == ignore_index) continue;
        const double *row = logits->data + i * v;
        double max = -INFINITY;
        for (size_t c = 0; c < v; c++)
            if (row[c] > max) max = row[c];
        double sum = 0.0;
        for (size_t c = 0; c < v; c++) sum += exp(row[c] - max);
        double log_sum = log(sum);  // log Z = max + log_sum, kept apart to avoid cancellation
        total += log_sum - (row[targets[i]] - max);
        count++;
        if (probs)
            for (size_t c = 0; c < v; c++) probs[i * v + c] = exp((row[c] - max) - log_sum);
    }
    y->data[0] = count ? total / count : 0.0;
    y->aux = kept;
    y->saved = probs;
    y->iarg[0] = ignore_index;
    y->iarg[1] = count;
    return y;
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
        for (size_t c = 0; c < v; c++) row[c] += scale * probs[i * v + c];
        row[targets[i]] -= scale;
    }
    return ctx->status;
}
