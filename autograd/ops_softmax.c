// Softmax, log-softmax and the fused log-softmax + cross-entropy loss: the
// checks and nodes here, the arithmetic (forward and backward side by side)
// in ops_softmax_t.h, compiled once per dtype.
// N = rows, V = columns (the vocabulary for the loss).
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>
#include <string.h>

// What the fused linear + cross-entropy keeps for its backward (aux).
typedef struct {
    int *targets;     // (N) copied
    double *inv_sum;  // (N) 1 / sum_c exp(z_ic - max_i); 0 for ignored rows
} linear_ce_saved;

// One pass of the fused loss over its (N, V) buffer, cut into parts over
// the threads (tensor/parallel.h): the forward's by rows, the backward's by
// columns (each column of db then sums its rows in the same order).
typedef struct {
    void *z;  // (N, V) in the node's dtype: the logits, then exp(z - max), then dz
    const void *bias;  // (V) or NULL (forward)
    const linear_ce_saved *sv;
    int ignore_index;
    double smoothing;  // e
    size_t n, v;
    double *nll, *smooth;  // (N) forward: each kept row's log Z - z_t and log Z - mean(z)
    void *db;              // (V) or NULL (backward)
    double scale;          // backward: dloss / K
    int count;             // backward: K
} linear_ce_pass;

#define TS_TEMPLATE "autograd/ops_softmax_t.h"
#include "tensor/dtype_twice.h"

// y = softmax(a) per row (masked entries 0);  da = y * (dy - sum(dy * y))
ts_tensor *ts_softmax(ts_ctx *ctx, ts_tensor *a, const double *mask) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_SOFTMAX, a->ndim, a->shape, 1, &a);
    if (y) TS_BY_DTYPE(y->dtype, ts_softmax_rows, y->raw, a->raw, ts_rows(a), (size_t)ts_cols(a), mask);
    return y;
}

// y = a - logsumexp(a) per row;  da = dy - exp(y) * sum(dy)
ts_tensor *ts_log_softmax(ts_ctx *ctx, ts_tensor *a) {
    if (!a) return NULL;
    ts_tensor *y = ts_node(ctx, TS_OP_LOG_SOFTMAX, a->ndim, a->shape, 1, &a);
    if (y) TS_BY_DTYPE(y->dtype, ts_log_softmax_rows, y->raw, a->raw, ts_rows(a), (size_t)ts_cols(a));
    return y;
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
    if (!kept) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(kept, targets, n * sizeof(int));
    y->aux = kept;
    y->iarg[0] = ignore_index;
    y->darg[0] = smoothing;
    return TS_FORWARD(ctx, y, cross_entropy_forward);
}
double ts_cross_entropy_nll(const ts_tensor *loss) {
    int fused = loss->op == TS_OP_CROSS_ENTROPY || loss->op == TS_OP_LINEAR_CROSS_ENTROPY;
    return fused ? loss->darg[1] : ts_value(loss, 0);
}

// The output projection and the loss as one node:
//   z_i = x_i W^T + b                           (N, V), never a tensor of its own
//   loss = -(1/K) sum_{i: t_i != ignore} sum_c q_ic log softmax(z_i)_c,
//   q_i = (1 - e) onehot(t_i) + e / V           (label smoothing e; e = 0: plain)
// One (N, V) buffer does everything, in as few passes over it as can be:
// forward: gemm writes z; one pass adds b and finds each row's max; one pass
//   takes exp(z - max) and sums it. The rows stay unnormalised; 1 / sum is
//   kept per row (ignored rows are zeroed).
// backward: one pass makes p = exp(z - max) / sum and adds the column sums
//   of dz into db; then dz = (p - q) dloss / K is applied through
//   the gemms' alpha: dx += dz W (N, H), dW += dz^T x (V, H).
// The passes between the products run in parts on the threads
// (tensor/parallel.h): the forward's by rows (each row's loss terms kept and
// summed in row order after), the backward's by columns (each column of db
// sums its rows in row order), so one thread and two give the same bits.
// iarg[0] = ignore index, iarg[1] = K, iarg[2] = 1 with a bias, iarg[3] = 1
// once the backward has consumed the buffer (a tape is walked once);
// darg[0] = e, darg[1] = the plain cross-entropy (for perplexity).
ts_tensor *ts_linear_cross_entropy(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *bias, const int *targets,
                                   int ignore_index, double smoothing) {
    if (!x || !w) return NULL;
    if (!check_smoothing(ctx, "linear_cross_entropy", smoothing)) return NULL;
    char sx[48], sw[48], sb[48];
    if (x->ndim != 2 || w->ndim != 2 || x->shape[1] != w->shape[1] || (bias && (int)bias->size != w->shape[0]))
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "linear_cross_entropy: x %s, W %s, bias %s do not fit (N, H), (V, H), (V)",
                           SHAPE(x, sx), SHAPE(w, sw), bias ? SHAPE(bias, sb) : "none");
    size_t n = (size_t)x->shape[0], v = (size_t)w->shape[0];
    for (size_t i = 0; i < n; i++)
        if (targets[i] != ignore_index && (targets[i] < 0 || (size_t)targets[i] >= v))
            return ts_ctx_fail(ctx, TS_ERR_ARG, "cross_entropy: target[%zu] = %d outside 0..%zu", i, targets[i], v - 1);
    ts_tensor *src[3] = {x, w, bias};
    ts_tensor *y = ts_node(ctx, TS_OP_LINEAR_CROSS_ENTROPY, 1, (int[]){1}, bias ? 3 : 2, src);
    if (!y) return NULL;
    linear_ce_saved *sv = ts_arena_alloc(ctx->arena, sizeof *sv);
    int *kept = ts_arena_alloc(ctx->arena, n * sizeof(int));
    double *inv_sum = ts_arena_alloc(ctx->arena, n * sizeof(double));
    if (!sv || !kept || !inv_sum) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(kept, targets, n * sizeof(int));
    *sv = (linear_ce_saved){.targets = kept, .inv_sum = inv_sum};
    y->aux = sv;
    y->iarg[0] = ignore_index;
    y->iarg[2] = bias != NULL;
    y->darg[0] = smoothing;
    return TS_FORWARD(ctx, y, linear_cross_entropy_forward);
}
