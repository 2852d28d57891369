#include "autograd/params.h"

#include <stdlib.h>
#include <string.h>

void ts_params_init(ts_params *p) { memset(p, 0, sizeof *p); }

ts_tensor *ts_params_add(ts_params *p, const char *name, int ndim, const int *dims) {
    return ts_params_add_dtype(p, TS_F64, name, ndim, dims);
}

ts_tensor *ts_params_add_dtype(ts_params *p, int dtype, const char *name, int ndim, const int *dims) {
    if (strlen(name) >= sizeof(((ts_tensor *)0)->name)) {
        ts_fail(TS_ERR_ARG, "parameter name '%s' is longer than %d bytes", name, TS_NAME_SIZE - 1);
        return NULL;
    }
    if (ts_params_find(p, name)) {
        ts_fail(TS_ERR_ARG, "parameter '%s' registered twice", name);
        return NULL;
    }
    if (p->count == p->capacity) {
        int capacity = p->capacity ? 2 * p->capacity : 16;
        ts_tensor **items = realloc(p->items, (size_t)capacity * sizeof *items);
        if (!items) {
            ts_fail(TS_ERR_NOMEM, "parameter registry cannot grow to %d", capacity);
            return NULL;
        }
        p->items = items;
        p->capacity = capacity;
    }
    ts_tensor *t = ts_tensor_persistent_dtype(dtype, ndim, dims, name);
    if (t) p->items[p->count++] = t;
    return t;
}

ts_tensor *ts_params_find(const ts_params *p, const char *name) {
    for (int i = 0; i < p->count; i++)
        if (!strcmp(p->items[i]->name, name)) return p->items[i];
    return NULL;
}

int ts_params_convert(ts_params *p, int dtype) {
    for (int i = 0; i < p->count; i++) {
        ts_tensor *t = p->items[i];
        if (t->dtype == dtype) continue;
        void *data = calloc(t->size, ts_dtype_size(dtype)), *grad = calloc(t->size, ts_dtype_size(dtype));
        if (!data || !grad) {
            free(data);
            free(grad);
            return ts_fail(TS_ERR_NOMEM, "%s: cannot allocate %zu %s values", t->name, t->size, ts_dtype_name(dtype));
        }
        ts_values_convert(data, dtype, t->raw, t->dtype, t->size);
        free(t->raw);
        free(t->grad_raw);
        t->raw = data;
        t->grad_raw = grad;
        t->dtype = dtype;
    }
    return TS_OK;
}

void ts_params_zero_grad(ts_params *p) {
    for (int i = 0; i < p->count; i++) memset(p->items[i]->grad_raw, 0, ts_tensor_bytes(p->items[i]));
}

size_t ts_params_size(const ts_params *p) {
    size_t n = 0;
    for (int i = 0; i < p->count; i++) n += p->items[i]->size;
    return n;
}

void ts_params_free(ts_params *p) {
    for (int i = 0; i < p->count; i++) ts_tensor_free_persistent(p->items[i]);
    free(p->items);
    ts_params_init(p);
}
