#include "train/optim.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_optim_init(ts_optim *o, const ts_params *p, ts_optim_kind kind, double lr) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->lr = lr;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->momentum = 0.9;
    o->threads = 1;
    o->count = p->count;
    o->dtype = p->count ? p->items[0]->dtype : TS_F64;
    o->m = calloc((size_t)p->count, sizeof *o->m);
    o->v = calloc((size_t)p->count, sizeof *o->v);
    if (!o->m || !o->v) goto nomem;
    for (int i = 0; i < p->count; i++) {
        size_t size = ts_dtype_size(p->items[i]->dtype);
        o->m[i] = calloc(p->items[i]->size, size);
        if (!o->m[i]) goto nomem;
        if (kind == TS_OPTIM_ADAM && !(o->v[i] = calloc(p->items[i]->size, size))) goto nomem;
    }
    return TS_OK;
nomem:
    ts_optim_free(o);
    return ts_fail(TS_ERR_NOMEM, "optimizer state for %d parameters", p->count);
}

void ts_optim_free(ts_optim *o) {
    for (int i = 0; i < o->count; i++) {
        if (o->m) free(o->m[i]);
        if (o->v) free(o->v[i]);
    }
    free(o->m);
    free(o->v);
    memset(o, 0, sizeof *o);
}

#define TS_TEMPLATE "train/optim_t.h"
#include "tensor/dtype_twice.h"

// The passes over the parameters are memory-bound, and BLAS is idle while
// they run, so they split the registry into two runs of whole tensors with
// about half the elements each, [0, mid) and [mid, count), done as parts of
// one ts_parallel_run when threads > 1 (part p takes the runs r with
// r % parts == p). The split depends only on the sizes, so the bits do not
// depend on the thread count.
typedef struct {
    ts_optim *o;
    ts_params *p;
    int first, end;     // tensors [first, end)
    double grad_scale;  // ts_optim_step's
    double step_size, sqrt_c2;
    double sumsq;       // ts_grad_norm's partial sum
} param_run;

static int split_point(const ts_params *p) {
    size_t total = ts_params_size(p), before = 0;
    for (int i = 0; i < p->count; i++) {
        size_t after = before + p->items[i]->size;
        if (2 * after >= total) return (2 * after - total <= total - 2 * before) ? i + 1 : i;
        before = after;
    }
    return p->count;
}

typedef struct {
    param_run *run;  // [2]
    void (*fn)(param_run *);
} halves;

static void halves_part(void *arg, int part, int parts) {
    halves *h = arg;
    for (int r = part; r < 2; r += parts) h->fn(&h->run[r]);
}

// Runs fn on [0, mid) and on [mid, count): side by side when threads > 1.
static void run_halves(param_run run[2], int threads, void (*fn)(param_run *)) {
    int mid = split_point(run[0].p);
    run[0].first = 0;
    run[0].end = run[1].first = mid;
    run[1].end = run[0].p->count;
    halves h = {run, fn};
    ts_parallel_run(threads > 1 ? ts_parallel_parts(ts_params_size(run[0].p), 2) : 1, halves_part, &h);
}

static void update_run(param_run *r) {
    ts_optim *o = r->o;
    for (int i = r->first; i < r->end; i++) {
        ts_tensor *w = r->p->items[i];
        if (o->kind == TS_OPTIM_SGD)
            TS_BY_DTYPE(w->dtype, sgd_update, w->size, w->raw, w->grad_raw, o->m[i], r->grad_scale, o->momentum, o->lr);
        else
            TS_BY_DTYPE(w->dtype, adam_update, w->size, w->raw, w->grad_raw, o->m[i], o->v[i], r->grad_scale, o->beta1,
                        o->beta2, r->step_size, r->sqrt_c2, o->eps);
    }
}

int ts_optim_step(ts_optim *o, ts_params *p, double grad_scale) {
    if (o->step == LONG_MAX) {  // a restored count can be anything a file says
        ts_params_zero_grad(p);
        return ts_fail(TS_ERR_NUMERIC, "optimizer: the step count is at its limit %ld", o->step);
    }
    o->step++;
    double correction1 = 1.0 - pow(o->beta1, (double)o->step);
    double correction2 = 1.0 - pow(o->beta2, (double)o->step);
    param_run run = {.o = o, .p = p, .grad_scale = grad_scale, .step_size = o->lr / correction1,
                     .sqrt_c2 = sqrt(correction2)};
    run_halves((param_run[2]){run, run}, o->threads, update_run);
    return TS_OK;
}

static void sumsq_run(param_run *r) {
    r->sumsq = 0.0;
    for (int i = r->first; i < r->end; i++) {
        const ts_tensor *t = r->p->items[i];
        r->sumsq += TS_BY_DTYPE(t->dtype, ts_sumsq_array, t->grad_raw, t->size);  // in double either way
    }
}

double ts_grad_norm(const ts_params *p, int threads) {
    param_run run[2] = {{.p = (ts_params *)p}, {.p = (ts_params *)p}};  // read only
    run_halves(run, threads, sumsq_run);
    return sqrt(run[0].sumsq + run[1].sumsq);
}

double ts_clip_factor(double norm, double max_norm) {
    if (max_norm <= 0 || !isfinite(norm)) return 1.0;
    double factor = max_norm / (norm + 1e-6);
    return factor < 1.0 ? factor : 1.0;
}

const char *ts_optim_name(int kind) { return kind == TS_OPTIM_SGD ? "sgd" : "adam"; }

const ts_names ts_optim_names = {.what = "optimizer", .count = 2, .name = ts_optim_name};

int ts_optim_parse(const char *name, ts_optim_kind *kind) {
    int v, rc = ts_names_parse(&ts_optim_names, name, &v);
    if (!rc) *kind = (ts_optim_kind)v;
    return rc;
}

// ---- state in a checkpoint ---------------------------------------------------------

// The name of moment k (0: m or the velocity, 1: v) of parameter `param`.
static void moment_name(char *buf, size_t n, const ts_optim *o, int k, const char *param) {
    snprintf(buf, n, "%s.%s", k == 0 ? (o->kind == TS_OPTIM_SGD ? "sgd.velocity" : "adam.m") : "adam.v", param);
}

// The moments are viewed in place, in their dtype (the model's).
int ts_optim_save(const ts_optim *o, const ts_params *p, ts_ckpt *ck) {
    int rc = ts_ckpt_set_int(ck, "state.optimizer_step", o->step);
    for (int i = 0; !rc && i < p->count; i++) {
        const ts_tensor *param = p->items[i];
        size_t shape[3] = {(size_t)param->shape[0], (size_t)param->shape[1], (size_t)param->shape[2]};
        for (int k = 0; k < 2 && !rc; k++) {
            const void *moment = k == 0 ? o->m[i] : o->v[i];
            if (!moment) continue;
            char name[128];
            moment_name(name, sizeof name, o, k, param->name);
            rc = ts_ckpt_add_tensor_view_dtype(ck, TS_CKPT_OPTIM, name, o->dtype, param->ndim, shape, moment);
        }
    }
    return rc;
}

int ts_optim_load(ts_optim *o, const ts_params *p, const ts_ckpt *ck, long max_step) {
    int64_t step;
    int rc = ts_ckpt_get_int(ck, "state.optimizer_step", 0, max_step, &step);
    if (rc) return rc;
    // Every moment is checked before any is copied: a failure leaves o as it was.
    for (int copy = 0; copy < 2; copy++)
        for (int i = 0; i < p->count; i++) {
            const ts_tensor *param = p->items[i];
            size_t shape[3] = {(size_t)param->shape[0], (size_t)param->shape[1], (size_t)param->shape[2]};
            for (int k = 0; k < 2; k++) {
                void *moment = k == 0 ? o->m[i] : o->v[i];
                if (!moment) continue;
                char name[128];
                moment_name(name, sizeof name, o, k, param->name);
                const ts_ckpt_tensor *stored;
                if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, name, param->ndim, shape, &stored))) return rc;
                if (copy) ts_values_convert(moment, o->dtype, stored->raw, stored->dtype, param->size);  // float64 in files from before float32 ones
            }
        }
    o->step = step;
    return TS_OK;
}
