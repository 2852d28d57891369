// Numeric kernels on raw row-major arrays of either dtype, shared by the
// autograd ops and by inference paths that run without a tape.
#ifndef TS_KERNELS_H
#define TS_KERNELS_H

#include <math.h>
#include <stddef.h>

// Loops marked TS_VECTOR_CLONES are built for AVX-512, AVX2 and baseline
// x86-64, and the best one for the CPU is picked at load time (GCC's
// target_clones; elsewhere they are plain functions). The code is ISO C
// (-ffp-contract=off), so every clone gives the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(TS_NO_CLONES)
#define TS_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TS_VECTOR_CLONES
#endif

// 1 / (1 + exp(-x)), written for both signs so that exp() never overflows.
static inline double ts_sigmoid_scalar(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

// The kernels on raw arrays, once per dtype (tensor/dtype_twice.h): each
// below is declared for REAL = double under its plain name (ts_gemm) and for
// REAL = float with _f32 (ts_gemm_f32). Masks stay double in both.
#include "tensor/dtype.h"
#define TS_TEMPLATE "tensor/kernels_decl_t.h"
#include "tensor/dtype_twice.h"

// "OpenBLAS" or "gslcblas": the CBLAS this build links behind GSL.
const char *ts_blas_name(void);

// The kernel family OpenBLAS chose at load time ("Haswell", "SkylakeX",
// "Prescott" ...; OPENBLAS_CORETYPE forces it), or "none" with another CBLAS.
// OpenBLAS 0.3.21 does not know some newer CPUs and falls back to its slow
// generic "Prescott" kernels there: benchmarks print this name.
const char *ts_blas_core_name(void);

#endif
