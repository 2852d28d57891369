#include "tensor/kernels.h"

#include "tensor/parallel.h"
#include "tensor/threads.h"
#include "tensor/status.h"

#include <gsl/gsl_cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

// The NaN and Inf checks (the trainer's, the loaders', the tests') mean
// something only where the compiler may not assume they never happen:
// -ffast-math, -Ofast and -ffinite-math-only (in any CFLAGS) stop the build
// here instead of silently removing them (CMakeLists.txt says so too).
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error "tinyseq must not be built with -ffast-math, -Ofast or -ffinite-math-only: its NaN and Inf checks would vanish"
#endif


#ifdef TS_HAVE_OPENBLAS
char *openblas_get_corename(void);
#endif

#define TS_SPLIT_GEMM_MNK 2e7
static size_t row_grain(ts_dtype dtype);  // below ts_blas_core_name

// ---- vectorisable exp, tanh, sigmoid ----------------------------------------
//
// libm's exp and tanh are scalar calls; the loops below are written so that
// the compiler vectorises them (no branches, no calls), and on x86-64 with
// GCC each is also built for AVX2 and AVX-512 and picked at load time
// (target_clones). The code is ISO C with -ffp-contract=off (C11 mode), so
// every clone computes the same bits: only the vector width differs.


static inline uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline double double_of(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// a where c, else b, through the bits: both values are computed either way,
// so the compiler has no reason to branch (with -ftrapping-math, GCC does
// not if-convert a branch holding floating-point arithmetic).
static inline double select_double(int c, double a, double b) {
    uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
    return double_of((bits_of(a) & m) | (bits_of(b) & ~m));
}

// exp(x): x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: ln2 in two parts),
// exp(r) by its Taylor series to r^13 (truncation < 2e-17 relative), times
// 2^k applied as two powers of two, each a normal number. x is first clamped
// to [-746, 710], where 2^k over- or underflows by itself: exp(x) is +Inf
// above 709.78 and 0 (through subnormals) below -745.13; NaN stays NaN.
// Within 1 ulp of libm's exp (checked on 4e6 points over [-708, 709.7]).
static inline double exp_inline(double x) {
    const double lo = -746.0, hi = 710.0;
    const double log2e = 1.4426950408889634, ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double shifter = 0x1.8p52;  // adding it rounds to an integer held in the low mantissa bits
    double xc = select_double(isless(x, lo), lo, x);  // NaN compares false and passes through
    xc = select_double(isgreater(xc, hi), hi, xc);
    double kd = xc * log2e + shifter;
    uint64_t k = bits_of(kd) - bits_of(shifter);  // k = round(x / ln2), |k| <= 1077, two's complement
    double k1d = (kd - shifter) * 0.5 + shifter;
    uint64_t k1 = bits_of(k1d) - bits_of(shifter), k2 = k - k1;  // k1 = round(k / 2): k1, k2 in [-539, 513]
    kd -= shifter;
    double r = (xc - kd * ln2_hi) - kd * ln2_lo;
    double p = 1.0 / 6227020800.0;  // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // Only unsigned integer adds and shifts, which every vector unit has.
    double s1 = double_of((k1 + 1023) << 52), s2 = double_of((k2 + 1023) << 52);
    return p * s1 * s2;  // p s1 is exact; one rounding, also into the subnormals
}

// tanh(x): for |x| < 0.625 Cephes' rational approximation
// x + x^3 P(x^2) / Q(x^2) (relative error ~2e-16), else 1 - 2 / (exp(2|x|) + 1)
// with x's sign. Both are computed (the rational one on a clamped input, so
// it stays finite) and one is selected.
static inline double tanh_inline(double x) {
    double ax = fabs(x);
    int small_x = isless(ax, 0.625);
    double xs = select_double(small_x, x, 0.5), z = xs * xs;
    double p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z - 1.61468768441708447952e3;
    double q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z + 4.84406305325125486048e3;
    double small = xs + xs * z * (p / q);
    double e = exp_inline(2.0 * ax);
    double large = copysign(1.0 - 2.0 / (e + 1.0), x);
    return select_double(small_x, small, large);
}

// 1 / (1 + exp(-x)); exp(-x) = +Inf for x < -709.78 gives exactly 0.
static inline double sigmoid_inline(double x) { return 1.0 / (1.0 + exp_inline(-x)); }

// ---- the same three in float, for the float32 instances (FN(exp_inline))
//
// Computed in float throughout, so a vector holds twice the lanes and no
// value is converted: the float32 step's exponentials (the loss's N x V of
// them) cost a quarter of what the double kernels applied to floats did.
// Cephes' single-precision polynomials, with the same range reduction and
// selects as the double ones above.

static inline uint32_t bits_of_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline float select_float(int c, float a, float b) {
    uint32_t m = (uint32_t)0 - (uint32_t)(c != 0);
    return float_of((bits_of_f32(a) & m) | (bits_of_f32(b) & ~m));
}

// expf(x): x = k ln2 + r, |r| <= ln2 / 2, exp(r) = 1 + r + r^2 P(r) with
// Cephes' degree-5 minimax P (relative error 1.7e-7 on [-ln2/2, ln2/2]),
// times 2^k as two normal powers of two. x is clamped to [-104, 89]: +Inf
// above 88.72, 0 (through subnormals) below -103.97, NaN stays NaN.
// Within 2 ulp of the correctly rounded expf (tests/test_tensor.c sweeps it).
static inline float exp_inline_f32(float x) {
    const float lo = -104.0f, hi = 89.0f;
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float shifter = 0x1.8p23f;
    float xc = select_float(isless(x, lo), lo, x);
    xc = select_float(isgreater(xc, hi), hi, xc);
    float kd = xc * log2e + shifter;
    uint32_t k = bits_of_f32(kd) - bits_of_f32(shifter);  // |k| <= 150
    float k1d = (kd - shifter) * 0.5f + shifter;
    uint32_t k1 = bits_of_f32(k1d) - bits_of_f32(shifter), k2 = k - k1;  // k1, k2 in [-75, 65]
    kd -= shifter;
    float r = (xc - kd * ln2_hi) - kd * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    float s1 = float_of((k1 + 127) << 23), s2 = float_of((k2 + 127) << 23);
    return p * s1 * s2;
}

// tanhf(x): Cephes' odd polynomial x + x^3 P(x^2) below |x| = 0.625,
// 1 - 2 / (exp(2|x|) + 1) with x's sign above; within 3 ulp.
static inline float tanh_inline_f32(float x) {
    float ax = fabsf(x);
    int small_x = isless(ax, 0.625f);
    float xs = select_float(small_x, x, 0.5f), z = xs * xs;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = xs + xs * z * p;
    float e = exp_inline_f32(2.0f * ax);
    float large = copysignf(1.0f - 2.0f / (e + 1.0f), x);
    return select_float(small_x, small, large);
}

// 1 / (1 + expf(-x)); within 3 ulp; exactly 0 below -88.72.
static inline float sigmoid_inline_f32(float x) { return 1.0f / (1.0f + exp_inline_f32(-x)); }

// Blocks of one 512-bit vector's lanes (8 doubles, 16 floats) with a local
// buffer: a fixed trip count and no aliasing between x and y, so even -O2's
// cheap vectoriser takes the inner loops. f is elementwise, so the block
// length changes no bit (blocks of 8 floats filled only half of AVX-512's
// registers: the float exponentials of beam search's log-sum-exp ran at half
// speed). Used inside the template (REAL, FN: the instance's element type and f).
#define TS_MAP_BLOCKS(y, x, n, f)                                            \
    do {                                                                     \
        enum { lanes_ = 64 / sizeof(REAL) };                                 \
        size_t i_ = 0;                                                       \
        for (; i_ + lanes_ <= (n); i_ += lanes_) {                           \
            REAL t_[lanes_];                                                 \
            for (int j_ = 0; j_ < lanes_; j_++) t_[j_] = f((x)[i_ + j_]);    \
            for (int j_ = 0; j_ < lanes_; j_++) (y)[i_ + j_] = t_[j_];       \
        }                                                                    \
        for (; i_ < (n); i_++) (y)[i_] = f((x)[i_]);                         \
    } while (0)

// The templated kernels: products, softmax, elementwise maps and reductions.
#define TS_TEMPLATE "tensor/kernels_t.h"
#include "tensor/dtype_twice.h"

const char *ts_blas_name(void) { return TS_CBLAS_NAME; }

const char *ts_blas_core_name(void) {
#ifdef TS_HAVE_OPENBLAS
    return openblas_get_corename();
#else
    return "none";
#endif
}

// A product cut by rows (kernels_t.h, FN(rows_part)) starts each part at a
// multiple of this grain. OpenBLAS's kernels take C's rows in blocks (4, 8,
// 12, 16 or 24 at a time, by kernel and dtype) and a cut through a block
// moves the results by rounding; 48 is a multiple of every block of the
// kernels tried. Where a finer grain keeps the bits, it cuts a step's rows
// (64 sentences times a length) into equal halves, where 48 left them up
// to 60/40 (320 rows: 192 and 128). Each grain below was checked bit for
// bit, the product in two parts cut at every multiple of it against the
// whole, every transpose, beta 0 and 1 (tests/test_tensor.c checks the
// kernels it runs on): float64 on these kernels needs 48 (16, 24 and 32 move
// it).
static size_t row_grain(ts_dtype dtype) {
    static const struct {
        const char *core;  // OpenBLAS's name, compared without case
        size_t f32, f64;
    } grains[] = {{"cooperlake", 16, 48}, {"skylakex", 16, 48}};
    const char *core = ts_blas_core_name();
    for (size_t i = 0; i < sizeof grains / sizeof grains[0]; i++)
        if (!strcasecmp(core, grains[i].core)) return dtype == TS_F32 ? grains[i].f32 : grains[i].f64;
    return 48;
}
