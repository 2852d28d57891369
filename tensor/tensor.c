#include "tensor/tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_shape_set(ts_tensor *t, int ndim, const int *dims, const char *what) {
    if (ndim < 1 || ndim > TS_MAX_DIMS)
        return ts_fail(TS_ERR_SHAPE, "%s: %d dimensions (tensors have 1 to %d)", what, ndim,
                       TS_MAX_DIMS);
    size_t size = 1;
    for (int i = 0; i < TS_MAX_DIMS; i++) {
        int d = i < ndim ? dims[i] : 1;
        if (d <= 0) return ts_fail(TS_ERR_SHAPE, "%s: dimension %d is %d (must be > 0)", what, i, d);
        if (size > SIZE_MAX / sizeof(double) / (size_t)d)
            return ts_fail(TS_ERR_SHAPE, "%s: shape overflows a size", what);
        size *= (size_t)d;
        t->shape[i] = d;
    }
    t->ndim = ndim;
    t->size = size;
    return TS_OK;
}

int ts_same_shape(const ts_tensor *a, const ts_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

char *ts_shape_str(const ts_tensor *t, char *buf, size_t n) {
    switch (t->ndim) {
    case 1: snprintf(buf, n, "(%d)", t->shape[0]); break;
    case 2: snprintf(buf, n, "(%d, %d)", t->shape[0], t->shape[1]); break;
    default: snprintf(buf, n, "(%d, %d, %d)", t->shape[0], t->shape[1], t->shape[2]); break;
    }
    return buf;
}

ts_tensor *ts_tensor_new(ts_arena *arena, int ndim, const int *dims) {
    ts_tensor shape_only;
    if (ts_shape_set(&shape_only, ndim, dims, "tensor") != TS_OK) return NULL;
    ts_tensor *t = ts_arena_alloc(arena, sizeof *t);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    ts_shape_set(t, ndim, dims, "tensor");
    t->data = ts_arena_alloc(arena, t->size * sizeof(double));
    return t->data ? t : NULL;
}

ts_tensor *ts_tensor_zeros(ts_arena *arena, int ndim, const int *dims) {
    ts_tensor *t = ts_tensor_new(arena, ndim, dims);
    if (t) memset(t->data, 0, t->size * sizeof(double));
    return t;
}

ts_tensor *ts_tensor_new_persistent(int ndim, const int *dims, const char *name) {
    ts_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        ts_fail(TS_ERR_NOMEM, "%s: cannot allocate", name);
        return NULL;
    }
    if (ts_shape_set(t, ndim, dims, name) != TS_OK) {
        free(t);
        return NULL;
    }
    t->data = calloc(t->size, sizeof(double));
    t->grad = calloc(t->size, sizeof(double));
    if (!t->data || !t->grad) {
        ts_fail(TS_ERR_NOMEM, "%s: cannot allocate %zu doubles", name, t->size);
        ts_tensor_free_persistent(t);
        return NULL;
    }
    t->persistent = 1;
    t->requires_grad = 1;
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

void ts_tensor_free_persistent(ts_tensor *t) {
    if (!t) return;
    free(t->data);
    free(t->grad);
    free(t);
}
