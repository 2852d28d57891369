// Incremental decoding of the Transformer (a key/value cache per decoder
// layer, models/transformer.c) against recomputing the whole prefix with the
// full decoder at every step, through each decoding mode of models/search.c:
// greedy, batched greedy with sentences leaving the batch at different
// steps, and beam search.
//
// The search runs a model whose row is `checked_kind` below: it wraps the
// Transformer's row, and each step runs both the cached step and the full
// decoder over the prefix so far (tokens kept in the state, the source's rows
// gathered as the search reorders), asserts that their logits and attention
// rows agree to 1e-12, and hands the search one of the two. Decoding the same
// batch once with each must give the same outputs.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ops.h"
#include "models/search.h"
#include "models/transformer.h"
#include "tensor/tokens.h"
#include "testutil.h"

// Legend: R rows decoding, t positions decoded so far, S source length, D width, V vocabulary.

static struct {
    int use_full;        // hand the search the recomputed logits (1) or the cached step's (0)
    const int *stop_at;  // (B) or NULL: sentence b is made to end (<eos> forced) at step stop_at[b]
    int checked;         // steps compared so far
    int max_rows_left;   // the most rows a step saw fewer than the batch had (greedy dropping rows)
} run;

typedef struct {
    void *inner;                // the Transformer's own memory or state
    ts_transformer_memory mem;  // (R*S, D) encoder output and (R, S) mask, for the full decoder
    int batch;                  // rows the batch started with
} checked_memory;

typedef struct {
    const checked_memory *src;  // its mem has the state's rows
    void *inner;
    int t;
    int *prefix;    // (R, t) the tokens fed so far, batch-major
    int *sentence;  // (R) the sentence of each row
} checked_state;

static const ts_model_kind *inner_kind(void) { return &ts_transformer_kind; }

static void *checked_encode(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv) {
    checked_memory *cm = ts_arena_alloc(ctx->arena, sizeof *cm);
    cr_assert_not_null(cm);
    cm->inner = inner_kind()->encode(m, ctx, bv);
    cm->batch = bv->B;
    cr_assert_eq(ts_transformer_encode(m->layers, ctx, bv, 0.0, NULL, &cm->mem, NULL), TS_OK, "%s", ts_last_error());
    return cm->inner ? cm : NULL;
}

static checked_state *new_checked_state(ts_ctx *ctx, const checked_memory *src, void *inner, int t, int R) {
    checked_state *st = ts_arena_alloc(ctx->arena, sizeof *st);
    int *prefix = ts_arena_alloc(ctx->arena, (size_t)R * (t + 1) * sizeof(int));
    int *sentence = ts_arena_alloc(ctx->arena, (size_t)R * sizeof(int));
    if (!st || !prefix || !sentence) return NULL;  // the search grows the arena and redoes the step
    *st = (checked_state){src, inner, t, prefix, sentence};
    return st;
}

static void *checked_start(const ts_seq2seq *m, ts_ctx *ctx, void *memory, int B, int max_len) {
    checked_memory *cm = memory;
    checked_state *st = new_checked_state(ctx, cm, inner_kind()->start(m, ctx, cm->inner, B, max_len), 0, B);
    cr_assert(st && st->inner, "%s", ts_last_error());
    for (int b = 0; b < B; b++) st->sentence[b] = b;
    return st;
}

static ts_tensor *checked_step(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *tokens, int R,
                               void **next, ts_tensor **weights) {
    const checked_state *st = state;
    const ts_transformer *tr = m->layers;
    int t = st->t, V = m->cfg.tgt_vocab, S = st->src->mem.S, H = m->cfg.heads;
    *next = NULL;
    void *inner_next = NULL;
    ts_tensor *cached = inner_kind()->step(m, ctx, st->inner, tokens, R, &inner_next, weights);
    checked_state *after = cached ? new_checked_state(ctx, st->src, inner_next, t + 1, R) : NULL;
    if (!after) return NULL;  // a full scratch arena: the search redoes the step from st
    for (int r = 0; r < R; r++) {
        memcpy(after->prefix + (size_t)r * (t + 1), st->prefix + (size_t)r * t, (size_t)t * sizeof(int));
        after->prefix[(size_t)r * (t + 1) + t] = tokens[r];
        after->sentence[r] = st->sentence[r];
    }
    // The full decoder over positions 0..t of every row, under the causal mask.
    ts_transformer_attention attn = {0};
    ts_tensor *y = ts_transformer_decode(tr, ctx, &st->src->mem, after->prefix, t + 1, 0.0, NULL, &attn);
    ts_tensor *full = y ? ts_linear(ctx, y, tr->out.weight, 0, tr->out.bias, NULL) : NULL;  // (R*(t+1), V)
    ts_tensor *logits = full ? ts_node(ctx, TS_OP_LEAF, 2, (int[]){R, V}, 0, NULL) : NULL;
    if (!logits) return NULL;
    const double *w = ts_mha_weights(attn.cross[tr->cfg.layers - 1]);  // (R, H, t+1, S)
    for (int r = 0; r < R; r++) {
        const double *row = full->data + ((size_t)r * (t + 1) + t) * V;
        assert_allclose(cached->data + (size_t)r * V, row, V, 1e-12, 1e-12);
        double mean[64] = {0};  // the last layer's heads' mean at position t, as the cached step gives it
        cr_assert(S <= 64);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) mean[s] += w[(((size_t)r * H + h) * (t + 1) + t) * S + s] / H;
        assert_allclose((*weights)->data + (size_t)r * S, mean, S, 1e-12, 1e-12);
        memcpy(logits->data + (size_t)r * V, run.use_full ? row : cached->data + (size_t)r * V, V * sizeof(double));
        if (run.stop_at && run.stop_at[after->sentence[r]] == t) logits->data[(size_t)r * V + TS_EOS] = 1e9;
    }
    run.checked++;
    if (st->src->batch - R > run.max_rows_left) run.max_rows_left = st->src->batch - R;
    *next = after;
    return logits;
}

static void *checked_reorder(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *rows, int n, int group) {
    const checked_state *st = state;
    void *inner = inner_kind()->reorder(m, ctx, st->inner, rows, n, group);
    const checked_memory *src = st->src;
    if (inner && group) {  // the source's rows follow their sentences (a copy per row for the full decoder)
        checked_memory *picked = ts_arena_alloc(ctx->arena, sizeof *picked);
        double *mask = ts_arena_alloc(ctx->arena, (size_t)n * src->mem.S * sizeof(double));
        if (!picked || !mask) return NULL;
        int S = src->mem.S, D = m->cfg.d_model;
        ts_tensor *by_row = ts_reshape(ctx, src->mem.memory, 2, (int[]){src->mem.B, S * D});
        ts_tensor *memory = ts_reshape(ctx, ts_rows_select(ctx, by_row, rows, n), 2, (int[]){n * S, D});
        if (!memory) return NULL;
        for (int k = 0; k < n; k++) memcpy(mask + (size_t)k * S, src->mem.mask + (size_t)rows[k] * S, S * sizeof(double));
        *picked = (checked_memory){NULL, {.B = n, .S = S, .memory = memory, .mask = mask}, src->batch};
        src = picked;
    }
    checked_state *after = inner ? new_checked_state(ctx, src, inner, st->t, n) : NULL;
    if (!after) return NULL;
    for (int k = 0; k < n; k++) {
        memcpy(after->prefix + (size_t)k * st->t, st->prefix + (size_t)rows[k] * st->t, (size_t)st->t * sizeof(int));
        after->sentence[k] = st->sentence[rows[k]];
    }
    return after;
}

static int checked_cross_heads(const ts_model_config *cfg, int *layers) {
    return ts_transformer_kind.cross_heads(cfg, layers);
}

// The full decoder recomputes every position at every step: room for it.
static size_t checked_step_bytes(const ts_model_config *cfg, int B, int S) {
    return 4 * ts_transformer_kind.step_bytes(cfg, B, S);
}

static const ts_model_kind checked_kind = {
    .name = "transformer, checked against the full decoder",
    .layers_size = sizeof(ts_transformer),
    .encode = checked_encode,
    .start = checked_start,
    .step = checked_step,
    .reorder = checked_reorder,
    .cross_heads = checked_cross_heads,
    .step_bytes = checked_step_bytes,
};

// ---- the cases ----

static ts_arena *arena;
static ts_ctx ctx;
static ts_seq2seq *model;
static ts_seq2seq checked;  // model with checked_kind as its row

static void setup(void) {
    arena = ts_arena_new((size_t)64 << 20);
    ts_ctx_init(&ctx, arena);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17);
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = 12, .tgt_vocab = 11, .emb = 8, .hidden = 8,
                           .d_model = 8, .heads = 2, .layers = 2, .ff = 12};
    model = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(model, "%s", ts_last_error());
    // Biases and norms away from their 0 / 1 start, so that every part of a step shows in its logits.
    for (int i = 0; i < model->params.count; i++)
        for (size_t k = 0; k < model->params.items[i]->size; k++)
            model->params.items[i]->data[k] += 0.4 * gsl_rng_uniform(rng) - 0.2;
    gsl_rng_free(rng);
    checked = *model;
    checked.kind = &checked_kind;
    memset(&run, 0, sizeof run);
}

static void teardown(void) {
    ts_seq2seq_free(model);
    ts_arena_free(arena);
}

TestSuite(transformer_decoding, .init = setup, .fini = teardown);

// Four sentences, time-major, source lengths 5, 2, 4, 3.
enum { B = 4, S = 5, MAX_LEN = 9 };
static const int src[S * B] = {4, 5, 6, 7, 8, 9, 5, 10, 6, 0, 4, 11, 7, 0, 9, 0, 5, 0, 0, 0};
static const int src_len[B] = {5, 2, 4, 3};

static void greedy(ts_seq2seq *m, ts_hypothesis *out) {
    ts_batch_view bv = {.B = B, .S = S, .src = src, .src_len = src_len};
    cr_assert_eq(ts_seq2seq_greedy(m, &ctx, &bv, MAX_LEN, out), TS_OK, "%s", ts_last_error());
    ts_ctx_reset(&ctx);
}

static void assert_same_output(const ts_hypothesis *a, const ts_hypothesis *b, int n) {
    for (int i = 0; i < n; i++) {
        cr_assert_eq(a[i].len, b[i].len, "sentence %d: %d tokens against %d", i, a[i].len, b[i].len);
        cr_assert_eq(a[i].ended, b[i].ended);
        cr_assert(!memcmp(a[i].tokens, b[i].tokens, (size_t)a[i].len * sizeof(int)), "sentence %d: other tokens", i);
        assert_allclose(a[i].attention, b[i].attention, (size_t)(a[i].len + 1) * a[i].S, 1e-12, 1e-12);
        cr_assert(fabs(a[i].score - b[i].score) <= 1e-12 * (1 + fabs(b[i].score)), "sentence %d: score %.17g, %.17g", i,
                  a[i].score, b[i].score);
    }
}

Test(transformer_decoding, greedy_steps_are_the_full_decoders_and_the_wrapper_changes_nothing) {
    ts_hypothesis plain[B], cached[B], full[B];
    greedy(model, plain);
    greedy(&checked, cached);
    cr_assert_geq(run.checked, MAX_LEN, "every step compared");
    run.use_full = 1;
    greedy(&checked, full);
    assert_same_output(cached, plain, B);  // the checking row hands on the model's own step
    assert_same_output(full, cached, B);
    for (int b = 0; b < B; b++) ts_hypothesis_free(&plain[b]), ts_hypothesis_free(&cached[b]), ts_hypothesis_free(&full[b]);
}

Test(transformer_decoding, batched_greedy_with_sentences_leaving_at_different_steps) {
    static const int stop_at[B] = {6, 1, MAX_LEN + 1, 3};  // sentence 2 runs to the limit
    run.stop_at = stop_at;
    ts_hypothesis cached[B], full[B];
    greedy(&checked, cached);
    cr_assert_eq(run.max_rows_left, 3, "rows left the batch: at most %d of %d", run.max_rows_left, B);
    for (int b = 0; b < B; b++) {
        int want = stop_at[b] <= MAX_LEN ? stop_at[b] : MAX_LEN;
        cr_assert_eq(cached[b].len, want, "sentence %d: %d tokens", b, cached[b].len);
        cr_assert_eq(cached[b].ended, stop_at[b] <= MAX_LEN);
    }
    run.use_full = 1;
    greedy(&checked, full);
    assert_same_output(full, cached, B);
    for (int b = 0; b < B; b++) ts_hypothesis_free(&cached[b]), ts_hypothesis_free(&full[b]);
}

Test(transformer_decoding, beam_steps_are_the_full_decoders_for_every_hypothesis) {
    for (int b = 0; b < B; b++) {
        int one[S];
        for (int s = 0; s < src_len[b]; s++) one[s] = src[s * B + b];
        for (int K = 1; K <= 4; K += 3) {
            ts_hypothesis plain, cached, full;
            cr_assert_eq(ts_seq2seq_beam(model, &ctx, one, src_len[b], K, MAX_LEN, NULL, &plain), TS_OK, "%s",
                         ts_last_error());
            ts_ctx_reset(&ctx);
            run.use_full = 0;
            int before = run.checked;
            cr_assert_eq(ts_seq2seq_beam(&checked, &ctx, one, src_len[b], K, MAX_LEN, NULL, &cached), TS_OK, "%s",
                         ts_last_error());
            ts_ctx_reset(&ctx);
            cr_assert_gt(run.checked, before);
            run.use_full = 1;
            cr_assert_eq(ts_seq2seq_beam(&checked, &ctx, one, src_len[b], K, MAX_LEN, NULL, &full), TS_OK, "%s",
                         ts_last_error());
            ts_ctx_reset(&ctx);
            assert_same_output(&cached, &plain, 1);
            assert_same_output(&full, &cached, 1);
            ts_hypothesis_free(&plain), ts_hypothesis_free(&cached), ts_hypothesis_free(&full);
        }
    }
}
