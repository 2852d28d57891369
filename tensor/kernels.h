// Numeric kernels on raw row-major double arrays, shared by the autograd ops
// and by inference paths that run without a tape.
#ifndef TS_KERNELS_H
#define TS_KERNELS_H

#include <math.h>
#include <stddef.h>

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

// Row-wise softmax of x (rows, cols) into y; may be called with y == x.
// Subtracts each row's maximum first, so scores like 929 do not overflow.
// With a mask (rows, cols; 0 = masked) masked entries get exactly 0 weight;
// a row with every entry masked becomes all zeros.
void ts_softmax_rows(double *y, const double *x, size_t rows, size_t cols, const double *mask);

// Row-wise log-softmax: y = x - max - log(sum(exp(x - max))).
void ts_log_softmax_rows(double *y, const double *x, size_t rows, size_t cols);

// Sets the number of threads OpenBLAS uses (no-op with another CBLAS).
void ts_blas_set_threads(int n);

// "OpenBLAS" or "gslcblas": the CBLAS this build links behind GSL.
const char *ts_blas_name(void);

#endif
