// The optimizers (train/optim.h): one table row per kind, the passes over
// the registry that apply a row's update and take the gradients' norm, and
// the state a checkpoint keeps.
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
    const ts_optim_row *row = ts_optim_kind_of(kind);
    o->kind = kind;
    o->lr = lr;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->momentum = 0.9;
    o->weight_decay = TS_OPTIM_WEIGHT_DECAY;
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
        if (row->moments > 1 && !(o->v[i] = calloc(p->items[i]->size, size))) goto nomem;
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

// One pass over the registry: the update's (a row's update reads it) or the norm's.
struct ts_optim_pass {
    ts_optim *o;
    ts_params *p;
    size_t total;       // values in the registry
    double grad_scale;  // ts_optim_step's
    double step_size, sqrt_c2;
    double *sumsq;      // (count) ts_grad_norm's per tensor
};

// ---- the table ---------------------------------------------------------------------

// The values from .. from + n of parameter i: its weights, gradient and moments.
typedef struct {
    int dtype;
    void *w, *grad, *m, *v;  // v: NULL for a one-moment kind
} param_values;

static param_values values_at(const ts_optim_pass *r, int i, size_t from) {
    const ts_tensor *w = r->p->items[i];
    size_t at = from * ts_dtype_size(w->dtype);
    return (param_values){.dtype = w->dtype, .w = (char *)w->raw + at, .grad = (char *)w->grad_raw + at,
                          .m = (char *)r->o->m[i] + at, .v = r->o->v[i] ? (char *)r->o->v[i] + at : NULL};
}

static void sgd_values(const ts_optim_pass *r, int i, size_t from, size_t n) {
    param_values x = values_at(r, i, from);
    TS_BY_DTYPE(x.dtype, sgd_update, n, x.w, x.grad, x.m, r->grad_scale, r->o->momentum, r->o->lr);
}

// Adam's update after the weights are multiplied by keep.
static void adam_values_kept(const ts_optim_pass *r, int i, size_t from, size_t n, double keep) {
    const ts_optim *o = r->o;
    param_values x = values_at(r, i, from);
    TS_BY_DTYPE(x.dtype, adam_update, n, x.w, x.grad, x.m, x.v, r->grad_scale, o->beta1, o->beta2, r->step_size,
                r->sqrt_c2, o->eps, keep);
}

static void adam_values(const ts_optim_pass *r, int i, size_t from, size_t n) { adam_values_kept(r, i, from, n, 1.0); }

// Decoupled weight decay (Loshchilov and Hutter), as torch.optim.AdamW: the
// weights shrink by lr weight_decay before the moments' update, which the
// decay does not enter.
static void adamw_values(const ts_optim_pass *r, int i, size_t from, size_t n) {
    adam_values_kept(r, i, from, n, 1.0 - r->o->lr * r->o->weight_decay);
}

// One row per ts_optim_kind. The names are config.txt's and the
// checkpoints' (train.optimizer, the moments' tensors): they never change.
static const ts_optim_row table[] = {
    [TS_OPTIM_ADAM] = {"adam", 2, {"adam.m", "adam.v"}, "Adam's two moments", 0, adam_values},
    [TS_OPTIM_SGD] = {"sgd", 1, {"sgd.velocity", NULL}, "its velocity", 0, sgd_values},
    [TS_OPTIM_ADAMW] = {"adamw", 2, {"adamw.m", "adamw.v"}, "AdamW's two moments", 1, adamw_values},
};
_Static_assert(sizeof table / sizeof table[0] == TS_OPTIM_COUNT, "one row per ts_optim_kind");

const ts_optim_row *ts_optim_kind_of(ts_optim_kind kind) { return &table[kind]; }

const char *ts_optim_name(int kind) { return kind >= 0 && kind < TS_OPTIM_COUNT ? table[kind].name : "?"; }

const ts_names ts_optim_names = {.what = "optimizer", .count = TS_OPTIM_COUNT, .name = ts_optim_name};

int ts_optim_parse(const char *name, ts_optim_kind *kind) {
    int v, rc = ts_names_parse(&ts_optim_names, name, &v);
    if (!rc) *kind = (ts_optim_kind)v;
    return rc;
}

// ---- the passes ----------------------------------------------------------------------

// The passes over the parameters are memory-bound, and BLAS is idle while
// they run, so they run as parts of one ts_parallel_run on o->threads
// threads. The update cuts the registry's values, in registration order,
// into one run of consecutive values per part (a tensor may be cut): each
// value's update is its own, so any cut gives the same bits. The norm's
// squares are summed per tensor, the tensors shared among the parts, then
// added in a fixed order (two halves of the registry, split by size, each
// in order, then the halves): the same bits for any thread count.

// The parts a pass over n values uses on `threads` threads.
static int pass_parts(size_t n, int threads) { return threads > 1 ? ts_parallel_parts(n, threads) : 1; }

static void update_part(void *arg, int part, int parts) {
    const ts_optim_pass *r = arg;
    size_t first, end, before = 0;
    ts_part_range(r->total, part, parts, &first, &end);
    for (int i = 0; i < r->p->count && before < end; i++) {
        size_t size = r->p->items[i]->size, lo = first > before ? first - before : 0,
               hi = end - before < size ? end - before : size;
        if (lo < hi) table[r->o->kind].update(r, i, lo, hi - lo);
        before += size;
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
    ts_optim_pass run = {.o = o, .p = p, .total = ts_params_size(p), .grad_scale = grad_scale,
                         .step_size = o->lr / correction1, .sqrt_c2 = sqrt(correction2)};
    ts_parallel_run(pass_parts(run.total, o->threads), update_part, &run);
    return TS_OK;
}

// Part `part` sums whole tensors, those that start in its share of the
// registry's values (about total / parts): each tensor's sum is the one of
// one thread, so the norm does not depend on the parts.
static void sumsq_part(void *arg, int part, int parts) {
    const ts_optim_pass *r = arg;
    size_t first, end, before = 0;
    ts_part_range(r->total, part, parts, &first, &end);
    for (int i = 0; i < r->p->count; i++) {
        const ts_tensor *t = r->p->items[i];
        if (before >= first && (before < end || part == parts - 1))  // an empty last tensor: the last part
            r->sumsq[i] = TS_BY_DTYPE(t->dtype, ts_sumsq_array, t->grad_raw, t->size);  // in double either way
        before += t->size;
    }
}

// Where the norm's two halves meet: the registry split by size.
static int split_point(const ts_params *p) {
    size_t total = ts_params_size(p), before = 0;
    for (int i = 0; i < p->count; i++) {
        size_t after = before + p->items[i]->size;
        if (2 * after >= total) return (2 * after - total <= total - 2 * before) ? i + 1 : i;
        before = after;
    }
    return p->count;
}

double ts_grad_norm(const ts_params *p, int threads) {
    double *sumsq = malloc((size_t)(p->count > 0 ? p->count : 1) * sizeof *sumsq);  // (count)
    if (!sumsq) return NAN;  // no update rather than a wrong one
    ts_optim_pass run = {.p = (ts_params *)p, .total = ts_params_size(p), .sumsq = sumsq};  // read only
    ts_parallel_run(pass_parts(run.total, threads < p->count ? threads : p->count), sumsq_part, &run);
    int mid = split_point(p);
    double half[2] = {0.0, 0.0};
    for (int i = 0; i < p->count; i++) half[i >= mid] += sumsq[i];
    free(sumsq);
    return sqrt(half[0] + half[1]);
}

double ts_clip_factor(double norm, double max_norm) {
    if (max_norm <= 0 || !isfinite(norm)) return 1.0;
    double factor = max_norm / (norm + 1e-6);
    return factor < 1.0 ? factor : 1.0;
}

// ---- state in a checkpoint ---------------------------------------------------------

// The name of moment k (0: m or the velocity, 1: v) of parameter `param`.
static void moment_name(char *buf, size_t n, const ts_optim *o, int k, const char *param) {
    snprintf(buf, n, "%s.%s", table[o->kind].moment[k], param);
}

// The moments are viewed in place, in their dtype (the model's).
int ts_optim_save(const ts_optim *o, const ts_params *p, ts_ckpt *ck) {
    int rc = ts_ckpt_set_int(ck, "state.optimizer_step", o->step);
    for (int i = 0; !rc && i < p->count; i++) {
        const ts_tensor *param = p->items[i];
        size_t shape[3] = {(size_t)param->shape[0], (size_t)param->shape[1], (size_t)param->shape[2]};
        for (int k = 0; k < table[o->kind].moments && !rc; k++) {
            const void *moment = k == 0 ? o->m[i] : o->v[i];
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
            for (int k = 0; k < table[o->kind].moments; k++) {
                void *moment = k == 0 ? o->m[i] : o->v[i];
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
