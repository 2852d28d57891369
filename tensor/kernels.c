#include "tensor/kernels.h"

#include "tensor/status.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <math.h>

#ifdef TS_HAVE_OPENBLAS
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
#endif

int ts_gemm_ld(int trans_a, int trans_b, int m, int n, int k, double alpha, const double *A, int lda,
               const double *B, int ldb, double beta, double *C, int ldc) {
    if (m <= 0 || n <= 0) return TS_OK;
    if (k <= 0) {  // GSL rejects empty views; the product is zero
        for (size_t i = 0; i < (size_t)m; i++)
            for (size_t j = 0; j < (size_t)n; j++) {
                double *c = C + i * (size_t)ldc + j;
                *c = beta == 0.0 ? 0.0 : beta * *c;
            }
        return TS_OK;
    }
    ts_gsl_quiet();
    gsl_matrix_const_view a = trans_a ? gsl_matrix_const_view_array_with_tda(A, (size_t)k, (size_t)m, (size_t)lda)
                                      : gsl_matrix_const_view_array_with_tda(A, (size_t)m, (size_t)k, (size_t)lda);
    gsl_matrix_const_view b = trans_b ? gsl_matrix_const_view_array_with_tda(B, (size_t)n, (size_t)k, (size_t)ldb)
                                      : gsl_matrix_const_view_array_with_tda(B, (size_t)k, (size_t)n, (size_t)ldb);
    gsl_matrix_view c = gsl_matrix_view_array_with_tda(C, (size_t)m, (size_t)n, (size_t)ldc);
    int rc = gsl_blas_dgemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                            alpha, &a.matrix, &b.matrix, beta, &c.matrix);
    if (rc) return ts_fail(TS_ERR_GSL, "gsl_blas_dgemm (%d x %d x %d): %s", m, n, k, gsl_strerror(rc));
    return TS_OK;
}

int ts_gemm(int trans_a, int trans_b, int m, int n, int k, double alpha, const double *A,
            const double *B, double beta, double *C) {
    return ts_gemm_ld(trans_a, trans_b, m, n, k, alpha, A, trans_a ? m : k, B, trans_b ? k : n, beta, C, n);
}

void ts_softmax_rows(double *y, const double *x, size_t rows, size_t cols, const double *mask) {
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        const double *mr = mask ? mask + r * cols : NULL;
        double *yr = y + r * cols;
        double max = -INFINITY;
        for (size_t c = 0; c < cols; c++)
            if ((!mr || mr[c] != 0.0) && xr[c] > max) max = xr[c];
        if (max == -INFINITY) {  // every position masked: no weight anywhere
            for (size_t c = 0; c < cols; c++) yr[c] = 0.0;
            continue;
        }
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) {
            double e = (!mr || mr[c] != 0.0) ? exp(xr[c] - max) : 0.0;
            yr[c] = e;
            sum += e;
        }
        double inv = 1.0 / sum;
        for (size_t c = 0; c < cols; c++) yr[c] *= inv;
    }
}

double ts_exp_shift_sum(double *x, size_t n, double shift) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        x[i] = exp(x[i] - shift);
        sum += x[i];
    }
    return sum;
}

void ts_log_softmax_rows(double *y, const double *x, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double max = -INFINITY;
        for (size_t c = 0; c < cols; c++)
            if (xr[c] > max) max = xr[c];
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) sum += exp(xr[c] - max);
        // (x - max) - log(sum), not x - (max + log(sum)): with scores near
        // 929 the latter loses ~13 digits to cancellation.
        double log_sum = log(sum);
        for (size_t c = 0; c < cols; c++) yr[c] = (xr[c] - max) - log_sum;
    }
}

void ts_blas_set_threads(int n) {
#ifdef TS_HAVE_OPENBLAS
    openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

const char *ts_blas_name(void) { return TS_CBLAS_NAME; }

const char *ts_blas_core_name(void) {
#ifdef TS_HAVE_OPENBLAS
    return openblas_get_corename();
#else
    return "none";
#endif
}
