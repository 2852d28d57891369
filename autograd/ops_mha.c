// Multi-head scaled dot-product attention as one fused node.
// B = batch, T = queries, S = keys, D = model width, H = heads, Dh = D / H.
// Head h is the column block [h Dh, (h + 1) Dh) of q, keys and values, so no
// head is ever copied out: every product is a ts_gemm_ld on a block with
// leading dimension D, and the weights (B, H, T, S) are the one buffer kept.
// docs/design.md says why fused (instruction counts against the composition
// split_heads -> bmm -> scale -> softmax -> bmm -> merge_heads).
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>
#include <string.h>

// visible (T, S) = 1 where query t may see key s: a real key (key_mask of
// this sentence, NULL: all) and, if causal, s <= t.
static void visible_keys(double *visible, const double *key_mask, int T, int S, int causal) {
    for (int t = 0; t < T; t++)
        for (int s = 0; s < S; s++)
            visible[(size_t)t * S + s] = (key_mask ? key_mask[s] != 0.0 : 1) && (!causal || s <= t);
}

// What a node keeps beside its inputs: the key mask (B / g, S) copy or NULL, and
// the first column of q, keys and values in their rows.
typedef struct {
    const double *mask;
    int col[3];
} mha_args;

// One forward or backward, split over sentences (tensor/parallel.h): a
// sentence's rows of the output and of every gradient are its own, so the
// parts write disjoint memory and the bits do not depend on the split.
typedef struct {
    ts_tensor *out;
    void *dq, *dkeys, *dvalues;  // backward: the inputs' gradients or NULL
    char *scratch;               // scratch_bytes per part
    size_t scratch_bytes;
    int rc[TS_PARALLEL_MAX_PARTS];  // each part's status
    int status;                     // mha_run's: the first failure
    const char *what;
} mha_job;

// Runs part over the sentences with scratch_bytes of scratch per part, on
// the threads when B T S D, the multiply-adds of one of the two products,
// is past TS_PARALLEL_MIN_ELEMENTS (a training batch of 64 sentences of 5
// words at D 256 has 4e5; one sentence's decoding step ~3e3 stays on this
// thread). Returns job->status.
static int mha_run(ts_ctx *ctx, mha_job *job, ts_part_fn part, size_t scratch_bytes) {
    const ts_tensor *out = job->out;
    size_t work = (size_t)out->shape[0] * out->shape[1] * out->src[1]->shape[1] * out->shape[2];
    int parts = ts_parallel_parts(work, out->shape[0]);
    job->scratch_bytes = (scratch_bytes + 63) / 64 * 64;
    job->scratch = ts_arena_alloc(ctx->arena, (size_t)parts * job->scratch_bytes);
    if (!job->scratch) return job->what = ts_last_error(), job->status = TS_ERR_ARENA;
    ts_parallel_run(parts, part, job);
    for (int p = 0; p < parts && !job->status; p++)
        if (job->rc[p]) job->status = job->rc[p], job->what = "a product failed";
    return job->status;
}

#define TS_TEMPLATE "autograd/ops_mha_t.h"
#include "tensor/dtype_twice.h"

// y_h = softmax(q_h k_h^T / sqrt(Dh), masked) (* keep) v_h per head
// (ops_mha_t.h) on the D = width columns from cols[i] of each input; the
// factors keep are drawn here, in (B, H, T, S) order.
ts_tensor *ts_mha_blocks(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, const int cols[3], int width,
                         int heads, const double *key_mask, int causal, double p, gsl_rng *rng) {
    if (!q || !keys || !values) return NULL;
    if (!(p >= 0.0 && p < 1.0) || (p > 0.0 && !rng))
        return ts_ctx_fail(ctx, TS_ERR_ARG, "mha: attention dropout p = %g outside [0, 1) or without a generator", p);
    char sq[48], sk[48], sv[48];
    int D = width;
    if (q->ndim != 3 || keys->ndim != 3 || values->ndim != 3 || values->shape[0] != keys->shape[0] ||
        values->shape[1] != keys->shape[1])
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: q %s, keys %s, values %s do not fit (B, T, .), (B, S, .), (B, S, .)",
                           SHAPE(q, sq), SHAPE(keys, sk), SHAPE(values, sv));
    if (!ts_shared_rows(ctx, "mha", q->shape[0], keys->shape[0])) return NULL;  // (B / g, S, .): shared
    ts_tensor *in[3] = {q, keys, values};
    for (int i = 0; i < 3; i++)
        if (cols[i] < 0 || D < 1 || cols[i] > in[i]->shape[2] - D)
            return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: columns [%d, %d) of %s outside its %d", cols[i], cols[i] + D,
                               i == 0 ? "q" : i == 1 ? "keys" : "values", in[i]->shape[2]);
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1];
    if (heads < 1 || D % heads)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: %d heads do not divide the width %d", heads, D);
    ts_tensor *out = ts_node(ctx, TS_OP_MHA, 3, (int[]){B, T, D}, 3, in);
    if (!out) return NULL;
    size_t cells = (size_t)B * heads * T * S, size = ts_dtype_size(out->dtype);
    void *weights = ts_arena_alloc(ctx->arena, (p > 0.0 ? 2 : 1) * cells * size);  // (B, H, T, S) [x 2]
    mha_args *args = ts_arena_alloc(ctx->arena, sizeof *args);
    size_t mask_size = (size_t)keys->shape[0] * S;  // (B / g, S)
    double *mask = key_mask ? ts_arena_alloc(ctx->arena, mask_size * sizeof(double)) : NULL;
    if (!weights || !args || (key_mask && !mask)) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (mask) memcpy(mask, key_mask, mask_size * sizeof(double));
    *args = (mha_args){mask, {cols[0], cols[1], cols[2]}};
    if (p > 0.0) ts_dropout_keep((char *)weights + cells * size, out->dtype, cells, p, rng);
    out->iarg[0] = heads;
    out->iarg[1] = causal;
    out->iarg[2] = p > 0.0;
    out->aux = args;
    out->saved = weights;
    return TS_FORWARD(ctx, out, mha_forward);
}

ts_tensor *ts_mha_dropout(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                          const double *key_mask, int causal, double p, gsl_rng *rng) {
    if (!q || !keys || !values) return NULL;
    char sq[48], sk[48], sv[48];
    if (q->ndim != 3 || keys->ndim != 3 || !ts_same_shape(keys, values) || keys->shape[2] != q->shape[2])
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "mha: q %s, keys %s, values %s do not fit (B, T, D), (B, S, D), (B, S, D)",
                           SHAPE(q, sq), SHAPE(keys, sk), SHAPE(values, sv));
    return ts_mha_blocks(ctx, q, keys, values, (int[]){0, 0, 0}, q->shape[2], heads, key_mask, causal, p, rng);
}

ts_tensor *ts_mha(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                  const double *key_mask, int causal) {
    return ts_mha_dropout(ctx, q, keys, values, heads, key_mask, causal, 0.0, NULL);
}

const void *ts_mha_weights(const ts_tensor *out) { return out && out->op == TS_OP_MHA ? out->saved : NULL; }

// The same attention from primitive ops, for tests and for the instruction
// count that chose the fused node: split_heads, bmm, scale, masked softmax,
// bmm, merge_heads.
ts_tensor *ts_mha_composed(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                           const double *key_mask, int causal) {
    if (!q || !keys || !values || ctx->status) return NULL;
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = q->shape[2];
    double *visible = ts_arena_alloc(ctx->arena, (size_t)B * heads * T * S * sizeof(double));  // (B H T, S)
    if (!visible) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < heads; h++)
            visible_keys(visible + ((size_t)b * heads + h) * T * S, key_mask ? key_mask + (size_t)b * S : NULL, T, S,
                         causal);
    ts_tensor *scores = ts_bmm(ctx, ts_split_heads(ctx, q, heads), ts_split_heads(ctx, keys, heads), 0, 1);
    ts_tensor *weights = ts_softmax(ctx, ts_scale(ctx, scores, 1.0 / sqrt((double)D / heads)), visible);
    return ts_merge_heads(ctx, ts_bmm(ctx, weights, ts_split_heads(ctx, values, heads), 0, 0), heads);
}
