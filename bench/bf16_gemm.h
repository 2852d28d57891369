// The bfloat16 product that bench/bf16_products.c measures (issue 25 item
// 6; docs/performance.md, "bfloat16 products"; not part of the library):
// float32 -> bf16 rounding, the product on AVX-512 BF16 (vdpbf16ps, float32
// accumulation, packed and blocked as a BLAS does), the CPUID check that
// guards it, and the second thread it may run on. The AVX-512 code sits in
// functions with a target attribute, so no -mavx512* flag is needed; on a
// CPU where cpu_has_avx512_bf16() is 0, call nothing else here.
#ifndef TS_BENCH_BF16_GEMM_H
#define TS_BENCH_BF16_GEMM_H

#include <stddef.h>
#include <stdint.h>

// The product's blocking. Micro-kernel MR x NR = 12 x 32: 24 float32
// accumulators (of the 32 zmm registers), per pair of k two vector loads of B
// and 12 broadcasts of A. Packed A: (kc / 2, MR) pairs; packed B:
// (kc / 2, NR, 2): the two k of a pair side by side, as vdpbf16ps wants them.
// Blocking as BLIS: a KC x (the thread's columns) block of B packed once per
// k block, an MC x KC block of A in L2, a KC x NR panel of B in L1.
enum { MR = 12, NR = 32, KC = 256, MC = 240 };

typedef struct {
    int ta, tb, m, n, k;
    const uint16_t *A, *B;  // bf16, (m, k) and (k, n) after op
    float *C;               // (m, n)
    uint32_t *pack_a[2], *pack_b[2];  // per thread: (MC / MR, KC / 2, MR), (k / KC, n / NR, KC / 2, NR) rounded up
} bf16_job;

// 1 when the CPU has AVX-512 F and BF16 and the OS saves the ZMM state.
int cpu_has_avx512_bf16(void);

// Starts the second thread when `threads` is 2 (1: none; no more are
// supported). 0, or -1 when it cannot; bf16_threads_stop ends it.
int bf16_threads_start(int threads);
void bf16_threads_stop(void);

// dst[i] = src[i] rounded to bf16 (to nearest even), i < n, on `threads`.
void bf16_convert(uint16_t *dst, const float *src, size_t n, int threads);
float bf16_to_float(uint16_t h);

// C (m, n) = op(A) op(B), A and B bf16, C float32. k must be even (every
// shape here is). The packing buffers are the caller's, allocated once.
void bf16_gemm(bf16_job *j, int threads);

#endif
