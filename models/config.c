// The configuration's helpers every layer shares: the decoder's names, the
// memory width, the ids check and parameter specs (models/config.h); the
// table of its fields is models/fields.c.
#include "models/config.h"

#include "tensor/init.h"
#include "tensor/tokens.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char *ts_decoder_name(int type) {
    static const char *const names[TS_DECODER_COUNT] = {[TS_DECODER_BAHDANAU] = "bahdanau", [TS_DECODER_LUONG] = "luong"};
    return type >= 0 && type < TS_DECODER_COUNT ? names[type] : "?";
}

const ts_names ts_decoder_names = {.what = "decoder", .count = TS_DECODER_COUNT, .name = ts_decoder_name};

int ts_decoder_parse(const char *name, ts_decoder_type *type) {
    int v, rc = ts_names_parse(&ts_decoder_names, name, &v);
    if (!rc) *type = (ts_decoder_type)v;
    return rc;
}

int ts_model_memory_width(const ts_model_config *c) { return c->bidirectional ? 2 * c->hidden : c->hidden; }

int ts_model_check_ids(ts_ctx *ctx, const char *what, const int *ids, size_t n, int vocab) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "%s[%zu] = %d outside the vocabulary of %d", what, i, ids[i], vocab);
            return 0;
        }
    return 1;
}

int ts_param_spec_set(ts_param_spec *spec, ts_tensor **slot, double bound, int ndim, int d0, int d1,
                      const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(spec->shape.name, sizeof spec->shape.name, fmt, ap);
    va_end(ap);
    spec->shape.ndim = ndim;
    spec->shape.shape[0] = d0;
    spec->shape.shape[1] = ndim == 2 ? d1 : 0;
    spec->bound = bound;
    spec->slot = slot;
    return 1;
}

int ts_param_specs_create(ts_params *params, gsl_rng *rng, int dtype, const ts_param_spec *specs, int n) {
    for (int i = 0; i < n; i++) {
        const ts_param_spec *s = &specs[i];
        ts_tensor *t = ts_params_add_dtype(params, rng ? TS_F64 : dtype, s->shape.name, s->shape.ndim, s->shape.shape);
        if (!t) return TS_ERR_NOMEM;
        if (!rng) {  // nothing to draw: zeros (calloc's), and ones where a bound says so
            for (size_t k = 0; s->bound == TS_INIT_ONES && k < t->size; k++)
                if (t->dtype == TS_F32) t->data_f32[k] = 1.0f;
                else t->data[k] = 1.0;
        } else if (s->bound == TS_INIT_EMBEDDING || s->bound == TS_INIT_EMBEDDING_SCALED) {
            double std = s->bound == TS_INIT_EMBEDDING ? 1.0 : 1.0 / sqrt((double)t->shape[1]);
            ts_init_normal(t, rng, std);
            memset(t->data + (size_t)TS_PAD * t->shape[1], 0, (size_t)t->shape[1] * sizeof(double));
        } else if (s->bound == TS_INIT_ONES) {
            for (size_t k = 0; k < t->size; k++) t->data[k] = 1.0;
        } else {
            ts_init_uniform(t, rng, -s->bound, s->bound);
        }
        *s->slot = t;
    }
    return TS_OK;
}
