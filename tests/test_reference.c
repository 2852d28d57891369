// The worked attention numbers of ../shared/reference/seed-vectors.md,
// recomputed through the autograd ops (matmul, scale, softmax), not hand
// loops. The expected values are the reference's, typed in here; the tests
// need nothing from ../shared to run. Tolerance: 1e-12 relative.
#include <criterion/criterion.h>
#include <math.h>

#include "autograd/ops.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new(1 << 16);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(reference, .init = setup, .fini = teardown);

// decoder state h = [5, 1, 20]; annotations a1..a4 as the rows of A (4, 3).
static const double h[] = {5, 1, 20};
static const double annotations[] = {3, 12, 45, 59, 2, 5, 1, 43, 5, 4, 3, 45.3};

static ts_tensor *dot_scores(void) {
    ts_tensor *A = ts_constant(&ctx, 2, (int[]){4, 3}, annotations);
    ts_tensor *q = ts_constant(&ctx, 2, (int[]){1, 3}, h);
    return ts_matmul(&ctx, q, A, 0, 1);  // (1, 4) = h^T A^T: every score in one product
}

Test(reference, dot_scores) {
    double want[] = {927, 397, 148, 929};
    assert_allclose(dot_scores()->data, want, 4, 0, 1e-12);
}

Test(reference, softmax_of_927_and_929_does_not_overflow) {
    ts_tensor *weights = ts_softmax(&ctx, dot_scores(), NULL);
    double want[] = {1.1920292202211755e-01, 7.9471515079601553e-232, 0.0, 8.8079707797788254e-01};
    assert_allclose(weights->data, want, 4, 0, 1e-12);
    cr_assert(weights->data[2] == 0.0, "exp(148 - 929) underflows to exactly 0 in float64");
}

Test(reference, context_vector) {
    ts_tensor *A = ts_constant(&ctx, 2, (int[]){4, 3}, annotations);
    ts_tensor *weights = ts_softmax(&ctx, dot_scores(), NULL);
    ts_tensor *context = ts_matmul(&ctx, weights, A, 0, 0);  // (1, 3) = sum_j w_j a_j
    double want[] = {3.8807970779778826, 4.0728262981990575, 45.26423912339337};
    assert_allclose(context->data, want, 3, 0, 1e-12);
}

Test(reference, scaled_dot_product_self_attention) {
    double X[] = {1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1};
    double WQ[] = {2, 0, 2, 2, 0, 0, 2, 1, 2};
    double WK[] = {2, 2, 2, 0, 2, 1, 0, 1, 1};
    double WV[] = {1, 1, 0, 0, 1, 1, 0, 0, 0};
    ts_tensor *x = ts_constant(&ctx, 2, (int[]){4, 3}, X);
    ts_tensor *Q = ts_matmul(&ctx, x, ts_constant(&ctx, 2, (int[]){3, 3}, WQ), 0, 0);
    ts_tensor *K = ts_matmul(&ctx, x, ts_constant(&ctx, 2, (int[]){3, 3}, WK), 0, 0);
    ts_tensor *V = ts_matmul(&ctx, x, ts_constant(&ctx, 2, (int[]){3, 3}, WV), 0, 0);
    ts_tensor *scores = ts_scale(&ctx, ts_matmul(&ctx, Q, K, 0, 1), 1.0 / sqrt(3.0));
    ts_tensor *out = ts_matmul(&ctx, ts_softmax(&ctx, scores, NULL), V, 0, 0);
    cr_assert_not_null(out, "%s", ts_last_error());
    double want[] = {
        0.9852202489021356, 1.741740509995756,  0.7565202610936204,
        0.9096526450391504, 1.4096526450391504, 0.5,
        0.9985122599698961, 1.7584933412743888, 0.7599810813044927,
        0.9956038601592226, 1.9040730855894112, 0.9084692254301886,
    };
    assert_allclose(out->data, want, 12, 0, 1e-12);
}
