// Parameter initialisers. All randomness comes from the gsl_rng passed in, so
// the same seed gives the same model bit for bit.
#ifndef TS_INIT_H
#define TS_INIT_H

#include <gsl/gsl_rng.h>

#include "tensor/tensor.h"

// With rng NULL, ts_init_uniform and ts_init_normal leave t as it is: for a
// model whose values are loaded next (no 5 M Gaussians drawn to be overwritten).

// data[i] ~ U(lo, hi)
void ts_init_uniform(ts_tensor *t, gsl_rng *rng, double lo, double hi);

// data[i] ~ N(0, std^2)
void ts_init_normal(ts_tensor *t, gsl_rng *rng, double std);

// Xavier/Glorot uniform for a (fan_out, fan_in) weight:
// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
void ts_init_xavier(ts_tensor *t, gsl_rng *rng, double gain);

// A (rows, cols) matrix with orthonormal rows or columns (whichever are
// fewer), from the QR decomposition of a Gaussian matrix, signs fixed as in
// Saxe et al. Returns TS_OK or TS_ERR_NOMEM / TS_ERR_GSL.
int ts_init_orthogonal(ts_tensor *t, gsl_rng *rng, double gain);

#endif
