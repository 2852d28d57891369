// bf16_products: would bfloat16 products pay for float32 training here?
// (issue 25 item 6; docs/performance.md, "bfloat16 products").
//
// Debian 12's OpenBLAS 0.3.21 is built without BUILD_BFLOAT16 (no sbgemm),
// so this probe brings its own bfloat16 product: AVX-512 BF16's vdpbf16ps
// (two bf16 products summed into each float32 lane), float32 accumulation,
// packed and blocked as a BLAS does. Per shape it times, in one process and
// alternated repeat by repeat:
//   sgemm    cblas_sgemm (OpenBLAS), float32 in and out: what training runs;
//   convert  float32 -> bf16 of the product's two inputs (round to nearest
//            even, vcvtneps2bf16), as a step with float32 master weights pays;
//   bf16     the bf16 product from bf16 inputs (its packing included),
//            float32 out;
// and prints medians, "bf16 + convert" against sgemm, and the error of the
// bf16 result against sgemm's (the precision a step would lose). It checks
// its own product against a double reference of the same rounded inputs
// and exits 1 if they disagree.
//
//   cc -O2 -std=c11 -D_GNU_SOURCE bench/bf16_products.c -lopenblas -lm -pthread -o bf16_products
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./bf16_products --threads 1 --rows 360 --clock cpu
//   bash bench/bf16.sh     (both thread counts, with PyTorch's bf16 matmul beside it)
//
// The AVX-512 code sits in functions with a target attribute, so the file
// needs no -mavx512* flag and main() checks CPUID before calling any of it:
// on a CPU without AVX-512 BF16 the probe says so and exits 0.
//
// N = rows (batch x target steps), D = model width, V = target vocabulary,
// F = feed-forward width. A product is C (m, n) = op(A) (m, k) op(B) (k, n),
// row-major, op = transpose when ta / tb, as ts_gemm takes it.
#include <cpuid.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <immintrin.h>

// OpenBLAS's own entry points (its cblas.h is not on the include path by default).
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void openblas_set_num_threads(int n);
char *openblas_get_corename(void);

// Wall time, or with --clock cpu the process's CPU time (one thread on a
// busy machine: other jobs delay the process but do not add to its time).
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- CPUID: AVX-512 F and BF16 (leaf 7 subleaf 1 EAX bit 5), and the OS saving ZMM state.
static int cpu_has_avx512_bf16(void) {
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

static void convert(uint16_t *dst, const float *src, size_t n, int threads) {
    convert_job j = {src, dst, n};
    run_parts(convert_part, &j, threads);
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// ---- The bf16 product. Micro-kernel MR x NR = 12 x 32: 24 float32
// accumulators (of the 32 zmm registers), per pair of k two vector loads of B
// and 12 broadcasts of A. Packed A: (kc / 2, MR) pairs; packed B:
// (kc / 2, NR, 2): the two k of a pair side by side, as vdpbf16ps wants them.
// Blocking as BLIS: a KC x (the thread's columns) block of B packed once per
// k block, an MC x KC block of A in L2, a KC x NR panel of B in L1.
enum { MR = 12, NR = 32, KC = 256, MC = 240 };

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

typedef struct {
    int ta, tb, m, n, k;
    const uint16_t *A, *B;  // bf16, (m, k) and (k, n) after op
    float *C;               // (m, n)
    uint32_t *pack_a[2], *pack_b[2];  // per thread: (MC / MR, KC / 2, MR), (k / KC, n / NR, KC / 2, NR) rounded up
} bf16_job;

// Element (i, k) of op(X) for X stored row-major with ld columns.
static inline uint32_t at(const uint16_t *x, int trans, int ld, int i, int k) {
    return trans ? x[(size_t)k * ld + i] : x[(size_t)i * ld + k];
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
static void bf16_gemm(bf16_job *j, int threads) {
    run_parts(bf16_part, j, threads);
}

// ---- The shapes: the GRU model's output projection in a training step and
// the Transformer's big products (one layer's feed-forward and a d x d
// projection). Each is a linear layer y = x W^T, W (out, in), over N rows,
// and its step computes three products: y, dx = dy W, dW = dy^T x.
typedef struct {
    const char *name;
    char out, in;  // 'N', 'D', 'V' or 'F'
} layer;

static const layer layers[] = {
    {"output projection", 'V', 'D'},
    {"feed-forward up", 'F', 'D'},
    {"feed-forward down", 'D', 'F'},
    {"d x d projection", 'D', 'D'},
};
enum { LAYERS = sizeof layers / sizeof layers[0], SHAPES = 3 * LAYERS };

typedef struct {
    const char *group, *name;
    int ta, tb, m, n, k;
} shape;

static int dim(char c, int N, int D, int V, int F) {
    return c == 'N' ? N : c == 'D' ? D : c == 'V' ? V : F;
}

// Product si % 3 (forward, dx, dW) of layer si / 3.
static shape shape_of(int si, int N, int D, int V, int F) {
    const layer *l = &layers[si / 3];
    int out = dim(l->out, N, D, V, F), in = dim(l->in, N, D, V, F);
    switch (si % 3) {
    case 0: return (shape){l->name, "fwd  y = x W^T", 0, 1, N, out, in};
    case 1: return (shape){l->name, "bwd  dx = dy W", 0, 0, N, in, out};
    default: return (shape){l->name, "bwd  dW = dy^T x", 1, 0, out, in, N};
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Calls of f per timed repeat so that one repeat takes >= min_seconds.
static long calibrate(void (*f)(void *), void *arg, double min_seconds) {
    long reps = 1;
    for (;;) {
        double t0 = now();
        for (long r = 0; r < reps; r++) f(arg);
        if (now() - t0 >= min_seconds) return reps;
        reps *= 2;
    }
}

static double time_calls(void (*f)(void *), void *arg, long reps) {
    double t0 = now();
    for (long r = 0; r < reps; r++) f(arg);
    return (now() - t0) / (double)reps;
}

// What is timed, as closures over one shape's buffers.
typedef struct {
    int ta, tb, m, n, k, threads;
    float *a, *b, *c;         // float32 (m, k) (k, n) (m, n), op applied
    uint16_t *a16, *b16;      // the same rounded to bf16
    bf16_job job;
} bench;

static void run_sgemm(void *arg) {
    bench *s = arg;
    cblas_sgemm(ROW_MAJOR, s->ta ? TRANS : NO_TRANS, s->tb ? TRANS : NO_TRANS, s->m, s->n, s->k, 1.0f, s->a,
                s->ta ? s->m : s->k, s->b, s->tb ? s->k : s->n, 0.0f, s->c, s->n);
}

static void run_convert(void *arg) {
    bench *s = arg;
    convert(s->a16, s->a, (size_t)s->m * s->k, s->threads);
    convert(s->b16, s->b, (size_t)s->k * s->n, s->threads);
}

static void run_bf16(void *arg) {
    bench *s = arg;
    bf16_gemm(&s->job, s->threads);
}

static void usage(void) {
    fprintf(stderr, "usage: bf16_products [--threads T] [--rows N] [--d D] [--vocab V] [--ff F] [--repeats R]\n"
                    "                     [--min-seconds S] [--shape I (1-based row, the one timed)]\n"
                    "                     [--clock wall|cpu] [--list shapes]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int threads = 1, N = 360, D = 256, V = 6544, F = 1024, repeats = 7, only = 0, list = 0;
    double min_seconds = 0.02;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) usage();
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--list")) {  // the table for bench/bf16_torch.py: one shape a line
            if (strcmp(v, "shapes")) usage();
            list = 1;
            continue;
        }
        if (!strcmp(k, "--clock")) {
            if (strcmp(v, "cpu") && strcmp(v, "wall")) usage();
            clock_id = strcmp(v, "cpu") ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID;
            continue;
        }
        char *end;
        double x = strtod(v, &end);
        int seconds = !strcmp(k, "--min-seconds");  // the one value that is not a count
        if (*end || !(x > 0) || x > 1e6 || (!seconds && x != (int)x)) {
            fprintf(stderr, "bf16_products: %s: not a positive %s: %s\n", k, seconds ? "number" : "integer", v);
            return 2;
        }
        if (!strcmp(k, "--threads")) threads = (int)x;
        else if (!strcmp(k, "--rows")) N = (int)x;
        else if (!strcmp(k, "--d")) D = (int)x;
        else if (!strcmp(k, "--vocab")) V = (int)x;
        else if (!strcmp(k, "--ff")) F = (int)x;
        else if (!strcmp(k, "--repeats")) repeats = (int)x;
        else if (!strcmp(k, "--min-seconds")) min_seconds = x;
        else if (!strcmp(k, "--shape")) only = (int)x;
        else usage();
    }
    if (threads > 2 || N % 2 || D % 2 || V % 2 || F % 2) {
        fprintf(stderr, "bf16_products: --threads is 1 or 2, and every dimension even (k pairs)\n");
        return 2;
    }
    if (list) {
        for (int si = 0; si < SHAPES; si++) {
            shape sh = shape_of(si, N, D, V, F);
            printf("%s\t%s\t%d\t%d\t%d\t%d\t%d\n", sh.group, sh.name, sh.ta, sh.tb, sh.m, sh.n, sh.k);
        }
        return 0;
    }
    if (!cpu_has_avx512_bf16()) {
        printf("bf16_products: this CPU (or OS) has no AVX-512 BF16: nothing to measure\n");
        return 0;
    }
    openblas_set_num_threads(threads);
    pool.parts = threads;
    pthread_t tid;
    if (threads == 2) {
        if (pthread_barrier_init(&pool.start, NULL, 2) || pthread_barrier_init(&pool.end, NULL, 2) ||
            pthread_barrier_init(&pool.packed, NULL, 2) ||
            pthread_create(&tid, NULL, worker, NULL)) {
            fprintf(stderr, "bf16_products: cannot start a thread\n");
            return 1;
        }
    }
    printf("# bf16_products: N %d, D %d, V %d, F %d; %d thread%s; OpenBLAS core %s; medians of %d repeats"
           " (each >= %.0f ms), alternated; %s time\n",
           N, D, V, F, threads, threads > 1 ? "s" : "", openblas_get_corename(), repeats, 1e3 * min_seconds,
           clock_id == CLOCK_MONOTONIC ? "wall" : "CPU");
    printf("%-18s %-20s %5s %5s %5s | %8s %8s %8s %8s | %6s %6s | %9s %9s\n", "group", "product", "m", "n", "k",
           "sgemm", "convert", "bf16", "bf16+cv", "ratio", "ratio0", "rel.err", "ref.err");
    printf("%-18s %-20s %5s %5s %5s | %8s %8s %8s %8s | %6s %6s | %9s %9s\n", "", "", "", "", "", "ms", "ms", "ms",
           "ms", "sg/all", "sg/bf16", "vs sgemm", "vs f64");
    double group_t[3] = {0};  // sgemm, bf16 + convert, bf16 alone
    int bad = 0;
    for (int si = 0; si < SHAPES; si++) {
        shape shape_si = shape_of(si, N, D, V, F);
        const shape *sh = &shape_si;
        if (only && si + 1 != only) continue;
        bench s = {.ta = sh->ta, .tb = sh->tb, .m = sh->m, .n = sh->n, .k = sh->k, .threads = threads};
        size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
        s.a = malloc(na * 4), s.b = malloc(nb * 4), s.c = malloc(nc * 4);
        s.a16 = malloc(na * 2), s.b16 = malloc(nb * 2);
        float *c16 = malloc(nc * 4);
        int cols = (s.n + NR - 1) / NR * NR + NR;
        s.job = (bf16_job){s.ta, s.tb, s.m, s.n, s.k, s.a16, s.b16, c16, {0}, {0}};
        int ok = s.a && s.b && s.c && s.a16 && s.b16 && c16;
        for (int t = 0; t < threads; t++) {
            s.job.pack_a[t] = aligned_alloc(64, (size_t)(MC / MR + 1) * MR * (KC / 2) * 4);
            s.job.pack_b[t] = aligned_alloc(64, (size_t)cols * ((s.k + KC - 1) / KC) * (KC / 2) * 4);
            ok = ok && s.job.pack_a[t] && s.job.pack_b[t];
        }
        if (!ok) {
            fprintf(stderr, "bf16_products: out of memory\n");
            return 1;
        }
        // Values of a trained layer's size, deterministic: uniform in (-0.5, 0.5).
        uint64_t x = 88172645463325252ull + (uint64_t)si;
        for (size_t i = 0; i < na + nb; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            float v = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5);
            if (i < na) s.a[i] = v;
            else s.b[i - na] = v;
        }
        run_convert(&s);
        run_sgemm(&s);
        run_bf16(&s);
        // Checks: the bf16 product against a double product of the same
        // rounded inputs (sampled entries; float32 accumulation allows ~1e-6
        // of the entry's magnitude sum), and the error bf16 costs against sgemm.
        double ref_err = 0, num = 0, den = 0;
        int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
        for (size_t e = 0; e < nc; e += 97) {
            int i = (int)(e / (size_t)s.n), q = (int)(e % (size_t)s.n);
            double sum = 0, mag = 0;
            for (int p = 0; p < s.k; p++) {
                double t = (double)bf16_to_float((uint16_t)at(s.a16, s.ta, lda, i, p)) *
                           bf16_to_float((uint16_t)at(s.b16, s.tb, ldb, p, q));
                sum += t, mag += fabs(t);
            }
            double err = fabs(c16[e] - sum) / mag;
            if (err > ref_err) ref_err = err;
            num += (c16[e] - s.c[e]) * (double)(c16[e] - s.c[e]), den += (double)s.c[e] * s.c[e];
        }
        if (ref_err > 1e-5) {
            fprintf(stderr, "bf16_products: %s: the bf16 product disagrees with its double reference (%.2g)\n",
                    sh->name, ref_err);
            bad = 1;
        }
        long r_sg = calibrate(run_sgemm, &s, min_seconds), r_cv = calibrate(run_convert, &s, min_seconds),
             r_bf = calibrate(run_bf16, &s, min_seconds);
        double t_sg[64], t_cv[64], t_bf[64];
        int reps = repeats < 64 ? repeats : 64;
        for (int r = 0; r < reps; r++) {
            t_sg[r] = time_calls(run_sgemm, &s, r_sg);
            t_cv[r] = time_calls(run_convert, &s, r_cv);
            t_bf[r] = time_calls(run_bf16, &s, r_bf);
        }
        double sg = median(t_sg, reps), cv = median(t_cv, reps), bf = median(t_bf, reps);
        printf("%-18s %-20s %5d %5d %5d | %8.3f %8.3f %8.3f %8.3f | %6.2f %6.2f | %9.2e %9.2e\n", sh->group,
               sh->name, s.m, s.n, s.k, 1e3 * sg, 1e3 * cv, 1e3 * bf, 1e3 * (bf + cv), sg / (bf + cv), sg / bf,
               sqrt(num / den), ref_err);
        group_t[0] += sg, group_t[1] += bf + cv, group_t[2] += bf;
        if (si % 3 == 2 && !only) {  // a layer's three
            printf("%-18s %-20s %5s %5s %5s | %8.3f %8s %8.3f %8.3f | %6.2f %6.2f |\n", sh->group, "(the three)", "",
                   "", "", 1e3 * group_t[0], "", 1e3 * group_t[2], 1e3 * group_t[1], group_t[0] / group_t[1],
                   group_t[0] / group_t[2]);
            for (int t = 0; t < 3; t++) group_t[t] = 0;
        }
        for (int t = 0; t < threads; t++) free(s.job.pack_a[t]), free(s.job.pack_b[t]);
        free(s.a), free(s.b), free(s.c), free(s.a16), free(s.b16), free(c16);
    }
    if (threads == 2) {
        pool.quit = 1;
        pthread_barrier_wait(&pool.start);
        pthread_join(tid, NULL);
    }
    return bad;
}
