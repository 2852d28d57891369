// products: which library multiplies a training step's float32 matrices
// fastest here? (issue 46 point 3; docs/performance.md, "OpenBLAS or oneDNN").
//
// Times each product class of a step, its forward product and the two
// backward ones, under OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm (the
// kernels PyTorch's CPU matmul uses), alternated repeat by repeat in one
// process, and prints medians, GFLOP/s and oneDNN's time over OpenBLAS's. It
// also checks the two results agree to float32 rounding (exit 1 if not).
// Attention's per-head products are timed as the loop of tiny calls a step
// makes. The thread counts come from the environment, so both libraries get
// the same: bench/products.sh runs it at OPENBLAS_NUM_THREADS =
// OMP_NUM_THREADS = 1 and 2.
//
//   cc -O2 -std=c11 -D_GNU_SOURCE bench/products.c -lopenblas -ldnnl -lm -o products
//   OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 ./products [--repeats 21] [--vocab 8000]
//   OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 ./products --clock cpu   # a busy machine
//
// A product is C (m, n) = op(A) (m, k) op(B) (k, n), row-major, op = the
// transpose when ta / tb, as ts_gemm takes it. A linear layer y = x W^T
// (x: (N, in), W: (out, in)) runs (N, out, in, tb) forward, (N, in, out)
// for dx and (out, in, N, ta) for dW.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

typedef struct {
    const char *name;
    int m, n, k, ta, tb;
    int calls;  // products of this shape in one timing (attention's heads: many tiny ones)
} shape;

// Wall time, or with --clock cpu the process's CPU time (at one thread on a
// busy machine: other jobs delay the process but do not add to its time).
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what) {
    fprintf(stderr, "products: %s\n", what);
    exit(2);
}

// C = op(A) op(B) by one library, s->calls times over consecutive blocks.
static void run(int dnnl, const shape *s, const float *a, const float *b, float *c) {
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    size_t sa = (size_t)s->m * s->k, sb = (size_t)s->k * s->n, sc = (size_t)s->m * s->n;
    for (int i = 0; i < s->calls; i++) {
        if (dnnl) {
            if (dnnl_sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, 1.0f, a + i * sa, lda, b + i * sb,
                           ldb, 0.0f, c + i * sc, s->n) != dnnl_success)
                die("dnnl_sgemm failed");
        } else {
            cblas_sgemm(ROW_MAJOR, s->ta ? TRANS : NO_TRANS, s->tb ? TRANS : NO_TRANS, s->m, s->n, s->k, 1.0f,
                        a + i * sa, lda, b + i * sb, ldb, 0.0f, c + i * sc, s->n);
        }
    }
}

int main(int argc, char **argv) {
    int repeats = 21, vocab = 8000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocab = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--clock") && i + 1 < argc && !strcmp(argv[i + 1], "cpu")) clock_id = CLOCK_PROCESS_CPUTIME_ID, i++;
        else {
            fprintf(stderr, "usage: products [--repeats N] [--vocab V] [--clock cpu]\n");
            return 2;
        }
    }
    if (repeats < 3 || vocab < 1) die("--repeats at least 3, --vocab at least 1");
    // GRU 256/256/64 (emb 256, hidden 256, 64 sentences of ~10 target
    // words: 640 rows); Transformer d256 4 heads ff1024 (355 rows a batch,
    // 32 sentences of ~11 tokens).
    const shape shapes[] = {
        {"gru recurrent h W_hh^T", 64, 768, 256, 0, 1, 1},
        {"gru recurrent dh", 64, 256, 768, 0, 0, 1},
        {"gru recurrent dW_hh", 768, 256, 64, 1, 0, 1},
        {"gru input x W_ih^T", 640, 768, 256, 0, 1, 1},
        {"gru input dx", 640, 256, 768, 0, 0, 1},
        {"gru input dW_ih", 768, 256, 640, 1, 0, 1},
        {"output x W^T", 640, vocab, 256, 0, 1, 1},
        {"output dx", 640, 256, vocab, 0, 0, 1},
        {"output dW", vocab, 256, 640, 1, 0, 1},
        {"tf projection 256", 355, 256, 256, 0, 1, 1},
        {"tf projection dx", 355, 256, 256, 0, 0, 1},
        {"tf projection dW", 256, 256, 355, 1, 0, 1},
        {"tf q|k|v 768", 355, 768, 256, 0, 1, 1},
        {"tf ff up 1024", 355, 1024, 256, 0, 1, 1},
        {"tf ff up dx", 355, 256, 1024, 0, 0, 1},
        {"tf ff up dW", 1024, 256, 355, 1, 0, 1},
        {"tf ff down 256", 355, 256, 1024, 0, 1, 1},
        {"tf ff down dW", 256, 1024, 355, 1, 0, 1},
        {"tf output x W^T", 355, vocab, 256, 0, 1, 1},
        {"tf output dW", vocab, 256, 355, 1, 0, 1},
        {"attn q k^T x128 heads", 11, 11, 64, 0, 1, 128},
        {"attn p v x128 heads", 11, 64, 11, 0, 0, 128},
    };
    int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    printf("products: OpenBLAS %s, %d threads; oneDNN %d.%d.%d; %d repeats, medians of %s time\n",
           openblas_get_corename(), openblas_get_num_threads(), dnnl_version()->major, dnnl_version()->minor,
           dnnl_version()->patch, repeats, clock_id == CLOCK_MONOTONIC ? "wall" : "CPU");
    printf("%-24s %16s %10s %10s %8s %8s %9s\n", "product", "m x n x k", "OpenBLAS", "oneDNN", "GF/s ob", "GF/s dn",
           "dn / ob");
    int bad = 0;
    double *t[2] = {malloc(sizeof(double) * repeats), malloc(sizeof(double) * repeats)};
    for (int si = 0; si < n_shapes; si++) {
        const shape *s = &shapes[si];
        size_t na = (size_t)s->m * s->k * s->calls, nb = (size_t)s->k * s->n * s->calls, nc = (size_t)s->m * s->n * s->calls;
        float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c[2] = {malloc(nc * sizeof(float)),
                                                                                  malloc(nc * sizeof(float))};
        if (!a || !b || !c[0] || !c[1] || !t[0] || !t[1]) die("out of memory");
        srand(7 + si);
        for (size_t i = 0; i < na; i++) a[i] = (float)rand() / RAND_MAX - 0.5f;
        for (size_t i = 0; i < nb; i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
        for (int lib = 0; lib < 2; lib++) run(lib, s, a, b, c[lib]);  // warm: packing buffers, threads
        for (int r = 0; r < repeats; r++)
            for (int j = 0; j < 2; j++) {
                int lib = (r + j) % 2;  // alternated: neither always runs first
                double t0 = now();
                run(lib, s, a, b, c[lib]);
                t[lib][r] = now() - t0;
            }
        // Agreement: |diff| within float32 rounding of a k-term sum of
        // products of values in [-0.5, 0.5].
        double worst = 0;
        for (size_t i = 0; i < nc; i++) worst = fmax(worst, fabs((double)c[0][i] - c[1][i]));
        double allowed = 4.0 * s->k * 0x1p-24 * 0.25;
        if (!(worst <= allowed)) {
            printf("  %s: OpenBLAS and oneDNN differ by %.3g (allowed %.3g)\n", s->name, worst, allowed);
            bad = 1;
        }
        qsort(t[0], repeats, sizeof(double), by_value);
        qsort(t[1], repeats, sizeof(double), by_value);
        double ob = t[0][repeats / 2], dn = t[1][repeats / 2];
        double flops = 2.0 * s->m * s->n * s->k * s->calls;
        char dims[32];
        snprintf(dims, sizeof dims, "%dx%dx%d%s", s->m, s->n, s->k, s->calls > 1 ? "*" : "");
        printf("%-24s %16s %8.1fus %8.1fus %8.1f %8.1f %8.2fx\n", s->name, dims, 1e6 * ob, 1e6 * dn, flops / ob * 1e-9,
               flops / dn * 1e-9, dn / ob);
        free(a), free(b), free(c[0]), free(c[1]);
    }
    free(t[0]), free(t[1]);
    return bad;
}
