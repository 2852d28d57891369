// bf16_products: would bfloat16 products pay for float32 training here?
// (issue 25 item 6; docs/performance.md, "bfloat16 products").
//
// Debian 12's OpenBLAS 0.3.21 is built without BUILD_BFLOAT16 (no sbgemm),
// so this probe brings its own bfloat16 product (bench/bf16_gemm.c): AVX-512
// BF16's vdpbf16ps (two bf16 products summed into each float32 lane),
// float32 accumulation, packed and blocked as a BLAS does. Per shape it
// times, in one process and alternated repeat by repeat:
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
//   cc -O2 -std=c11 -D_GNU_SOURCE -I. bench/bf16_products.c bench/bf16_gemm.c -lopenblas -lm -pthread -o bf16_products
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./bf16_products --threads 1 --rows 360 --clock cpu
//   bash bench/bf16.sh     (both thread counts, with PyTorch's bf16 matmul beside it)
//
// The AVX-512 code sits in functions with a target attribute, so neither
// file needs a -mavx512* flag, and main() checks CPUID before calling any of
// it: on a CPU without AVX-512 BF16 the probe says so and exits 0.
//
// N = rows (batch x target steps), D = model width, V = target vocabulary,
// F = feed-forward width. A product is C (m, n) = op(A) (m, k) op(B) (k, n),
// row-major, op = transpose when ta / tb, as ts_gemm takes it.
#include "bench/bf16_gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

// Element (i, k) of op(X) for X stored row-major with ld columns.
static inline uint32_t at(const uint16_t *x, int trans, int ld, int i, int k) {
    return trans ? x[(size_t)k * ld + i] : x[(size_t)i * ld + k];
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
    bf16_convert(s->a16, s->a, (size_t)s->m * s->k, s->threads);
    bf16_convert(s->b16, s->b, (size_t)s->k * s->n, s->threads);
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
    if (bf16_threads_start(threads)) {
        fprintf(stderr, "bf16_products: cannot start a thread\n");
        return 1;
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
    bf16_threads_stop();
    return bad;
}
