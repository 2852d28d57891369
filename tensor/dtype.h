// The two element types a tensor can hold, and the one table that names them.
//
// Code that computes on tensor values is written once, for a type REAL, in
// a template file that tensor/dtype_twice.h includes twice: as double with
// plain names (FN(ts_gemm) is ts_gemm), then as float with an _f32 suffix
// (FN(ts_gemm) is ts_gemm_f32). The float64 names are the ones the code had
// before float32 came, so code that runs only in float64 (the gradient
// check, the PyTorch fixtures) reads as it did. Callers pick the instance
// with TS_BY_DTYPE, the two-entry switch.
#ifndef TS_DTYPE_H
#define TS_DTYPE_H

#include <stddef.h>

#include "tensor/names.h"

typedef enum {
    TS_F64 = 0,  // double: zero, so a zeroed tensor (and a fresh ctx) is float64; train defaults to float32
    TS_F32,      // float
    TS_DTYPE_COUNT
} ts_dtype;

typedef struct {
    const char *name;   // "float64": flags, checkpoints, messages
    size_t size;        // bytes per element
    const char *descr;  // NumPy's little-endian type string: "<f8"
    unsigned ckpt_code; // a checkpoint tensor's dtype field (docs/checkpoint.md): 1, 2; never 0
} ts_dtype_info;

extern const ts_dtype_info ts_dtypes[TS_DTYPE_COUNT];

static inline size_t ts_dtype_size(int dtype) { return ts_dtypes[dtype].size; }
static inline const char *ts_dtype_name(int dtype) { return ts_dtypes[dtype].name; }

// The dtype named `name` ("float32", "float64") into *dtype; TS_ERR_ARG
// with a message listing the names otherwise.
int ts_dtype_parse(const char *name, int *dtype);
extern const ts_names ts_dtype_names;

// dst[i] = src[i] converted, for i < n (float64 -> float32 rounds to nearest).
// dst and src may be the same dtype (a copy); they must not overlap.
void ts_values_convert(void *dst, int dst_dtype, const void *src, int src_dtype, size_t n);

// f(args) through the instance for `dtype`: f for float64, f_f32 for float32.
#define TS_BY_DTYPE(dtype, f, ...) ((dtype) == TS_F32 ? f##_f32(__VA_ARGS__) : f(__VA_ARGS__))

#endif
