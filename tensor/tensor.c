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
        if (size > SIZE_MAX / sizeof(double) / (size_t)d)  // the larger element: fits either dtype
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

const ts_dtype_info ts_dtypes[TS_DTYPE_COUNT] = {
    [TS_F64] = {"float64", sizeof(double), "<f8", 1},  // codes written in files: never renumber
    [TS_F32] = {"float32", sizeof(float), "<f4", 2},
};
_Static_assert(sizeof ts_dtypes / sizeof ts_dtypes[0] == TS_DTYPE_COUNT, "one row per dtype");

static const char *dtype_name(int dtype) { return ts_dtypes[dtype].name; }
const ts_names ts_dtype_names = {.what = "dtype", .count = TS_DTYPE_COUNT, .name = dtype_name};

int ts_dtype_parse(const char *name, int *dtype) { return ts_names_parse(&ts_dtype_names, name, dtype); }

void ts_values_convert(void *dst, int dst_dtype, const void *src, int src_dtype, size_t n) {
    if (dst_dtype == src_dtype) {
        memcpy(dst, src, n * ts_dtype_size(src_dtype));
    } else if (dst_dtype == TS_F32) {
        float *d = dst;
        const double *s = src;
        for (size_t i = 0; i < n; i++) d[i] = (float)s[i];
    } else {
        double *d = dst;
        const float *s = src;
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    }
}

ts_tensor *ts_tensor_new_dtype(ts_arena *arena, int dtype, int ndim, const int *dims) {
    ts_tensor shape_only;
    if (ts_shape_set(&shape_only, ndim, dims, "tensor") != TS_OK) return NULL;
    ts_tensor *t = ts_arena_alloc(arena, sizeof *t);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    ts_shape_set(t, ndim, dims, "tensor");
    t->dtype = dtype;
    t->raw = ts_arena_alloc(arena, ts_tensor_bytes(t));
    return t->raw ? t : NULL;
}

ts_tensor *ts_tensor_new(ts_arena *arena, int ndim, const int *dims) {
    return ts_tensor_new_dtype(arena, TS_F64, ndim, dims);
}

ts_tensor *ts_tensor_zeros(ts_arena *arena, int ndim, const int *dims) {
    ts_tensor *t = ts_tensor_new(arena, ndim, dims);
    if (t) memset(t->data, 0, t->size * sizeof(double));
    return t;
}

ts_tensor *ts_tensor_new_persistent(int ndim, const int *dims, const char *name) {
    return ts_tensor_persistent_dtype(TS_F64, ndim, dims, name);
}

ts_tensor *ts_tensor_persistent_dtype(int dtype, int ndim, const int *dims, const char *name) {
    ts_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        ts_fail(TS_ERR_NOMEM, "%s: cannot allocate", name);
        return NULL;
    }
    if (ts_shape_set(t, ndim, dims, name) != TS_OK) {
        free(t);
        return NULL;
    }
    t->dtype = dtype;
    t->raw = calloc(t->size, ts_dtype_size(dtype));
    t->grad_raw = calloc(t->size, ts_dtype_size(dtype));
    if (!t->raw || !t->grad_raw) {
        ts_fail(TS_ERR_NOMEM, "%s: cannot allocate %zu %s values", name, t->size, ts_dtype_name(dtype));
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
    if (!t->borrowed) free(t->data);
    free(t->grad);
    free(t);
}
