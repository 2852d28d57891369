// Gradient checks for every differentiable op, on several shapes including
// 1-sized dimensions. Each op's output y is reduced as sum(y * w) with fixed,
// uneven weights w, so the upstream gradient is not all ones and a wrong
// transpose or index cannot hide. Tolerance: |a - n| <= 1e-8 + 1e-6 |n|.
// Every case then runs again in float32 on the same (float-representable)
// inputs: its loss and gradients agree with float64's (check_float32).
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "tensor/parallel.h"
#include "testutil.h"
#include "tensor/threads.h"

typedef ts_tensor *(*op_fn)(ts_ctx *ctx, ts_tensor **x, void *arg);

typedef struct {
    op_fn op;
    ts_tensor **inputs;
    void *arg;
} op_case;

// sum(y * w) with w_i = 0.5 + sin(1.7 i + 0.3): deterministic and uneven.
static ts_tensor *weighted_sum(ts_ctx *ctx, ts_tensor *y) {
    if (!y) return NULL;
    double *w = ts_arena_alloc(ctx->arena, y->size * sizeof(double));
    cr_assert_not_null(w);
    for (size_t i = 0; i < y->size; i++) w[i] = 0.5 + sin(1.7 * (double)i + 0.3);
    return ts_sum(ctx, ts_mul(ctx, y, ts_constant(ctx, y->ndim, y->shape, w)));
}

static ts_tensor *case_loss(ts_ctx *ctx, void *user) {
    op_case *c = user;
    return weighted_sum(ctx, c->op(ctx, c->inputs, c->arg));
}

enum { POSITIVE = 1, AWAY_FROM_ZERO = 2 };

// float32 against float64: the loss sum(y * w) and the gradient of every
// input. Tolerance: float32 rounds each stored value to 6e-8 relative; the
// ops here sum at most ~60 terms (the largest inner size of the shapes
// below) on values of order 1, so 60 x 6e-8 = 3.6e-6, with a margin of 5:
// |f32 - f64| <= 2e-5 (1 + |f64|) elementwise, measured on the largest
// gradient of the tensor (a gradient near 0 next to ones of order 1 keeps
// the others' absolute error).
static void check_float32(const char *what, op_case *c, int n_inputs) {
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *in32[4];
    for (int i = 0; i < n_inputs; i++) {
        ts_tensor *x = c->inputs[i];
        memset(x->grad, 0, x->size * sizeof(double));
        in32[i] = ts_tensor_persistent_dtype(TS_F32, x->ndim, x->shape, x->name);
        cr_assert_not_null(in32[i]);
        ts_values_convert(in32[i]->raw, TS_F32, x->data, TS_F64, x->size);
    }
    ts_tensor *loss = case_loss(&ctx, c);
    cr_assert_not_null(loss, "%s: %s", what, ts_last_error());
    cr_assert_eq(ts_backward(&ctx, loss), TS_OK, "%s: %s", what, ts_last_error());
    double loss64 = loss->data[0];
    ts_ctx_reset(&ctx);
    ctx.dtype = TS_F32;
    op_case c32 = {c->op, in32, c->arg};
    ts_tensor *loss32 = case_loss(&ctx, &c32);
    cr_assert_not_null(loss32, "%s in float32: %s", what, ts_last_error());
    cr_assert_eq(loss32->dtype, TS_F32);
    cr_assert_eq(ts_backward(&ctx, loss32), TS_OK, "%s in float32: %s", what, ts_last_error());
    cr_assert(fabs(loss32->data_f32[0] - loss64) <= 2e-5 * (1 + fabs(loss64)), "%s: float32 loss %.9g, float64 %.12g",
              what, loss32->data_f32[0], loss64);
    for (int i = 0; i < n_inputs; i++) {
        ts_tensor *x = c->inputs[i];
        double scale = 1;
        for (size_t k = 0; k < x->size; k++) scale = fmax(scale, fabs(x->grad[k]));
        for (size_t k = 0; k < x->size; k++)
            cr_assert(fabs(in32[i]->grad_f32[k] - x->grad[k]) <= 2e-5 * scale,
                      "%s: d/d input %d [%zu]: float32 %.9g, float64 %.12g", what, i, k, in32[i]->grad_f32[k], x->grad[k]);
    }
    for (int i = 0; i < n_inputs; i++) ts_tensor_free_persistent(in32[i]);
    ts_arena_free(arena);
}

// Creates the inputs (random values, kind-dependent), runs the check and
// fails the test naming the input and the worst value if any is off.
static void check_op(const char *what, op_fn op, void *arg, int n_inputs, const int (*shapes)[4],
                     int value_kind) {
    static unsigned long seed = 1;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed++);
    ts_tensor *inputs[4];
    for (int i = 0; i < n_inputs; i++) {
        char name[64];  // 40 + ".x" + an int always fit
        snprintf(name, sizeof name, "%.40s.x%d", what, i);
        inputs[i] = ts_tensor_new_persistent(shapes[i][0], &shapes[i][1], name);
        cr_assert_not_null(inputs[i], "%s", ts_last_error());
        for (size_t k = 0; k < inputs[i]->size; k++) {
            double u = gsl_rng_uniform(rng);
            double v = value_kind == POSITIVE ? 0.2 + 2.0 * u
                       : value_kind == AWAY_FROM_ZERO ? (u < 0.5 ? -1 : 1) * (0.1 + u) : 4.0 * u - 2.0;
            inputs[i]->data[k] = (float)v;  // float32 holds the same inputs exactly
        }
    }
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    op_case c = {op, inputs, arg};
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    ts_gradcheck_result results[4];
    int rc = ts_gradcheck(&ctx, case_loss, &c, inputs, n_inputs, &opts, results);
    cr_assert_eq(rc, TS_OK, "%s: gradcheck could not run: %s", what, ts_last_error());
    for (int i = 0; i < n_inputs; i++) {
        cr_assert(results[i].checked == inputs[i]->size);
        cr_assert(results[i].passed,
                  "%s: d/d %s wrong at %zu: analytic %.12g, numeric %.12g (max rel err %.3g)", what,
                  results[i].name, results[i].worst_index, results[i].worst_analytic,
                  results[i].worst_numeric, results[i].max_rel_err);
    }
    check_float32(what, &c, n_inputs);
    for (int i = 0; i < n_inputs; i++) ts_tensor_free_persistent(inputs[i]);
    ts_arena_free(arena);
    gsl_rng_free(rng);
}

// Shapes: {ndim, d0, d1, d2}.
static const int elementwise_shapes[][4] = {
    {1, 1, 0, 0}, {2, 1, 1, 0}, {2, 3, 1, 0}, {2, 1, 4, 0}, {2, 5, 7, 0}, {3, 2, 3, 4}, {3, 1, 1, 5},
};
enum { N_ELEMENTWISE = sizeof elementwise_shapes / sizeof elementwise_shapes[0] };

static void check_unary(const char *what, op_fn op, int kind) {
    for (int s = 0; s < N_ELEMENTWISE; s++) check_op(what, op, NULL, 1, &elementwise_shapes[s], kind);
}
static void check_binary(const char *what, op_fn op) {
    for (int s = 0; s < N_ELEMENTWISE; s++) {
        const int shapes[2][4] = {
            {elementwise_shapes[s][0], elementwise_shapes[s][1], elementwise_shapes[s][2], elementwise_shapes[s][3]},
            {elementwise_shapes[s][0], elementwise_shapes[s][1], elementwise_shapes[s][2], elementwise_shapes[s][3]},
        };
        check_op(what, op, NULL, 2, shapes, 0);
    }
}

static ts_tensor *op_add(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_add(c, x[0], x[1]); }
static ts_tensor *op_sub(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_sub(c, x[0], x[1]); }
static ts_tensor *op_mul(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_mul(c, x[0], x[1]); }
static ts_tensor *op_mul_self(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_mul(c, x[0], x[0]); }
static ts_tensor *op_scale(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_scale(c, x[0], -2.5); }
static ts_tensor *op_tanh(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_tanh(c, x[0]); }
static ts_tensor *op_sigmoid(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_sigmoid(c, x[0]); }
static ts_tensor *op_relu(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_relu(c, x[0]); }
static ts_tensor *op_exp(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_exp(c, x[0]); }
static ts_tensor *op_log(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_log(c, x[0]); }

Test(ops, add_gradcheck) { check_binary("add", op_add); }
Test(ops, sub_gradcheck) { check_binary("sub", op_sub); }
Test(ops, mul_gradcheck) { check_binary("mul", op_mul); }
Test(ops, tensor_used_twice_accumulates) { check_unary("mul(x, x)", op_mul_self, 0); }
Test(ops, scale_gradcheck) { check_unary("scale", op_scale, 0); }
Test(ops, tanh_gradcheck) { check_unary("tanh", op_tanh, 0); }
Test(ops, sigmoid_gradcheck) { check_unary("sigmoid", op_sigmoid, 0); }
Test(ops, relu_gradcheck) { check_unary("relu", op_relu, AWAY_FROM_ZERO); }
Test(ops, exp_gradcheck) { check_unary("exp", op_exp, 0); }
Test(ops, log_gradcheck) { check_unary("log", op_log, POSITIVE); }

static ts_tensor *op_add_bias(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_add_bias(c, x[0], x[1]); }
Test(ops, add_bias_gradcheck) {
    const int cases[][2][4] = {
        {{2, 1, 1, 0}, {1, 1, 0, 0}}, {{2, 4, 3, 0}, {1, 3, 0, 0}}, {{3, 2, 3, 5}, {1, 5, 0, 0}},
        {{1, 6, 0, 0}, {1, 6, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_op("add_bias", op_add_bias, NULL, 2, cases[i], 0);
}

static ts_tensor *op_matmul(ts_ctx *c, ts_tensor **x, void *a) {
    const int *t = a;
    return ts_matmul(c, x[0], x[1], t[0], t[1]);
}
Test(ops, matmul_gradcheck_all_transposes) {
    const int mnk[][3] = {{1, 1, 1}, {3, 1, 2}, {1, 4, 3}, {2, 3, 1}, {4, 5, 3}};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t s = 0; s < sizeof mnk / sizeof mnk[0]; s++) {
                int m = mnk[s][0], n = mnk[s][1], k = mnk[s][2];
                int shapes[2][4] = {{2, ta ? k : m, ta ? m : k, 0}, {2, tb ? n : k, tb ? k : n, 0}};
                int flags[2] = {ta, tb};
                char what[48];
                snprintf(what, sizeof what, "matmul(ta=%d, tb=%d, %dx%dx%d)", ta, tb, m, n, k);
                check_op(what, op_matmul, flags, 2, (const int(*)[4])shapes, 0);
            }
}

static ts_tensor *op_sum(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_scale(c, ts_sum(c, x[0]), 1.3); }
static ts_tensor *op_mean(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_scale(c, ts_mean(c, x[0]), 1.3); }
Test(ops, sum_gradcheck) { check_unary("sum", op_sum, 0); }
Test(ops, mean_gradcheck) { check_unary("mean", op_mean, 0); }

static ts_tensor *op_concat2(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_concat(c, x, 2); }
static ts_tensor *op_concat3(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_concat(c, x, 3); }
Test(ops, concat_gradcheck) {
    const int two[][2][4] = {{{2, 1, 1, 0}, {2, 1, 2, 0}}, {{2, 3, 2, 0}, {2, 3, 4, 0}}, {{3, 2, 3, 1}, {3, 2, 3, 2}}};
    for (size_t i = 0; i < 3; i++) check_op("concat2", op_concat2, NULL, 2, two[i], 0);
    const int three[3][4] = {{2, 2, 1, 0}, {2, 2, 3, 0}, {2, 2, 2, 0}};
    check_op("concat3", op_concat3, NULL, 3, three, 0);
}

static ts_tensor *op_split(ts_ctx *c, ts_tensor **x, void *a) {
    // Both halves of a split, used with different weights.
    int cols = ts_cols(x[0]), left = *(int *)a;
    ts_tensor *l = ts_slice_cols(c, x[0], 0, left);
    ts_tensor *r = ts_slice_cols(c, x[0], left, cols - left);
    ts_tensor *halves[2] = {ts_scale(c, r, 0.7), ts_tanh(c, l)};
    return ts_concat(c, halves, 2);
}
Test(ops, slice_cols_gradcheck) {
    const int shapes[][1][4] = {{{2, 1, 2, 0}}, {{2, 3, 5, 0}}, {{3, 2, 2, 4}}};
    int left[] = {1, 2, 3};
    for (int i = 0; i < 3; i++) check_op("slice_cols", op_split, &left[i], 1, shapes[i], 0);
}

static ts_tensor *op_gather(ts_ctx *c, ts_tensor **x, void *a) {
    static const int ids[] = {2, 0, 2, 3, 1, 0};
    return ts_gather_rows(c, x[0], ids, *(int *)a, -1);
}
Test(ops, gather_rows_gradcheck_with_repeats) {
    const int shapes[][1][4] = {{{2, 4, 1, 0}}, {{2, 4, 3, 0}}};
    int n[] = {6, 1};
    for (int i = 0; i < 2; i++) check_op("gather_rows", op_gather, &n[i], 1, shapes[i], 0);
}

Test(ops, gather_rows_padding_row_gets_no_gradient) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *table = ts_tensor_new_persistent(2, (int[]){3, 2}, "emb");
    for (int i = 0; i < 6; i++) table->data[i] = i;
    const int ids[] = {0, 1, 0, 2};
    ts_tensor *loss = ts_sum(&ctx, ts_gather_rows(&ctx, table, ids, 4, 0));
    cr_assert_eq(ts_backward(&ctx, loss), TS_OK);
    double want[] = {0, 0, 1, 1, 1, 1};
    assert_allclose(table->grad, want, 6, 0, 0);
    ts_tensor_free_persistent(table);
    ts_arena_free(arena);
}

Test(ops, gather_rows_rejects_out_of_range_id) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *table = ts_tensor_new_persistent(2, (int[]){3, 2}, "emb");
    const int ids[] = {0, 3};
    cr_assert_null(ts_gather_rows(&ctx, table, ids, 2, -1));
    cr_assert_eq(ctx.status, TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "ids[1] = 3"), "message: %s", ts_last_error());
    ts_tensor_free_persistent(table);
    ts_arena_free(arena);
}

static ts_tensor *op_slice_rows(ts_ctx *c, ts_tensor **x, void *a) {
    (void)a;
    int rows = x[0]->shape[0];
    ts_tensor *first = ts_slice_rows(c, x[0], 0, 1);
    ts_tensor *rest = rows > 1 ? ts_slice_rows(c, x[0], 1, rows - 1) : first;
    return ts_add(c, ts_sum(c, ts_mul(c, first, first)), ts_sum(c, ts_tanh(c, rest)));
}
Test(ops, slice_rows_gradcheck) {
    const int shapes[][1][4] = {{{1, 1, 0, 0}}, {{2, 3, 2, 0}}, {{3, 4, 2, 3}}};
    for (int i = 0; i < 3; i++) check_op("slice_rows", op_slice_rows, NULL, 1, shapes[i], 0);
}

static ts_tensor *op_reshape(ts_ctx *c, ts_tensor **x, void *a) {
    (void)a;
    ts_tensor *r = ts_reshape(c, x[0], 2, (int[]){2, (int)x[0]->size / 2});
    return ts_matmul(c, r, r, 1, 0);  // uses the layout: a wrong reshape shows
}
Test(ops, reshape_gradcheck) {
    const int shapes[][1][4] = {{{3, 2, 3, 1}}, {{1, 8, 0, 0}}, {{2, 4, 3, 0}}};
    for (int i = 0; i < 3; i++) check_op("reshape", op_reshape, NULL, 1, shapes[i], 0);
}

static ts_tensor *op_softmax(ts_ctx *c, ts_tensor **x, void *a) { return ts_softmax(c, x[0], a); }
static ts_tensor *op_log_softmax(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_log_softmax(c, x[0]); }
Test(ops, softmax_gradcheck) { check_unary("softmax", op_softmax, 0); }
Test(ops, log_softmax_gradcheck) { check_unary("log_softmax", op_log_softmax, 0); }

Test(ops, masked_softmax_gradcheck_and_exact_zeros) {
    // (3, 4): row 0 keeps 2, row 1 keeps all, row 2 keeps 1.
    static const double mask[] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0};
    const int shape[1][4] = {{2, 3, 4, 0}};
    check_op("masked softmax", op_softmax, (void *)mask, 1, shape, 0);

    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double scores[12] = {1, 2, 1e3, -5, 0, 0, 0, 0, 7, 900, 900, 900};
    ts_tensor *y = ts_softmax(&ctx, ts_constant(&ctx, 2, (int[]){3, 4}, scores), mask);
    for (int i = 0; i < 12; i++)
        if (mask[i] == 0) cr_assert(y->data[i] == 0.0, "masked weight %d is %g, not exactly 0", i, y->data[i]);
    cr_assert(y->data[8] == 1.0);
    ts_arena_free(arena);
}

typedef struct {
    const int *targets;
    int ignore;
    double smoothing;
} ce_arg;
static ts_tensor *op_cross_entropy(ts_ctx *c, ts_tensor **x, void *a) {
    ce_arg *ce = a;
    return ts_cross_entropy(c, x[0], ce->targets, ce->ignore, ce->smoothing);
}
Test(ops, cross_entropy_gradcheck_with_ignore_index) {
    static const int targets[] = {2, 0, 0, 4, 1};
    ce_arg ignore_pad = {targets, 0, 0.0}, ignore_none = {targets, -1, 0.0};
    const int shape[1][4] = {{2, 5, 5, 0}};
    check_op("cross_entropy(ignore 0)", op_cross_entropy, &ignore_pad, 1, shape, 0);
    check_op("cross_entropy(no ignore)", op_cross_entropy, &ignore_none, 1, shape, 0);
    static const int zero[] = {0};
    ce_arg single_target = {zero, -1, 0.0};
    const int single[1][4] = {{2, 1, 1, 0}};
    check_op("cross_entropy(1x1)", op_cross_entropy, &single_target, 1, single, 0);
    ce_arg smoothed = {targets, 0, 0.15};
    check_op("cross_entropy(smoothing 0.15, ignore 0)", op_cross_entropy, &smoothed, 1, shape, 0);
}

Test(ops, cross_entropy_is_mean_over_kept_rows_and_matches_composition) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double logits[] = {1, 2, 3, 0.5, -1, 2, 900, 929, 0};  // the last row would overflow a naive exp
    const int targets[] = {2, 0, 1};
    ts_tensor *x = ts_constant(&ctx, 2, (int[]){3, 3}, logits);
    ts_tensor *fused = ts_cross_entropy(&ctx, x, targets, 0, 0.0);  // row 1 (target 0) ignored
    ts_tensor *logp = ts_log_softmax(&ctx, x);
    double want = -(logp->data[0 * 3 + 2] + logp->data[2 * 3 + 1]) / 2.0;
    assert_allclose(fused->data, &want, 1, 0, 1e-15);
    ts_arena_free(arena);
}

static ts_tensor *op_dropout(ts_ctx *c, ts_tensor **x, void *a) {
    gsl_rng *rng = a;
    gsl_rng_set(rng, 7);  // the same mask at every evaluation
    return ts_dropout(c, x[0], 0.4, rng);
}
Test(ops, dropout_gradcheck_and_mask) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    const int shape[1][4] = {{2, 6, 7, 0}};
    check_op("dropout", op_dropout, rng, 1, shape, 0);
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double ones[1000];
    for (int i = 0; i < 1000; i++) ones[i] = 1.0;
    ts_tensor *y = op_dropout(&ctx, (ts_tensor *[]){ts_constant(&ctx, 1, (int[]){1000}, ones)}, rng);
    int zeros = 0;
    for (int i = 0; i < 1000; i++) {
        cr_assert(y->data[i] == 0.0 || fabs(y->data[i] - 1.0 / 0.6) < 1e-15);
        zeros += y->data[i] == 0.0;
    }
    cr_assert(zeros > 330 && zeros < 470, "%d of 1000 dropped at p = 0.4", zeros);
    ts_arena_free(arena);
    gsl_rng_free(rng);
}

// The checker itself must see a wrong gradient: this loss differentiates as
// 2x on the tape but evaluates as 2.001x without it.
static ts_tensor *inconsistent_loss(ts_ctx *ctx, void *user) {
    ts_tensor *x = user;
    return ts_sum(ctx, ts_scale(ctx, x, ctx->grad_enabled ? 2.0 : 2.001));
}
Test(gradcheck, reports_a_wrong_gradient) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *x = ts_tensor_new_persistent(1, (int[]){3}, "x");
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    ts_gradcheck_result res;
    cr_assert_eq(ts_gradcheck(&ctx, inconsistent_loss, x, &x, 1, &opts, &res), TS_OK);
    cr_assert_not(res.passed, "a 0.05%% gradient error went unnoticed");
    cr_assert(res.max_rel_err > 1e-4);
    ts_tensor_free_persistent(x);
    ts_arena_free(arena);
}

Test(autograd, backward_rejects_non_scalar_loss) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *x = ts_tensor_new_persistent(1, (int[]){3}, "x");
    cr_assert_eq(ts_backward(&ctx, ts_tanh(&ctx, x)), TS_ERR_SHAPE);
    cr_assert(strstr(ts_last_error(), "single number"), "%s", ts_last_error());
    ts_tensor_free_persistent(x);
    ts_arena_free(arena);
}

Test(autograd, no_grad_mode_records_nothing) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *x = ts_tensor_new_persistent(1, (int[]){3}, "x");
    ts_set_grad_enabled(&ctx, 0);
    ts_tensor *loss = ts_sum(&ctx, ts_tanh(&ctx, x));
    cr_assert_not_null(loss);
    cr_assert_null(ctx.tape);
    cr_assert_not(loss->requires_grad);
    cr_assert_neq(ts_backward(&ctx, loss), TS_OK);
    ts_tensor_free_persistent(x);
    ts_arena_free(arena);
}

Test(autograd, shape_errors_are_sticky_and_named) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *a = ts_tensor_new_persistent(2, (int[]){2, 3}, "a");
    ts_tensor *b = ts_tensor_new_persistent(2, (int[]){2, 3}, "b");
    ts_tensor *bad = ts_matmul(&ctx, a, b, 0, 0);
    cr_assert_null(bad);
    cr_assert_eq(ctx.status, TS_ERR_SHAPE);
    cr_assert(strstr(ts_last_error(), "(2, 3) times (2, 3)"), "%s", ts_last_error());
    cr_assert_null(ts_tanh(&ctx, bad));             // NULL in, NULL out
    cr_assert_null(ts_add(&ctx, a, b));             // and the step stays failed
    cr_assert_eq(ts_backward(&ctx, NULL), TS_ERR_SHAPE);
    ts_tensor_free_persistent(a);
    ts_tensor_free_persistent(b);
    ts_arena_free(arena);
}

// ---- row stacking, the fused GRU and LSTM cells and the attention nodes ----

static ts_tensor *op_stack(ts_ctx *c, ts_tensor **x, void *a) {
    (void)a;
    ts_tensor *parts[5] = {x[0], ts_tanh(c, x[1]), x[0], x[2], x[1]};  // 5 > TS_MAX_SRC, repeats
    return ts_stack_rows(c, parts, 5);
}
Test(ops, stack_rows_gradcheck) {
    const int shapes[3][4] = {{2, 1, 3, 0}, {2, 2, 3, 0}, {2, 3, 3, 0}};
    check_op("stack_rows", op_stack, NULL, 3, shapes, 0);
}

// x[0] = gates_x (B, 3H), x[1] = h (B, H), x[2] = w_hh (3H, H), x[3] = b_hh (3H)
static ts_tensor *op_gru_fused(ts_ctx *c, ts_tensor **x, void *mask) {
    return ts_gru_cell(c, x[0], x[1], x[2], x[3], mask);
}
// The same cell from primitive ops; masked rows are not supported here.
static ts_tensor *op_gru_composed(ts_ctx *c, ts_tensor **x, void *unused) {
    (void)unused;
    int H = ts_cols(x[1]);
    ts_tensor *gh = ts_add_bias(c, ts_matmul(c, x[1], x[2], 0, 1), x[3]);
    ts_tensor *r = ts_sigmoid(c, ts_add(c, ts_slice_cols(c, x[0], 0, H), ts_slice_cols(c, gh, 0, H)));
    ts_tensor *z = ts_sigmoid(c, ts_add(c, ts_slice_cols(c, x[0], H, H), ts_slice_cols(c, gh, H, H)));
    ts_tensor *n = ts_tanh(c, ts_add(c, ts_slice_cols(c, x[0], 2 * H, H), ts_mul(c, r, ts_slice_cols(c, gh, 2 * H, H))));
    return ts_add(c, n, ts_mul(c, z, ts_sub(c, x[1], n)));  // (1 - z) n + z h
}

Test(ops, gru_cell_gradcheck) {
    const int dims[][2] = {{1, 1}, {3, 2}, {2, 5}};
    static const double mask[] = {1, 0, 1};
    for (int i = 0; i < 3; i++) {
        int B = dims[i][0], H = dims[i][1];
        const int shapes[4][4] = {{2, B, 3 * H, 0}, {2, B, H, 0}, {2, 3 * H, H, 0}, {1, 3 * H, 0, 0}};
        check_op("gru_cell", op_gru_fused, NULL, 4, shapes, 0);
        if (B == 3) check_op("gru_cell(masked row)", op_gru_fused, (void *)mask, 4, shapes, 0);
    }
}

Test(ops, gru_cell_fused_equals_composition) {
    enum { B = 3, H = 4 };
    const int dims[4][3] = {{B, 3 * H}, {B, H}, {3 * H, H}, {3 * H}};
    const int ndims[4] = {2, 2, 2, 1};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_tensor *x[4];
    for (int i = 0; i < 4; i++) {
        x[i] = ts_tensor_new_persistent(ndims[i], dims[i], "x");
        for (size_t k = 0; k < x[i]->size; k++) x[i]->data[k] = 2.0 * gsl_rng_uniform(rng) - 1.0;
    }
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double value[2][B * H], grads[2][4][3 * H * H];
    op_fn fns[2] = {op_gru_fused, op_gru_composed};
    for (int f = 0; f < 2; f++) {
        ts_ctx_reset(&ctx);
        for (int i = 0; i < 4; i++) memset(x[i]->grad, 0, x[i]->size * sizeof(double));
        ts_tensor *y = fns[f](&ctx, x, NULL);
        memcpy(value[f], y->data, sizeof value[f]);
        cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
        for (int i = 0; i < 4; i++) memcpy(grads[f][i], x[i]->grad, x[i]->size * sizeof(double));
    }
    assert_allclose(value[0], value[1], B * H, 1e-15, 1e-13);
    for (int i = 0; i < 4; i++) assert_allclose(grads[0][i], grads[1][i], x[i]->size, 1e-15, 1e-12);
    for (int i = 0; i < 4; i++) ts_tensor_free_persistent(x[i]);
    ts_arena_free(arena);
    gsl_rng_free(rng);
}

Test(ops, gru_cell_masked_row_keeps_its_state) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double gx[2 * 3] = {1, 2, 3, 4, 5, 6}, h[2] = {0.25, -0.5}, w[3] = {0.1, 0.2, 0.3}, b[3] = {0};
    double mask[2] = {1, 0};
    ts_tensor *y = ts_gru_cell(&ctx, ts_constant(&ctx, 2, (int[]){2, 3}, gx), ts_constant(&ctx, 2, (int[]){2, 1}, h),
                               ts_constant(&ctx, 2, (int[]){3, 1}, w), ts_constant(&ctx, 1, (int[]){3}, b), mask);
    cr_assert(y->data[1] == -0.5, "masked row changed to %g", y->data[1]);
    cr_assert(y->data[0] != 0.25);
    ts_arena_free(arena);
}

// x[0] = gates_x (B, 4H), x[1] = state [h; c] (2B, H), x[2] = w_hh (4H, H), x[3] = b_hh (4H)
static ts_tensor *op_lstm_fused(ts_ctx *c, ts_tensor **x, void *mask) {
    return ts_lstm_cell(c, x[0], x[1], x[2], x[3], mask);
}
// The same cell from primitive ops (torch's formula, gates i, f, g, o);
// masked rows are not supported here.
static ts_tensor *op_lstm_composed(ts_ctx *c, ts_tensor **x, void *unused) {
    (void)unused;
    int B = x[1]->shape[0] / 2, H = ts_cols(x[1]);
    ts_tensor *h = ts_slice_rows(c, x[1], 0, B), *cell = ts_slice_rows(c, x[1], B, B);
    ts_tensor *pre = ts_add(c, x[0], ts_add_bias(c, ts_matmul(c, h, x[2], 0, 1), x[3]));  // (B, 4H)
    ts_tensor *i = ts_sigmoid(c, ts_slice_cols(c, pre, 0, H)), *f = ts_sigmoid(c, ts_slice_cols(c, pre, H, H));
    ts_tensor *g = ts_tanh(c, ts_slice_cols(c, pre, 2 * H, H)), *o = ts_sigmoid(c, ts_slice_cols(c, pre, 3 * H, H));
    ts_tensor *c_next = ts_add(c, ts_mul(c, f, cell), ts_mul(c, i, g));
    return ts_stack_rows(c, (ts_tensor *[]){ts_mul(c, o, ts_tanh(c, c_next)), c_next}, 2);
}

Test(ops, lstm_cell_gradcheck) {
    const int dims[][2] = {{1, 1}, {3, 2}, {2, 5}};
    static const double mask[] = {1, 0, 1};
    for (int i = 0; i < 3; i++) {
        int B = dims[i][0], H = dims[i][1];
        const int shapes[4][4] = {{2, B, 4 * H, 0}, {2, 2 * B, H, 0}, {2, 4 * H, H, 0}, {1, 4 * H, 0, 0}};
        check_op("lstm_cell", op_lstm_fused, NULL, 4, shapes, 0);
        if (B == 3) check_op("lstm_cell(masked row)", op_lstm_fused, (void *)mask, 4, shapes, 0);
    }
}

Test(ops, lstm_cell_fused_equals_composition) {
    enum { B = 3, H = 4 };
    const int dims[4][3] = {{B, 4 * H}, {2 * B, H}, {4 * H, H}, {4 * H}};
    const int ndims[4] = {2, 2, 2, 1};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_tensor *x[4];
    for (int i = 0; i < 4; i++) {
        x[i] = ts_tensor_new_persistent(ndims[i], dims[i], "x");
        for (size_t k = 0; k < x[i]->size; k++) x[i]->data[k] = 2.0 * gsl_rng_uniform(rng) - 1.0;
    }
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double value[2][2 * B * H], grads[2][4][4 * H * H];
    op_fn fns[2] = {op_lstm_fused, op_lstm_composed};
    for (int f = 0; f < 2; f++) {
        ts_ctx_reset(&ctx);
        for (int i = 0; i < 4; i++) memset(x[i]->grad, 0, x[i]->size * sizeof(double));
        ts_tensor *y = fns[f](&ctx, x, NULL);
        cr_assert_not_null(y, "%s", ts_last_error());
        memcpy(value[f], y->data, sizeof value[f]);
        cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
        for (int i = 0; i < 4; i++) memcpy(grads[f][i], x[i]->grad, x[i]->size * sizeof(double));
    }
    assert_allclose(value[0], value[1], 2 * B * H, 1e-15, 1e-13);
    for (int i = 0; i < 4; i++) assert_allclose(grads[0][i], grads[1][i], x[i]->size, 1e-15, 1e-12);
    for (int i = 0; i < 4; i++) ts_tensor_free_persistent(x[i]);
    ts_arena_free(arena);
    gsl_rng_free(rng);
}

Test(ops, lstm_cell_masked_row_keeps_its_state) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double gx[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, state[4] = {0.25, -0.5, 0.75, -1}, w[4] = {0.1, 0.2, 0.3, 0.4}, b[4] = {0};
    double mask[2] = {1, 0};
    ts_tensor *y = ts_lstm_cell(&ctx, ts_constant(&ctx, 2, (int[]){2, 4}, gx), ts_constant(&ctx, 2, (int[]){4, 1}, state),
                                ts_constant(&ctx, 2, (int[]){4, 1}, w), ts_constant(&ctx, 1, (int[]){4}, b), mask);
    cr_assert_not_null(y, "%s", ts_last_error());
    cr_assert(y->data[1] == -0.5 && y->data[3] == -1, "masked row changed to h %g, c %g", y->data[1], y->data[3]);
    cr_assert(y->data[0] != 0.25 && y->data[2] != 0.75);
    cr_assert_null(ts_lstm_cell(&ctx, ts_constant(&ctx, 2, (int[]){2, 4}, gx), ts_constant(&ctx, 2, (int[]){2, 1}, state),
                                ts_constant(&ctx, 2, (int[]){4, 1}, w), ts_constant(&ctx, 1, (int[]){4}, b), NULL));
    cr_assert(strstr(ts_last_error(), "lstm_cell: gates_x (2, 4), state (2, 1)"), "%s", ts_last_error());
    ts_arena_free(arena);
}

static ts_tensor *op_attn_dot(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_attn_dot(c, x[0], x[1]); }
static ts_tensor *op_attn_additive(ts_ctx *c, ts_tensor **x, void *a) {
    (void)a;
    return ts_attn_additive(c, x[0], x[1], x[2]);
}
static ts_tensor *op_attn_context(ts_ctx *c, ts_tensor **x, void *mask) {
    ts_tensor *w = ts_softmax(c, x[0], mask);  // realistic weights, masked entries 0
    return ts_attn_context(c, w, x[1]);
}
Test(ops, attention_nodes_gradcheck) {
    const int bsd[][3] = {{1, 1, 1}, {3, 4, 2}, {2, 1, 5}};
    for (int i = 0; i < 3; i++) {
        int B = bsd[i][0], S = bsd[i][1], D = bsd[i][2];
        const int dot_shapes[2][4] = {{2, B, D, 0}, {3, B, S, D}};
        check_op("attn_dot", op_attn_dot, NULL, 2, dot_shapes, 0);
        const int add_shapes[3][4] = {{2, B, D, 0}, {3, B, S, D}, {1, D, 0, 0}};
        check_op("attn_additive", op_attn_additive, NULL, 3, add_shapes, 0);
        const int ctx_shapes[2][4] = {{2, B, S, 0}, {3, B, S, D + 1}};
        check_op("attn_context", op_attn_context, NULL, 2, ctx_shapes, 0);
    }
    static const double mask[] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0};  // (3, 4)
    const int ctx_shapes[2][4] = {{2, 3, 4, 0}, {3, 3, 4, 2}};
    check_op("attn_context(masked)", op_attn_context, (void *)mask, 2, ctx_shapes, 0);
}

static ts_tensor *op_swap01(ts_ctx *c, ts_tensor **x, void *a) { (void)a; return ts_swap01(c, x[0]); }
Test(ops, swap01_gradcheck) {
    const int shapes[][1][4] = {{{3, 1, 1, 1}}, {{3, 2, 3, 4}}, {{3, 4, 1, 2}}};
    for (int i = 0; i < 3; i++) check_op("swap01", op_swap01, NULL, 1, shapes[i], 0);
}

// ts_linear: y = x W[:, c0 : c0 + k]^T + bias + addend, each optional part in turn.
typedef struct {
    int col0, has_bias, has_addend;
} linear_arg;
static ts_tensor *op_linear(ts_ctx *c, ts_tensor **x, void *a) {
    const linear_arg *la = a;
    ts_tensor *bias = la->has_bias ? x[2] : NULL;
    ts_tensor *addend = la->has_addend ? x[la->has_bias ? 3 : 2] : NULL;
    return ts_linear(c, x[0], x[1], la->col0, bias, addend);
}
Test(ops, linear_gradcheck_on_column_blocks_with_bias_and_addend) {
    // x (N, k), W (out, in), bias (out), addend (N, out)
    // The last two: one row (N = 1) and one output (out = 1) on a column
    // block, the shapes that ts_gemm_ld runs as strided matrix-vector products.
    const linear_arg args[] = {{0, 0, 0}, {0, 1, 0}, {2, 1, 1}, {3, 0, 1}, {0, 1, 1}, {1, 1, 1}, {2, 0, 0}};
    const int shapes[][4][4] = {
        {{2, 3, 4, 0}, {2, 5, 4, 0}},
        {{2, 1, 4, 0}, {2, 5, 4, 0}, {1, 5, 0, 0}},
        {{2, 3, 2, 0}, {2, 4, 6, 0}, {1, 4, 0, 0}, {2, 3, 4, 0}},
        {{2, 2, 3, 0}, {2, 3, 6, 0}, {2, 2, 3, 0}},
        {{2, 4, 1, 0}, {2, 1, 1, 0}, {1, 1, 0, 0}, {2, 4, 1, 0}},
        {{2, 1, 2, 0}, {2, 3, 4, 0}, {1, 3, 0, 0}, {2, 1, 3, 0}},
        {{2, 3, 2, 0}, {2, 1, 5, 0}},
    };
    const int n_inputs[] = {2, 3, 4, 3, 4, 4, 2};
    for (int i = 0; i < 7; i++) {
        char what[64];
        snprintf(what, sizeof what, "linear(col0=%d, bias=%d, addend=%d)", args[i].col0, args[i].has_bias,
                 args[i].has_addend);
        check_op(what, op_linear, (void *)&args[i], n_inputs[i], shapes[i], 0);
    }
}

// ts_linear_relu: relu(x W^T + bias), with and without the bias.
static ts_tensor *op_linear_relu(ts_ctx *c, ts_tensor **x, void *a) {
    return ts_linear_relu(c, x[0], x[1], a ? x[2] : NULL);
}
Test(ops, linear_relu_gradcheck) {
    const int with_bias[3][4] = {{2, 5, 3, 0}, {2, 4, 3, 0}, {1, 4, 0, 0}}, without[2][4] = {{2, 1, 3, 0}, {2, 6, 3, 0}};
    check_op("linear_relu(bias)", op_linear_relu, (void *)1, 3, with_bias, 0);
    check_op("linear_relu(one row, no bias)", op_linear_relu, NULL, 2, without, 0);
}

// The fused ReLU equals relu(linear(...)): values and every gradient, with
// some outputs negative (so the mask matters).
Test(ops, linear_relu_equals_relu_of_linear) {
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *x = ts_tensor_new_persistent(2, (int[]){3, 5}, "x");
    ts_tensor *w = ts_tensor_new_persistent(2, (int[]){4, 5}, "w");
    ts_tensor *b = ts_tensor_new_persistent(1, (int[]){4}, "b");
    ts_tensor *all[3] = {x, w, b};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < all[t]->size; i++) all[t]->data[i] = sin(0.9 * (double)(i + 7 * t) + 0.3);
    double grads[2][3][20], values[2][12];
    for (int variant = 0; variant < 2; variant++) {
        ts_ctx_reset(&ctx);
        for (int t = 0; t < 3; t++) memset(all[t]->grad, 0, all[t]->size * sizeof(double));
        ts_tensor *y = variant == 0 ? ts_linear_relu(&ctx, x, w, b) : ts_relu(&ctx, ts_linear(&ctx, x, w, 0, b, NULL));
        cr_assert_not_null(y, "%s", ts_last_error());
        memcpy(values[variant], y->data, 12 * sizeof(double));
        cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
        for (int t = 0; t < 3; t++) memcpy(grads[variant][t], all[t]->grad, all[t]->size * sizeof(double));
    }
    int zeros = 0;
    for (int i = 0; i < 12; i++) zeros += values[0][i] == 0.0;
    cr_assert(zeros > 0 && zeros < 12, "%d of 12 outputs clipped: the mask is not exercised", zeros);
    assert_allclose(values[0], values[1], 12, 0, 0);
    for (int t = 0; t < 3; t++) assert_allclose(grads[0][t], grads[1][t], all[t]->size, 0, 0);
    for (int t = 0; t < 3; t++) ts_tensor_free_persistent(all[t]);
    ts_arena_free(arena);
}

// The fused node and the primitive ops it replaces give the same values and gradients.
Test(ops, linear_equals_matmul_slice_add_bias_add) {
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *x = ts_tensor_new_persistent(2, (int[]){3, 2}, "x");
    ts_tensor *w = ts_tensor_new_persistent(2, (int[]){4, 5}, "w");
    ts_tensor *b = ts_tensor_new_persistent(1, (int[]){4}, "b");
    ts_tensor *add = ts_tensor_new_persistent(2, (int[]){3, 4}, "add");
    ts_tensor *all[4] = {x, w, b, add};
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < all[t]->size; i++) all[t]->data[i] = sin(0.7 * (double)(i + 5 * t) + 0.1);
    double grads[2][4][20];
    double values[2][12];
    for (int variant = 0; variant < 2; variant++) {
        ts_ctx_reset(&ctx);
        for (int t = 0; t < 4; t++) memset(all[t]->grad, 0, all[t]->size * sizeof(double));
        ts_tensor *y = variant == 0 ? ts_linear(&ctx, x, w, 2, b, add)
                                    : ts_add(&ctx, ts_add_bias(&ctx, ts_matmul(&ctx, x, ts_slice_cols(&ctx, w, 2, 2), 0, 1), b), add);
        cr_assert_not_null(y, "%s", ts_last_error());
        memcpy(values[variant], y->data, 12 * sizeof(double));
        cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
        for (int t = 0; t < 4; t++) memcpy(grads[variant][t], all[t]->grad, all[t]->size * sizeof(double));
    }
    assert_allclose(values[0], values[1], 12, 1e-14, 1e-14);
    for (int t = 0; t < 4; t++) assert_allclose(grads[0][t], grads[1][t], all[t]->size, 1e-14, 1e-14);
    for (int t = 0; t < 4; t++) ts_tensor_free_persistent(all[t]);
    ts_arena_free(arena);
}

static ts_tensor *op_linear_ce(ts_ctx *c, ts_tensor **x, void *a) {
    ce_arg *ce = a;
    return ts_linear_cross_entropy(c, x[0], x[1], x[2], ce->targets, ce->ignore, ce->smoothing);
}
static ts_tensor *op_linear_ce_no_bias(ts_ctx *c, ts_tensor **x, void *a) {
    ce_arg *ce = a;
    return ts_linear_cross_entropy(c, x[0], x[1], NULL, ce->targets, ce->ignore, ce->smoothing);
}
Test(ops, linear_cross_entropy_gradcheck_with_ignore_index) {
    static const int targets[] = {2, 0, 5, 4, 1};
    ce_arg ignore_pad = {targets, 0, 0.0}, ignore_none = {targets, -1, 0.0};
    // x (N, H), W (V, H), bias (V)
    const int shapes[3][4] = {{2, 5, 3, 0}, {2, 6, 3, 0}, {1, 6, 0, 0}};
    check_op("linear_cross_entropy(ignore 0)", op_linear_ce, &ignore_pad, 3, shapes, 0);
    check_op("linear_cross_entropy(no ignore)", op_linear_ce, &ignore_none, 3, shapes, 0);
    check_op("linear_cross_entropy(no bias)", op_linear_ce_no_bias, &ignore_pad, 2, shapes, 0);
    static const int zero[] = {0};
    ce_arg single_target = {zero, -1, 0.0};
    const int single[3][4] = {{2, 1, 1, 0}, {2, 1, 1, 0}, {1, 1, 0, 0}};
    check_op("linear_cross_entropy(1x1)", op_linear_ce, &single_target, 3, single, 0);
    ce_arg smoothed = {targets, 0, 0.2};
    check_op("linear_cross_entropy(smoothing 0.2)", op_linear_ce, &smoothed, 3, shapes, 0);
    check_op("linear_cross_entropy(smoothing 0.2, no bias)", op_linear_ce_no_bias, &smoothed, 2, shapes, 0);
}

Test(ops, label_smoothing_reports_the_plain_cross_entropy_and_rejects_bad_values) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double logits[] = {1, 2, 3, 0.5, -1, 2};
    const int targets[] = {2, 0};
    ts_tensor *x = ts_constant(&ctx, 2, (int[]){2, 3}, logits);
    ts_tensor *plain = ts_cross_entropy(&ctx, x, targets, -1, 0.0);
    ts_tensor *smooth = ts_cross_entropy(&ctx, x, targets, -1, 0.3);
    cr_assert_not_null(smooth, "%s", ts_last_error());
    cr_assert_float_eq(ts_cross_entropy_nll(smooth), plain->data[0], 1e-15);
    cr_assert(smooth->data[0] != plain->data[0]);
    // q = 0.7 onehot + 0.1: -sum q log p by hand.
    ts_tensor *logp = ts_log_softmax(&ctx, x);
    double want = 0.0;
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) want -= ((c == targets[i] ? 0.7 : 0.0) + 0.1) * logp->data[i * 3 + c] / 2.0;
    cr_assert_float_eq(smooth->data[0], want, 1e-14);
    cr_assert_null(ts_cross_entropy(&ctx, x, targets, -1, 1.0));
    cr_assert_str_eq(ts_last_error(), "cross_entropy: label smoothing 1 outside [0, 1)");
    ts_ctx_reset(&ctx);
    cr_assert_null(ts_linear_cross_entropy(&ctx, x, x, NULL, targets, -1, -0.1));
    ts_arena_free(arena);
}

Test(ops, linear_cross_entropy_equals_matmul_add_bias_cross_entropy) {
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    enum { N = 4, H = 3, V = 7 };
    ts_tensor *x = ts_tensor_new_persistent(2, (int[]){N, H}, "x");
    ts_tensor *w = ts_tensor_new_persistent(2, (int[]){V, H}, "w");
    ts_tensor *b = ts_tensor_new_persistent(1, (int[]){V}, "b");
    ts_tensor *all[3] = {x, w, b};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < all[t]->size; i++) all[t]->data[i] = 2.0 * sin(1.3 * (double)(i + 7 * t) + 0.2);
    x->data[N * H - 1] = 300.0;  // the last row's logits reach the hundreds: no overflow either way
    const int targets[N] = {3, 0, 6, 1};  // row 1 ignored
    double grads[2][3][V * H], loss[2];
    for (int smoothed = 0; smoothed < 2; smoothed++) {
        double e = smoothed ? 0.1 : 0.0;
        for (int variant = 0; variant < 2; variant++) {
            ts_ctx_reset(&ctx);
            for (int t = 0; t < 3; t++) memset(all[t]->grad, 0, all[t]->size * sizeof(double));
            ts_tensor *y = variant == 0 ? ts_linear_cross_entropy(&ctx, x, w, b, targets, 0, e)
                                        : ts_cross_entropy(&ctx, ts_add_bias(&ctx, ts_matmul(&ctx, x, w, 0, 1), b), targets, 0, e);
            cr_assert_not_null(y, "%s", ts_last_error());
            loss[variant] = y->data[0];
            cr_assert_eq(ts_backward(&ctx, ts_scale(&ctx, y, 1.7)), TS_OK, "%s", ts_last_error());
            for (int t = 0; t < 3; t++) memcpy(grads[variant][t], all[t]->grad, all[t]->size * sizeof(double));
        }
        assert_allclose(&loss[0], &loss[1], 1, 0, 1e-13);
        for (int t = 0; t < 3; t++) assert_allclose(grads[0][t], grads[1][t], all[t]->size, 1e-13, 1e-12);
    }
    for (int t = 0; t < 3; t++) ts_tensor_free_persistent(all[t]);
    ts_arena_free(arena);
}

// An input of a same-bits check: its name and shape.
typedef struct {
    const char *name;
    int ndim, dims[3];
} input_spec;

// Runs op(x, arg), reduced by weighted_sum, and its backward on one thread
// and on two, for each dtype, on the n inputs of `specs` (filled with
// sin(0.9 i + 5 t + 0.1) / 2 for input t), after checking that a pass over
// `elements` values is cut into that many parts; fails unless the loss and
// every input's gradient are the same bits both times. The step's memory is
// poisoned before each run: a value a part fails to write cannot pass as
// the one the first run left at the same address.
static void check_same_bits_on_two_threads(const char *what, const input_spec *specs, int n, op_fn op, void *arg,
                                           size_t elements, int max_parts) {
    enum { MAX_INPUTS = 4 };
    const size_t junk_bytes = (size_t)8 << 20;
    cr_assert(n <= MAX_INPUTS);
    ts_arena *arena = ts_arena_new((size_t)64 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    for (int dtype = 0; dtype < TS_DTYPE_COUNT; dtype++) {
        ts_tensor *x[MAX_INPUTS];
        void *grads[2][MAX_INPUTS];
        double value[2];
        for (int t = 0; t < n; t++) {
            x[t] = ts_tensor_persistent_dtype(dtype, specs[t].ndim, specs[t].dims, specs[t].name);
            cr_assert_not_null(x[t]);
            double *v = malloc(x[t]->size * sizeof(double));
            for (size_t i = 0; i < x[t]->size; i++) v[i] = 0.5 * sin(0.9 * (double)i + 5 * t + 0.1);
            ts_values_convert(x[t]->raw, dtype, v, TS_F64, x[t]->size);
            free(v);
        }
        for (int threads = 1; threads <= 2; threads++) {
            ts_threads_use(threads);
            cr_assert_eq(ts_parallel_parts(elements, max_parts), threads, "%s", what);
            ts_ctx_reset(&ctx);
            memset(ts_arena_alloc(ctx.arena, junk_bytes), 0xA5, junk_bytes);
            ts_ctx_reset(&ctx);
            ctx.dtype = dtype;
            for (int t = 0; t < n; t++) memset(x[t]->grad_raw, 0, ts_tensor_bytes(x[t]));
            ts_tensor *y = weighted_sum(&ctx, op(&ctx, x, arg));
            cr_assert_not_null(y, "%s: %s", what, ts_last_error());
            cr_assert_eq(ts_backward(&ctx, y), TS_OK, "%s: %s", what, ts_last_error());
            value[threads - 1] = ts_value(y, 0);
            for (int t = 0; t < n; t++) {
                grads[threads - 1][t] = malloc(ts_tensor_bytes(x[t]));
                memcpy(grads[threads - 1][t], x[t]->grad_raw, ts_tensor_bytes(x[t]));
            }
        }
        ts_threads_use(1);
        cr_assert(memcmp(&value[0], &value[1], sizeof(double)) == 0, "%s (%s): %.17g on one thread, %.17g on two",
                  what, ts_dtype_name(dtype), value[0], value[1]);
        for (int t = 0; t < n; t++) {
            cr_assert(memcmp(grads[0][t], grads[1][t], ts_tensor_bytes(x[t])) == 0, "%s (%s): d%s differs on two threads",
                      what, ts_dtype_name(dtype), x[t]->name);
            free(grads[0][t]);
            free(grads[1][t]);
            ts_tensor_free_persistent(x[t]);
        }
    }
    ts_arena_free(arena);
}

// The loss's row passes run in parts on the threads ts_threads_use asks
// for (forward by rows, backward by columns). V is odd and the targets sit
// on both sides of the column split (2501 | 2502), some rows are ignored,
// with and without label smoothing and bias.
Test(ops, linear_cross_entropy_same_bits_on_one_and_two_threads) {
    enum { N = 64, H = 8, V = 5003 };
    static int targets[N];
    for (int i = 0; i < N; i++) targets[i] = i % 7 == 3 ? 0 : (int)((2501 + 997 * (size_t)i) % V);
    targets[1] = 2501, targets[2] = 2502, targets[4] = V - 1;
    const input_spec specs[3] = {{"x", 2, {N, H}}, {"w", 2, {V, H}}, {"b", 1, {V}}};
    for (int smoothed = 0; smoothed < 2; smoothed++) {
        ce_arg ce = {targets, 0, smoothed ? 0.1 : 0.0};
        check_same_bits_on_two_threads("linear_cross_entropy", specs, 3, op_linear_ce, &ce, (size_t)N * V, 0);
        check_same_bits_on_two_threads("linear_cross_entropy (no bias)", specs, 2, op_linear_ce_no_bias, &ce,
                                       (size_t)N * V, 0);
    }
}

// A linear layer's two backward products (dx, dW) run side by side on two
// threads (ts_gemm_two) once both have 4e6 multiply-adds; with the ReLU,
// bias and addend. N K out = 5.8e6.
static ts_tensor *op_linear_relu_addend(ts_ctx *c, ts_tensor **x, void *arg) {
    (void)arg;
    return ts_relu(c, ts_linear(c, x[0], x[1], 0, x[2], x[3]));
}
static ts_tensor *op_linear_relu_fused(ts_ctx *c, ts_tensor **x, void *arg) {
    (void)arg;
    return ts_linear_relu(c, x[0], x[1], x[2]);
}
Test(ops, linear_backward_same_bits_on_one_and_two_threads) {
    enum { N = 200, K = 160, OUT = 180 };
    const input_spec specs[4] = {{"x", 2, {N, K}}, {"w", 2, {OUT, K}}, {"b", 1, {OUT}}, {"addend", 2, {N, OUT}}};
    check_same_bits_on_two_threads("linear + addend", specs, 4, op_linear_relu_addend, NULL, (size_t)N * K * OUT, 2);
    check_same_bits_on_two_threads("linear_relu", specs, 3, op_linear_relu_fused, NULL, (size_t)N * K * OUT, 2);
}

// A linear layer's or the loss's product writes the gradient of an input
// that nothing else reads with beta 0 into a buffer never zeroed
// (input_grad_written): it must be all of it, also when the loss ignores
// every target and no product runs. The step's memory is poisoned first.
Test(ops, first_written_input_gradients_hold_no_stale_memory) {
    enum { H = 5, V = 7 };
    ts_arena *arena = ts_arena_new((size_t)1 << 20);
    for (int N = 1; N <= 6; N += 5)  // one row: the products are matrix-vector products
        for (int dtype = 0; dtype < TS_DTYPE_COUNT; dtype++)
            for (int all_ignored = 0; all_ignored < 2; all_ignored++) {
                ts_ctx ctx;
                ts_ctx_init(&ctx, arena);
                ctx.dtype = dtype;
                memset(ts_arena_alloc(arena, (size_t)1 << 19), 0xFF, (size_t)1 << 19);  // NaN in either dtype
                ts_ctx_reset(&ctx);
                ts_tensor *x = ts_tensor_persistent_dtype(dtype, 2, (int[]){N, H}, "x");
                ts_tensor *w = ts_tensor_persistent_dtype(dtype, 2, (int[]){V, H}, "w");
                ts_tensor *w2 = ts_tensor_persistent_dtype(dtype, 2, (int[]){H, H}, "w2");
                ts_tensor *in[3] = {x, w, w2};
                for (int t = 0; t < 3; t++)
                    for (size_t i = 0; i < in[t]->size; i++) {
                        double v = 0.3 * sin(1.7 * (double)i + t);
                        if (dtype == TS_F32) in[t]->data_f32[i] = (float)v;
                        else in[t]->data[i] = v;
                    }
                int targets[6];
                for (int i = 0; i < N; i++) targets[i] = all_ignored ? 0 : 1 + i % (V - 1);
                // x -> scale -> linear -> loss: the scale's and the linear's outputs are each read once
                ts_tensor *h = ts_linear(&ctx, ts_scale(&ctx, x, 2.0), w2, 0, NULL, NULL);
                ts_tensor *loss = ts_linear_cross_entropy(&ctx, h, w, NULL, targets, 0, 0.0);
                cr_assert_not_null(loss, "%s", ts_last_error());
                cr_assert_eq(ts_backward(&ctx, loss), TS_OK, "%s", ts_last_error());
                double norm = 0.0;
                for (size_t i = 0; i < x->size; i++) {
                    double g = dtype == TS_F32 ? x->grad_f32[i] : x->grad[i];
                    cr_assert(isfinite(g), "%s, all ignored %d: dx[%zu] = %g", ts_dtype_name(dtype), all_ignored, i, g);
                    norm += fabs(g);
                }
                cr_assert(all_ignored ? norm == 0.0 : norm > 0.0, "%s, all ignored %d: |dx| = %g", ts_dtype_name(dtype),
                          all_ignored, norm);
                for (int t = 0; t < 3; t++) ts_tensor_free_persistent(in[t]);
                ts_ctx_reset(&ctx);
            }
    ts_arena_free(arena);
}

// The additive score and the context run in parts over the batch rows (the
// additive backward's dv over its columns), with masked positions (weights
// exactly 0, no gradient).
static ts_tensor *op_additive_context(ts_ctx *c, ts_tensor **x, void *mask) {
    return ts_attn_context(c, ts_softmax(c, ts_attn_additive(c, x[0], x[1], x[2]), mask), x[3]);
}
Test(ops, additive_attention_and_context_same_bits_on_one_and_two_threads) {
    enum { B = 9, S = 13, A = 600 };  // B S A = 70,200 values: past TS_PARALLEL_MIN_ELEMENTS
    static double mask[B * S];
    for (int i = 0; i < B * S; i++) mask[i] = (i % S) < S - (i / S) % 4;  // the last 0-3 positions of each row masked
    const input_spec specs[4] = {{"q", 2, {B, A}}, {"keys", 3, {B, S, A}}, {"v", 1, {A}}, {"memory", 3, {B, S, A}}};
    check_same_bits_on_two_threads("additive attention + context", specs, 4, op_additive_context, mask,
                                   (size_t)B * S * A, B);
}

// The GRU cell's gates run in parts over the batch rows, masked rows included.
static ts_tensor *op_gru_masked(ts_ctx *c, ts_tensor **x, void *mask) { return ts_gru_cell(c, x[0], x[1], x[2], x[3], mask); }
Test(ops, gru_cell_same_bits_on_one_and_two_threads) {
    enum { B = 40, H = 150 };  // 4 B 3H = 72,000: past TS_PARALLEL_MIN_ELEMENTS (ops_gru.c's count)
    static double mask[B];
    for (int b = 0; b < B; b++) mask[b] = b % 5 != 2;
    const input_spec specs[4] = {{"gates_x", 2, {B, 3 * H}}, {"h", 2, {B, H}}, {"w_hh", 2, {3 * H, H}}, {"b_hh", 1, {3 * H}}};
    check_same_bits_on_two_threads("gru_cell", specs, 4, op_gru_masked, mask, 4 * (size_t)B * 3 * H, B);
}

// The LSTM cell's gates run in parts over the batch rows, masked rows included.
Test(ops, lstm_cell_same_bits_on_one_and_two_threads) {
    enum { B = 40, H = 120 };  // 4 B 4H = 76,800: past TS_PARALLEL_MIN_ELEMENTS (ops_lstm.c's count)
    static double mask[B];
    for (int b = 0; b < B; b++) mask[b] = b % 5 != 2;
    const input_spec specs[4] = {{"gates_x", 2, {B, 4 * H}}, {"state", 2, {2 * B, H}}, {"w_hh", 2, {4 * H, H}},
                                 {"b_hh", 1, {4 * H}}};
    check_same_bits_on_two_threads("lstm_cell", specs, 4, op_lstm_fused, mask, 4 * (size_t)B * 4 * H, B);
}

// ---- the Transformer's ops: layer norm, batched products, heads, attention ----

static ts_tensor *op_layer_norm(ts_ctx *c, ts_tensor **x, void *a) {
    (void)a;
    return ts_layer_norm(c, x[0], x[1], x[2], 1e-5);
}
Test(ops, layer_norm_gradcheck) {
    const int cases[][3][4] = {
        {{2, 1, 1, 0}, {1, 1, 0, 0}, {1, 1, 0, 0}},  // D = 1: y = beta, dx = 0
        {{2, 3, 5, 0}, {1, 5, 0, 0}, {1, 5, 0, 0}},
        {{3, 2, 3, 4}, {1, 4, 0, 0}, {1, 4, 0, 0}},
        {{2, 70, 3, 0}, {1, 3, 0, 0}, {1, 3, 0, 0}},  // three blocks of the backward's sums, the last ragged
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_op("layer_norm", op_layer_norm, NULL, 3, cases[i], 0);
}

Test(ops, layer_norm_rows_have_mean_beta_and_spread_gamma) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double x[8] = {1, 2, 3, 4, -10, 0, 10, 1e3}, g[4] = {2, 2, 2, 2}, b[4] = {0.5, 0.5, 0.5, 0.5};
    ts_tensor *y = ts_layer_norm(&ctx, ts_constant(&ctx, 2, (int[]){2, 4}, x), ts_constant(&ctx, 1, (int[]){4}, g),
                                 ts_constant(&ctx, 1, (int[]){4}, b), 1e-5);
    cr_assert_not_null(y, "%s", ts_last_error());
    for (int r = 0; r < 2; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < 4; c++) mean += y->data[r * 4 + c] / 4;
        for (int c = 0; c < 4; c++) var += (y->data[r * 4 + c] - mean) * (y->data[r * 4 + c] - mean) / 4;
        cr_assert(fabs(mean - 0.5) < 1e-12, "row %d mean %.17g", r, mean);
        double xvar = r == 0 ? 1.25 : 0;  // row 0's biased variance; eps matters there
        if (r == 0) cr_assert(fabs(var - 4 * xvar / (xvar + 1e-5)) < 1e-12, "row 0 variance %.17g", var);
    }
    cr_assert_null(ts_layer_norm(&ctx, ts_constant(&ctx, 2, (int[]){2, 4}, x), ts_constant(&ctx, 1, (int[]){3}, g),
                                 ts_constant(&ctx, 1, (int[]){4}, b), 1e-5));
    cr_assert(strstr(ts_last_error(), "layer_norm"), "%s", ts_last_error());
    ts_arena_free(arena);
}

static ts_tensor *op_bmm(ts_ctx *c, ts_tensor **x, void *a) {
    const int *t = a;
    return ts_bmm(c, x[0], x[1], t[0], t[1]);
}
Test(ops, bmm_gradcheck_all_transposes) {
    const int gmnk[][4] = {{1, 1, 1, 1}, {3, 2, 1, 3}, {2, 3, 4, 2}};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t s = 0; s < sizeof gmnk / sizeof gmnk[0]; s++) {
                int g = gmnk[s][0], m = gmnk[s][1], n = gmnk[s][2], k = gmnk[s][3];
                int shapes[2][4] = {{3, g, ta ? k : m, ta ? m : k}, {3, g, tb ? n : k, tb ? k : n}};
                int flags[2] = {ta, tb};
                char what[64];
                snprintf(what, sizeof what, "bmm(ta=%d, tb=%d, %dx%dx%dx%d)", ta, tb, g, m, n, k);
                check_op(what, op_bmm, flags, 2, (const int(*)[4])shapes, 0);
            }
}

static ts_tensor *op_split_heads(ts_ctx *c, ts_tensor **x, void *a) { return ts_split_heads(c, x[0], *(int *)a); }
static ts_tensor *op_merge_heads(ts_ctx *c, ts_tensor **x, void *a) { return ts_merge_heads(c, x[0], *(int *)a); }
Test(ops, split_and_merge_heads_gradcheck_and_layout) {
    int two = 2, three = 3;
    const int split_shape[1][4] = {{3, 2, 3, 6}}, merge_shape[1][4] = {{3, 6, 2, 2}};
    check_op("split_heads", op_split_heads, &two, 1, split_shape, 0);
    check_op("split_heads(3)", op_split_heads, &three, 1, split_shape, 0);
    check_op("merge_heads", op_merge_heads, &three, 1, merge_shape, 0);

    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double x[36];
    for (int i = 0; i < 36; i++) x[i] = i;
    ts_tensor *in = ts_constant(&ctx, 3, (int[]){2, 3, 6}, x);  // (B 2, T 3, 3 heads of 2)
    ts_tensor *split = ts_split_heads(&ctx, in, 3);
    cr_assert_eq(split->shape[0], 6);
    cr_assert_eq(split->shape[2], 2);
    // y[b H + h, t, j] = x[b, t, h Dh + j]: b 1, h 2, t 1, j 1 -> x[1, 1, 5] = 18 + 6 + 5
    cr_assert_eq(split->data[((1 * 3 + 2) * 3 + 1) * 2 + 1], 29.0);
    ts_tensor *back = ts_merge_heads(&ctx, split, 3);
    assert_allclose(back->data, x, 36, 0, 0);
    ts_arena_free(arena);
}

// x[0] = q (B, T, D), x[1] = keys (B, S, D), x[2] = values (B, S, D)
typedef struct {
    int heads, causal;
    const double *key_mask;
    int composed;
} mha_arg;
static ts_tensor *op_mha(ts_ctx *c, ts_tensor **x, void *a) {
    const mha_arg *m = a;
    return (m->composed ? ts_mha_composed : ts_mha)(c, x[0], x[1], x[2], m->heads, m->key_mask, m->causal);
}
static ts_tensor *op_self_attention(ts_ctx *c, ts_tensor **x, void *a) {
    const mha_arg *m = a;
    return ts_mha(c, x[0], x[0], x[0], m->heads, m->key_mask, m->causal);
}
Test(ops, mha_gradcheck_with_padding_and_causal_masks) {
    static const double key_mask[] = {1, 1, 1, 0, 1, 0, 0, 0};  // (B 2, S 4): lengths 3 and 1
    const int cross[3][4] = {{3, 2, 3, 4}, {3, 2, 4, 4}, {3, 2, 4, 4}};
    const int self[1][4] = {{3, 2, 4, 4}};
    const int one_query[3][4] = {{3, 1, 1, 6}, {3, 1, 2, 6}, {3, 1, 2, 6}};
    for (int heads = 1; heads <= 2; heads++) {
        mha_arg plain = {heads, 0, NULL, 0}, padded = {heads, 0, key_mask, 0}, causal = {heads, 1, NULL, 0};
        mha_arg both = {heads, 1, key_mask, 0};
        check_op("mha", op_mha, &plain, 3, cross, 0);
        check_op("mha(key mask)", op_mha, &padded, 3, cross, 0);
        check_op("mha(causal, self)", op_self_attention, &causal, 1, self, 0);
        check_op("mha(causal, key mask, self)", op_self_attention, &both, 1, self, 0);
    }
    mha_arg three = {3, 0, NULL, 0};
    check_op("mha(3 heads, T 1)", op_mha, &three, 3, one_query, 0);
}

// The fused node and its composition agree on values and on every gradient,
// and the weights it keeps are softmax rows with masked entries exactly 0.
// ts_mha_blocks on column blocks: a packed self-attention x (B, T, 3D) read
// as [q | k | v], and q (B, T, D + 2) from column 1 against keys and values
// at columns 0 and 5 of kv (B, S, 9), with a gap between them.
static ts_tensor *op_mha_packed_self(ts_ctx *c, ts_tensor **x, void *a) {
    const mha_arg *m = a;
    int D = x[0]->shape[2] / 3;
    return ts_mha_blocks(c, x[0], x[0], x[0], (int[]){0, D, 2 * D}, D, m->heads, m->key_mask, m->causal, 0.0, NULL);
}
static ts_tensor *op_mha_blocks_cross(ts_ctx *c, ts_tensor **x, void *a) {
    const mha_arg *m = a;
    return ts_mha_blocks(c, x[0], x[1], x[1], (int[]){1, 0, 5}, 4, m->heads, m->key_mask, m->causal, 0.0, NULL);
}
Test(ops, mha_blocks_gradcheck_on_packed_and_offset_columns) {
    static const double key_mask[] = {1, 1, 1, 0, 1, 0, 0, 0};  // (B 2, S 4)
    const int packed[1][4] = {{3, 2, 4, 12}}, cross[2][4] = {{3, 2, 3, 6}, {3, 2, 4, 9}};
    mha_arg causal = {2, 1, key_mask, 0}, padded = {2, 0, key_mask, 0};
    check_op("mha_blocks(packed self, causal, key mask)", op_mha_packed_self, &causal, 1, packed, 0);
    check_op("mha_blocks(offset columns, key mask)", op_mha_blocks_cross, &padded, 2, cross, 0);
}

// The packed self-attention equals ts_mha on the three blocks copied apart:
// values, and the gradient of each block of x.
Test(ops, mha_blocks_equals_mha_on_separate_blocks) {
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    enum { B = 2, T = 3, D = 4 };
    ts_tensor *x = ts_tensor_new_persistent(3, (int[]){B, T, 3 * D}, "x");
    ts_tensor *part[3];
    for (int i = 0; i < 3; i++) part[i] = ts_tensor_new_persistent(3, (int[]){B, T, D}, "part");
    for (size_t i = 0; i < x->size; i++) x->data[i] = sin(0.37 * (double)i + 0.2);
    for (int r = 0; r < B * T; r++)
        for (int i = 0; i < 3; i++) memcpy(part[i]->data + r * D, x->data + r * 3 * D + i * D, D * sizeof(double));
    ts_tensor *packed = ts_mha_blocks(&ctx, x, x, x, (int[]){0, D, 2 * D}, D, 2, NULL, 1, 0.0, NULL);
    cr_assert_not_null(packed, "%s", ts_last_error());
    double values[B * T * D];
    memcpy(values, packed->data, sizeof values);
    cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, packed)), TS_OK, "%s", ts_last_error());
    ts_ctx_reset(&ctx);  // a tape of its own for the second graph
    ts_tensor *apart = ts_mha(&ctx, part[0], part[1], part[2], 2, NULL, 1);
    cr_assert_not_null(apart, "%s", ts_last_error());
    assert_allclose(values, apart->data, B * T * D, 0, 0);
    cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, apart)), TS_OK, "%s", ts_last_error());
    for (int r = 0; r < B * T; r++)
        for (int i = 0; i < 3; i++) assert_allclose(x->grad + r * 3 * D + i * D, part[i]->grad + r * D, D, 0, 0);
    cr_assert_null(ts_mha_blocks(&ctx, x, x, x, (int[]){0, D, 2 * D + 1}, D, 2, NULL, 1, 0.0, NULL),
                   "a block past the row's end is refused");
    ts_tensor_free_persistent(x);
    for (int i = 0; i < 3; i++) ts_tensor_free_persistent(part[i]);
    ts_arena_free(arena);
}

Test(ops, mha_equals_its_composition_and_keeps_masked_weights) {
    enum { B = 2, T = 3, S = 4, D = 6, H = 3 };
    static const double key_mask[B * S] = {1, 1, 0, 0, 1, 1, 1, 1};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_tensor *in[3] = {ts_tensor_new_persistent(3, (int[]){B, T, D}, "q"),
                        ts_tensor_new_persistent(3, (int[]){B, S, D}, "k"),
                        ts_tensor_new_persistent(3, (int[]){B, S, D}, "v")};
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < in[i]->size; k++) in[i]->data[k] = 4 * gsl_rng_uniform(rng) - 2;
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double grads[2][3][B * S * D], out[2][B * T * D];
    for (int composed = 0; composed < 2; composed++) {
        for (int i = 0; i < 3; i++) memset(in[i]->grad, 0, in[i]->size * sizeof(double));
        ts_ctx_reset(&ctx);
        mha_arg arg = {H, 1, key_mask, composed};
        ts_tensor *y = op_mha(&ctx, in, &arg);
        cr_assert_not_null(y, "%s", ts_last_error());
        memcpy(out[composed], y->data, sizeof out[0]);
        cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
        for (int i = 0; i < 3; i++) memcpy(grads[composed][i], in[i]->grad, in[i]->size * sizeof(double));
        if (composed) continue;
        const double *w = ts_mha_weights(y);  // (B, H, T, S)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < T; t++) {
                    const double *row = w + (((size_t)b * H + h) * T + t) * S;
                    double sum = 0;
                    for (int s = 0; s < S; s++) {
                        if (!key_mask[b * S + s] || s > t) cr_assert(row[s] == 0.0, "w[%d,%d,%d,%d] = %g", b, h, t, s, row[s]);
                        sum += row[s];
                    }
                    cr_assert(fabs(sum - 1) < 1e-14);
                }
    }
    assert_allclose(out[1], out[0], B * T * D, 1e-14, 1e-13);
    assert_allclose(grads[1][0], grads[0][0], B * T * D, 1e-14, 1e-12);
    for (int i = 1; i < 3; i++) assert_allclose(grads[1][i], grads[0][i], B * S * D, 1e-14, 1e-12);
    for (int i = 0; i < 3; i++) ts_tensor_free_persistent(in[i]);
    ts_arena_free(arena);
    gsl_rng_free(rng);
}

// Attention dropout (torch.nn.MultiheadAttention's): the same factors at every evaluation.
typedef struct {
    mha_arg mha;
    gsl_rng *rng;
} mha_dropout_arg;
static ts_tensor *op_mha_dropout(ts_ctx *c, ts_tensor **x, void *a) {
    const mha_dropout_arg *m = a;
    gsl_rng_set(m->rng, 13);
    return ts_mha_dropout(c, x[0], x[1], x[2], m->mha.heads, m->mha.key_mask, m->mha.causal, 0.3, m->rng);
}
Test(ops, mha_dropout_gradcheck_and_its_weights_are_the_kept_factors_times_the_softmax) {
    static const double key_mask[] = {1, 1, 1, 0, 1, 0, 0, 0};  // (B 2, S 4): lengths 3 and 1
    const int cross[3][4] = {{3, 2, 3, 4}, {3, 2, 4, 4}, {3, 2, 4, 4}};
    mha_dropout_arg arg = {{2, 1, key_mask, 0}, gsl_rng_alloc(gsl_rng_mt19937)};
    check_op("mha(dropout 0.3, key mask, causal)", op_mha_dropout, &arg, 3, cross, 0);

    // out[b, t, h Dh + j] = sum_s W[b, h, t, s] keep[b, h, t, s] v[b, s, h Dh + j], the factors
    // drawn in (B, H, T, S) order: 0 or 1 / 0.7.
    enum { B = 2, T = 3, S = 4, D = 4, H = 2, Dh = D / H };
    ts_arena *arena = ts_arena_new(1 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double x[3][B * S * D];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < B * S * D; k++) x[i][k] = 2 * gsl_rng_uniform(arg.rng) - 1;
    ts_tensor *in[3] = {ts_constant(&ctx, 3, (int[]){B, T, D}, x[0]), ts_constant(&ctx, 3, (int[]){B, S, D}, x[1]),
                        ts_constant(&ctx, 3, (int[]){B, S, D}, x[2])};
    ts_tensor *y = op_mha_dropout(&ctx, in, &arg);
    cr_assert_not_null(y, "%s", ts_last_error());
    const double *w = ts_mha_weights(y);
    double keep[B * H * T * S];
    gsl_rng_set(arg.rng, 13);
    int dropped = 0;
    for (int i = 0; i < B * H * T * S; i++) dropped += (keep[i] = gsl_rng_uniform(arg.rng) < 0.3 ? 0.0 : 1.0 / 0.7) == 0;
    cr_assert(dropped > 0 && dropped < B * H * T * S, "%d of %d dropped", dropped, B * H * T * S);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int j = 0; j < Dh; j++) {
                    double want = 0;
                    for (int s = 0; s < S; s++) {
                        size_t k = (((size_t)b * H + h) * T + t) * S + s;
                        want += w[k] * keep[k] * x[2][((size_t)b * S + s) * D + h * Dh + j];
                    }
                    double got = y->data[((size_t)b * T + t) * D + h * Dh + j];
                    cr_assert(fabs(got - want) < 1e-14, "out[%d,%d,%d] = %.17g, want %.17g", b, t, h * Dh + j, got, want);
                }
    ts_arena_free(arena);
    gsl_rng_free(arg.rng);
}

// The attention and layer norm of a training-sized batch split their
// sentences and rows over the threads (tensor/parallel.h): 2 and 3 threads
// give the bits of one, values and gradients, in both dtypes. A packed
// self-attention with a key mask, causal and dropout, then layer norm.
typedef struct {
    ts_tensor *x, *gamma, *beta;  // x (B, T, 3D) packed [q | k | v]
    const double *key_mask;
    gsl_rng *rng;
} split_case;
static ts_tensor *attention_then_norm(ts_ctx *ctx, const split_case *c, int D) {
    gsl_rng_set(c->rng, 7);
    ts_tensor *y = ts_mha_blocks(ctx, c->x, c->x, c->x, (int[]){0, D, 2 * D}, D, 4, c->key_mask, 1, 0.1, c->rng);
    y = ts_reshape(ctx, y, 2, (int[]){y ? y->shape[0] * y->shape[1] : 0, D});
    return ts_layer_norm(ctx, y, c->gamma, c->beta, 1e-5);
}
Test(ops, mha_and_layer_norm_on_threads_give_the_bits_of_one_thread) {
    enum { B = 24, T = 48, D = 64 };  // B T D = 7.4e4, B T T D = 3.5e6: past both ops' thresholds
    static double key_mask[B * T];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) key_mask[b * T + t] = t < T - b;
    ts_arena *arena = ts_arena_new(64 << 20);
    for (int dtype = TS_F64; dtype <= TS_F32; dtype++) {
        split_case c = {ts_tensor_persistent_dtype(dtype, 3, (int[]){B, T, 3 * D}, "x"),
                        ts_tensor_persistent_dtype(dtype, 1, (int[]){D}, "gamma"),
                        ts_tensor_persistent_dtype(dtype, 1, (int[]){D}, "beta"), key_mask,
                        gsl_rng_alloc(gsl_rng_mt19937)};
        ts_tensor *in[3] = {c.x, c.gamma, c.beta};
        for (int i = 0; i < 3; i++)
            for (size_t k = 0; k < in[i]->size; k++) {
                double v = sin(0.37 * (double)k + i) * (i == 1 ? 0.5 : 2) + (i == 1);
                if (dtype == TS_F32) in[i]->data_f32[k] = (float)v;
                else in[i]->data[k] = v;
            }
        size_t elem = ts_dtype_size(dtype), out_bytes = (size_t)B * T * D * elem;
        char *want[4] = {NULL};  // one thread's: y, then the gradients of x, gamma, beta
        for (int threads = 1; threads <= 3; threads++) {
            ts_threads_use(threads);
            cr_assert_eq(ts_parallel_parts(TS_PARALLEL_MIN_ELEMENTS, 0), threads);
            ts_ctx ctx;
            ts_ctx_init(&ctx, arena);
            ctx.dtype = dtype;
            for (int i = 0; i < 3; i++) memset(in[i]->grad_raw, 0, in[i]->size * elem);
            ts_tensor *y = attention_then_norm(&ctx, &c, D);
            cr_assert_not_null(y, "%s", ts_last_error());
            cr_assert_eq(ts_backward(&ctx, weighted_sum(&ctx, y)), TS_OK, "%s", ts_last_error());
            const void *got[4] = {y->raw, c.x->grad_raw, c.gamma->grad_raw, c.beta->grad_raw};
            size_t bytes[4] = {out_bytes, c.x->size * elem, D * elem, D * elem};
            for (int k = 0; k < 4; k++) {
                if (threads == 1) {
                    want[k] = malloc(bytes[k]);
                    memcpy(want[k], got[k], bytes[k]);
                } else {
                    cr_assert(!memcmp(got[k], want[k], bytes[k]), "%s, %d threads: %s differs from one thread's",
                              ts_dtype_name(dtype), threads, k ? "a gradient" : "the output");
                }
            }
            ts_arena_reset(arena);
        }
        for (int k = 0; k < 4; k++) free(want[k]);
        for (int i = 0; i < 3; i++) ts_tensor_free_persistent(in[i]);
        gsl_rng_free(c.rng);
    }
    ts_threads_use(1);
    ts_arena_free(arena);
}

// A reshape whose input nothing else reads gives the input its gradient
// buffer (share_grad, autograd/ops_internal.h); with a second reader (a
// scale by 0, which adds only zeros) the input keeps its own and the
// reshape adds into it. Both give the input the same gradient, bit for
// bit, in both dtypes. (The add that joins the two losses shares too.)
Test(ops, a_reshape_shares_its_inputs_gradient_only_when_alone_with_the_same_bits) {
    enum { N = 6, D = 8 };
    ts_arena *arena = ts_arena_new(1 << 20);
    for (int dtype = TS_F64; dtype <= TS_F32; dtype++) {
        ts_tensor *x = ts_tensor_persistent_dtype(dtype, 2, (int[]){N, D}, "x");
        ts_tensor *w = ts_tensor_persistent_dtype(dtype, 2, (int[]){3 * D, D}, "w");
        for (size_t k = 0; k < x->size; k++) ts_values_convert((char *)x->raw + k * ts_dtype_size(dtype), dtype,
                                                               &(double){sin(0.7 * (double)k)}, TS_F64, 1);
        for (size_t k = 0; k < w->size; k++) ts_values_convert((char *)w->raw + k * ts_dtype_size(dtype), dtype,
                                                               &(double){cos(0.3 * (double)k)}, TS_F64, 1);
        char *grads[2];
        for (int second_reader = 0; second_reader < 2; second_reader++) {
            ts_ctx ctx;
            ts_ctx_init(&ctx, arena);
            ctx.dtype = dtype;
            memset(x->grad_raw, 0, x->size * ts_dtype_size(dtype));
            memset(w->grad_raw, 0, w->size * ts_dtype_size(dtype));
            ts_tensor *qkv = ts_linear(&ctx, x, w, 0, NULL, NULL);  // (N, 3D)
            ts_tensor *packed = ts_reshape(&ctx, qkv, 3, (int[]){2, N / 2, 3 * D});
            ts_tensor *y = ts_mha_blocks(&ctx, packed, packed, packed, (int[]){0, D, 2 * D}, D, 2, NULL, 1, 0.0, NULL);
            ts_tensor *loss = weighted_sum(&ctx, y);
            if (second_reader) loss = ts_add(&ctx, loss, ts_sum(&ctx, ts_scale(&ctx, qkv, 0.0)));
            cr_assert_eq(ts_backward(&ctx, loss), TS_OK, "%s", ts_last_error());
            cr_assert_eq(packed->grad_raw == qkv->grad_raw, !second_reader, "%s: shared %d with %d readers",
                         ts_dtype_name(dtype), packed->grad_raw == qkv->grad_raw, 1 + second_reader);
            grads[second_reader] = malloc(qkv->size * ts_dtype_size(dtype));
            memcpy(grads[second_reader], qkv->grad_raw, qkv->size * ts_dtype_size(dtype));
            ts_arena_reset(arena);
        }
        cr_assert(!memcmp(grads[0], grads[1], (size_t)N * 3 * D * ts_dtype_size(dtype)), "%s: the gradients differ",
                  ts_dtype_name(dtype));
        for (int i = 0; i < 2; i++) free(grads[i]);
        ts_tensor_free_persistent(x);
        ts_tensor_free_persistent(w);
    }
    ts_arena_free(arena);
}

Test(ops, mha_refuses_heads_that_do_not_divide_the_width) {
    ts_arena *arena = ts_arena_new(1 << 16);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double x[2 * 2 * 6] = {0};
    ts_tensor *q = ts_constant(&ctx, 3, (int[]){2, 2, 6}, x);
    cr_assert_null(ts_mha(&ctx, q, q, q, 4, NULL, 0));
    cr_assert_eq(ctx.status, TS_ERR_SHAPE);
    cr_assert(strstr(ts_last_error(), "4 heads do not divide the width 6"), "%s", ts_last_error());
    ts_arena_free(arena);
}
