// Every head of a Transformer's translation (infer/heads.c): the one
// teacher-forced pass equals the key/value-cache steps the search runs, head
// by head and layer by layer; the views' shapes, masks and means.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "autograd/ops.h"
#include "infer/heads.h"
#include "models/search.h"
#include "models/transformer.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new((size_t)16 << 20);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(heads, .init = setup, .fini = teardown);

enum { D = 8, HEADS = 2, LAYERS = 3, FF = 12, SRC_VOCAB = 11, TGT_VOCAB = 10 };

// A random Transformer whose biases and norms are away from 0 and 1, so
// every head attends differently.
static ts_seq2seq *random_transformer(unsigned long seed) {
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = SRC_VOCAB, .tgt_vocab = TGT_VOCAB, .emb = D,
                           .hidden = D, .d_model = D, .heads = HEADS, .layers = LAYERS, .ff = FF};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    for (int i = 0; i < m->params.count; i++)
        for (size_t k = 0; k < m->params.items[i]->size; k++) m->params.items[i]->data[k] += gsl_rng_uniform(rng) - 0.5;
    gsl_rng_free(rng);
    return m;
}

static const int src[] = {4, 9, 5, 7, 6};
enum { S = sizeof src / sizeof src[0] };

Test(heads, teacher_forced_pass_equals_the_key_value_cache_steps_for_every_layer_and_head) {
    ts_seq2seq *model = random_transformer(3);
    const ts_transformer *m = model->layers;
    const int out[] = {5, 8, 4, 6};  // any output: forced, position by position
    enum { LEN = sizeof out / sizeof out[0], T = LEN + 1 };
    ts_heads h;
    cr_assert_eq(ts_heads_compute(model, &ctx, src, S, out, LEN, &h), TS_OK, "%s", ts_last_error());
    cr_assert_eq(h.layers, LAYERS);
    cr_assert_eq(h.heads, HEADS);
    cr_assert_eq(h.T, T);

    ts_set_grad_enabled(&ctx, 0);
    ts_batch_view bv = {.B = 1, .S = S, .src = src, .src_len = (const int[]){S}};
    ts_transformer_source source;
    cr_assert_eq(ts_transformer_prepare(m, &ctx, &bv, &source), TS_OK, "%s", ts_last_error());
    ts_transformer_state *st = ts_transformer_start(&ctx, &source);
    for (int t = 0; t < T; t++) {
        int token = t ? out[t - 1] : TS_SOS;
        ts_transformer_attention attn = {0};
        ts_tensor *mean;
        cr_assert_not_null(ts_transformer_step(m, &ctx, st, &token, &st, &mean, &attn), "%s", ts_last_error());
        // The search's weights: the last layer's cross-attention head mean.
        assert_allclose(ts_heads_matrix(&h, TS_VIEW_CROSS, LAYERS - 1, -1) + (size_t)t * S, mean->data, S, 1e-12, 1e-12);
        for (int l = 0; l < LAYERS; l++) {
            const double *cross = ts_mha_weights(attn.cross[l]);     // (1, H, 1, S)
            const double *self = ts_mha_weights(attn.dec_self[l]);   // (1, H, 1, t + 1)
            for (int k = 0; k < HEADS; k++) {
                assert_allclose(ts_heads_matrix(&h, TS_VIEW_CROSS, l, k) + (size_t)t * S, cross + (size_t)k * S, S,
                                1e-12, 1e-12);
                // Row t of the causal (T, T) matrix: the step saw t + 1 positions, the rest is 0.
                const double *row = ts_heads_matrix(&h, TS_VIEW_DEC, l, k) + (size_t)t * T;
                assert_allclose(row, self + (size_t)k * (t + 1), (size_t)t + 1, 1e-12, 1e-12);
                for (int u = t + 1; u < T; u++) cr_assert(row[u] == 0.0, "layer %d head %d: position %d sees %d", l, k, t, u);
            }
        }
    }
    ts_heads_free(&h);
    ts_seq2seq_free(model);
}

Test(heads, search_attention_is_the_last_layers_cross_mean_and_every_row_sums_to_one) {
    ts_seq2seq *model = random_transformer(11);
    ((ts_transformer *)model->layers)->out.bias->data[TS_EOS] -= 100;  // no <eos>: an output as long as the limit
    ts_hypothesis hyp = {0};
    cr_assert_eq(ts_seq2seq_beam(model, &ctx, src, S, 3, ts_output_limit(S), NULL, &hyp), TS_OK, "%s", ts_last_error());
    ts_ctx_reset(&ctx);
    cr_assert_eq(hyp.len, ts_output_limit(S));
    ts_heads h;
    cr_assert_eq(ts_heads_compute(model, &ctx, src, S, hyp.tokens, hyp.len, &h), TS_OK, "%s", ts_last_error());
    assert_allclose(ts_heads_matrix(&h, TS_VIEW_CROSS, LAYERS - 1, -1), hyp.attention, (size_t)(hyp.len + 1) * S, 1e-12,
                    1e-12);
    int heads_differ = 0;
    for (int v = 0; v < TS_VIEW_COUNT; v++) {
        int rows = ts_heads_rows(&h, v), cols = ts_heads_cols(&h, v);
        cr_assert_eq(rows, ts_head_views[v].rows_target ? hyp.len + 1 : S);
        cr_assert_eq(cols, ts_head_views[v].cols_target ? hyp.len + 1 : S);
        for (int l = 0; l < LAYERS; l++)
            for (int k = -1; k < HEADS; k++) {
                const double *w = ts_heads_matrix(&h, v, l, k);
                for (int r = 0; r < rows; r++) {
                    double sum = 0;
                    for (int c = 0; c < cols; c++) sum += w[(size_t)r * cols + c];
                    cr_assert(fabs(sum - 1) < 1e-12, "%s layer %d head %d row %d sums to %.17g", ts_head_views[v].name,
                              l, k, r, sum);
                }
            }
        heads_differ += memcmp(ts_heads_matrix(&h, v, 0, 0), ts_heads_matrix(&h, v, 0, 1),
                               (size_t)rows * cols * sizeof(double)) != 0;
    }
    cr_assert_eq(heads_differ, TS_VIEW_COUNT, "two heads gave the same weights: the copy reads one head twice");
    ts_heads_free(&h);
    ts_hypothesis_free(&hyp);
    ts_seq2seq_free(model);
}

Test(heads, views_are_named_once_and_a_gru_has_no_heads) {
    cr_assert_eq(ts_head_view_parse("cross"), TS_VIEW_CROSS);
    cr_assert_eq(ts_head_view_parse("enc"), TS_VIEW_ENC);
    cr_assert_eq(ts_head_view_parse("dec"), TS_VIEW_DEC);
    cr_assert_eq(ts_head_view_parse("decoder"), -1);
    ts_model_config cfg = {.src_vocab = SRC_VOCAB, .tgt_vocab = TGT_VOCAB, .emb = 4, .hidden = 4, .attn = TS_ATTN_DOT};
    ts_seq2seq *gru = ts_seq2seq_new(&cfg, NULL);
    cr_assert_not_null(gru, "%s", ts_last_error());
    cr_assert_eq(ts_heads_available(gru), 0);
    ts_heads h;
    cr_assert_eq(ts_heads_compute(gru, &ctx, src, S, src, 2, &h), TS_ERR_ARG);
    cr_assert_null(h.weights[0]);
    cr_assert(strstr(ts_last_error(), "a gru model has no heads"), "%s", ts_last_error());  // the row's name, no guess
    ts_seq2seq_free(gru);
    ts_seq2seq *tm = random_transformer(1);
    const int bad[] = {TGT_VOCAB + 3};
    cr_assert_neq(ts_heads_compute(tm, &ctx, src, S, bad, 1, &h), TS_OK, "a token outside the vocabulary was read");
    cr_assert_null(h.weights[0]);
    ts_seq2seq_free(tm);
}

// ts_heads_merge on hand-made heads (1 layer, 1 head, the mean equal to it):
// S = 3 source pieces in words {0, 1, 1}; T = 4 output steps, pieces y1 y2
// y3 in words {0, 0, 1} and <eos>; the decoder's inputs <sos> y1 y2 y3 then
// group as {0, 1, 1, 2}. Element (j, i) of each view is j * cols + i + 1;
// the wanted words' matrices are worked by hand: columns of a word summed,
// rows of a word averaged.
Test(heads, merge_sums_columns_and_averages_rows_of_every_view) {
    enum { NS = 3, NT = 4 };
    const size_t cells[TS_VIEW_COUNT] = {[TS_VIEW_CROSS] = NT * NS, [TS_VIEW_ENC] = NS * NS, [TS_VIEW_DEC] = NT * NT};
    double *all = malloc(2 * (NT * NS + NS * NS + NT * NT) * sizeof *all), *at = all;  // ts_heads_free's one block
    ts_heads h = {.layers = 1, .heads = 1, .S = NS, .T = NT};
    for (int v = 0; v < TS_VIEW_COUNT; v++) {
        h.weights[v] = at;
        h.mean[v] = at + cells[v];
        for (size_t c = 0; c < cells[v]; c++) h.weights[v][c] = h.mean[v][c] = (double)c + 1;
        at += 2 * cells[v];
    }
    const int32_t src_word[NS] = {0, 1, 1}, tgt_word[NT] = {0, 0, 1, 2};
    ts_heads m;
    cr_assert_eq(ts_heads_merge(&h, src_word, 2, tgt_word, 3, &m), TS_OK, "%s", ts_last_error());
    cr_assert(m.S == 2 && m.T == 3 && m.layers == 1 && m.heads == 1);
    static const double cross[3 * 2] = {2.5, 8, 7, 17, 10, 23};      // (3 words + <eos>, 2 words)
    static const double enc[2 * 2] = {1, 5, 5.5, 14};                // (2, 2)
    static const double dec[3 * 3] = {3, 9, 6, 9, 21, 12, 13, 29, 16};  // (3, <sos> + 2 words)
    const double *want[TS_VIEW_COUNT] = {[TS_VIEW_CROSS] = cross, [TS_VIEW_ENC] = enc, [TS_VIEW_DEC] = dec};
    for (int v = 0; v < TS_VIEW_COUNT; v++)
        for (int k = -1; k < 1; k++) {
            const double *got = ts_heads_matrix(&m, v, 0, k);
            for (int c = 0; c < ts_heads_rows(&m, v) * ts_heads_cols(&m, v); c++)
                cr_assert_float_eq(got[c], want[v][c], 1e-15, "%s %s, cell %d: %g, want %g", ts_head_views[v].name,
                                   k < 0 ? "mean" : "head 0", c, got[c], want[v][c]);
        }
    ts_heads_free(&m);
    ts_heads_free(&h);
}

// Attention rollout: every row of every layer's product sums to 1; the first
// layer's is 0.5 (mean + I) exactly, the second its product with the first.
Test(heads, rollout_rows_sum_to_one_and_follow_the_formula) {
    ts_seq2seq *model = random_transformer(5);
    const int out[] = {5, 8, 4, 6};
    enum { LEN = sizeof out / sizeof out[0], T = LEN + 1 };
    ts_heads h;
    cr_assert_eq(ts_heads_compute(model, &ctx, src, S, out, LEN, &h), TS_OK, "%s", ts_last_error());
    for (int view = TS_VIEW_ENC; view <= TS_VIEW_DEC; view++) {
        int R = ts_heads_rows(&h, view);
        double rolled[LAYERS * T * T];
        cr_assert_eq(ts_heads_rollout(&h, view, rolled), TS_OK, "%s", ts_last_error());
        for (int l = 0; l < LAYERS; l++)
            for (int i = 0; i < R; i++) {
                double sum = 0.0;
                for (int j = 0; j < R; j++) sum += rolled[(l * R + i) * R + j];
                cr_assert(fabs(sum - 1.0) < 1e-12, "view %d layer %d row %d sums to %.17g", view, l, i, sum);
            }
        const double *m0 = ts_heads_matrix(&h, view, 0, -1), *m1 = ts_heads_matrix(&h, view, 1, -1);
        for (int i = 0; i < R; i++)
            for (int j = 0; j < R; j++) {
                double first = 0.5 * (m0[i * R + j] + (i == j)), second = 0.0;
                for (int k = 0; k < R; k++) second += 0.5 * (m1[i * R + k] + (i == k)) * 0.5 * (m0[k * R + j] + (k == j));
                cr_assert_eq(rolled[i * R + j], first);
                cr_assert(fabs(rolled[(R + i) * R + j] - second) < 1e-15);
            }
    }
    cr_assert_eq(ts_heads_rollout(&h, TS_VIEW_CROSS, (double[T * S]){0}), TS_ERR_ARG);
    ts_heads_free(&h);
    ts_seq2seq_free(model);
}
