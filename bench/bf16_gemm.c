// The bfloat16 product (bench/bf16_gemm.h) that bench/bf16_products.c
// times against OpenBLAS's sgemm.
#include "bench/bf16_gemm.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <immintrin.h>

// ---- CPUID: AVX-512 F and BF16 (leaf 7 subleaf 1 EAX bit 5), and the OS saving ZMM state.
int cpu_has_avx512_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  // OSXSAVE
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6) != 0xe6) return 0;  // XMM, YMM, opmask, ZMM state enabled by the OS
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 16))) return 0;  // AVX512F
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;  // AVX512_BF16
}

// ---- Two threads that stay up: the caller is part 0, a worker part 1;
// a job is split by part number. Two barriers per job (start, end).
typedef void (*job_fn)(void *arg, int part, int parts);
static struct {
    int parts;
    pthread_barrier_t start, end, packed;  // packed: inside a job, the shared operand is ready
    job_fn fn;
    void *arg;
    int quit;
} pool;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_barrier_wait(&pool.start);
        if (pool.quit) return NULL;
        pool.fn(pool.arg, 1, pool.parts);
        pthread_barrier_wait(&pool.end);
    }
}

static void run_parts(job_fn fn, void *arg, int parts) {
    if (parts == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool.fn = fn, pool.arg = arg, pool.parts = parts;
    pthread_barrier_wait(&pool.start);
    fn(arg, 0, parts);
    pthread_barrier_wait(&pool.end);
}

static pthread_t worker_thread;
static int worker_started;

int bf16_threads_start(int threads) {
    pool.parts = threads;
    if (threads == 2) {
        if (pthread_barrier_init(&pool.start, NULL, 2) || pthread_barrier_init(&pool.end, NULL, 2) ||
            pthread_barrier_init(&pool.packed, NULL, 2) ||
            pthread_create(&worker_thread, NULL, worker, NULL))
            return -1;
        worker_started = 1;
    }
    return 0;
}

void bf16_threads_stop(void) {
    if (worker_started) {
        pool.quit = 1;
        pthread_barrier_wait(&pool.start);
        pthread_join(worker_thread, NULL);
        worker_started = 0;
    }
}

// ---- float32 -> bf16, round to nearest even (what vcvtneps2bf16 does; it also
// flushes subnormals, which training values here never are).
typedef struct {
    const float *src;
    uint16_t *dst;
    size_t n;
} convert_job;

__attribute__((target("avx512f,avx512bf16,avx512vl"))) static void convert_part(void *arg, int part, int parts) {
    const convert_job *j = arg;
    size_t per = (j->n / (size_t)parts + 31) & ~(size_t)31, lo = per * (size_t)part;
    size_t hi = lo + per < j->n ? lo + per : j->n, i = lo;
    for (; i + 32 <= hi; i += 32) {
        __m512bh two = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(j->src + i + 16), _mm512_loadu_ps(j->src + i));
        _mm512_storeu_si512(j->dst + i, (__m512i)two);
    }
    for (; i < hi; i++) {  // the tail, by the same rounding in integers
        uint32_t u;
        memcpy(&u, j->src + i, 4);
        j->dst[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

void bf16_convert(uint16_t *dst, const float *src, size_t n, int threads) {
    convert_job j = {src, dst, n};
    run_parts(convert_part, &j, threads);
}

float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// ---- The bf16 product: blocking, MR, NR, KC and MC, in bench/bf16_gemm.h.
__attribute__((target("avx512f,avx512bf16"))) static void kernel(int kp, const uint32_t *a, const uint32_t *b,
                                                                   float *c, int ldc, int accumulate) {
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * NR), b1 = (__m512bh)_mm512_loadu_si512(b + p * NR + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[p * MR + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (accumulate) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(c + i * ldc));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(c + i * ldc + 16));
        }
        _mm512_storeu_ps(c + i * ldc, acc[i][0]);
        _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
    }
}

// Packing moves pairs (k, k + 1) of bf16 as 32-bit words. Where k runs along
// the source's rows a pair already is one word and packing is a transpose of
// words (16 x 16 blocks in registers); where k runs down the columns the two
// rows are interleaved (vpermt2w). Either way the panels come out zero-padded.
#define AVX512 __attribute__((target("avx512f,avx512bw")))

// r[q] <- column q of the 16 x 16 block of words r (row i = r[i]).
AVX512 static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]), r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]), r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)
        for (int q = 0; q < 4; q++)
            t[i + q] = _mm512_shuffle_i32x4(r[i + q], r[i + q + 4], 0x88), t[i + q + 4] = _mm512_shuffle_i32x4(r[i + q], r[i + q + 4], 0xdd);
    for (int q = 0; q < 8; q++)
        r[q] = _mm512_shuffle_i32x4(t[q], t[q + 8], 0x88), r[q + 8] = _mm512_shuffle_i32x4(t[q], t[q + 8], 0xdd);
}

// dst[p * stride + c] = src[c][p] for c < rows (< 16: zero), p < kp; the
// first `width` words of each dst row are written (12 or 16).
AVX512 static void transpose_words(uint32_t *dst, int stride, int width, const uint32_t *const src[16], int rows, int kp) {
    __mmask16 keep = (__mmask16)((1u << width) - 1);
    int p = 0;
    for (; p + 16 <= kp; p += 16) {
        __m512i r[16];
        for (int c = 0; c < 16; c++) r[c] = c < rows ? _mm512_loadu_si512(src[c] + p) : _mm512_setzero_si512();
        transpose16(r);
        for (int q = 0; q < 16; q++) _mm512_mask_storeu_epi32(dst + (size_t)(p + q) * stride, keep, r[q]);
    }
    for (; p < kp; p++)
        for (int c = 0; c < width; c++) dst[(size_t)p * stride + c] = c < rows ? src[c][p] : 0;
}

// dst[p * stride + c] = r0[c] | r1[c] << 16 for c < cols (<= 32; zero up to width) where
// r0, r1 are the source rows k0 + 2p, k0 + 2p + 1.
AVX512 static void interleave_rows(uint32_t *dst, int stride, int width, const uint16_t *row, size_t ld, int cols, int kp) {
    static const short lo[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    __m512i idx_lo = _mm512_loadu_si512(lo), idx_hi = _mm512_add_epi16(idx_lo, _mm512_set1_epi16(16));
    __mmask32 in = (__mmask32)(cols >= 32 ? ~0u : (1u << cols) - 1);
    __mmask16 out_hi = (__mmask16)((1u << (width - 16)) - 1);
    for (int p = 0; p < kp; p++, row += 2 * ld, dst += stride) {
        __m512i r0 = _mm512_maskz_loadu_epi16(in, row), r1 = _mm512_maskz_loadu_epi16(in, row + ld);
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(r0, idx_lo, r1));
        _mm512_mask_storeu_epi32(dst + 16, out_hi, _mm512_permutex2var_epi16(r0, idx_hi, r1));
    }
}

// Pack rows [i0, i0 + mc) x k in [k0, k0 + kc) of op(A): panels of MR rows,
// each (kc / 2, MR) pairs; rows past mc are zero.
static void pack_a(uint32_t *dst, const bf16_job *j, int i0, int mc, int k0, int kc) {
    int lda = j->ta ? j->m : j->k, kp = kc / 2;
    for (int ir = 0; ir < mc; ir += MR, dst += (size_t)kp * MR) {
        int rows = mc - ir < MR ? mc - ir : MR;
        if (j->ta) {  // A stored (k, m): rows k, k + 1 interleaved, MR of their columns
            interleave_rows(dst, MR, MR, j->A + (size_t)k0 * lda + i0 + ir, (size_t)lda, rows, kp);
        } else {  // A stored (m, k): a pair is a word
            const uint32_t *src[16];
            for (int i = 0; i < rows; i++) src[i] = (const uint32_t *)(j->A + (size_t)(i0 + ir + i) * lda + k0);
            transpose_words(dst, MR, MR, src, rows, kp);
        }
    }
}

// Pack columns [j0, j1) x k in [k0, k0 + kc) of op(B): panels of NR columns,
// each (kc / 2, NR) pairs; columns past j1 are zero.
static void pack_b(uint32_t *dst, const bf16_job *j, int j0, int j1, int k0, int kc) {
    int ldb = j->tb ? j->k : j->n, kp = kc / 2;
    for (int jr = j0; jr < j1; jr += NR, dst += (size_t)kp * NR) {
        int cols = j1 - jr < NR ? j1 - jr : NR;
        if (j->tb) {  // B = W^T with W stored (n, k): a pair is a word; two halves of 16 columns
            for (int h = 0; h < NR; h += 16) {
                const uint32_t *src[16];
                int rows = cols - h < 0 ? 0 : cols - h < 16 ? cols - h : 16;
                for (int c = 0; c < rows; c++) src[c] = (const uint32_t *)(j->B + (size_t)(jr + h + c) * ldb + k0);
                transpose_words(dst + h, NR, 16, src, rows, kp);
            }
        } else {  // B stored (k, n): rows k, k + 1 interleaved
            interleave_rows(dst, NR, NR, j->B + (size_t)k0 * ldb + jr, (size_t)ldb, cols, kp);
        }
    }
}

// C[i0 .. i0 + mc, c0 .. c1) (+)= the packed A block times the packed B
// block, kp pairs of k deep.
static void block(const bf16_job *j, const uint32_t *pa, const uint32_t *pb, int i0, int mc, int c0, int c1, int kp,
                  int accumulate) {
    float tile[MR * NR];
    for (int jr = c0; jr < c1; jr += NR) {
        const uint32_t *bp = pb + (size_t)(jr - c0) / NR * kp * NR;
        for (int ir = 0; ir < mc; ir += MR) {
            const uint32_t *ap = pa + (size_t)ir / MR * kp * MR;
            int rows = mc - ir < MR ? mc - ir : MR, cols = c1 - jr < NR ? c1 - jr : NR;
            float *c = j->C + (size_t)(i0 + ir) * j->n + jr;
            if (rows == MR && cols == NR) {
                kernel(kp, ap, bp, c, j->n, accumulate);
                continue;
            }
            kernel(kp, ap, bp, tile, NR, 0);  // an edge: through a whole tile
            for (int i = 0; i < rows; i++)
                for (int q = 0; q < cols; q++)
                    c[(size_t)i * j->n + q] = (accumulate ? c[(size_t)i * j->n + q] : 0) + tile[i * NR + q];
        }
    }
}

// One thread's share: the larger of m and n is split. Split by rows, every
// thread needs all of B: the threads pack its k blocks in turn into one
// buffer and meet before computing. Split by columns, each packs its own
// columns of B and all of A (the smaller operand then: n > m).
static void bf16_part(void *arg, int part, int parts) {
    bf16_job *j = arg;
    int split_rows = j->m > j->n;
    int total = split_rows ? j->m : j->n, unit = split_rows ? MR : NR;
    int per = ((total + parts - 1) / parts + unit - 1) / unit * unit;
    int lo = per * part, hi = lo + per < total ? lo + per : total;
    int r0 = split_rows ? lo : 0, r1 = split_rows ? hi : j->m;
    int c0 = split_rows ? 0 : lo, c1 = split_rows ? j->n : hi;
    uint32_t *pa = j->pack_a[part], *pb = j->pack_b[split_rows ? 0 : part];
    size_t block_b = (size_t)(KC / 2) * ((c1 - c0 + NR - 1) / NR * NR);  // words of one k block of packed B
    // B's k blocks packed first. Then either each block of rows through
    // every k block (its C block, MC x n, stays in cache while it
    // accumulates) or each k block through every row block (packed B's
    // block stays in cache): whichever streams fewer bytes from memory, C
    // (m x n floats, re-read per k block) or packed B (k x n bf16, re-read
    // per row block).
    int i_blocks = (r1 - r0 + MC - 1) / MC, k_blocks = (j->k + KC - 1) / KC;
    for (int kb = split_rows ? part : 0; kb < k_blocks; kb += split_rows ? parts : 1)
        pack_b(pb + kb * block_b, j, c0, c1, kb * KC, j->k - kb * KC < KC ? j->k - kb * KC : KC);
    if (split_rows && parts > 1) pthread_barrier_wait(&pool.packed);
    int rows_outer = j->k < 2 * j->m;
    for (int outer = 0; outer < (rows_outer ? i_blocks : k_blocks); outer++)
        for (int inner = 0; inner < (rows_outer ? k_blocks : i_blocks); inner++) {
            int i0 = r0 + MC * (rows_outer ? outer : inner), k0 = KC * (rows_outer ? inner : outer);
            int mc = r1 - i0 < MC ? r1 - i0 : MC, kc = j->k - k0 < KC ? j->k - k0 : KC;
            pack_a(pa, j, i0, mc, k0, kc);
            block(j, pa, pb + k0 / KC * block_b, i0, mc, c0, c1, kc / 2, k0 > 0);
        }
}

// C (m, n) = op(A) op(B), A and B bf16, C float32. k must be even (every
// shape here is). The packing buffers are the caller's, allocated once.
void bf16_gemm(bf16_job *j, int threads) {
    run_parts(bf16_part, j, threads);
}
