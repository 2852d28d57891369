// Inverted dropout: the expected value of each element is unchanged, so
// inference simply skips the op.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

// y = a * m / (1 - p), m_i ~ Bernoulli(1 - p) drawn from rng;  da += dy * m / (1 - p)
// The forward keeps m / (1 - p) in `saved`.
ts_tensor *ts_dropout(ts_ctx *ctx, ts_tensor *a, double p, gsl_rng *rng) {
    if (!a) return NULL;
    if (!(p >= 0.0 && p < 1.0)) return ts_ctx_fail(ctx, TS_ERR_ARG, "dropout: p = %g outside [0, 1)", p);
    if (p == 0.0) return a;
    ts_tensor *y = ts_node(ctx, TS_OP_DROPOUT, a->ndim, a->shape, 1, &a);
    if (!y) return NULL;
    double *keep = ts_arena_alloc(ctx->arena, a->size * sizeof(double));
    if (!keep) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    double scale = 1.0 / (1.0 - p);
    for (size_t i = 0; i < a->size; i++) {
        keep[i] = gsl_rng_uniform(rng) < p ? 0.0 : scale;
        y->data[i] = a->data[i] * keep[i];
    }
    y->saved = keep;
    y->darg[0] = p;
    return y;
}
int ts_dropout_backward(ts_ctx *ctx, ts_tensor *y) {
    double *da = input_grad(ctx, y, 0);
    const double *keep = y->saved;
    if (da)
        for (size_t i = 0; i < y->size; i++) da[i] += y->grad[i] * keep[i];
    return ctx->status;
}
