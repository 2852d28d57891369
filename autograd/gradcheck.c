#include "autograd/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ts_gradcheck_opts ts_gradcheck_defaults(void) {
    return (ts_gradcheck_opts){.eps = 1e-6, .atol = 1e-8, .rtol = 1e-6};
}

// The loss at the current parameter values, without a tape.
static int eval_loss(ts_ctx *ctx, ts_loss_fn loss_fn, void *user, double *value) {
    ts_ctx_reset(ctx);
    int before = ts_set_grad_enabled(ctx, 0);
    ts_tensor *loss = loss_fn(ctx, user);
    ts_set_grad_enabled(ctx, before);
    if (!loss) return ctx->status ? ctx->status : ts_fail(TS_ERR_ARG, "gradcheck: the loss function failed");
    *value = loss->data[0];
    return TS_OK;
}

int ts_gradcheck(ts_ctx *ctx, ts_loss_fn loss_fn, void *user, ts_tensor *const *tensors, int n,
                 const ts_gradcheck_opts *opts, ts_gradcheck_result *results) {
    for (int t = 0; t < n; t++)
        if (!tensors[t]->persistent)
            return ts_fail(TS_ERR_ARG, "gradcheck: '%s' is not a persistent tensor", tensors[t]->name);

    // Analytic gradients, from one forward and backward pass.
    ts_ctx_reset(ctx);
    int before = ts_set_grad_enabled(ctx, 1);
    for (int t = 0; t < n; t++) memset(tensors[t]->grad, 0, tensors[t]->size * sizeof(double));
    ts_tensor *loss = loss_fn(ctx, user);
    int rc = loss ? ts_backward(ctx, loss) : (ctx->status ? ctx->status : TS_ERR_ARG);
    ts_set_grad_enabled(ctx, before);
    if (rc) return rc;

    for (int t = 0; t < n; t++) {
        ts_tensor *x = tensors[t];
        ts_gradcheck_result *res = &results[t];
        memset(res, 0, sizeof *res);
        snprintf(res->name, sizeof res->name, "%s", x->name);
        res->passed = 1;
        // Copy the analytic gradient: the numeric passes below reuse the arena
        // but persistent grads stay, and we keep them as they are.
        size_t count = x->size;
        if (opts->max_per_tensor && opts->max_per_tensor < count) count = opts->max_per_tensor;
        double worst_ratio = -1.0;
        for (size_t k = 0; k < count; k++) {
            size_t i = count == x->size ? k : (size_t)gsl_rng_uniform_int(opts->rng, x->size);
            double saved = x->data[i];
            double h = opts->eps * fmax(1.0, fabs(saved));
            double f_plus = NAN, f_minus = NAN;
            x->data[i] = saved + h;
            rc = eval_loss(ctx, loss_fn, user, &f_plus);
            x->data[i] = saved - h;
            if (!rc) rc = eval_loss(ctx, loss_fn, user, &f_minus);
            x->data[i] = saved;
            if (rc) return rc;
            double numeric = (f_plus - f_minus) / (2.0 * h);
            double analytic = x->grad[i];
            double err = fabs(analytic - numeric);
            double bound = opts->atol + opts->rtol * fabs(numeric);
            double rel = err / fmax(fabs(numeric), opts->atol / opts->rtol);
            if (!(err <= bound)) res->passed = 0;  // NaN fails too
            if (err > res->max_abs_err || isnan(err)) res->max_abs_err = err;
            if (rel > res->max_rel_err || isnan(rel)) res->max_rel_err = rel;
            double ratio = isnan(err) ? INFINITY : err / bound;
            if (ratio > worst_ratio) {
                worst_ratio = ratio;
                res->worst_index = i;
                res->worst_analytic = analytic;
                res->worst_numeric = numeric;
            }
            res->checked++;
        }
    }
    ts_ctx_reset(ctx);
    return TS_OK;
}
