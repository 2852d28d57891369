// infer/evaluate: a small random model on a hand-made aligned corpus.
// Random weights make poor translations, which is fine: the tests check that
// the numbers are what the metrics say they should be for the outputs the
// model actually produced, and that batching changes nothing.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "infer/evaluate.h"
#include "infer/alignment.h"
#include "infer/score.h"
#include "infer/translate.h"

// Sources of lengths 1..7 so batches hold padding; gold links mostly
// diagonal, with one unaligned target word and one crossing.
static const struct {
    const char *src, *tgt;
    ts_link links[8];
    int n_links;
} pairs[] = {
    {"le chat dort .", "the cat sleeps .", {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, 4},
    {"oui", "yes", {{0, 0}}, 1},
    {"le chien noir mange vite .", "the black dog eats fast .", {{0, 0}, {1, 2}, {2, 1}, {3, 3}, {4, 4}, {5, 5}}, 6},
    {"il dort", "he is sleeping", {{0, 0}, {1, 2}}, 2},
    {"la petite souris mange le pain .", "the small mouse eats the bread .",
     {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}}, 7},
    {"le chat mange", "the cat eats", {{0, 0}, {1, 1}, {2, 2}}, 3},
    {"non .", "no .", {{0, 0}, {1, 1}}, 2},
};
enum { N_PAIRS = sizeof pairs / sizeof pairs[0] };

typedef struct {
    ts_corpus *corpus;
    ts_vocab *src, *tgt;
    ts_seq2seq *model;
    ts_translator t;  // points at the objects above, owns nothing
    ts_arena *arena;
    ts_ctx ctx;
} fixture_env;

static fixture_env env;

static void setup_with(ts_attn_type attn, ts_decoder_type decoder) {
    env.corpus = ts_corpus_new();
    cr_assert(env.corpus);
    for (int i = 0; i < N_PAIRS; i++)
        cr_assert_eq(ts_corpus_add(env.corpus, pairs[i].src, pairs[i].tgt, pairs[i].links, (size_t)pairs[i].n_links),
                     TS_OK, "%s", ts_last_error());
    cr_assert(env.corpus->has_align);
    cr_assert_eq(ts_vocab_build(env.corpus, TS_SRC, NULL, 0, 1, &env.src), TS_OK);
    cr_assert_eq(ts_vocab_build(env.corpus, TS_TGT, NULL, 0, 1, &env.tgt), TS_OK);
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(env.src), .tgt_vocab = (int)ts_vocab_size(env.tgt),
                           .emb = 5, .hidden = 6, .attn = attn, .decoder = decoder};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    env.model = ts_seq2seq_new(&cfg, rng);
    gsl_rng_free(rng);
    cr_assert(env.model, "%s", ts_last_error());
    env.t = (ts_translator){.model = env.model, .src_vocab = env.src, .tgt_vocab = env.tgt, .max_len = 10};
    env.arena = ts_arena_new(8 << 20);
    cr_assert(env.arena);
    ts_ctx_init(&env.ctx, env.arena);
}

static void setup(void) { setup_with(TS_ATTN_BAHDANAU, TS_DECODER_LUONG); }

static void teardown(void) {
    ts_arena_free(env.arena);
    ts_seq2seq_free(env.model);
    ts_vocab_free(env.src);
    ts_vocab_free(env.tgt);
    ts_corpus_free(env.corpus);
}

static void free_hyps(ts_hypothesis *h, size_t n) {
    for (size_t i = 0; h && i < n; i++) ts_hypothesis_free(&h[i]);
    free(h);
}

// The reference ids of pair r: its target words through the target vocabulary.
static int32_t *reference_ids(size_t r, size_t *n) {
    const ts_pair *p = &env.corpus->pairs[r];
    int32_t *ids = malloc((size_t)p->tgt_len * sizeof *ids);
    ts_vocab_encode(env.tgt, p->tgt, (size_t)p->tgt_len, ids);
    *n = (size_t)p->tgt_len;
    return ids;
}

TestSuite(evaluate, .init = setup, .fini = teardown);

Test(evaluate, reports_bounded_metrics_and_no_weight_on_padding) {
    ts_eval_opts opts = {.beam = 1, .batch = 3};
    ts_eval_result r;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, NULL), TS_OK, "%s", ts_last_error());
    cr_assert_eq(r.pairs, N_PAIRS);
    size_t tokens = 0;
    for (size_t i = 0; i < N_PAIRS; i++) tokens += (size_t)env.corpus->pairs[i].tgt_len + 1;
    cr_assert_eq(r.tokens, tokens, "every target token plus its <eos>");
    cr_assert(r.bleu >= 0.0 && r.bleu <= 1.0, "bleu %g", r.bleu);
    cr_assert(r.exact >= 0.0 && r.exact <= 1.0);
    cr_assert(isfinite(r.loss) && r.loss > 0.0);
    cr_assert_float_eq(r.perplexity, exp(r.loss), 1e-9 * r.perplexity);
    cr_assert(r.has_attention && r.has_aer, "the corpus carries gold links");
    cr_assert(r.aer >= 0.0 && r.aer <= 1.0 && r.aer_diagonal >= 0.0 && r.aer_diagonal <= 1.0);
    cr_assert(r.entropy >= 0.0 && r.entropy <= log(7.0) + 1e-12, "entropy %g", r.entropy);
    cr_assert(r.pad_mass == 0.0, "padding got weight %g", r.pad_mass);
    size_t in_buckets = 0;
    for (int i = 0; i < TS_EVAL_BUCKETS; i++) in_buckets += r.bucket_pairs[i];
    cr_assert_eq(in_buckets, N_PAIRS);
    cr_assert_eq(r.bucket_pairs[0], 5, "five sources of 1-5 words");
    cr_assert_eq(r.bucket_pairs[1], 2, "two of 6-10");
}

Test(evaluate, batch_size_changes_nothing) {
    ts_eval_result one, many;
    ts_hypothesis *h1, *h7;
    ts_eval_opts o1 = {.beam = 1, .batch = 1}, o7 = {.beam = 1, .batch = 7};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &o1, &one, &h1), TS_OK);
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &o7, &many, &h7), TS_OK);
    cr_assert_float_eq(one.loss, many.loss, 1e-12);
    for (int i = 0; i < N_PAIRS; i++) {
        cr_assert_eq(h1[i].len, h7[i].len, "pair %d", i);
        cr_assert_eq(memcmp(h1[i].tokens, h7[i].tokens, (size_t)h1[i].len * sizeof(int)), 0, "pair %d", i);
        // Alone a sentence has no padding; in a batch its real columns must hold the same weights.
        int n = env.corpus->pairs[i].src_len;
        cr_assert_eq(h1[i].S, n);
        for (int row = 0; row <= h1[i].len; row++)
            assert_allclose(h7[i].attention + (size_t)row * h7[i].S, h1[i].attention + (size_t)row * n, (size_t)n,
                            1e-12, 1e-12);
    }
    cr_assert_eq(one.bleu, many.bleu);
    cr_assert_eq(one.aer, many.aer);
    cr_assert_eq(many.pad_mass, 0.0);
    free_hyps(h1, N_PAIRS);
    free_hyps(h7, N_PAIRS);
}

Test(evaluate, bleu_exact_and_aer_agree_with_the_metrics_on_the_outputs) {
    ts_eval_opts opts = {.beam = 1, .batch = 4};
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK);
    ts_bleu bleu = {0};
    ts_exact_match exact = {0};
    ts_aer_acc aer = {0};
    for (size_t i = 0; i < N_PAIRS; i++) {
        size_t n_ref;
        int32_t *ref = reference_ids(i, &n_ref);
        ts_bleu_add(&bleu, h[i].tokens, (size_t)h[i].len, ref, n_ref);
        ts_exact_match_add(&exact, h[i].tokens, (size_t)h[i].len, ref, n_ref);
        free(ref);
        // Argmax over the real columns of the output rows (<eos> row left out).
        const ts_pair *p = &env.corpus->pairs[i];
        ts_link pred[64], gold[16];
        size_t n_pred = 0, n_gold = 0;
        for (int row = 0; row < h[i].len; row++) {
            const double *w = h[i].attention + (size_t)row * h[i].S;
            int best = 0;
            for (int j = 1; j < p->src_len; j++)
                if (w[j] > w[best]) best = j;
            pred[n_pred++] = (ts_link){best, row};
        }
        for (int k = 0; k < p->n_links; k++)
            if (p->links[k].src != TS_UNALIGNED) gold[n_gold++] = p->links[k];
        ts_aer_add(&aer, pred, n_pred, gold, n_gold);
    }
    cr_assert_float_eq(r.bleu, ts_bleu_score(&bleu), 1e-15);
    cr_assert_float_eq(r.exact, ts_exact_match_score(&exact), 1e-15);
    cr_assert_float_eq(r.aer, ts_aer_score(&aer), 1e-15);
    free_hyps(h, N_PAIRS);
}

Test(evaluate, counts_exact_matches_when_references_are_the_outputs) {
    ts_eval_opts opts = {.beam = 1, .batch = 4};
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK);
    // A second corpus whose even pairs have the model's own output as their
    // reference: those, and only those, must count as exact.
    ts_corpus *c2 = ts_corpus_new();
    int expected = 0;
    for (int i = 0; i < N_PAIRS; i++) {
        char text[512];
        ts_vocab_decode(env.tgt, h[i].tokens, (size_t)h[i].len, text, sizeof text);
        int own = i % 2 == 0 && h[i].len > 0;
        expected += own || strcmp(text, pairs[i].tgt) == 0;  // odd ones count only if the model got them right
        cr_assert_eq(ts_corpus_add(c2, pairs[i].src, own ? text : pairs[i].tgt, NULL, 0), TS_OK);
    }
    cr_assert_gt(expected, 0, "the random model produced no usable output; pick another seed");
    ts_eval_result r2;
    ts_hypothesis *h2;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, c2, NULL, 0, &opts, &r2, &h2), TS_OK);
    cr_assert_float_eq(r2.exact, (double)expected / N_PAIRS, 1e-15, "exact %g, want %d/%d", r2.exact, expected,
                       N_PAIRS);
    cr_assert_eq(r2.has_aer, 0, "no gold links in the second corpus");
    cr_assert_eq(r2.has_attention, 1);
    for (int i = 0; i < N_PAIRS; i++) cr_assert_eq(h2[i].len, h[i].len, "same sources, same outputs");
    free_hyps(h, N_PAIRS);
    free_hyps(h2, N_PAIRS);
    ts_corpus_free(c2);
}

Test(evaluate, aer_is_zero_against_its_own_argmax_and_the_diagonal_against_itself) {
    ts_eval_opts opts = {.beam = 1, .batch = 3};
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK);
    // Gold = the diagonal over (output length, source length): the baseline is perfect.
    ts_link *diag[N_PAIRS], *argmax[N_PAIRS];
    int32_t n_diag[N_PAIRS], n_argmax[N_PAIRS];
    int any = 0;
    for (int i = 0; i < N_PAIRS; i++) {
        size_t L = (size_t)h[i].len, n = (size_t)env.corpus->pairs[i].src_len, got;
        any |= L > 0;
        diag[i] = malloc((L + 1) * sizeof(ts_link));
        argmax[i] = malloc((L + 1) * sizeof(ts_link));
        cr_assert_eq(ts_align_diagonal(L, n, 0, diag[i], &got), TS_OK);
        n_diag[i] = (int32_t)got;
        // The model's own argmax alignment, from a compacted copy of its weights.
        double *w = malloc((L + 1) * n * sizeof *w);
        for (size_t row = 0; row <= L; row++) memcpy(w + row * n, h[i].attention + row * h[i].S, n * sizeof *w);
        cr_assert_eq(ts_align_argmax(w, L, n, 0, argmax[i], &got), TS_OK);
        n_argmax[i] = (int32_t)got;
        free(w);
    }
    cr_assert(any, "every output is empty: the test would prove nothing");
    ts_eval_opts with_diag = {.beam = 1, .batch = 3, .gold = (const ts_link *const *)diag, .gold_counts = n_diag};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &with_diag, &r, NULL), TS_OK);
    cr_assert(r.has_aer);
    cr_assert_eq(r.aer_diagonal, 0.0, "diagonal vs diagonal gold: %g", r.aer_diagonal);
    ts_eval_opts with_argmax = {.beam = 1, .batch = 2, .gold = (const ts_link *const *)argmax,
                                .gold_counts = n_argmax};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &with_argmax, &r, NULL), TS_OK);
    cr_assert_eq(r.aer, 0.0, "argmax vs its own links: %g", r.aer);
    for (int i = 0; i < N_PAIRS; i++) {
        free(diag[i]);
        free(argmax[i]);
    }
    free_hyps(h, N_PAIRS);
}

Test(evaluate, rows_select_and_order_the_pairs) {
    ts_eval_opts opts = {.beam = 1, .batch = 2};
    ts_eval_result all, some;
    ts_hypothesis *h_all, *h_some;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &all, &h_all), TS_OK);
    const size_t rows[] = {4, 1, 2};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, rows, 3, &opts, &some, &h_some), TS_OK);
    cr_assert_eq(some.pairs, 3);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(h_some[k].len, h_all[rows[k]].len, "row %zu", rows[k]);
        cr_assert_eq(memcmp(h_some[k].tokens, h_all[rows[k]].tokens, (size_t)h_some[k].len * sizeof(int)), 0);
    }
    free_hyps(h_all, N_PAIRS);
    free_hyps(h_some, 3);
}

Test(evaluate, beam_search_gives_unpadded_attention) {
    ts_eval_opts opts = {.beam = 3, .batch = 4, .max_len = 6};
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK, "%s", ts_last_error());
    cr_assert(r.bleu >= 0.0 && r.bleu <= 1.0);
    cr_assert_eq(r.pad_mass, 0.0);
    for (int i = 0; i < N_PAIRS; i++) {
        cr_assert_eq(h[i].S, env.corpus->pairs[i].src_len);
        cr_assert_leq(h[i].len, 6, "max_len holds");
    }
    free_hyps(h, N_PAIRS);
}

// eval and translate decode a batch one way (infer/decode.h): the same
// sentences in one batch give the same outputs, greedy and beam.
Test(evaluate, decodes_a_batch_as_translate_does) {
    const char *texts[N_PAIRS];
    for (int i = 0; i < N_PAIRS; i++) texts[i] = pairs[i].src;
    int beams[] = {1, 3};
    for (int k = 0; k < 2; k++) {
        ts_eval_opts opts = {.beam = beams[k], .batch = N_PAIRS};
        ts_eval_result r;
        ts_hypothesis *h, translated[N_PAIRS];
        cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK, "%s", ts_last_error());
        cr_assert_eq(ts_translate_batch(&env.t, &env.ctx, texts, N_PAIRS, beams[k], translated), TS_OK, "%s",
                     ts_last_error());
        for (int i = 0; i < N_PAIRS; i++) {
            cr_assert_eq(h[i].len, translated[i].len, "beam %d, pair %d", beams[k], i);
            cr_assert_eq(h[i].ended, translated[i].ended, "beam %d, pair %d", beams[k], i);
            cr_assert_eq(memcmp(h[i].tokens, translated[i].tokens, (size_t)h[i].len * sizeof *h[i].tokens), 0,
                         "beam %d, pair %d", beams[k], i);
            cr_assert_eq(h[i].score, translated[i].score, "beam %d, pair %d", beams[k], i);
            ts_hypothesis_free(&translated[i]);
        }
        free_hyps(h, N_PAIRS);
    }
}

// Beam 0 is the default width, as wherever a beam is given (it was greedy
// here while the C API read it as the default).
Test(evaluate, beam_0_is_the_default_width) {
    ts_eval_opts zero = {.beam = 0, .batch = 4}, five = {.beam = TS_BEAM_DEFAULT, .batch = 4};
    ts_eval_result r0, r5;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &zero, &r0, NULL), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &five, &r5, NULL), TS_OK, "%s", ts_last_error());
    cr_assert_eq(memcmp(&r0, &r5, sizeof r0), 0, "bleu %.17g vs %.17g, entropy %.17g vs %.17g", r0.bleu, r5.bleu,
                 r0.entropy, r5.entropy);
    ts_eval_opts wide = {.beam = TS_BEAM_MAX + 1};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &wide, &r0, NULL), TS_ERR_ARG);
}

Test(evaluate, greedy_respects_each_sentences_own_limit) {
    // Limit ts_output_limit(n) = 2n + 10 per sentence, even when a longer sentence shares the batch.
    ts_eval_opts opts = {.beam = 1, .batch = 7};
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, &h), TS_OK);
    for (int i = 0; i < N_PAIRS; i++) {
        int n = env.corpus->pairs[i].src_len;
        cr_assert_leq(h[i].len, 2 * n + 10, "pair %d: %d tokens", i, h[i].len);
        if (!h[i].ended) cr_assert_eq(h[i].len, 2 * n + 10);
    }
    free_hyps(h, N_PAIRS);
}

Test(evaluate, skip_decode_gives_loss_only) {
    ts_eval_opts opts = {.batch = 5, .skip_decode = 1};
    ts_eval_result r, full;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, NULL), TS_OK);
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, NULL, &full, NULL), TS_OK);
    cr_assert_float_eq(r.loss, full.loss, 1e-12);
    cr_assert_eq(r.bleu, 0.0);
    cr_assert_eq(r.has_attention, 0);
    cr_assert_eq(r.has_aer, 0);
}

Test(evaluate, bad_options_are_refused) {
    ts_eval_result r;
    ts_eval_opts opts = {.beam = -1};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, NULL), TS_ERR_ARG);
    const size_t rows[] = {0};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, rows, 0, NULL, &r, NULL), TS_ERR_ARG);
    const size_t bad_rows[] = {99};
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, bad_rows, 1, NULL, &r, NULL), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "out of range"), "%s", ts_last_error());
}

// A head table's cells: each layer's heads, then its mean; the best head is
// the lowest figure of a single head, never a mean, the first of equal ones.
Test(evaluate, a_head_table_holds_each_layers_heads_then_its_mean) {
    ts_head_table t;
    cr_assert_eq(ts_head_table_init(&t, 2, 3), TS_OK);
    cr_assert_eq(ts_head_cells(2, 3), 8);
    cr_assert_eq(ts_head_index(3, 0, 2), 2);
    cr_assert_eq(ts_head_index(3, 0, -1), 3, "layer 0's mean after its three heads");
    cr_assert_eq(ts_head_index(3, 1, 0), 4);
    cr_assert_eq(ts_head_index(3, 1, -1), 7);
    for (size_t k = 0; k < ts_head_cells(2, 3); k++) cr_assert_eq(t.cells[k], 0.0, "zeroed");
    const double figures[] = {0.5, 0.4, 0.6, 0.1, 0.3, 0.7, 0.3, 0.05};  // the means (0.1, 0.05) are lowest
    memcpy(t.cells, figures, sizeof figures);
    int layer, head;
    ts_head_table_best(&t, &layer, &head);
    cr_assert(layer == 1 && head == 0, "best layer %d head %d", layer, head);
    cr_assert_eq(ts_head_cell(&t, layer, head), 0.3, "the first of the two 0.3s");
    cr_assert_eq(ts_head_cell(&t, 1, -1), 0.05);
    ts_head_table_free(&t);
    cr_assert_null(t.cells);
}

// The forced tables of an attending GRU (one layer of one head) hold the
// result's figures; a table the model's heads do not fit is refused.
Test(evaluate, head_tables_hold_the_results_figures_and_must_fit_the_model) {
    int layers, heads = ts_model_cross_heads(&env.model->cfg, &layers);
    cr_assert(layers == 1 && heads == 1, "layers %d heads %d", layers, heads);
    ts_head_table forced, shift;
    cr_assert_eq(ts_head_table_init(&forced, layers, heads), TS_OK);
    cr_assert_eq(ts_head_table_init(&shift, layers, heads), TS_OK);
    ts_eval_opts opts = {.beam = 1, .batch = 3, .head_aer_forced = &forced, .shift_att = 1, .head_aer_shift = &shift};
    ts_eval_result r;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, NULL), TS_OK, "%s", ts_last_error());
    cr_assert(r.has_aer_forced && r.has_shift);
    cr_assert_eq(ts_head_cell(&forced, 0, -1), r.aer_forced);
    cr_assert_eq(ts_head_cell(&forced, 0, 0), r.aer_forced_best);
    cr_assert_eq(ts_head_cell(&shift, 0, -1), r.aer_shift);
    cr_assert_eq(ts_head_cell(&shift, 0, 0), r.aer_shift_best);
    ts_head_table wrong;
    cr_assert_eq(ts_head_table_init(&wrong, 2, 4), TS_OK);
    opts.head_aer_shift = &wrong;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, &opts, &r, NULL), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "2 layers of 4 heads"), "%s", ts_last_error());
    ts_head_table_free(&wrong);
    ts_head_table_free(&forced);
    ts_head_table_free(&shift);
}

// An arena far too small chains blocks as the evaluation needs them
// (tensor/arena.h): the same figures as in one large enough.
Test(evaluate, a_tiny_arena_grows_and_gives_the_same_figures) {
    ts_arena *tiny = ts_arena_new(4096);
    ts_ctx ctx;
    ts_ctx_init(&ctx, tiny);
    ts_eval_result small, large;
    cr_assert_eq(ts_evaluate(&env.t, &ctx, env.corpus, NULL, 0, NULL, &small, NULL), TS_OK, "%s", ts_last_error());
    cr_assert_gt(ts_arena_capacity(ctx.arena), 4096, "it had to grow");
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, NULL, &large, NULL), TS_OK, "%s", ts_last_error());
    cr_assert_eq(memcmp(&small, &large, sizeof small), 0, "the figures differ: loss %.17g vs %.17g, bleu %.17g vs %.17g",
                 small.loss, large.loss, small.bleu, large.bleu);
    ts_ctx_free_scratch(&ctx);
    ts_arena_free(ctx.arena);
}

static void setup_none(void) { setup_with(TS_ATTN_NONE, TS_DECODER_BAHDANAU); }

TestSuite(evaluate_no_attention, .init = setup_none, .fini = teardown);

Test(evaluate_no_attention, has_no_alignment_diagnostics) {
    ts_eval_result r;
    cr_assert_eq(ts_evaluate(&env.t, &env.ctx, env.corpus, NULL, 0, NULL, &r, NULL), TS_OK);
    cr_assert_eq(r.has_attention, 0);
    cr_assert_eq(r.has_aer, 0);
    cr_assert(r.bleu >= 0.0 && r.bleu <= 1.0);
    cr_assert_eq(r.pad_mass, 0.0);
}

// A reference word outside the vocabulary matches nothing, not even an output
// <unk> (as NLTK's BLEU on strings): otherwise a model trained to say <unk>
// for rare words scores for it. Here the reference's four words were seen
// once (so they are <unk> to a vocabulary of words seen twice) and the model
// says <unk> four times: ids would call that a perfect translation.
Test(evaluate, an_output_unk_never_matches_an_unknown_reference_word) {
    ts_corpus *c = ts_corpus_new();
    cr_assert(c);
    cr_assert_eq(ts_corpus_add(c, "a b c d", "alpha beta gamma delta", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "a b", "the the", NULL, 0), TS_OK);
    ts_vocab *src, *tgt;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &src), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 2, &tgt), TS_OK);
    cr_assert_eq(ts_vocab_id(tgt, "alpha"), TS_UNK);
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src), .tgt_vocab = (int)ts_vocab_size(tgt), .emb = 5,
                           .hidden = 6, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_LUONG};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    gsl_rng_free(rng);
    cr_assert(m, "%s", ts_last_error());
    ts_tensor *bias = ts_params_find(&m->params, "decoder.out.bias");
    cr_assert(bias);
    bias->data[TS_UNK] = 50.0;  // every output word is <unk>, up to the limit of 4
    ts_translator t = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 4};
    ts_eval_opts opts = {.beam = 1, .batch = 4, .max_len = 4};
    size_t first = 0;
    ts_eval_result r;
    ts_hypothesis *h;
    cr_assert_eq(ts_evaluate(&t, &env.ctx, c, &first, 1, &opts, &r, &h), TS_OK, "%s", ts_last_error());
    cr_assert_eq(h[0].len, 4);
    for (int k = 0; k < 4; k++) cr_assert_eq(h[0].tokens[k], TS_UNK);
    cr_assert_eq(r.bleu, 0.0, "BLEU %g from <unk> matching unknown reference words", r.bleu);
    cr_assert_eq(r.exact, 0.0, "exact %g", r.exact);
    cr_assert_lt(r.chrf, 0.1, "chrF %g", r.chrf);
    free_hyps(h, 1);
    ts_seq2seq_free(m);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    ts_corpus_free(c);
}
