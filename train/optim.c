#include "train/optim.h"

#include <math.h>
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
    o->count = p->count;
    o->m = calloc((size_t)p->count, sizeof *o->m);
    o->v = calloc((size_t)p->count, sizeof *o->v);
    if (!o->m || !o->v) goto nomem;
    for (int i = 0; i < p->count; i++) {
        o->m[i] = calloc(p->items[i]->size, sizeof(double));
        if (!o->m[i]) goto nomem;
        if (kind == TS_OPTIM_ADAM && !(o->v[i] = calloc(p->items[i]->size, sizeof(double)))) goto nomem;
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

void ts_optim_step(ts_optim *o, ts_params *p) {
    o->step++;
    if (o->kind == TS_OPTIM_SGD) {
        for (int i = 0; i < p->count; i++) {
            ts_tensor *w = p->items[i];
            double *u = o->m[i];
            for (size_t k = 0; k < w->size; k++) {
                u[k] = o->momentum * u[k] + w->grad[k];
                w->data[k] -= o->lr * u[k];
            }
        }
        return;
    }
    double correction1 = 1.0 - pow(o->beta1, (double)o->step);
    double correction2 = 1.0 - pow(o->beta2, (double)o->step);
    double step_size = o->lr / correction1, sqrt_c2 = sqrt(correction2);
    for (int i = 0; i < p->count; i++) {
        ts_tensor *w = p->items[i];
        double *m = o->m[i], *v = o->v[i];
        for (size_t k = 0; k < w->size; k++) {
            double g = w->grad[k];
            m[k] = o->beta1 * m[k] + (1.0 - o->beta1) * g;
            v[k] = o->beta2 * v[k] + (1.0 - o->beta2) * g * g;
            w->data[k] -= step_size * m[k] / (sqrt(v[k]) / sqrt_c2 + o->eps);
        }
    }
}

double ts_clip_grad_norm(ts_params *p, double max_norm) {
    double sum = 0.0;
    for (int i = 0; i < p->count; i++) {
        const ts_tensor *w = p->items[i];
        for (size_t k = 0; k < w->size; k++) sum += w->grad[k] * w->grad[k];
    }
    double norm = sqrt(sum);
    if (max_norm > 0 && norm > max_norm && isfinite(norm)) {
        double scale = max_norm / (norm + 1e-6);  // PyTorch's clip_grad_norm_
        for (int i = 0; i < p->count; i++) {
            ts_tensor *w = p->items[i];
            for (size_t k = 0; k < w->size; k++) w->grad[k] *= scale;
        }
    }
    return norm;
}

const char *ts_optim_name(ts_optim_kind kind) { return kind == TS_OPTIM_SGD ? "sgd" : "adam"; }

int ts_optim_parse(const char *name, ts_optim_kind *kind) {
    if (!strcmp(name, "adam")) *kind = TS_OPTIM_ADAM;
    else if (!strcmp(name, "sgd")) *kind = TS_OPTIM_SGD;
    else return ts_fail(TS_ERR_ARG, "unknown optimizer '%s' (adam, sgd)", name);
    return TS_OK;
}
