// Numeric kernels on raw row-major double arrays, shared by the autograd ops
// and by inference paths that run without a tape.
#ifndef TS_KERNELS_H
#define TS_KERNELS_H

#include <math.h>
#include <stddef.h>

// Loops marked TS_VECTOR_CLONES are built for AVX-512, AVX2 and baseline
// x86-64, and the best one for the CPU is picked at load time (GCC's
// target_clones; elsewhere they are plain functions). The code is ISO C
// (-ffp-contract=off), so every clone gives the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(TS_NO_CLONES)
#define TS_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TS_VECTOR_CLONES
#endif

// 1 / (1 + exp(-x)), written for both signs so that exp() never overflows.
static inline double ts_sigmoid_scalar(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

// C (m, n) = alpha * op(A) op(B) + beta * C, through gsl_blas_dgemm on
// gsl_matrix views. op(A) is (m, k): A is stored (m, k), or (k, m) when
// trans_a. op(B) is (k, n): B is stored (k, n), or (n, k) when trans_b.
// Returns TS_OK, or TS_ERR_GSL with GSL's reason. Empty products are allowed
// (k = 0 scales C by beta).
int ts_gemm(int trans_a, int trans_b, int m, int n, int k, double alpha, const double *A,
            const double *B, double beta, double *C);

// As ts_gemm, on sub-matrices: row i of A starts at A + i * lda (and likewise
// B with ldb, C with ldc), so a block of columns of a wider matrix can be
// used in place. lda >= the stored row length of A (k, or m when trans_a).
int ts_gemm_ld(int trans_a, int trans_b, int m, int n, int k, double alpha, const double *A, int lda,
               const double *B, int ldb, double beta, double *C, int ldc);

// Row-wise softmax of x (rows, cols) into y; may be called with y == x.
// Subtracts each row's maximum first, so scores like 929 do not overflow.
// With a mask (rows, cols; 0 = masked) masked entries get exactly 0 weight;
// a row with every entry masked becomes all zeros.
void ts_softmax_rows(double *y, const double *x, size_t rows, size_t cols, const double *mask);

// Elementwise y[i] = f(x[i]) for i < n, vectorised (y may be x). exp is
// within 1 ulp of libm's, tanh and sigmoid within 2; exp gives subnormal
// results below -708.39 (gradually, as libm's does), 0 below -745.13 and
// +Inf above 709.78; NaN stays NaN.
void ts_exp_array(double *y, const double *x, size_t n);
void ts_tanh_array(double *y, const double *x, size_t n);
void ts_sigmoid_array(double *y, const double *x, size_t n);  // 1 / (1 + exp(-x))

// Sum and maximum of x[0..n), in a fixed order (eight interleaved partial
// sums): the same bits on every machine. NaNs are skipped by the maximum;
// n = 0 gives 0 and -Inf.
double ts_sum_array(const double *x, size_t n);
double ts_max_array(const double *x, size_t n);
double ts_sumsq_array(const double *x, size_t n);  // sum of x[i]^2, same order as ts_sum_array

// x[i] += b[i] for i < n; returns the new maximum (as ts_max_array).
double ts_add_max_array(double *x, const double *b, size_t n);

// x[i] *= s, then acc[i] += t x[i], for i < n (x and acc do not overlap).
void ts_scale_accumulate(double *x, double s, double *acc, double t, size_t n);

// x[i] = exp(x[i] - shift) for i < n; returns their sum (ts_sum_array).
double ts_exp_shift_sum(double *x, size_t n, double shift);

// sum_i exp(x[i] - shift), leaving x as it is (blocks of 512 in a local buffer).
double ts_sum_exp_shift(const double *x, size_t n, double shift);

// Row-wise log-softmax: y = x - max - log(sum(exp(x - max))).
void ts_log_softmax_rows(double *y, const double *x, size_t rows, size_t cols);

// Sets the number of threads OpenBLAS uses (no-op with another CBLAS). Once
// set above 1, ts_gemm runs products of fewer than 4e6 multiply-adds on one
// thread and the rest on n, and matrix-vector products on n only when the
// matrix has 1e6 entries or more (without a call, OpenBLAS decides alone).
void ts_blas_set_threads(int n);

// The threads OpenBLAS uses now: OPENBLAS_NUM_THREADS, or the cores, until
// ts_blas_set_threads says otherwise (1 with another CBLAS).
int ts_blas_threads(void);

// "OpenBLAS" or "gslcblas": the CBLAS this build links behind GSL.
const char *ts_blas_name(void);

// The kernel family OpenBLAS chose at load time ("Haswell", "SkylakeX",
// "Prescott" ...; OPENBLAS_CORETYPE forces it), or "none" with another CBLAS.
// OpenBLAS 0.3.21 does not know some newer CPUs and falls back to its slow
// generic "Prescott" kernels there: benchmarks print this name.
const char *ts_blas_core_name(void);

#endif
