// Gradient check: the tape's gradients against central finite differences.
//
// For each checked value x_i: numeric = (f(x + h e_i) - f(x - h e_i)) / (2h),
// h = eps * max(1, |x_i|). A value passes when
//     |analytic - numeric| <= atol + rtol * |numeric|
// (not absolute error alone, so large gradients are held to rtol and tiny
// ones to atol). Losses should not weigh every output equally (use random
// weights or mean((y + 1)^2)), so that a wrong transpose cannot hide.
#ifndef TS_GRADCHECK_H
#define TS_GRADCHECK_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"

// Builds the scalar loss in ctx from scratch (the checker resets ctx before
// every call); NULL on failure. Must be deterministic: it is called 2n + 1 times.
typedef ts_tensor *(*ts_loss_fn)(ts_ctx *ctx, void *user);

typedef struct {
    double eps;             // finite-difference step (relative); default 1e-6
    double atol;            // default 1e-8
    double rtol;            // default 1e-6
    size_t max_per_tensor;  // check at most this many values per tensor (0: all)
    gsl_rng *rng;           // picks the values when sampling; may be NULL when not sampling
} ts_gradcheck_opts;

typedef struct {
    char name[TS_NAME_SIZE]; // the tensor's name
    size_t checked;         // values compared
    double max_abs_err;     // max |analytic - numeric|
    double max_rel_err;     // max |a - n| / max(|n|, atol / rtol)
    size_t worst_index;     // the value with the largest err / (atol + rtol |n|)
    double worst_analytic, worst_numeric;
    int passed;             // every value within atol + rtol |numeric|
} ts_gradcheck_result;

// Defaults: eps 1e-6, atol 1e-8, rtol 1e-6, every value.
ts_gradcheck_opts ts_gradcheck_defaults(void);

// Checks d loss / d t for each persistent tensor t in tensors[0..n) (their
// data is perturbed and restored; their grad is overwritten). Fills
// results[0..n). Returns TS_OK when the check ran (pass or fail is in the
// results), or the failure of the loss function / backward.
int ts_gradcheck(ts_ctx *ctx, ts_loss_fn loss_fn, void *user, ts_tensor *const *tensors, int n,
                 const ts_gradcheck_opts *opts, ts_gradcheck_result *results);

#endif
