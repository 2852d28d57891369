#include "tensor/init.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include <math.h>

void ts_init_uniform(ts_tensor *t, gsl_rng *rng, double lo, double hi) {
    if (!rng) return;
    for (size_t i = 0; i < t->size; i++) t->data[i] = lo + (hi - lo) * gsl_rng_uniform(rng);
}

void ts_init_normal(ts_tensor *t, gsl_rng *rng, double std) {
    if (!rng) return;
    for (size_t i = 0; i < t->size; i++) t->data[i] = gsl_ran_gaussian(rng, std);
}

void ts_init_xavier(ts_tensor *t, gsl_rng *rng, double gain) {
    double fan_out = t->ndim >= 2 ? t->shape[0] : 1;
    double fan_in = (double)t->size / fan_out;
    double a = gain * sqrt(6.0 / (fan_in + fan_out));
    ts_init_uniform(t, rng, -a, a);
}

int ts_init_orthogonal(ts_tensor *t, gsl_rng *rng, double gain) {
    size_t rows = t->ndim >= 2 ? (size_t)t->shape[0] : 1;
    size_t cols = t->size / rows;
    // QR wants a tall matrix: decompose the transpose when t is wide.
    int wide = rows < cols;
    size_t m = wide ? cols : rows, n = wide ? rows : cols;
    ts_gsl_quiet();
    gsl_matrix *a = gsl_matrix_alloc(m, n);
    gsl_matrix *q = gsl_matrix_alloc(m, m);
    gsl_matrix *r = gsl_matrix_alloc(m, n);
    gsl_vector *tau = gsl_vector_alloc(n);
    int rc = TS_OK;
    if (!a || !q || !r || !tau) {
        rc = ts_fail(TS_ERR_NOMEM, "%s: orthogonal init cannot allocate", t->name);
        goto done;
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) gsl_matrix_set(a, i, j, gsl_ran_gaussian(rng, 1.0));
    if (gsl_linalg_QR_decomp(a, tau) || gsl_linalg_QR_unpack(a, tau, q, r)) {
        rc = ts_fail(TS_ERR_GSL, "%s: QR decomposition failed", t->name);
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        // Multiply column j of Q by sign(R_jj) so the result is uniform over
        // orthogonal matrices, not biased by the QR convention.
        double sign = gsl_matrix_get(r, j, j) < 0 ? -1.0 : 1.0;
        for (size_t i = 0; i < m; i++) {
            double v = gain * sign * gsl_matrix_get(q, i, j);
            if (wide) t->data[j * cols + i] = v;
            else t->data[i * cols + j] = v;
        }
    }
done:
    gsl_matrix_free(a);
    gsl_matrix_free(q);
    gsl_matrix_free(r);
    gsl_vector_free(tau);
    return rc;
}
