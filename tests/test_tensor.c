// Tensors, the step arena, kernels and initialisers.
#include <criterion/criterion.h>
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/init.h"
#include "tensor/kernels.h"
#include "tensor/parallel.h"
#include "tensor/tensor.h"
#include "testutil.h"
#include "tensor/threads.h"

Test(arena, reset_reuses_the_same_memory) {
    ts_arena *a = ts_arena_new(4096);
    void *first = ts_arena_alloc(a, 100);
    void *second = ts_arena_alloc(a, 100);
    cr_assert_not_null(first);
    cr_assert_neq(first, second);
    cr_assert_eq((size_t)first % 64, 0, "allocations are 64-byte aligned");
    cr_assert_eq(ts_arena_used(a), 256);
    ts_arena_reset(a);
    cr_assert_eq(ts_arena_used(a), 0);
    cr_assert_eq(ts_arena_alloc(a, 100), first, "after reset the first block is handed out again");
    cr_assert_eq(ts_arena_peak(a), 256);
    ts_arena_free(a);
}

// A full block chains another at least twice its size: what was handed out
// stays where it is, and after a reset the blocks are reused in order.
Test(arena, a_full_block_chains_the_next_and_keeps_what_it_gave) {
    ts_arena *a = ts_arena_new(1024);
    unsigned char *first = ts_arena_alloc(a, 1000);
    cr_assert_not_null(first);
    memset(first, 7, 1000);
    unsigned char *second = ts_arena_alloc(a, 100);
    cr_assert_not_null(second, "%s", ts_last_error());
    cr_assert_eq((size_t)second % 64, 0);
    cr_assert_eq(ts_arena_capacity(a), 1024 + 2048, "the next block is twice the first");
    cr_assert_eq(ts_arena_used(a), 1024 + 128);
    unsigned char *big = ts_arena_alloc(a, 10000);  // larger than twice the last block: a block its size
    cr_assert_not_null(big);
    memset(big, 1, 10000);
    for (int i = 0; i < 1000; i++) cr_assert_eq(first[i], 7, "byte %d of the first block was overwritten", i);
    size_t capacity = ts_arena_capacity(a), peak = ts_arena_peak(a);
    ts_arena_reset(a);
    cr_assert_eq(ts_arena_used(a), 0);
    cr_assert_eq(ts_arena_alloc(a, 1000), first, "after reset the first block is handed out again");
    cr_assert_eq(ts_arena_alloc(a, 100), second, "and the second next");
    cr_assert_not_null(ts_arena_alloc(a, 10000));
    cr_assert_eq(ts_arena_capacity(a), capacity, "the same work needs no new block");
    cr_assert_eq(ts_arena_peak(a), peak);
    ts_arena_free(a);
}

Test(arena, past_the_cap_is_an_error_not_a_crash) {
    ts_arena *a = ts_arena_new(1024);
    cr_assert_null(ts_arena_alloc(a, (size_t)-1), "a huge request must not wrap around");
    cr_assert_null(ts_arena_alloc(a, TS_ARENA_MAX));
    cr_assert(strstr(ts_last_error(), "arena full"), "%s", ts_last_error());
    cr_assert_eq(ts_arena_capacity(a), 1024, "a refused request adds no block");
    cr_assert_not_null(ts_arena_alloc(a, 1000), "usable after a refusal");
    ts_arena_free(a);
}

// The one "grow and redo" helper: twice the room, empty, up to one cap.
Test(arena, grow_doubles_up_to_the_cap_and_then_says_who_needed_more) {
    ts_arena *a = ts_arena_new(1024);
    cr_assert_not_null(ts_arena_alloc(a, 1000));
    cr_assert_eq(ts_arena_grow(&a, "a test"), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_arena_capacity(a), 2048);
    cr_assert_eq(ts_arena_used(a), 0, "the work is redone from the start");
    cr_assert_not_null(ts_arena_alloc(a, 1000));
    cr_assert_not_null(ts_arena_alloc(a, 1000), "the redone work fits");
    ts_arena_free(a);
    // Near the cap the arena grows to the cap, then no further (an arena's
    // pages are committed only when touched: these cost address space).
    a = ts_arena_new(TS_ARENA_MAX / 2 + 4096);
    if (!a) cr_skip_test("no %zu MiB of address space here", TS_ARENA_MAX >> 21);
    int rc = ts_arena_grow(&a, "a test");
    if (rc == TS_ERR_NOMEM) cr_skip_test("no %zu MiB of address space here", TS_ARENA_MAX >> 20);
    cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_arena_capacity(a), TS_ARENA_MAX);
    cr_assert_eq(ts_arena_grow(&a, "a test"), TS_ERR_ARENA);
    cr_assert(strstr(ts_last_error(), "a test needs more than 16384 MiB"), "%s", ts_last_error());
    cr_assert_eq(ts_arena_capacity(a), TS_ARENA_MAX, "the arena is kept");
    ts_arena_free(a);
}

Test(tensor, shapes_are_checked) {
    ts_arena *a = ts_arena_new(1 << 16);
    cr_assert_null(ts_tensor_new(a, 4, (int[]){1, 2, 3, 4}));
    cr_assert(strstr(ts_last_error(), "4 dimensions"), "%s", ts_last_error());
    cr_assert_null(ts_tensor_new(a, 2, (int[]){3, 0}));
    cr_assert(strstr(ts_last_error(), "dimension 1 is 0"), "%s", ts_last_error());
    ts_tensor *t = ts_tensor_zeros(a, 3, (int[]){2, 3, 4});
    cr_assert_eq(t->size, 24);
    cr_assert_eq(ts_rows(t), 6);
    cr_assert_eq(ts_cols(t), 4);
    char buf[32];
    cr_assert_str_eq(ts_shape_str(t, buf, sizeof buf), "(2, 3, 4)");
    ts_arena_free(a);
}

Test(kernels, gemm_matches_hand_product_for_every_transpose) {
    // A (2, 3), B (3, 2): A B = [[4, 5], [8, 10]]
    double A[] = {1, 0, 1, 2, 1, 2}, B[] = {1, 2, 0, 0, 3, 3};
    double At[] = {1, 2, 0, 1, 1, 2}, Bt[] = {1, 0, 3, 2, 0, 3};
    double want[] = {4, 5, 8, 10}, C[4];
    const double *as[2] = {A, At}, *bs[2] = {B, Bt};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            memset(C, 0, sizeof C);
            cr_assert_eq(ts_gemm(ta, tb, 2, 2, 3, 1.0, as[ta], bs[tb], 0.0, C), TS_OK);
            assert_allclose(C, want, 4, 0, 0);
        }
}

// Products from 1 x 1 x 1 to 600 columns, matrix-vector ones (gemv) among
// them, each transpose but both, strided operands, alpha and beta, in both
// dtypes, against a plain double loop; C starts as NaN where beta is 0,
// which must not reach the result (autograd's input_grad_written).
Test(kernels, products_agree_with_a_plain_loop_and_never_read_c_at_beta_0) {
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {10, 10, 64}, {10, 64, 10}, {17, 33, 16}, {7, 512, 18},
                             {2, 600, 40}, {16, 64, 64}, {17, 64, 64}, {64, 1, 33}};
    enum { LD = 700, SIZE = 700 * 700 };
    double *a = malloc(SIZE * sizeof *a), *b = malloc(SIZE * sizeof *b), *c = malloc(SIZE * sizeof *c);
    float *af = malloc(SIZE * sizeof *af), *bf = malloc(SIZE * sizeof *bf), *cf = malloc(SIZE * sizeof *cf);
    double *want = malloc(SIZE * sizeof *want), *wantf = malloc(SIZE * sizeof *wantf), *mag = malloc(SIZE * sizeof *mag);
    cr_assert(a && b && c && af && bf && cf && want && wantf && mag);
    for (int i = 0; i < SIZE; i++) {
        a[i] = sin(0.37 * i), b[i] = cos(0.11 * i);
        af[i] = (float)a[i], bf[i] = (float)b[i];
    }
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 3; t++)
            for (int with_beta = 0; with_beta < 2; with_beta++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = t == 2, tb = t == 1;
                double beta = with_beta ? 1.5 : 0.0;
                for (int i = 0; i < SIZE; i++) c[i] = with_beta ? 0.25 * i / SIZE : NAN, cf[i] = (float)c[i];
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++) {
                        double sum = 0, sumf = 0, size = 0;
                        for (int p = 0; p < k; p++) {
                            int ia = ta ? p * LD + i : i * LD + p, ib = tb ? j * LD + p : p * LD + j;
                            sum += a[ia] * b[ib], sumf += (double)af[ia] * bf[ib], size += fabs(a[ia] * b[ib]);
                        }
                        double added = with_beta ? beta * c[i * LD + j] : 0.0;
                        want[i * n + j] = 0.5 * sum + added, wantf[i * n + j] = 0.5 * sumf + (double)(float)added;
                        mag[i * n + j] = 0.5 * size + fabs(added);
                    }
                cr_assert_eq(ts_gemm_ld(ta, tb, m, n, k, 0.5, a, LD, b, LD, beta, c, LD), TS_OK);
                cr_assert_eq(ts_gemm_ld_f32(ta, tb, m, n, k, 0.5f, af, LD, bf, LD, (float)beta, cf, LD), TS_OK);
                // A sum of k + 2 rounded terms is within (k + 2) u of the sum of their sizes.
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++) {
                        double bound = (k + 2) * mag[i * n + j];
                        cr_assert(fabs(c[i * LD + j] - want[i * n + j]) <= bound * DBL_EPSILON, "%dx%dx%d t%d beta %g",
                                  m, n, k, t, beta);
                        cr_assert(fabs(cf[i * LD + j] - wantf[i * n + j]) <= bound * FLT_EPSILON,
                                  "f32 %dx%dx%d t%d beta %g: %g != %g", m, n, k, t, beta, cf[i * LD + j], wantf[i * n + j]);
                    }
                if (n < LD) cr_assert(with_beta || isnan(c[(m - 1) * LD + n]), "a column past C's was written");
            }
    free(a), free(b), free(c), free(af), free(bf), free(cf), free(want), free(wantf), free(mag);
}

Test(kernels, softmax_subtracts_the_maximum) {
    double x[] = {927, 397, 148, 929}, y[4];
    ts_softmax_rows(y, x, 1, 4, NULL);
    for (int i = 0; i < 4; i++) cr_assert(isfinite(y[i]));
    cr_assert(fabs(y[0] + y[1] + y[2] + y[3] - 1.0) < 1e-15);
    double logy[4];
    ts_log_softmax_rows(logy, x, 1, 4);
    cr_assert(fabs(exp(logy[3]) - y[3]) < 1e-14);
}

Test(kernels, blas_is_the_one_the_build_chose) {
    cr_log_info("CBLAS behind GSL: %s", ts_blas_name());
#ifdef TS_HAVE_OPENBLAS
    cr_assert_str_eq(ts_blas_name(), "OpenBLAS");
#endif
}

// Two products side by side (ts_gemm_two) on two threads, and each cut by
// rows into its share of 3, 4, 8 and 16 threads, transposed and on column
// blocks (leading dimensions past the widths), give the bits of each
// product alone on one thread; so does either alone (the other NULL).
Test(parallel, two_products_side_by_side_give_the_bits_of_one_thread) {
    enum { M = 300, N = 150, K = 120, LD = 170 };  // M N K = 5.4e6: past the 4e6 of a threaded product
    double *a = malloc(sizeof(double) * M * LD), *b = malloc(sizeof(double) * M * LD);
    float *af = malloc(sizeof(float) * M * LD), *bf = malloc(sizeof(float) * M * LD);
    double *c[2][2];
    float *cf[2][2];
    for (int i = 0; i < M * LD; i++) {
        a[i] = sin(0.7 * i), b[i] = cos(0.3 * i + 1);
        af[i] = (float)a[i], bf[i] = (float)b[i];
    }
    const int threads[] = {1, 2, 3, 4, 8, 16};
    enum { RUNS = sizeof threads / sizeof threads[0] };
    for (int run = 0; run < 2; run++)
        for (int p = 0; p < 2; p++) {
            c[run][p] = malloc(sizeof(double) * M * LD);
            cf[run][p] = malloc(sizeof(float) * M * LD);
        }
    for (int run = 0; run < RUNS; run++) {  // run 0: one thread, each product alone; then side by side
        int r = run > 0;                     // c[1] holds the latest multi-thread run's
        for (int p = 0; p < 2; p++)
            for (int i = 0; i < M * LD; i++) c[r][p][i] = cf[r][p][i] = (float)(0.25 * sin(i));  // beta 1 adds to it
        ts_threads_use(threads[run]);
        // first: C (M, N) += A (M, K) B^T, B (N, K); second: C (K, N) = 0.5 A^T B, A (M, K), B (M, N), beta 0
        ts_product p0 = {0, 1, M, N, K, 1.0, a + 3, LD, b + 5, LD, 1.0, c[r][0] + 7, LD, -1, NULL, NULL, 0};
        ts_product p1 = {1, 0, K, N, M, 0.5, a + 1, LD, b + 2, LD, 0.0, c[r][1] + 4, LD, -1, NULL, NULL, 0};
        ts_product_f32 q0 = {0, 1, M, N, K, 1.0f, af + 3, LD, bf + 5, LD, 1.0f, cf[r][0] + 7, LD, -1, NULL, NULL, 0};
        ts_product_f32 q1 = {1, 0, K, N, M, 0.5f, af + 1, LD, bf + 2, LD, 0.0f, cf[r][1] + 4, LD, -1, NULL, NULL, 0};
        if (run == 0) {
            cr_assert_eq(ts_gemm_two(&p0, NULL), TS_OK);
            cr_assert_eq(ts_gemm_two(NULL, &p1), TS_OK);
            cr_assert_eq(ts_gemm_two_f32(&q0, NULL), TS_OK);
            cr_assert_eq(ts_gemm_two_f32(NULL, &q1), TS_OK);
        } else {
            cr_assert_eq(ts_gemm_two(&p0, &p1), TS_OK);
            cr_assert_eq(ts_gemm_two_f32(&q0, &q1), TS_OK);
        }
        cr_assert(p0.rc == TS_OK && p1.rc == TS_OK && q0.rc == TS_OK && q1.rc == TS_OK, "every product ran");
        for (int p = 0; run > 0 && p < 2; p++) {
            cr_assert(!memcmp(c[0][p], c[1][p], sizeof(double) * M * LD), "float64 product %d differs on %d threads", p,
                      threads[run]);
            cr_assert(!memcmp(cf[0][p], cf[1][p], sizeof(float) * M * LD), "float32 product %d differs on %d threads", p,
                      threads[run]);
        }
    }
    ts_threads_use(1);
    for (int run = 0; run < 2; run++)
        for (int p = 0; p < 2; p++) free(c[run][p]), free(cf[run][p]);
    free(a), free(b), free(af), free(bf);
}

// A product of 2e7 multiply-adds or more is cut into parts by C's rows
// (whole blocks of the kernels' row grain, a ragged last one) on two
// threads: every transpose, tall and wide, column blocks of wider matrices,
// and a step's rows (704: 64 sentences of 11 tokens, which a grain of 16
// halves and 48 cuts 384 / 320; float64 on Cooperlake kernels would move
// with a grain of 16 here), give the bits of one thread.
Test(parallel, a_large_product_in_parts_gives_the_bits_of_one_thread) {
    enum { LONG = 1000, SHORT = 150, K_ALL = 140, LD = 1010 };  // LONG SHORT K_ALL = 2.1e7
    enum { STEP_ROWS = 704, STEP_COLS = 700, STEP_K = 130 };  // 6.4e7, within LD
    size_t cells = (size_t)LONG * LD;
    double *a = malloc(sizeof(double) * cells), *b = malloc(sizeof(double) * cells);
    float *af = malloc(sizeof(float) * cells), *bf = malloc(sizeof(float) * cells);
    for (size_t i = 0; i < cells; i++) {
        a[i] = sin(0.7 * (double)i), b[i] = cos(0.3 * (double)i + 1);
        af[i] = (float)a[i], bf[i] = (float)b[i];
    }
    for (int case_ = 0; case_ < 24; case_++) {  // beta 1, then beta 0 (a gradient's first writer)
        int ta = case_ & 1, tb = (case_ >> 1) & 1, shape = (case_ >> 2) % 3, beta_zero = case_ >= 12;
        int m = shape == 1 ? LONG : shape == 2 ? STEP_ROWS : SHORT, n = shape == 1 ? SHORT : shape == 2 ? STEP_COLS : LONG;
        int K = shape == 2 ? STEP_K : (int)K_ALL;
        double *c[2];
        float *cf[2];
        for (int threads = 1; threads <= 2; threads++) {
            ts_threads_use(threads);
            c[threads - 1] = malloc(sizeof(double) * cells);
            cf[threads - 1] = malloc(sizeof(float) * cells);
            for (size_t i = 0; i < cells; i++) c[threads - 1][i] = cf[threads - 1][i] = (float)(0.25 * sin((double)i));
            // A is (m, K) or (K, m), B (K, n) or (n, K), all LD wide; C (m, n) += 0.5 op(A) op(B)
            double beta = beta_zero ? 0.0 : 1.0;
            cr_assert_eq(ts_gemm_ld(ta, tb, m, n, K, 0.5, a + 3, LD, b + 5, LD, beta, c[threads - 1] + 7, LD), TS_OK);
            cr_assert_eq(
                ts_gemm_ld_f32(ta, tb, m, n, K, 0.5f, af + 3, LD, bf + 5, LD, (float)beta, cf[threads - 1] + 7, LD),
                TS_OK);
        }
        ts_threads_use(1);
        cr_assert(!memcmp(c[0], c[1], sizeof(double) * cells), "float64, trans %d %d, %d x %d, beta %d: two threads differ",
                  ta, tb, m, n, !beta_zero);
        cr_assert(!memcmp(cf[0], cf[1], sizeof(float) * cells), "float32, trans %d %d, %d x %d, beta %d: two threads differ",
                  ta, tb, m, n, !beta_zero);
        for (int t = 0; t < 2; t++) free(c[t]), free(cf[t]);
    }
    free(a), free(b), free(af), free(bf);
}

// Each part runs once, part 0 on the calling thread and the others on
// threads of their own; the ranges cover 0..n once, in order, within one of
// each other in length.
typedef struct {
    pthread_t caller, ran_on[4];
    int calls[4], parts_seen[4];
} parts_log;
static void log_part(void *arg, int part, int parts) {
    parts_log *log = arg;
    log->ran_on[part] = pthread_self();
    log->calls[part]++;
    log->parts_seen[part] = parts;
}
Test(parallel, parts_run_once_each_on_their_own_threads) {
    cr_assert_eq(ts_parallel_parts((size_t)1 << 20, 0), 1, "no ts_threads_use yet: one part");
    ts_threads_use(3);
    cr_assert_eq(ts_parallel_parts((size_t)1 << 20, 0), 3);
    cr_assert_eq(ts_parallel_parts((size_t)1 << 20, 2), 2);
    cr_assert_eq(ts_parallel_parts(TS_PARALLEL_MIN_ELEMENTS - 1, 0), 1, "small passes stay on one thread");
    parts_log log = {.caller = pthread_self()};
    ts_parallel_run(3, log_part, &log);
    for (int p = 0; p < 3; p++) cr_assert(log.calls[p] == 1 && log.parts_seen[p] == 3, "part %d", p);
    cr_assert(pthread_equal(log.ran_on[0], log.caller));
    cr_assert(!pthread_equal(log.ran_on[1], log.caller) && !pthread_equal(log.ran_on[2], log.caller));
    cr_assert(!pthread_equal(log.ran_on[1], log.ran_on[2]));
    ts_threads_use(1);
    const size_t sizes[] = {0, 1, 2, 7, 100, 5003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int parts = 1; parts <= 4; parts++) {
            size_t next = 0;
            for (int p = 0; p < parts; p++) {
                size_t begin, end;
                ts_part_range(sizes[k], p, parts, &begin, &end);
                cr_assert(begin == next && end >= begin, "n %zu, part %d of %d: [%zu, %zu)", sizes[k], p, parts, begin, end);
                cr_assert(end - begin <= sizes[k] / (size_t)parts + 1 && end - begin >= sizes[k] / (size_t)parts);
                next = end;
            }
            cr_assert_eq(next, sizes[k]);
        }
}

Test(init, same_seed_same_values_and_sane_ranges) {
    ts_tensor *a = ts_tensor_new_persistent(2, (int[]){30, 20}, "a");
    ts_tensor *b = ts_tensor_new_persistent(2, (int[]){30, 20}, "b");
    gsl_rng *r1 = gsl_rng_alloc(gsl_rng_mt19937), *r2 = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r1, 42);
    gsl_rng_set(r2, 42);
    ts_init_xavier(a, r1, 1.0);
    ts_init_xavier(b, r2, 1.0);
    cr_assert_eq(memcmp(a->data, b->data, a->size * sizeof(double)), 0);
    double bound = sqrt(6.0 / 50.0);
    for (size_t i = 0; i < a->size; i++) cr_assert(fabs(a->data[i]) <= bound);
    ts_init_uniform(a, r1, -0.1, 0.1);
    for (size_t i = 0; i < a->size; i++) cr_assert(a->data[i] >= -0.1 && a->data[i] < 0.1);
    ts_init_normal(a, r1, 1.0);
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    ts_tensor_free_persistent(a);
    ts_tensor_free_persistent(b);
}

Test(init, orthogonal_rows_or_columns) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int shapes[][2] = {{5, 3}, {3, 5}, {4, 4}};
    for (int s = 0; s < 3; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        ts_tensor *w = ts_tensor_new_persistent(2, shapes[s], "w");
        cr_assert_eq(ts_init_orthogonal(w, rng, 1.0), TS_OK, "%s", ts_last_error());
        // The smaller side is orthonormal: W^T W = I (tall) or W W^T = I (wide).
        int n = rows < cols ? rows : cols;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double dot = 0;
                if (rows >= cols)
                    for (int k = 0; k < rows; k++) dot += w->data[k * cols + i] * w->data[k * cols + j];
                else
                    for (int k = 0; k < cols; k++) dot += w->data[i * cols + k] * w->data[j * cols + k];
                cr_assert(fabs(dot - (i == j)) < 1e-12, "(%d, %d) of %dx%d: %g", i, j, rows, cols, dot);
            }
        ts_tensor_free_persistent(w);
    }
    gsl_rng_free(rng);
}

// The contract of kernels.h: exp as libm's at the ends of its range, with
// subnormal results before it reaches 0.
Test(kernels, exp_array_underflows_through_subnormals_like_libm) {
    const double x[] = {-700.0, -720.0, -740.0, -745.0, -746.0, -1e4, 709.0, 710.0, NAN};
    double y[9];
    ts_exp_array(y, x, 9);
    for (int i = 0; i < 8; i++) {
        double want = exp(x[i]);
        cr_assert(y[i] == want || fabs(y[i] - want) <= 2.3e-16 * fabs(want) || (fpclassify(want) == FP_SUBNORMAL &&
                                                                               fabs(y[i] - want) <= 4.95e-324),
                  "exp(%g): %.17g, libm %.17g", x[i], y[i], want);
    }
    cr_assert_eq(fpclassify(y[2]), FP_SUBNORMAL, "exp(-740) is subnormal, got %g", y[2]);
    cr_assert_eq(y[4], 0.0);
    cr_assert(isinf(y[7]) && isnan(y[8]));
}

// The maps run in blocks of a vector's lanes with a scalar tail: every value
// gets the bits it gets alone (a call of one, all tail), whichever block or
// lane it falls in (models/search.c's beam ranking relies on the bits).
Test(kernels, maps_give_each_value_the_bits_it_gets_alone) {
    enum { N = 1003 };  // 62 blocks of 16 floats (125 of 8 doubles) and a tail
    static double x[N], y[N];
    static float xf[N], yf[N];
    for (int i = 0; i < N; i++) xf[i] = (float)(x[i] = -30.0 + 60.0 * i / N + 1e-3 * (i % 7));
    void (*maps[])(double *, const double *, size_t) = {ts_exp_array, ts_tanh_array, ts_sigmoid_array};
    void (*maps_f32[])(float *, const float *, size_t) = {ts_exp_array_f32, ts_tanh_array_f32, ts_sigmoid_array_f32};
    for (int f = 0; f < 3; f++) {
        maps[f](y, x, N);
        maps_f32[f](yf, xf, N);
        for (int i = 0; i < N; i++) {
            double alone;
            float alone_f;
            maps[f](&alone, &x[i], 1);
            maps_f32[f](&alone_f, &xf[i], 1);
            cr_assert(!memcmp(&alone, &y[i], sizeof alone), "map %d at %a: %a in a block, %a alone", f, x[i], y[i], alone);
            cr_assert(!memcmp(&alone_f, &yf[i], sizeof alone_f), "float map %d at %a: %a in a block, %a alone", f,
                      (double)xf[i], (double)yf[i], (double)alone_f);
        }
    }
}

// ts_max_array keeps one maximum per vector lane: it returns what a plain
// scan returns, NaNs skipped, at every length around the lane counts and
// wherever the maximum (or a NaN) sits, in both dtypes.
Test(kernels, max_array_equals_a_plain_scan) {
    enum { N = 70 };
    double x[N];
    float xf[N];
    for (int n = 1; n <= N; n++)
        for (int at = 0; at < n; at++)
            for (int nan = 0; nan < 2; nan++) {
                for (int i = 0; i < n; i++) xf[i] = (float)(x[i] = -50.0 + (i * 37 % 23) - 0.25 * i);
                x[at] = 100.0 + at, xf[at] = (float)x[at];
                if (nan) x[(at + 3) % n] = NAN, xf[(at + 3) % n] = NAN;
                double want = -INFINITY, want_f = -INFINITY;
                for (int i = 0; i < n; i++) {
                    if (x[i] > want) want = x[i];
                    if (xf[i] > want_f) want_f = xf[i];
                }
                cr_assert_eq(ts_max_array(x, (size_t)n), want, "n %d, max at %d, nan %d", n, at, nan);
                cr_assert_eq(ts_max_array_f32(xf, (size_t)n), want_f, "float: n %d, max at %d, nan %d", n, at, nan);
            }
    const double nans[3] = {NAN, NAN, NAN};
    cr_assert_eq(ts_max_array(nans, 3), -INFINITY);
}

// ---- float32: the same kernels, instantiated for float (tensor/dtype_twice.h)

Test(dtype, names_sizes_and_conversion_round_trip) {
    int d = -1;
    cr_assert_eq(ts_dtype_parse("float32", &d), TS_OK);
    cr_assert_eq(d, TS_F32);
    cr_assert_eq(ts_dtype_size(TS_F32), 4);
    cr_assert_eq(ts_dtype_size(TS_F64), 8);
    cr_assert_neq(ts_dtype_parse("half", &d), TS_OK);
    cr_assert(strstr(ts_last_error(), "unknown dtype 'half' (float64, float32)"), "%s", ts_last_error());
    double x[3] = {1.0 / 3.0, -2.5, 1e-3}, back[3];
    float f[3];
    ts_values_convert(f, TS_F32, x, TS_F64, 3);
    ts_values_convert(back, TS_F64, f, TS_F32, 3);
    for (int i = 0; i < 3; i++) cr_assert_eq(back[i], (double)(float)x[i], "index %d", i);
    ts_tensor *t = ts_tensor_persistent_dtype(TS_F32, 2, (int[]){3, 5}, "w");
    cr_assert_eq(t->dtype, TS_F32);
    cr_assert_eq(ts_tensor_bytes(t), 60);
    cr_assert_eq(t->data_f32[14], 0.0f, "zeroed");
    ts_tensor_free_persistent(t);
}

// Each float32 kernel against its float64 twin on the same (float-rounded)
// inputs. The tolerance: float32's unit roundoff 6e-8 times the length of
// the longest sum (k = 40 products, 40 softmax terms) with a margin of 4:
// 1e-5 relative (the elementwise maps: the next test).
Test(dtype, float32_kernels_agree_with_float64) {
    enum { M = 7, K = 40, N = 9 };
    double a[M * K], b[K * N], c64[M * N];
    float af[M * K], bf[K * N], cf[M * N];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < M * K; i++) af[i] = (float)(gsl_rng_uniform(rng) * 2 - 1), a[i] = af[i];
    for (int i = 0; i < K * N; i++) bf[i] = (float)(gsl_rng_uniform(rng) * 2 - 1), b[i] = bf[i];
    for (int tb = 0; tb < 2; tb++) {  // b read as (K, N), then as (N, K) transposed
        cr_assert_eq(ts_gemm(0, tb, M, N, K, 1.0, a, b, 0.0, c64), TS_OK);
        cr_assert_eq(ts_gemm_f32(0, tb, M, N, K, 1.0f, af, bf, 0.0f, cf), TS_OK);
        double got[M * N];
        for (int i = 0; i < M * N; i++) got[i] = cf[i];
        assert_allclose(got, c64, M * N, 1e-5, 1e-5);
    }
    // a row vector times a matrix goes through sgemv
    cr_assert_eq(ts_gemm(0, 0, 1, N, K, 1.0, a, b, 0.0, c64), TS_OK);
    cr_assert_eq(ts_gemm_f32(0, 0, 1, N, K, 1.0f, af, bf, 0.0f, cf), TS_OK);
    for (int j = 0; j < N; j++) cr_assert_float_eq(cf[j], c64[j], 1e-5, "gemv column %d", j);

    double x[K], y64[K];
    float xf[K], yf[K];
    for (int i = 0; i < K; i++) xf[i] = (float)(gsl_rng_uniform(rng) * 20 - 10), x[i] = xf[i];
    ts_softmax_rows(y64, x, 4, K / 4, NULL);
    ts_softmax_rows_f32(yf, xf, 4, K / 4, NULL);
    for (int i = 0; i < K; i++) cr_assert_float_eq(yf[i], y64[i], 1e-5 * y64[i] + 1e-12, "softmax %d", i);
    ts_log_softmax_rows(y64, x, 4, K / 4);
    ts_log_softmax_rows_f32(yf, xf, 4, K / 4);
    for (int i = 0; i < K; i++) cr_assert_float_eq(yf[i], y64[i], 1e-5 * fabs(y64[i]) + 1e-6, "log-softmax %d", i);
    cr_assert_eq(ts_sum_array_f32(xf, K), ts_sum_array(x, K), "sums run in double in both dtypes");
    cr_assert_eq(ts_sumsq_array_f32(xf, K), ts_sumsq_array(x, K));
    cr_assert_eq(ts_max_array_f32(xf, K), ts_max_array(x, K));
    gsl_rng_free(rng);
}

// The vectorised scan of beam search's candidates finds the index a plain
// loop over the same formula finds, in both dtypes: from any start, ends
// that are not a multiple of 8, floors that nothing or everything beats,
// NaN logits (never above) and a NaN floor (nothing above it).
Test(kernels, first_log_prob_above_equals_a_plain_scan) {
    enum { V = 203 };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    double x[V];
    float xf[V];
    for (int i = 0; i < V; i++) xf[i] = (float)(gsl_rng_uniform(rng) * 30 - 20), x[i] = xf[i];
    double max = ts_max_array(x, V), log_sum = log(ts_sum_exp_shift(x, V, max));
    xf[17] = NAN, x[17] = NAN;
    const double score = -3.25, floors[] = {-INFINITY, -40, -20, -9, -4, -3.3, 0, NAN};
    int checked = 0;
    for (size_t f = 0; f < sizeof floors / sizeof floors[0]; f++)
        for (size_t from = 0; from <= V; from += 7)
            for (size_t n = from; n <= V; n += 13) {
                size_t want = n;
                for (size_t i = from; i < n && want == n; i++)
                    if (score + ((x[i] - max) - log_sum) > floors[f]) want = i;
                cr_assert_eq(ts_first_log_prob_above(x, from, n, score, max, log_sum, floors[f]), want,
                             "float64 floor %g, [%zu, %zu)", floors[f], from, n);
                cr_assert_eq(ts_first_log_prob_above_f32(xf, from, n, score, max, log_sum, floors[f]), want,
                             "float32 floor %g, [%zu, %zu)", floors[f], from, n);
                checked += want < n;
            }
    cr_assert_gt(checked, 100, "some scans found a candidate");
    // exp(0) is exactly 1, so a row's sum of exp(z - max) is >= 1 and every
    // log-probability (z - max) - log_sum <= 0: beam search's early stop
    // (models/search.c, out_of_reach) relies on it.
    for (int i = 0; i < V; i++) {
        if (i == 17) continue;
        cr_assert_eq(ts_sum_exp_shift(x + i, 1, x[i]), 1.0, "exp(%a - %a)", x[i], x[i]);
        cr_assert_eq(ts_sum_exp_shift_f32(xf + i, 1, xf[i]), 1.0, "float exp(%a - %a)", x[i], x[i]);
    }
    gsl_rng_free(rng);
}

// Distance in units in the last place between two finite floats of any sign.
static long ulps_apart(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    long oa = ia < 0 ? (long)INT32_MIN - ia : ia, ob = ib < 0 ? (long)INT32_MIN - ib : ib;
    return labs(oa - ob);
}

// The float32 maps compute in float (their own polynomials, kernels.c):
// the contract of kernels_decl_t.h is exp and tanh within 1 ulp of the
// correctly rounded value, sigmoid within 2, swept over 2^20 points of
// each function's whole range (the rounded double result stands for the
// correct one), and libm's values at the ends: +Inf, 0, +-1, NaN.
Test(dtype, float32_maps_within_their_ulp_bounds) {
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    cr_assert(x && y);
    struct {
        void (*map)(float *, const float *, size_t);
        double (*ref)(double);
        double lo, hi;
        long ulps;
    } maps[] = {{ts_exp_array_f32, exp, -110, 90, 1}, {ts_tanh_array_f32, tanh, -20, 20, 1},
                {ts_sigmoid_array_f32, ts_sigmoid_scalar, -87, 30, 2}};
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < N; i++) x[i] = (float)(maps[f].lo + (maps[f].hi - maps[f].lo) * i / N);
        maps[f].map(y, x, N);
        for (int i = 0; i < N; i++) {
            float want = (float)maps[f].ref(x[i]);
            if (isinf(want)) cr_assert(isinf(y[i]), "map %d at %.9g: %.9g, want +Inf", f, x[i], y[i]);
            else cr_assert(ulps_apart(y[i], want) <= maps[f].ulps, "map %d at %.9g: %.9g, want %.9g (%ld ulp)", f,
                           x[i], y[i], want, ulps_apart(y[i], want));
        }
    }
    const float ends[] = {-200.0f, 200.0f, NAN};
    float e[3], t[3], g[3];
    ts_exp_array_f32(e, ends, 3);
    ts_tanh_array_f32(t, ends, 3);
    ts_sigmoid_array_f32(g, ends, 3);
    cr_assert(e[0] == 0.0f && isinf(e[1]) && isnan(e[2]), "exp: %g %g %g", e[0], e[1], e[2]);
    cr_assert(t[0] == -1.0f && t[1] == 1.0f && isnan(t[2]), "tanh: %g %g %g", t[0], t[1], t[2]);
    cr_assert(g[0] == 0.0f && g[1] == 1.0f && isnan(g[2]), "sigmoid: %g %g %g", g[0], g[1], g[2]);
    free(x);
    free(y);
}

// ---- tensor/parallel.h: helpers that stay between runs ----

// Each part marks the items of its range with its part number + 1, notes
// the thread it ran on, and runs a nested pass of two parts.
typedef struct {
    int marks[1000];
    pthread_t thread[4];
    int parts_seen[4], in_part[4];
    pthread_t nested_thread[4][2];
    int nested_calls[4];
} marked;

typedef struct {
    marked *m;
    int outer;
} nested;

static void nested_part(void *arg, int part, int parts) {
    nested *n = arg;
    n->m->nested_thread[n->outer][part] = pthread_self();
    n->m->nested_calls[n->outer] += parts == 2;
}

static void mark_part(void *arg, int part, int parts) {
    marked *m = arg;
    size_t first, end;
    ts_part_range(1000, part, parts, &first, &end);
    for (size_t i = first; i < end; i++) m->marks[i] += part + 1;
    m->thread[part] = pthread_self();
    m->parts_seen[part] = parts;
    m->in_part[part] = ts_parallel_in_part();  // asserted on the test's thread
    ts_parallel_run(2, nested_part, &(nested){m, part});
}

// Runs of 1, 2 and 3 parts, again and again (the helpers sleep and wake):
// every item once, each part on its own thread, part 0 on the caller; a
// pass started inside a part runs its parts on that part's thread.
Test(parallel, helpers_run_each_part_once_and_nested_passes_stay_on_their_thread) {
    for (int parts = 1; parts <= 3; parts++)
        for (int run = 0; run < 50; run++) {
            marked m = {0};
            ts_parallel_run(parts, mark_part, &m);
            cr_assert(!ts_parallel_in_part());
            cr_assert(pthread_equal(m.thread[0], pthread_self()), "part 0 runs on the caller");
            for (int p = 0; p < parts; p++) {
                cr_assert_eq(m.parts_seen[p], parts);
                cr_assert(m.in_part[p], "part %d does not know it is one", p);
                cr_assert_eq(m.nested_calls[p], 2, "part %d's nested pass: %d parts", p, m.nested_calls[p]);
                for (int q = 0; q < 2; q++) cr_assert(pthread_equal(m.nested_thread[p][q], m.thread[p]));
                for (int q = 0; q < p; q++) cr_assert(!pthread_equal(m.thread[p], m.thread[q]), "parts %d, %d", q, p);
            }
            for (int i = 0; i < 1000; i++) {
                int owner = 0;
                for (int p = 0; p < parts; p++) {
                    size_t first, end;
                    ts_part_range(1000, p, parts, &first, &end);
                    if ((size_t)i >= first && (size_t)i < end) owner = p + 1;
                }
                cr_assert_eq(m.marks[i], owner, "item %d: %d, want part %d alone", i, m.marks[i], owner - 1);
            }
        }
}

// Two threads of a program running passes at once: the one that finds the
// helpers busy runs its parts itself, and both get every item.
static void *run_many(void *arg) {
    int *missed = arg;
    for (int run = 0; run < 200; run++) {
        marked m = {0};
        ts_parallel_run(2, mark_part, &m);
        for (int i = 0; i < 1000; i++) *missed += m.marks[i] < 1;
    }
    return NULL;
}

Test(parallel, passes_from_two_threads_at_once_each_complete) {
    pthread_t other;
    int missed[2] = {0, 0};
    cr_assert_eq(pthread_create(&other, NULL, run_many, &missed[1]), 0);
    run_many(&missed[0]);
    pthread_join(other, NULL);
    cr_assert_eq(missed[0] + missed[1], 0, "%d, %d items missed", missed[0], missed[1]);
}

// The default thread count: the GRU 256 and the Transformer of
// docs/performance.md's device table (5.3 M and 9.7 M parameters, batch 64)
// get 8 and 15 of 16 cores, the counts measured within 10% of their best;
// never fewer than 2 where there are two cores, never more than the cores.
Test(threads, the_default_thread_count_follows_the_step_s_work) {
    cr_assert_eq(ts_threads_for_model(5300000, 64, 16), 8);
    cr_assert_eq(ts_threads_for_model(9700000, 64, 16), 15);
    cr_assert_eq(ts_threads_for_model(9700000, 64, 4), 4);
    cr_assert_eq(ts_threads_for_model(300000, 32, 16), 2, "a toy model still gets two");
    cr_assert_eq(ts_threads_for_model(300000, 32, 1), 1, "one core: one thread");
    cr_assert_eq(ts_threads_for_model(50000000, 256, 64), 64);
}

// The count a process may use is read once: after a product has set
// OpenBLAS's count to 1 (the policy's small products), a second model opened
// in the same process still decodes on every thread.
Test(threads, the_available_count_does_not_follow_the_last_product) {
    int n = ts_threads_available();
    cr_assert_geq(n, 1);
    ts_threads_use(n > 1 ? n : 2);
    ts_threads_for_product(1.0);  // a small product: one OpenBLAS thread
    cr_assert_eq(ts_threads_available(), n);
    ts_threads_use(1);
    cr_assert_eq(ts_threads_available(), n);
    ts_threads_for_decoding();
    cr_assert_eq(ts_threads_asked(), n, "decoding asks for the process's count, not the last one set");
}

Test(threads, the_environment_gives_the_count_in_openblas_s_order) {
    unsetenv("OPENBLAS_NUM_THREADS");
    unsetenv("OMP_NUM_THREADS");
    cr_assert_eq(ts_threads_from_environment(), 0);
    setenv("OMP_NUM_THREADS", "3", 1);
    cr_assert_eq(ts_threads_from_environment(), 3);
    setenv("OPENBLAS_NUM_THREADS", "5", 1);
    cr_assert_eq(ts_threads_from_environment(), 5, "OPENBLAS_NUM_THREADS before OMP_NUM_THREADS");
    setenv("OPENBLAS_NUM_THREADS", "five", 1);
    cr_assert_eq(ts_threads_from_environment(), 3, "a value that is not a count is skipped");
    setenv("OPENBLAS_NUM_THREADS", "0", 1);
    cr_assert_eq(ts_threads_from_environment(), 3);
}

Test(threads, training_asks_for_threads_then_shares_them_among_ranks) {
    unsetenv("OPENBLAS_NUM_THREADS");
    unsetenv("OMP_NUM_THREADS");
    int n = ts_threads_available();
    cr_assert_eq(ts_threads_for_training(7, 4), 7, "--threads wins");
    cr_assert_eq(ts_threads_for_training(0, 1), n);
    cr_assert_eq(ts_threads_for_training(0, 2 * n), 1, "never fewer than one a rank");
    setenv("OMP_NUM_THREADS", "1", 1);
    cr_assert_eq(ts_threads_for_training(0, 2), n, "the environment's count is each rank's own");
}
