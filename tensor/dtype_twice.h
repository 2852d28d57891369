// Compiles the template file named by TS_TEMPLATE twice (GSL's templates_on.h
// pattern): once for double, once for float. Inside it:
//   REAL       the element type
//   FN(name)   the instance's name: name (float64), name_f32 (float32)
//   TS_REAL    the dtype (TS_F64, TS_F32)
//   DATA(t), GRAD(t)  a tensor's values and gradient as REAL *
//   BLAS(name) the CBLAS routine: cblas_dname (float64), cblas_sname (float32)
//   MATH(name) the libm function: sqrt (float64), sqrtf (float32)
// Scalars, sums and anything reported stay double in both instances; only
// arrays are REAL (docs/design.md, "Two dtypes").
//     #define TS_TEMPLATE "autograd/ops_elementwise_t.h"
//     #include "tensor/dtype_twice.h"
#ifndef TS_TEMPLATE
#error "define TS_TEMPLATE (the file to instantiate) before including tensor/dtype_twice.h"
#endif

#define DATA(t) ((REAL *)(t)->raw)
#define GRAD(t) ((REAL *)(t)->grad_raw)

#define REAL double
#define FN(name) name
#define TS_REAL TS_F64
#define BLAS(name) cblas_d##name
#define MATH(name) name
#include TS_TEMPLATE
#undef REAL
#undef FN
#undef TS_REAL
#undef BLAS
#undef MATH

#define REAL float
#define FN(name) name##_f32
#define TS_REAL TS_F32
#define BLAS(name) cblas_s##name
#define MATH(name) name##f
#include TS_TEMPLATE
#undef REAL
#undef FN
#undef TS_REAL
#undef BLAS
#undef MATH

#undef DATA
#undef GRAD
#undef TS_TEMPLATE
