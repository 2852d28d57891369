// tinyseq_op (api/tinyseq.h): the attention walkthrough's steps on plain
// arrays, each built from the library's own ops (autograd/ops.h) so its
// gradient is the tape's backward. One table row per op.
//
// S = source positions (keys), T = queries, D = query width, K = key width,
// A = additive attention's width, E = value width.
#include "api/tinyseq.h"

#include "autograd/ops.h"

#include <math.h>
#include <string.h>

enum { MAX_IN = 5 };

typedef ts_tensor *(*op_build)(ts_ctx *ctx, ts_tensor *const *in);

// The inputs come in with a batch of one in front where the library's op
// has a batch dimension: (D) -> (1, D), (S, K) -> (1, S, K).
static ts_tensor *batch_of_one(ts_ctx *ctx, ts_tensor *t) {
    if (!t) return NULL;
    int dims[3] = {1, t->shape[0], t->ndim > 1 ? t->shape[1] : 0};
    return ts_reshape(ctx, t, t->ndim + 1, dims);
}

static ts_tensor *as_vector(ts_ctx *ctx, ts_tensor *t) {
    if (!t) return NULL;
    int dims[1] = {(int)t->size};
    return ts_reshape(ctx, t, 1, dims);
}

// e (S) = [q . k_s]: Luong's dot score.
static ts_tensor *dot_scores(ts_ctx *ctx, ts_tensor *const *in) {
    return as_vector(ctx, ts_attn_dot(ctx, batch_of_one(ctx, in[0]), batch_of_one(ctx, in[1])));
}

// e (S) = [q W k_s]: Luong's general score, W (D, K).
static ts_tensor *general_scores(ts_ctx *ctx, ts_tensor *const *in) {
    ts_tensor *q = ts_matmul(ctx, batch_of_one(ctx, in[0]), in[2], 0, 0);  // (1, K)
    return as_vector(ctx, ts_attn_dot(ctx, q, batch_of_one(ctx, in[1])));
}

// e (S) = [v . tanh(W1 q + W2 k_s)]: Bahdanau's additive score, W1 (A, D), W2 (A, K), v (A).
static ts_tensor *additive_scores(ts_ctx *ctx, ts_tensor *const *in) {
    ts_tensor *q = ts_matmul(ctx, batch_of_one(ctx, in[0]), in[2], 0, 1);  // (1, A)
    ts_tensor *keys = ts_matmul(ctx, in[1], in[3], 0, 1);                  // (S, A)
    return as_vector(ctx, ts_attn_additive(ctx, q, batch_of_one(ctx, keys), in[4]));
}

// Each row's softmax (the largest subtracted first, so 927 vs 929 is no overflow).
static ts_tensor *softmax(ts_ctx *ctx, ts_tensor *const *in) {
    if (in[0]->ndim > 1) return ts_softmax(ctx, in[0], NULL);
    return as_vector(ctx, ts_softmax(ctx, batch_of_one(ctx, in[0]), NULL));
}

// c (K) = sum_s w_s k_s: the context vector.
static ts_tensor *context(ts_ctx *ctx, ts_tensor *const *in) {
    return as_vector(ctx, ts_attn_context(ctx, batch_of_one(ctx, in[0]), batch_of_one(ctx, in[1])));
}

// softmax(Q K^T / sqrt(D)) (T, S): scaled dot-product attention's weights.
static ts_tensor *scaled_dot_weights(ts_ctx *ctx, ts_tensor *const *in) {
    ts_tensor *scores = ts_matmul(ctx, in[0], in[1], 0, 1);  // (T, S)
    return ts_softmax(ctx, ts_scale(ctx, scores, 1.0 / sqrt((double)in[0]->shape[1])), NULL);
}

// softmax(Q K^T / sqrt(D)) V (T, E).
static ts_tensor *scaled_dot(ts_ctx *ctx, ts_tensor *const *in) {
    return ts_matmul(ctx, scaled_dot_weights(ctx, in), in[2], 0, 0);
}

typedef struct {
    const char *name;
    op_build build;
    int n_in;
    int ndim[MAX_IN];          // each input's dimensions (0: 1 or 2)
    const char *shapes[MAX_IN];  // for messages
} op_row;

static const op_row ops[] = {
    {"dot_scores", dot_scores, 2, {1, 2}, {"query (D)", "keys (S, D)"}},
    {"general_scores", general_scores, 3, {1, 2, 2}, {"query (D)", "keys (S, K)", "W (D, K)"}},
    {"additive_scores", additive_scores, 5, {1, 2, 2, 2, 1},
     {"query (D)", "keys (S, K)", "W1 (A, D)", "W2 (A, K)", "v (A)"}},
    {"softmax", softmax, 1, {0}, {"scores (S) or (R, S)"}},
    {"context", context, 2, {1, 2}, {"weights (S)", "values (S, K)"}},
    {"scaled_dot", scaled_dot, 3, {2, 2, 2}, {"queries (T, D)", "keys (S, D)", "values (S, E)"}},
    {"scaled_dot_weights", scaled_dot_weights, 2, {2, 2}, {"queries (T, D)", "keys (S, D)"}},
};

// The output of op `name` on inputs, with the gradients when dout is given.
// out/din NULL: the shape only, into *shape_of.
static int run(const char *name, const tinyseq_array *inputs, int n_in, double *out, size_t out_size,
               const double *dout, double *const *din, ts_tensor *shape_of) {
    const op_row *op = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (name && !strcmp(ops[i].name, name)) op = &ops[i];
    if (!op) return ts_fail(TS_ERR_ARG, "no op '%s' (dot_scores, general_scores, additive_scores, softmax, context, "
                                        "scaled_dot, scaled_dot_weights)", name ? name : "(null)");
    if (n_in != op->n_in) return ts_fail(TS_ERR_ARG, "%s takes %d inputs, got %d", name, op->n_in, n_in);
    for (int i = 0; i < n_in; i++) {
        int want = op->ndim[i], got = inputs[i].ndim;
        if (!inputs[i].data || (want ? got != want : got != 1 && got != 2))
            return ts_fail(TS_ERR_SHAPE, "%s: input %d is %s, but it has %d dimension%s", name, i, op->shapes[i], got,
                           got == 1 ? "" : "s");
    }
    ts_arena *arena = ts_arena_new((size_t)1 << 20);
    if (!arena) return ts_fail(TS_ERR_NOMEM, "cannot allocate the arena");
    // The arena chains blocks as the op needs them (tensor/arena.h).
    int rc;
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *in[MAX_IN];
    for (int i = 0; i < n_in; i++)
        if ((in[i] = ts_constant(&ctx, inputs[i].ndim, inputs[i].dims, inputs[i].data))) in[i]->requires_grad = 1;
    ts_tensor *y = ctx.status ? NULL : op->build(&ctx, in);
    rc = y ? TS_OK : ctx.status;
    if (!rc && shape_of) *shape_of = *y;
    else if (!rc && y->size != out_size)
        rc = ts_fail(TS_ERR_SHAPE, "%s: the output has %zu values, room was given for %zu", name, y->size, out_size);
    if (!rc && !shape_of) memcpy(out, y->data, y->size * sizeof *out);
    if (!rc && !shape_of && dout) {
        // d sum(y * dout) / d input: the backward of y seeded with dout.
        ts_tensor *weights = ts_constant(&ctx, y->ndim, y->shape, dout);
        rc = ts_backward(&ctx, ts_sum(&ctx, ts_mul(&ctx, y, weights)));
        for (int i = 0; !rc && i < n_in; i++) {
            if (!din[i]) continue;
            if (in[i]->grad) memcpy(din[i], in[i]->grad, in[i]->size * sizeof(double));
            else memset(din[i], 0, in[i]->size * sizeof(double));
        }
    }
    ts_arena_free(arena);
    return rc ? ts_fail(rc, "%s: %s", name, ts_last_error()) : TS_OK;
}

int tinyseq_op(const char *name, const tinyseq_array *inputs, int n_in, double *out, size_t out_size,
               const double *dout, double *const *din) {
    if (!out) return ts_fail(TS_ERR_ARG, "no output buffer");
    if (dout && !din) return ts_fail(TS_ERR_ARG, "dout without din");
    return run(name, inputs, n_in, out, out_size, dout, din, NULL);
}

int tinyseq_op_shape(const char *name, const tinyseq_array *inputs, int n_in, int *ndim, int *dims) {
    ts_tensor y;
    int rc = run(name, inputs, n_in, NULL, 0, NULL, NULL, &y);
    if (rc) return rc;
    *ndim = y.ndim;
    for (int i = 0; i < 3; i++) dims[i] = i < y.ndim ? y.shape[i] : 1;
    return TS_OK;
}
