// profile_step: where one training step of tinyseq spends its time.
//
// Trains exactly as `tinyseq train` does (same split, vocabularies, bucketed
// batches, Adam, clipping) and splits each step into phases: zeroing the
// gradients, the forward pass, the backward pass (timed per op of the tape),
// clipping and the optimizer. It also counts the matrix-product FLOPs that
// were executed (forward and backward, from the tape) and times greedy
// translation of single sentences. A target of the build, made only when
// asked for (bench/run.sh does):
//
//   cmake --build BUILD --target profile_step
//   BUILD/bench/profile_step --corpus ../shared/data/tatoeba-eng-fra.tsv
//      --max-len 10 --emb 256 --hidden 256 --batch 64 --attn bahdanau --steps 40 --threads 2
//   BUILD/bench/profile_step --arch transformer --hidden 256 --heads 4 --layers 3 --ff 1024 --dtype float32
//      --threads 1 --clock cpu    (the Transformer; CPU time, for a busy machine)
//
// B = batch, T = target steps, H = hidden, V = target vocabulary.
#include "autograd/graph.h"
#include "autograd/ops_internal.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/vocab.h"
#include "models/fields.h"
#include "models/search.h"
#include "models/seq2seq.h"
#include "tensor/kernels.h"
#include "tensor/threads.h"
#include "cli/blas_rerun.h"
#include "tensor/blas_setup.h"
#include "ckpt/ckpt.h"
#include "infer/load.h"
#include "train/optim.h"

#include <gsl/gsl_cblas.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Wall time, or with --clock cpu the process's CPU time: with --threads 1 the
// figure a busy machine does not distort (other jobs only delay the process).
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "profile_step: %s: %s\n", what, ts_last_error());
    exit(1);
}

// Matrix-product FLOPs of node y's forward (fwd) and backward (bwd): 2 m n k
// per product; a backward does one product per input that needs a gradient.
static void node_flops(const ts_tensor *y, double *fwd, double *bwd) {
    *fwd = *bwd = 0;
    const ts_tensor *a = y->src[0], *b = y->src[1];
    double m, n, k;
    switch (y->op) {
    case TS_OP_MATMUL:
        m = y->shape[0], n = y->shape[1], k = y->iarg[0] ? a->shape[0] : a->shape[1];
        break;
    case TS_OP_LINEAR:  // x (N, k) W_c^T (k, out)
        m = y->shape[0], n = y->shape[1], k = a->shape[1];
        break;
    case TS_OP_LINEAR_CROSS_ENTROPY:  // x (N, H) W^T (H, V)
        m = a->shape[0], n = b->shape[0], k = a->shape[1];
        break;
    case TS_OP_GRU_CELL:  // h (B, H) W_hh^T (H, 3H); inputs h and W_hh
        m = y->shape[0], n = 3.0 * y->shape[1], k = y->shape[1];
        a = y->src[1], b = y->src[2];
        break;
    case TS_OP_MHA: {  // q (B, T, D), keys and values (B, S, D): q k^T and w v, 2 B T S D each
        double one = 2.0 * y->shape[0] * y->shape[1] * y->src[1]->shape[1] * y->shape[2];
        int dq = y->src[0]->requires_grad, dk = y->src[1]->requires_grad, dv = y->src[2]->requires_grad;
        *fwd = 2 * one;
        *bwd = one * (dv + (dq || dk) + dq + dk);  // w^T dy; dy v^T; dE k; dE^T q
        return;
    }
    default:
        return;
    }
    *fwd = 2 * m * n * k;
    *bwd = *fwd * ((a->requires_grad ? 1 : 0) + (b->requires_grad ? 1 : 0));
}

typedef struct {
    double seconds;
    long calls;
} op_time;

// ts_backward with a stopwatch per op.
static int timed_backward(ts_ctx *ctx, ts_tensor *loss, op_time *per_op, double *flops) {
    if (!ts_grad(ctx, loss)) return ctx->status;
    if (loss->dtype == TS_F32) loss->grad_f32[0] += 1.0f;  // as ts_backward seeds it
    else loss->grad[0] += 1.0;
    for (ts_tensor *node = ctx->tape; node; node = node->tape_prev) {
        double f, b;
        node_flops(node, &f, &b);
        flops[0] += f;
        if (!node->grad_raw) continue;
        flops[1] += b;
        double t0 = now();
        int rc = ts_op_backwards[node->op].of[node->dtype](ctx, node);
        per_op[node->op].seconds += now() - t0;
        per_op[node->op].calls++;
        if (rc) return rc;
    }
    return TS_OK;
}

// One product of an (m, k) by (k, n) shape, in double or single precision.
typedef struct {
    int ta, tb, m, n, k;
    double *A, *B, *C;   // (m, k) (k, n) (m, n): float64, ts_gemm
    float *a, *b, *c;    // the same in float32, cblas_sgemm
} product;

static void run_product(const product *p) {
    if (p->A) {
        ts_gemm(p->ta, p->tb, p->m, p->n, p->k, 1.0, p->A, p->B, 0.0, p->C);
        return;
    }
    int lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, p->m, p->n, p->k,
                1.0f, p->a, lda, p->b, ldb, 0.0f, p->c, p->n);
}

// Best-of-3 GFLOP/s of p, ~seconds in all (the repetitions calibrated first).
static double product_rate(const product *p, double seconds) {
    run_product(p);
    long reps = 1;
    for (;;) {
        double t0 = now();
        for (long r = 0; r < reps; r++) run_product(p);
        double dt = now() - t0;
        if (dt > 0.02) {
            reps = (long)((double)reps * seconds / 3.0 / dt) + 1;
            break;
        }
        reps *= 2;
    }
    double best = 0;
    for (int trial = 0; trial < 3; trial++) {
        double t0 = now();
        for (long r = 0; r < reps; r++) run_product(p);
        double g = 2.0 * p->m * p->n * p->k * (double)reps / (now() - t0) / 1e9;
        if (g > best) best = g;
    }
    return best;
}

// GFLOP/s of ts_gemm (gsl_blas_dgemm) on one shape.
static double dgemm_rate(int ta, int tb, int m, int n, int k, double seconds) {
    product p = {ta, tb, m, n, k, malloc((size_t)m * k * sizeof(double)), malloc((size_t)k * n * sizeof(double)),
                 calloc((size_t)m * n, sizeof(double)), NULL, NULL, NULL};
    if (!p.A || !p.B || !p.C) die("dgemm buffers");
    for (size_t i = 0; i < (size_t)m * k; i++) p.A[i] = (double)(i % 17) / 17.0 - 0.5;
    for (size_t i = 0; i < (size_t)k * n; i++) p.B[i] = (double)(i % 13) / 13.0 - 0.5;
    double best = product_rate(&p, seconds);
    free(p.A);
    free(p.B);
    free(p.C);
    return best;
}

// The same in float32 (cblas_sgemm, OpenBLAS's, on `threads` threads), for
// the float64 ceiling against PyTorch float32: the rate a float32 tinyseq
// could at most reach. The thread count is set here: OpenBLAS's is the
// process's, and the steps before leave it as their last product wanted
// (the Transformer's at 1: its large products run as tinyseq's parts, so
// this probe once ran on one thread and read half the rate).
static double sgemm_rate(int ta, int tb, int m, int n, int k, double seconds, int threads) {
    if (threads > 0) ts_threads_use(threads);  // 0: never changed, OpenBLAS's own count
    product p = {ta, tb, m, n, k, NULL, NULL, NULL, malloc((size_t)m * k * sizeof(float)),
                 malloc((size_t)k * n * sizeof(float)), calloc((size_t)m * n, sizeof(float))};
    if (!p.a || !p.b || !p.c) die("sgemm buffers");
    for (size_t i = 0; i < (size_t)m * k; i++) p.a[i] = (float)(i % 17) / 17.0f - 0.5f;
    for (size_t i = 0; i < (size_t)k * n; i++) p.b[i] = (float)(i % 13) / 13.0f - 0.5f;
    double best = product_rate(&p, seconds);
    free(p.a);
    free(p.b);
    free(p.c);
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *corpus_path = "../shared/data/tatoeba-eng-fra.tsv", *attn = "bahdanau", *decoder = NULL;
    const char *arch = "gru", *dtype = "float64";
    int max_len = 10, emb = 256, hidden = 256, batch = 64, steps = 40, warmup = 3, threads = 0, greedy = 200;
    int heads = 0, layers = 0, ff = 0;  // the Transformer's (0: its defaults; d_model = --hidden)
    int greedy_batch = 0, greedy_alone = -1;  // -1: as many alone as --greedy
    const char *save_model = NULL, *save_dev = NULL;
    double lr = 1e-3, clip = 5.0, dgemm_seconds = 0;
    ts_cli_blas_init(argc, argv);  // the kernels and thread timeout tinyseq runs with
    printf("kernels: %s\n", ts_blas_kernels());
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--corpus")) corpus_path = v;
        else if (!strcmp(k, "--attn")) attn = v;
        else if (!strcmp(k, "--decoder")) decoder = v;
        else if (!strcmp(k, "--arch")) arch = v;
        else if (!strcmp(k, "--dtype")) dtype = v;
        else if (!strcmp(k, "--heads")) heads = atoi(v);
        else if (!strcmp(k, "--layers")) layers = atoi(v);
        else if (!strcmp(k, "--ff")) ff = atoi(v);
        else if (!strcmp(k, "--max-len")) max_len = atoi(v);
        else if (!strcmp(k, "--emb")) emb = atoi(v);
        else if (!strcmp(k, "--hidden")) hidden = atoi(v);
        else if (!strcmp(k, "--batch")) batch = atoi(v);
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--warmup")) warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else if (!strcmp(k, "--greedy")) greedy = atoi(v);
        else if (!strcmp(k, "--greedy-batch")) greedy_batch = atoi(v);
        else if (!strcmp(k, "--greedy-alone")) greedy_alone = atoi(v);
        else if (!strcmp(k, "--save-model")) save_model = v;
        else if (!strcmp(k, "--save-dev")) save_dev = v;
        else if (!strcmp(k, "--dgemm-seconds")) dgemm_seconds = atof(v);
        else if (!strcmp(k, "--clock") && (!strcmp(v, "cpu") || !strcmp(v, "wall")))
            clock_id = strcmp(v, "cpu") ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID;
        else {
            fprintf(stderr, "profile_step: unknown option %s\n", k);
            return 2;
        }
    }
    if (threads > 0) ts_threads_use(threads);
    ts_gsl_quiet();

    // Data exactly as train/trainer.c loads it (seed 1).
    ts_corpus_opts co = {.max_len = (size_t)max_len};
    ts_corpus *corpus;
    if (ts_corpus_read(corpus_path, &co, &corpus)) die("corpus");
    size_t n_dev = 500 < corpus->n_pairs / 10 ? 500 : corpus->n_pairs / 10;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    ts_split split;
    if (ts_corpus_split(corpus, rng, n_dev, 0, &split)) die("split");
    ts_vocab *sv, *tv;
    if (ts_vocab_build(corpus, TS_SRC, split.train, split.n_train, 1, &sv) ||
        ts_vocab_build(corpus, TS_TGT, split.train, split.n_train, 1, &tv))
        die("vocabulary");
    ts_batcher_opts bo = {.batch_size = (size_t)batch, .bucket_batches = 50};
    ts_batcher *batcher;
    if (ts_batcher_new(corpus, split.train, split.n_train, sv, tv, &bo, &batcher)) die("batcher");
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(sv), .tgt_vocab = (int)ts_vocab_size(tv), .emb = emb,
                           .hidden = hidden, .heads = heads, .layers = layers, .ff = ff};
    if (ts_arch_parse(arch, &cfg.arch)) die("--arch");
    if (ts_dtype_parse(dtype, &cfg.dtype)) die("--dtype");
    if (ts_attn_parse(attn, &cfg.attn)) die("--attn");
    if (decoder && ts_decoder_parse(decoder, &cfg.decoder)) die("--decoder");
    ts_model_fields_derive(&cfg, (int[TS_FIELD_COUNT]){[TS_FIELD_DECODER] = decoder != NULL});
    ts_model_config_default_sizes(&cfg);
    gsl_rng_set(rng, 1);
    ts_seq2seq *model = ts_seq2seq_new(&cfg, rng);
    if (!model) die("model");
    ts_optim optim;
    if (ts_optim_init(&optim, &model->params, TS_OPTIM_ADAM, lr)) die("optimizer");
    optim.threads = threads > 1 ? 2 : 1;  // as tinyseq train
    ts_arena *arena = ts_arena_new((size_t)1 << 31);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    gsl_rng_set(rng, 2);
    ts_batcher_epoch(batcher, rng);

    op_time per_op[TS_OP_COUNT] = {{0}};
    double phase[5] = {0};  // arena reset, forward, backward, gradient norm, optimizer (zeroes the gradients)
    double flops[2] = {0}, tokens = 0, arena_peak = 0;
    for (int s = 0; s < warmup + steps; s++) {
        const ts_batch *b = ts_batcher_get(batcher, (size_t)s % ts_batcher_count(batcher));
        int measured = s >= warmup;
        op_time scratch[TS_OP_COUNT] = {{0}};
        double scratch_flops[2] = {0};
        double t0 = now();
        ts_ctx_reset(&ctx);  // the gradients are zero: ts_optim_step leaves them so
        double t1 = now();
        ts_batch_view view = {.B = b->B, .S = b->S, .T = b->T, .src = b->src, .src_len = b->src_len,
                              .tgt_in = b->tgt_in, .tgt_out = b->tgt_out};
        int n_tokens = 0;
        ts_tensor *loss = ts_seq2seq_loss(model, &ctx, &view, 1.0, rng, NULL, &n_tokens);
        if (!loss) die("forward");
        double t2 = now();
        if (timed_backward(&ctx, loss, measured ? per_op : scratch, measured ? flops : scratch_flops)) die("backward");
        double t3 = now();
        double factor = ts_clip_factor(ts_grad_norm(&model->params, optim.threads), clip);
        double t4 = now();
        ts_optim_step(&optim, &model->params, factor);
        double t5 = now();
        if (!measured) continue;
        double d[5] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4};
        for (int i = 0; i < 5; i++) phase[i] += d[i];
        tokens += n_tokens;
        if ((double)ts_arena_used(arena) > arena_peak) arena_peak = (double)ts_arena_used(arena);
    }
    double total = phase[0] + phase[1] + phase[2] + phase[3] + phase[4];
    char sizes[256];
    ts_model_describe(&cfg, sizes, sizeof sizes);
    printf("# profile_step: %s, %s, %s, batch %d, %d steps after %d warm-up, %d BLAS threads, OpenBLAS core %s\n",
           ts_arch_name(cfg.arch), ts_dtype_name(cfg.dtype), sizes, batch, steps, warmup, threads, ts_blas_core_name());
    if (steps > 0) {  // --steps 0: an untrained model, for the greedy timings alone
        printf("tokens/s %.1f   step %.1f ms   executed matmul GFLOP/s %.1f (%.2f MFLOP/token: fwd %.2f + bwd %.2f)"
               "   arena %.0f MB\n",
               tokens / total, 1e3 * total / steps, (flops[0] + flops[1]) / total / 1e9, (flops[0] + flops[1]) / tokens / 1e6,
               flops[0] / tokens / 1e6, flops[1] / tokens / 1e6, arena_peak / 1e6);
        const char *names[5] = {"arena reset", "forward", "backward", "gradient norm", "optimizer + zero grad"};
        printf("%-22s %9s %6s\n", "phase", "ms/step", "share");
        for (int i = 0; i < 5; i++)
            printf("%-22s %9.2f %5.1f%%\n", names[i], 1e3 * phase[i] / steps, 100 * phase[i] / total);
        printf("%-22s %9s %6s %8s\n", "backward of op", "ms/step", "share", "calls");
        for (int op = 0; op < TS_OP_COUNT; op++)
            if (per_op[op].calls)
                printf("  %-20s %9.2f %5.1f%% %8.1f\n", ts_op_names[op], 1e3 * per_op[op].seconds / steps,
                       100 * per_op[op].seconds / total, (double)per_op[op].calls / steps);
    }

    // dgemm at this model's shapes, in this process: N = T*B rows of the
    // output projection (the mean of the measured steps), V, H; the GRU step.
    if (dgemm_seconds > 0 && steps > 0) {
        int N = (int)(tokens / steps + 0.5), V = cfg.tgt_vocab, H = hidden;
        typedef struct {
            const char *name;
            int ta, tb, m, n, k;
        } gemm_shape;
        gemm_shape shapes[] = {
            {"out proj fwd  z = x W^T", 0, 1, N, V, H},
            {"out proj bwd  dx = dz W", 0, 0, N, H, V},
            {"out proj bwd  dW = dz^T x", 1, 0, V, H, N},
            {"GRU step      h W_hh^T", 0, 1, batch, 3 * H, H},
            {"GRU step bwd  dW_hh = dg^T h", 1, 0, 3 * H, H, batch},
        };
        if (cfg.arch == TS_ARCH_TRANSFORMER) {  // a layer's products instead of the GRU's
            shapes[3] = (gemm_shape){"feed-forward  x W1^T", 0, 1, N, cfg.ff, H};
            shapes[4] = (gemm_shape){"projection    x W^T", 0, 1, N, H, H};
        }
        double flops_sum = 0, time_sum = 0;
        for (int i = 0; i < 5; i++) {
            double g = dgemm_rate(shapes[i].ta, shapes[i].tb, shapes[i].m, shapes[i].n, shapes[i].k, dgemm_seconds);
            double f = 2.0 * shapes[i].m * shapes[i].n * shapes[i].k;
            if (i < 3) flops_sum += f, time_sum += f / g;  // the output projection's mix
            printf("dgemm %-30s %5d x %5d x %5d  %7.1f GFLOP/s\n", shapes[i].name, shapes[i].m, shapes[i].n,
                   shapes[i].k, g);
        }
        printf("dgemm_rate %.1f GFLOP/s (output projection forward + backward, %d threads)\n", flops_sum / time_sum,
               threads);
        double sflops = 0, stime = 0;
        for (int i = 0; i < 3; i++) {
            double g =
                sgemm_rate(shapes[i].ta, shapes[i].tb, shapes[i].m, shapes[i].n, shapes[i].k, dgemm_seconds, threads);
            double f = 2.0 * shapes[i].m * shapes[i].n * shapes[i].k;
            sflops += f, stime += f / g;
            printf("sgemm %-30s %5d x %5d x %5d  %7.1f GFLOP/s\n", shapes[i].name, shapes[i].m, shapes[i].n,
                   shapes[i].k, g);
        }
        printf("sgemm_rate %.1f GFLOP/s (the same mix in float32; %.2fx dgemm)\n", sflops / stime,
               sflops / stime / (flops_sum / time_sum));
    }

    // Greedy translation of single dev sentences (no tape), as `tinyseq translate` runs it.
    if (greedy_alone < 0) greedy_alone = greedy;
    if (greedy_alone > 0) {
        int n = greedy_alone < (int)split.n_dev ? greedy_alone : (int)split.n_dev;
        double *times = malloc((size_t)n * sizeof *times), total_time = 0;
        long out_tokens = 0;
        for (int i = 0; i < n; i++) {
            const ts_pair *p = &corpus->pairs[split.dev[i]];
            int ids[64], len = p->src_len < 64 ? p->src_len : 64;
            ts_vocab_encode(sv, p->src, (size_t)len, ids);
            ts_batch_view view = {.B = 1, .S = len, .src = ids, .src_len = &len};
            ts_hypothesis h;
            double t0 = now();
            ts_ctx_reset(&ctx);
            if (ts_seq2seq_greedy(model, &ctx, &view, ts_output_limit(len), &h)) die("greedy");
            times[i] = now() - t0;
            total_time += times[i];
            out_tokens += h.len + 1;
            ts_hypothesis_free(&h);
        }
        qsort(times, (size_t)n, sizeof *times, cmp_double);
        printf("greedy (untrained model, limit 2n+10): median %.3f ms per sentence, %.1f output steps on average "
               "(%.3f ms per output token), %d dev sentences\n",
               1e3 * times[n / 2], (double)out_tokens / n, 1e3 * total_time / (double)out_tokens, n);
        free(times);
    }

    // The same sentences in batches of greedy_batch, one ts_seq2seq_greedy
    // call per batch (source (S, B) time-major, padded), as a batched
    // translation of a file would run them. The batch runs until every
    // sentence ended or the longest one's limit.
    if (greedy > 0 && greedy_batch > 1) {
        int n = greedy < (int)split.n_dev ? greedy : (int)split.n_dev;
        int *src = malloc((size_t)64 * greedy_batch * sizeof *src), *lens = malloc((size_t)greedy_batch * sizeof *lens);
        ts_hypothesis *hyps = malloc((size_t)greedy_batch * sizeof *hyps);
        if (!src || !lens || !hyps) die("greedy batch buffers");
        long out_tokens = 0;
        double t0 = now();
        for (int first = 0; first < n; first += greedy_batch) {
            int B = n - first < greedy_batch ? n - first : greedy_batch, S = 1;
            for (int b = 0; b < B; b++) {
                const ts_pair *p = &corpus->pairs[split.dev[first + b]];
                lens[b] = p->src_len < 64 ? p->src_len : 64;
                if (lens[b] > S) S = lens[b];
            }
            for (int b = 0; b < B; b++) {
                const ts_pair *p = &corpus->pairs[split.dev[first + b]];
                int ids[64];
                ts_vocab_encode(sv, p->src, (size_t)lens[b], ids);
                for (int t = 0; t < S; t++) src[t * B + b] = t < lens[b] ? ids[t] : TS_PAD;
            }
            ts_batch_view view = {.B = B, .S = S, .src = src, .src_len = lens};
            ts_ctx_reset(&ctx);
            if (ts_seq2seq_greedy(model, &ctx, &view, ts_output_limit(S), hyps)) die("batched greedy");
            for (int b = 0; b < B; b++) out_tokens += hyps[b].len + 1, ts_hypothesis_free(&hyps[b]);
        }
        double elapsed = now() - t0;
        printf("greedy_batch %d: %.3f ms per sentence, %.1f output tokens per sentence, %d dev sentences\n",
               greedy_batch, 1e3 * elapsed / n, (double)out_tokens / n, n);
        free(src);
        free(lens);
        free(hyps);
    }

    // An inference checkpoint of this model (for timing `tinyseq translate`),
    // and the dev sources one per line (to translate a file).
    if (save_model) {
        ts_ckpt *ck = ts_ckpt_new();
        if (!ck || ts_model_to_ckpt(ck, &(ts_translator){.model = model, .src_vocab = sv, .tgt_vocab = tv, .max_len = max_len}) || ts_ckpt_set(ck, "checkpoint.kind", "inference") ||
            ts_ckpt_save(ck, save_model))
            die("--save-model");
        ts_ckpt_free(ck);
    }
    if (save_dev) {
        FILE *f = fopen(save_dev, "w");
        if (!f) die("--save-dev");
        for (size_t i = 0; i < split.n_dev; i++) {
            const ts_pair *p = &corpus->pairs[split.dev[i]];
            for (int k = 0; k < p->src_len; k++) fprintf(f, "%s%s", k ? " " : "", p->src[k]);
            fputc('\n', f);
        }
        if (fclose(f)) die("--save-dev");
    }
    ts_arena_free(arena);
    ts_optim_free(&optim);
    ts_seq2seq_free(model);
    ts_batcher_free(batcher);
    ts_vocab_free(sv);
    ts_vocab_free(tv);
    ts_split_free(&split);
    ts_corpus_free(corpus);
    gsl_rng_free(rng);
    return 0;
}
