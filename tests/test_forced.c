// The attention of a reference force-decoded (infer/forced.c) and the tap
// a model's loss hands it out through (models/model.h): for every
// architecture, the weights equal those the search records for the same
// output; a batch's sentence equals the sentence alone; tapping changes
// neither the loss nor the draws; the differentiable head a guided loss reads
// equals the fused op's weights. And the bound a perfect argmax reading
// reaches on the toy test set, from the AER definition.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "autograd/ops.h"
#include "data/toy.h"
#include "infer/alignment.h"
#include "infer/forced.h"
#include "infer/heads.h"
#include "models/gradcheck.h"
#include "models/transformer.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new((size_t)16 << 20);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(forced, .init = setup, .fini = teardown);

// A random model of arch (ts_gradcheck_config's sizes: vocabularies of 7 and
// 8; a Transformer of 2 layers of 2 heads) with every parameter moved away
// from its initialisation, so that heads attend differently.
static ts_seq2seq *random_model(ts_model_arch arch, int dtype, unsigned long seed) {
    ts_model_config cfg = ts_gradcheck_config(arch, TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 1, TS_CELL_GRU);
    cfg.dtype = dtype;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    for (int i = 0; i < m->params.count; i++) {
        ts_tensor *p = m->params.items[i];
        for (size_t k = 0; k < p->size; k++) {
            double moved = gsl_rng_uniform(rng) - 0.5;
            if (dtype == TS_F32) p->data_f32[k] += (float)moved;
            else p->data[k] += moved;
        }
    }
    gsl_rng_free(rng);
    return m;
}

static const int src[] = {4, 6, 5, 4, 6};
enum { S = sizeof src / sizeof src[0] };

// Forcing the model's own greedy output reproduces its decoding: the forced
// weights of the last layer's mean are the search's attention rows.
static void forced_equals_search(ts_model_arch arch) {
    ts_seq2seq *m = random_model(arch, TS_F64, 5);
    ts_batch_view one = {.B = 1, .S = S, .src = src, .src_len = (const int[]){S}};
    ts_hypothesis h = {0};
    cr_assert_eq(ts_seq2seq_greedy(m, &ctx, &one, 6, &h), TS_OK, "%s", ts_last_error());
    cr_assert(h.len > 0);
    ts_forced_attention f;
    cr_assert_eq(ts_forced_attention_compute(m, &ctx, src, S, h.tokens, h.len, &f), TS_OK, "%s", ts_last_error());
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    cr_assert(f.layers == layers && f.heads == heads && f.S == S && f.T == h.len + 1);
    assert_allclose(ts_forced_matrix(&f, layers - 1, -1), h.attention, (size_t)f.T * S, 1e-12, 1e-12);
    for (int l = 0; l < layers; l++)
        for (int k = -1; k < heads; k++)
            for (int t = 0; t < f.T; t++) {
                double sum = 0;
                for (int s = 0; s < S; s++) sum += ts_forced_matrix(&f, l, k)[(size_t)t * S + s];
                cr_assert(fabs(sum - 1) < 1e-12, "layer %d head %d row %d sums to %.17g", l, k, t, sum);
            }
    ts_forced_attention_free(&f);
    ts_hypothesis_free(&h);
    ts_seq2seq_free(m);
}

Test(forced, gru_forcing_its_own_output_gives_the_search_attention) { forced_equals_search(TS_ARCH_GRU); }
Test(forced, transformer_forcing_its_own_output_gives_the_search_attention) {
    forced_equals_search(TS_ARCH_TRANSFORMER);
}

Test(forced, transformer_forced_heads_equal_the_inspection_pass_head_by_head) {
    ts_seq2seq *m = random_model(TS_ARCH_TRANSFORMER, TS_F64, 7);
    const int tgt[] = {5, 7, 4, 6};
    enum { LEN = 4 };
    ts_forced_attention f;
    ts_heads h;
    cr_assert_eq(ts_forced_attention_compute(m, &ctx, src, S, tgt, LEN, &f), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_heads_compute(m, &ctx, src, S, tgt, LEN, &h), TS_OK, "%s", ts_last_error());
    int differ = 0;
    for (int l = 0; l < h.layers; l++)
        for (int k = -1; k < h.heads; k++) {
            assert_allclose(ts_forced_matrix(&f, l, k), ts_heads_matrix(&h, TS_VIEW_CROSS, l, k), (size_t)(LEN + 1) * S,
                            1e-12, 1e-12);
            differ += k > 0 && memcmp(ts_forced_matrix(&f, l, k), ts_forced_matrix(&f, l, 0), (size_t)(LEN + 1) * S * 8);
        }
    cr_assert_eq(differ, h.layers, "a head copied twice");
    ts_heads_free(&h);
    ts_forced_attention_free(&f);
    ts_seq2seq_free(m);
}

// Two sentences of unequal lengths in one padded batch: each one's forced
// attention is its own alone, and tapping changes neither the loss nor the
// random draws (dropout on).
static void batch_equals_alone_and_tap_changes_nothing(ts_model_arch arch, int dtype) {
    ts_seq2seq *m = random_model(arch, dtype, 9);
    // Time-major (S = 5, B = 2) and (T = 4, B = 2): sources of 5 and 3 tokens, targets of 3 and 2 words.
    const int bsrc[] = {4, 5, 6, 6, 5, 4, 4, TS_PAD, 6, TS_PAD};
    const int tin[] = {TS_SOS, TS_SOS, 5, 7, 7, 6, 4, TS_PAD};
    const int tout[] = {5, 7, 7, 6, 4, TS_EOS, TS_EOS, TS_PAD};
    const int lens[] = {5, 3};
    ts_batch_view bv = {.B = 2, .S = 5, .T = 4, .src = bsrc, .src_len = lens, .tgt_in = tin, .tgt_out = tout};
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    ts_attention_tap tap = {.layer = -1, .every = 1};
    cr_assert_not_null(ts_seq2seq_loss_tapped(m, &ctx, &bv, 1.0, NULL, NULL, &tap, NULL), "%s", ts_last_error());
    const int own_src[2][5] = {{4, 6, 5, 4, 6}, {5, 6, 4}}, own_tgt[2][3] = {{5, 7, 4}, {7, 6}}, own_len[2] = {3, 2};
    double tol = dtype == TS_F32 ? 1e-6 : 1e-12;  // float32: a padded batch's products may round differently
    for (int b = 0; b < 2; b++) {
        ts_forced_attention in_batch, alone;
        cr_assert_eq(ts_forced_attention_of_batch(&tap, layers, heads, b, lens[b], own_len[b] + 1, &in_batch), TS_OK);
        ts_ctx_reset(&ctx);
        cr_assert_eq(ts_forced_attention_compute(m, &ctx, own_src[b], lens[b], own_tgt[b], own_len[b], &alone), TS_OK,
                     "%s", ts_last_error());
        for (int l = 0; l < layers; l++)
            for (int k = -1; k < heads; k++)
                assert_allclose(ts_forced_matrix(&in_batch, l, k), ts_forced_matrix(&alone, l, k),
                                (size_t)(own_len[b] + 1) * lens[b], tol, tol);
        ts_forced_attention_free(&in_batch);
        ts_forced_attention_free(&alone);
    }
    ts_ctx_reset(&ctx);
    ts_regularizer reg = {.dropout = 0.3};
    double loss[2];
    unsigned long next_draw[2];
    for (int tapped = 0; tapped < 2; tapped++) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 17);
        ts_attention_tap both = {.layer = layers - 1, .head = heads - 1, .every = 1};
        ts_tensor *t = ts_seq2seq_loss_tapped(m, &ctx, &bv, 1.0, rng, &reg, tapped ? &both : NULL, NULL);
        cr_assert_not_null(t, "%s", ts_last_error());
        cr_assert(!tapped || (both.chosen && both.every_layer[layers - 1]));
        loss[tapped] = ts_value(t, 0);
        next_draw[tapped] = gsl_rng_get(rng);
        gsl_rng_free(rng);
        ts_ctx_reset(&ctx);
    }
    cr_assert(loss[0] == loss[1] && next_draw[0] == next_draw[1], "tapping moved the loss %.17g -> %.17g", loss[0], loss[1]);
    ts_seq2seq_free(m);
}

Test(forced, gru_batch_sentence_equals_it_alone_and_the_tap_changes_nothing) {
    batch_equals_alone_and_tap_changes_nothing(TS_ARCH_GRU, TS_F64);
    batch_equals_alone_and_tap_changes_nothing(TS_ARCH_GRU, TS_F32);
}
Test(forced, transformer_batch_sentence_equals_it_alone_and_the_tap_changes_nothing) {
    batch_equals_alone_and_tap_changes_nothing(TS_ARCH_TRANSFORMER, TS_F64);
    batch_equals_alone_and_tap_changes_nothing(TS_ARCH_TRANSFORMER, TS_F32);
}

// The head a guided loss supervises is recomputed on the tape from the
// layer's queries and keys: the same values as the fused op's weights.
Test(forced, transformer_chosen_head_equals_the_fused_weights) {
    ts_seq2seq *m = random_model(TS_ARCH_TRANSFORMER, TS_F64, 13);
    const int bsrc[] = {4, 5, 6, 6, 5, 4, 4, TS_PAD, 6, TS_PAD};
    const int tin[] = {TS_SOS, TS_SOS, 5, 7, 7, 6, 4, TS_PAD};
    const int tout[] = {5, 7, 7, 6, 4, TS_EOS, TS_EOS, TS_PAD};
    ts_batch_view bv = {.B = 2, .S = 5, .T = 4, .src = bsrc, .src_len = (const int[]){5, 3}, .tgt_in = tin, .tgt_out = tout};
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < heads; k++) {
            ts_attention_tap tap = {.layer = l, .head = k, .every = 1};
            cr_assert_not_null(ts_seq2seq_loss_tapped(m, &ctx, &bv, 1.0, NULL, NULL, &tap, NULL), "%s", ts_last_error());
            const ts_tensor *chosen = tap.chosen, *every = tap.every_layer[l];  // (B, T, S), (B H, T, S)
            cr_assert(chosen->shape[0] == 2 && chosen->shape[1] == 4 && chosen->shape[2] == 5);
            for (int b = 0; b < 2; b++)
                assert_allclose(chosen->data + (size_t)b * 20, every->data + ((size_t)b * heads + k) * 20, 20, 1e-14, 1e-12);
            ts_ctx_reset(&ctx);
        }
    ts_attention_tap outside = {.layer = layers, .head = 0};
    cr_assert_null(ts_seq2seq_loss_tapped(m, &ctx, &bv, 1.0, NULL, NULL, &outside, NULL));
    cr_assert(strstr(ts_last_error(), "no cross-attention head 0 of layer 2"), "%s", ts_last_error());
    ts_seq2seq_free(m);
}

Test(forced, a_model_without_attention_has_no_forced_attention) {
    ts_model_config cfg = ts_gradcheck_config(TS_ARCH_GRU, TS_ATTN_NONE, TS_DECODER_BAHDANAU, 0, TS_CELL_GRU);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, NULL);
    int layers = 5;
    cr_assert_eq(ts_model_cross_heads(&m->cfg, &layers), 0);
    cr_assert_eq(layers, 0);
    ts_forced_attention f;
    cr_assert_eq(ts_forced_attention_compute(m, &ctx, src, S, (const int[]){5}, 1, &f), TS_ERR_ARG);
    cr_assert_null(f.weights);
    ts_seq2seq_free(m);
}

// The best an argmax reading can do on the toy test set (`tinyseq corpus
// --toy --n 300 --seed 4242`): each target word linked to one of its gold
// source words. By the AER definition (sure = possible = gold G, one
// predicted link A per target word) that is 1 - 2|A∩G| / (|A| + |G|) with
// |A∩G| the words that have a gold link and |A| every word: the words with
// two gold links (one output word, two source words) cost a missed link
// each, the toy's unaligned words ("les" of "aime les chats") a false one,
// since an argmax reading links every word.
Test(forced, a_perfect_argmax_reading_of_the_toy_test_set_scores_the_aer_bound) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4242);
    ts_corpus *c;
    cr_assert_eq(ts_toy_generate(rng, 300, &c), TS_OK);
    gsl_rng_free(rng);
    ts_aer_acc acc = {0};
    long words = 0, linked = 0, gold_links = 0, unaligned = 0, two_or_more = 0;
    for (size_t p = 0; p < c->n_pairs; p++) {
        const ts_pair *pair = &c->pairs[p];
        int T = pair->tgt_len, n = pair->src_len;
        double weights[TS_TOY_MAX_LEN * TS_TOY_MAX_LEN] = {0};  // (T, n): one-hot on a gold link
        ts_link gold[4 * TS_TOY_MAX_LEN], pred[TS_TOY_MAX_LEN];
        size_t n_gold = 0, n_pred = 0;
        int per_row[TS_TOY_MAX_LEN] = {0};
        for (int k = 0; k < pair->n_links; k++) {
            ts_link l = pair->links[k];
            if (l.src == TS_UNALIGNED) continue;
            gold[n_gold++] = l;
            if (!per_row[l.tgt]++) weights[(size_t)l.tgt * n + l.src] = 1.0;
        }
        // A row with no gold link: the argmax must still pick a word (uniform: the first).
        for (int j = 0; j < T; j++)
            if (!per_row[j])
                for (int i = 0; i < n; i++) weights[(size_t)j * n + i] = 1.0 / n;
        cr_assert_eq(ts_align_argmax(weights, (size_t)T, (size_t)n, 0, pred, &n_pred), TS_OK);
        ts_aer_add(&acc, pred, n_pred, gold, n_gold);
        words += T;
        gold_links += (long)n_gold;
        for (int j = 0; j < T; j++) linked += per_row[j] > 0, unaligned += !per_row[j], two_or_more += per_row[j] > 1;
    }
    double bound = 1.0 - 2.0 * linked / (double)(words + gold_links);
    cr_assert(fabs(ts_aer_score(&acc) - bound) < 1e-15, "scorer %.17g, definition %.17g", ts_aer_score(&acc), bound);
    // The figures of this test set (docs/attention.md quotes them).
    cr_assert(words == 3058 && gold_links == 3272 && linked == 3042 && unaligned == 16 && two_or_more > 0,
              "%ld words, %ld links, %ld linked, %ld unaligned", words, gold_links, linked, unaligned);
    cr_assert(fabs(bound - 0.0389) < 5e-5, "bound %.6f", bound);
    // Without the 16 unaligned words (an argmax reading cannot leave them out) it would be 0.0364.
    cr_assert(fabs(1.0 - 2.0 * linked / (double)(linked + gold_links) - 0.0364) < 5e-5);
    ts_corpus_free(c);
}
