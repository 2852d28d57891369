// Inverted dropout: the expected value of each element is unchanged, so
// inference simply skips the op.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#define TS_TEMPLATE "autograd/ops_dropout_t.h"
#include "tensor/dtype_twice.h"

// y = a * m / (1 - p), m_i ~ Bernoulli(1 - p) drawn from rng;  da += dy * m / (1 - p)
// The forward keeps m / (1 - p) in `saved`.
void ts_dropout_keep(void *keep, int dtype, size_t n, double p, gsl_rng *rng) {
    TS_BY_DTYPE(dtype, draw_keep, keep, n, p, rng);
}

ts_tensor *ts_dropout(ts_ctx *ctx, ts_tensor *a, double p, gsl_rng *rng) {
    if (!a) return NULL;
    if (!(p >= 0.0 && p < 1.0)) return ts_ctx_fail(ctx, TS_ERR_ARG, "dropout: p = %g outside [0, 1)", p);
    if (p == 0.0) return a;
    ts_tensor *y = ts_node(ctx, TS_OP_DROPOUT, a->ndim, a->shape, 1, &a);
    if (!y) return NULL;
    void *keep = ts_arena_alloc(ctx->arena, ts_tensor_bytes(a));
    if (!keep) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_dropout_keep(keep, y->dtype, a->size, p, rng);
    y->saved = keep;
    y->darg[0] = p;
    return TS_FORWARD(ctx, y, dropout_forward);
}
