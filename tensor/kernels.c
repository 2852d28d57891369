#include "tensor/kernels.h"

#include "tensor/status.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <math.h>

#ifdef TS_HAVE_OPENBLAS
void openblas_set_num_threads(int num_threads);
#endif

int ts_gemm(int trans_a, int trans_b, int m, int n, int k, double alpha, const double *A,
            const double *B, double beta, double *C) {
    if (m <= 0 || n <= 0) return TS_OK;
    if (k <= 0) {  // GSL rejects empty views; the product is zero
        for (size_t i = 0; i < (size_t)m * (size_t)n; i++) C[i] = beta == 0.0 ? 0.0 : beta * C[i];
        return TS_OK;
    }
    ts_gsl_quiet();
    gsl_matrix_const_view a = trans_a ? gsl_matrix_const_view_array(A, (size_t)k, (size_t)m)
                                      : gsl_matrix_const_view_array(A, (size_t)m, (size_t)k);
    gsl_matrix_const_view b = trans_b ? gsl_matrix_const_view_array(B, (size_t)n, (size_t)k)
                                      : gsl_matrix_const_view_array(B, (size_t)k, (size_t)n);
    gsl_matrix_view c = gsl_matrix_view_array(C, (size_t)m, (size_t)n);
    int rc = gsl_blas_dgemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                            alpha, &a.matrix, &b.matrix, beta, &c.matrix);
    if (rc) return ts_fail(TS_ERR_GSL, "gsl_blas_dgemm (%d x %d x %d): %s", m, n, k, gsl_strerror(rc));
    return TS_OK;
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
