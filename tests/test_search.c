// models/search.c: beam search of a batch of sentences gives each sentence
// what searching it alone gives, for the GRU's configurations and the
// Transformer, on sources of the toy corpus (lengths 3..25, so batches hold
// padding and sentences leave the batch at different steps).
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/toy.h"
#include "data/vocab.h"
#include "models/search.h"
#include "models/seq2seq.h"
#include "tensor/kernels.h"
#include "testutil.h"
#include "tensor/threads.h"

enum { N = 12 };  // sentences in the batch

static ts_arena *arena;
static ts_ctx ctx;
static gsl_rng *rng;
static ts_corpus *corpus;
static ts_vocab *src_vocab, *tgt_vocab;
static int src[TS_TOY_MAX_LEN * N], len[N], S;  // src (S, N) time-major, TS_PAD past len[b]

static void setup(void) {
    arena = ts_arena_new((size_t)64 << 20);
    ts_ctx_init(&ctx, arena);
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    cr_assert_eq(ts_toy_generate(rng, N, &corpus), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_vocab_build(corpus, TS_SRC, NULL, 0, 1, &src_vocab), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_vocab_build(corpus, TS_TGT, NULL, 0, 1, &tgt_vocab), TS_OK, "%s", ts_last_error());
    S = 0;
    for (int b = 0; b < N; b++) {
        len[b] = corpus->pairs[b].src_len;
        if (len[b] > S) S = len[b];
    }
    for (int s = 0; s < S; s++)
        for (int b = 0; b < N; b++)
            src[s * N + b] = s < len[b] ? ts_vocab_id(src_vocab, corpus->pairs[b].src[s]) : TS_PAD;
}

static void teardown(void) {
    ts_vocab_free(src_vocab);
    ts_vocab_free(tgt_vocab);
    ts_corpus_free(corpus);
    gsl_rng_free(rng);
    ts_arena_free(arena);
}

TestSuite(search, .init = setup, .fini = teardown);

// Beam search written plainly, for one sentence, as a reference: every
// step keeps K rows (a row without a live entry repeats entry 0) gathered
// with a copy of their source rows each (reorder, group 1: not shared as
// the search shares them), ranks all extensions of the live entries by a
// full selection of the best 2K (ties to the earlier), and searches until K
// hypotheses have finished, with no early stop.
// *bound_held counts the steps at which it searched on although no live
// entry could end above its best (where models/search.c stops early).
typedef struct {
    int len, ended, tokens[TS_TOY_MAX_LEN * 3 + 10];
    double score;
} reference_output;

static void reference_beam(ts_seq2seq *m, const int *one, int n, int K, int max_len, const ts_length_penalty *lp,
                           reference_output *best, int *bound_held) {
    enum { MAX_K = 5, MAX_T = TS_TOY_MAX_LEN * 3 + 10 };
    cr_assert(K <= MAX_K && max_len < MAX_T);
    int grad = ts_set_grad_enabled(&ctx, 0);
    ctx.dtype = m->cfg.dtype;
    ts_batch_view bv = {.B = 1, .S = n, .src = one, .src_len = &n};
    void *state = m->kind->start(m, &ctx, m->kind->encode(m, &ctx, &bv), 1, max_len);
    cr_assert_not_null(state, "%s", ts_last_error());
    double score[MAX_K] = {0}, next_score[MAX_K];
    int tokens[MAX_K][MAX_T], next_tokens[MAX_K][MAX_T], inputs[MAX_K] = {TS_SOS}, rows[MAX_K];
    int alive = 1, R = 1, finished = 0, V = m->cfg.tgt_vocab;
    best->len = -1;
    double best_final = -INFINITY;
    for (int t = 0;; t++) {
        void *next;
        ts_tensor *weights;
        ts_tensor *logits = m->kind->step(m, &ctx, state, inputs, R, &next, &weights);
        cr_assert_not_null(logits, "%s", ts_last_error());
        state = next;
        double *cand = malloc((size_t)alive * V * sizeof *cand);  // (alive, V): score + log p
        for (int k = 0; k < alive; k++) {
            const void *z = (const char *)logits->raw + (size_t)k * V * ts_dtype_size(logits->dtype);
            double max = TS_BY_DTYPE(logits->dtype, ts_max_array, z, (size_t)V);
            double log_sum = log(TS_BY_DTYPE(logits->dtype, ts_sum_exp_shift, z, (size_t)V, max));
            for (int v = 0; v < V; v++)
                cand[k * V + v] = v < TS_EOS ? -INFINITY : score[k] + ((ts_value(logits, (size_t)k * V + v) - max) - log_sum);
        }
        int next_alive = 0;
        for (int i = 0; i < 2 * K; i++) {
            int c = -1;  // the best candidate left: the first of the highest
            for (int j = 0; j < alive * V; j++)
                if (j % V >= TS_EOS && !isnan(cand[j]) && (c < 0 || cand[j] > cand[c])) c = j;
            if (c < 0) break;
            double total = cand[c];
            cand[c] = NAN;  // taken
            int parent = c / V, token = c % V;
            if (token == TS_EOS && i < K) {
                finished++;
                double final = ts_length_penalized(total, t, lp);
                if (final > best_final) {
                    best_final = final;
                    best->len = t, best->ended = 1, best->score = final;
                    memcpy(best->tokens, tokens[parent], (size_t)t * sizeof(int));
                }
                continue;
            }
            if (t == max_len) continue;  // the limit: no entry lives on
            if (token == TS_EOS || next_alive == K) continue;
            memcpy(next_tokens[next_alive], tokens[parent], (size_t)t * sizeof(int));
            next_tokens[next_alive][t] = token;
            next_score[next_alive] = total;
            rows[next_alive++] = parent;
        }
        free(cand);
        if (t == max_len && finished < K) {  // the limit: the live entry of the highest score is cut
            int k = 0;
            for (int j = 1; j < alive; j++)
                if (score[j] > score[k]) k = j;
            double final = ts_length_penalized(score[k], t, lp);
            if (final > best_final) {
                best_final = final;
                best->len = t, best->ended = 0, best->score = final;
                memcpy(best->tokens, tokens[k], (size_t)t * sizeof(int));
            }
        }
        if (finished >= K || next_alive == 0 || t == max_len) break;
        int hopeless = best->len >= 0;
        for (int k = 0; k < next_alive; k++) hopeless &= !(ts_length_penalized(next_score[k], max_len, lp) > best_final);
        *bound_held += hopeless;
        memcpy(tokens, next_tokens, sizeof tokens);
        memcpy(score, next_score, sizeof score);
        for (int k = 0; k < K; k++) {
            int e = k < next_alive ? k : 0;
            inputs[k] = tokens[e][t];
            if (k >= next_alive) rows[k] = rows[0];
        }
        alive = next_alive;
        state = m->kind->reorder(m, &ctx, state, rows, K, 1);
        cr_assert_not_null(state, "%s", ts_last_error());
        R = K;
    }
    ts_set_grad_enabled(&ctx, grad);
}

// Early stops the reference saw worth making, over the whole test.
static int bound_held;

// Searches the batch and each sentence alone with width K and compares
// tokens, ends, scores and attention rows. Returns whether the batch's
// outputs have different lengths (so sentences left it at different steps).
static int batch_searches_as_each_alone(ts_seq2seq *m, int K, const ts_length_penalty *lp, const char *name) {
    int limit[N], one[TS_TOY_MAX_LEN];
    for (int b = 0; b < N; b++) limit[b] = ts_output_limit(len[b]);
    ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
    ts_hypothesis batch[N];
    ts_ctx_reset(&ctx);
    cr_assert_eq(ts_seq2seq_beam_batch(m, &ctx, &bv, K, limit, lp, batch), TS_OK, "%s: %s", name, ts_last_error());
    int shortest = 1 << 30, longest = 0;
    for (int b = 0; b < N; b++) {
        for (int s = 0; s < len[b]; s++) one[s] = src[s * N + b];
        ts_hypothesis h;
        ts_ctx_reset(&ctx);
        cr_assert_eq(ts_seq2seq_beam(m, &ctx, one, len[b], K, limit[b], lp, &h), TS_OK, "%s", ts_last_error());
        cr_assert_eq(batch[b].len, h.len, "%s K=%d sentence %d: %d tokens in the batch, %d alone", name, K, b, batch[b].len,
                     h.len);
        cr_assert_eq(batch[b].ended, h.ended, "%s K=%d sentence %d", name, K, b);
        cr_assert_arr_eq(batch[b].tokens, h.tokens, (size_t)h.len * sizeof(int), "%s K=%d sentence %d", name, K, b);
        cr_assert_eq(batch[b].S, len[b], "%s: the attention rows have the sentence's own columns", name);
        // float32's products round differently with the rows they hold (sgemv
        // for one, sgemm's kernels for many): ~1e-7 relative per product.
        double tol = m->cfg.dtype == TS_F32 ? 1e-5 : 1e-12;
        assert_allclose(&batch[b].score, &h.score, 1, tol, tol);
        assert_allclose(batch[b].attention, h.attention, (size_t)(h.len + 1) * len[b], tol, tol);
        // ... and with the plain reference, which never stops early.
        reference_output ref;
        ts_ctx_reset(&ctx);
        reference_beam(m, one, len[b], K, limit[b], lp, &ref, &bound_held);
        cr_assert_eq(h.len, ref.len, "%s K=%d sentence %d: %d tokens, the reference %d", name, K, b, h.len, ref.len);
        cr_assert_eq(h.ended, ref.ended, "%s K=%d sentence %d", name, K, b);
        cr_assert_arr_eq(h.tokens, ref.tokens, (size_t)h.len * sizeof(int), "%s K=%d sentence %d", name, K, b);
        cr_assert_eq(h.score, ref.score, "%s K=%d sentence %d: score %.17g, the reference %.17g", name, K, b, h.score,
                     ref.score);
        if (h.len < shortest) shortest = h.len;
        if (h.len > longest) longest = h.len;
        ts_hypothesis_free(&h);
        ts_hypothesis_free(&batch[b]);
    }
    return shortest < longest;
}

// Sweeps the <eos> logit's bias of model m (an untrained model says <eos>
// always or never) and checks every width at each; asserts that some bias
// made the batch's outputs differ in length.
// Value i of a parameter of either dtype set to v.
static void set_value(ts_tensor *t, size_t i, double v) {
    if (t->dtype == TS_F32) t->data_f32[i] = (float)v;
    else t->data[i] = v;
}

// Every second end-of-sentence bias (bias_step 2) for the 6,000-word models,
// whose searches cost most (over 100 s for all seven in the sanitizer build).
static void check_model_biases(ts_seq2seq *m, const char *name, int bias_step) {
    ts_tensor *weight = ts_params_find(&m->params, "decoder.out.weight");
    ts_tensor *bias = ts_params_find(&m->params, "decoder.out.bias");
    cr_assert(weight && bias, "%s: no decoder.out", name);
    for (size_t i = 0; i < weight->size; i++) set_value(weight, i, 3 * ts_value(weight, i));  // outputs that vary more
    double eos = ts_value(bias, TS_EOS);
    static const ts_length_penalty gnmt = {1, 1.0};
    int varied = 0, biases = 0;
    for (int k = 0; k <= 6; k += bias_step, biases++) {
        set_value(bias, TS_EOS, eos - 1.5 + 0.5 * k);
        int v = 0;
        for (int K = 1; K <= 5; K += 2) v |= batch_searches_as_each_alone(m, K, NULL, name);
        v |= batch_searches_as_each_alone(m, 4, &gnmt, name);
        varied += v;
    }
    cr_log_info("%s: %d of %d biases gave outputs of different lengths; %d steps past the early stop", name, varied,
                biases, bound_held);
    cr_assert_gt(varied, 0, "%s: no bias made sentences leave the batch at different steps", name);
    cr_assert_gt(bound_held, 0, "%s: the search never had a reason to stop early", name);
}

static void check_model(ts_seq2seq *m, const char *name) { check_model_biases(m, name, 1); }

Test(search, batched_beam_equals_each_sentence_alone_for_every_recurrent_model, .timeout = 240) {
    for (int c = 0; c < TS_CELL_COUNT; c++)
        for (int a = 0; a < TS_ATTN_COUNT; a++)
            for (int d = 0; d < TS_DECODER_COUNT; d++) {
                ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                                       .emb = 6, .hidden = 8, .attn = (ts_attn_type)a, .decoder = (ts_decoder_type)d,
                                       .bidirectional = (a + d) % 2, .cell = (ts_cell_type)c};
                ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
                cr_assert_not_null(m, "%s", ts_last_error());
                char name[64];
                snprintf(name, sizeof name, "%s %s/%s", ts_cell_name(cfg.cell), ts_attn_name(cfg.attn),
                         ts_decoder_name(cfg.decoder));
                check_model(m, name);
                ts_seq2seq_free(m);
            }
}

Test(search, batched_beam_equals_each_sentence_alone_for_the_transformer, .timeout = 120) {
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = (int)ts_vocab_size(src_vocab),
                           .tgt_vocab = (int)ts_vocab_size(tgt_vocab), .emb = 8, .hidden = 8, .d_model = 8, .heads = 2,
                           .layers = 2, .ff = 12};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    check_model(m, "transformer");
    ts_seq2seq_free(m);
}

// At the length limit the live hypothesis of the highest score is cut, as
// docs/models.md says: the word a candidate would add is not counted, so it
// does not decide which hypothesis is cut (issue 38: the parent of the best
// candidate was cut, and a better live hypothesis lost). Short limits and a
// rare <eos> make the limit where most searches end; each is checked against
// the plain reference above, which states the rule in a few lines.
Test(search, the_length_limit_cuts_the_best_live_hypothesis, .timeout = 120) {
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                           .emb = 6, .hidden = 8, .attn = TS_ATTN_BAHDANAU};
    int cut = 0, one[TS_TOY_MAX_LEN];
    for (int seed = 0; seed < 4; seed++) {
        ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
        cr_assert_not_null(m, "%s", ts_last_error());
        ts_tensor *bias = ts_params_find(&m->params, "decoder.out.bias");
        set_value(bias, TS_EOS, ts_value(bias, TS_EOS) - 4);  // <eos> rare: the limit ends the search
        for (int b = 0; b < N; b++)
            for (int K = 2; K <= 5; K++)
                for (int limit = 1; limit <= 4; limit++) {
                    for (int s = 0; s < len[b]; s++) one[s] = src[s * N + b];
                    ts_hypothesis h;
                    ts_ctx_reset(&ctx);
                    cr_assert_eq(ts_seq2seq_beam(m, &ctx, one, len[b], K, limit, NULL, &h), TS_OK, "%s", ts_last_error());
                    reference_output ref;
                    ts_ctx_reset(&ctx);
                    int held = 0;
                    reference_beam(m, one, len[b], K, limit, NULL, &ref, &held);
                    cr_assert(h.len == ref.len && h.ended == ref.ended && h.score == ref.score &&
                                  !memcmp(h.tokens, ref.tokens, (size_t)h.len * sizeof(int)),
                              "seed %d sentence %d K=%d limit %d: %d tokens (ended %d, score %.17g), the reference %d "
                              "(ended %d, score %.17g)", seed, b, K, limit, h.len, h.ended, h.score, ref.len, ref.ended,
                              ref.score);
                    cut += !h.ended;
                    ts_hypothesis_free(&h);
                }
        ts_seq2seq_free(m);
    }
    cr_assert_gt(cut, 100, "only %d searches ended at the limit", cut);
}

// With 6,000 target words a step of the batch ranks 12 x 5 x 6,000 values,
// over TS_PARALLEL_MIN_ELEMENTS: the sentences' candidates are ranked on two
// threads (models/search.c, expand_part), each sentence's alone as before.
Test(search, batched_beam_ranked_on_two_threads_equals_each_sentence_alone, .timeout = 240) {
    ts_threads_use(2);
    ts_model_config cfgs[] = {
        {.attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU, .emb = 6, .hidden = 8},
        {.attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU, .emb = 6, .hidden = 8, .dtype = TS_F32},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ts_model_config cfg = cfgs[i];
        cfg.src_vocab = (int)ts_vocab_size(src_vocab), cfg.tgt_vocab = 6000;
        ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
        cr_assert_not_null(m, "%s", ts_last_error());
        check_model_biases(m, i ? "float32, 6,000 words" : "float64, 6,000 words", 2);
        ts_seq2seq_free(m);
    }
    ts_threads_use(1);
}

// A float32 model's search reads its logits as floats (no float64 copy):
// the batch still gives each sentence what searching it alone gives.
Test(search, batched_beam_equals_each_sentence_alone_in_float32, .timeout = 120) {
    ts_model_config cfgs[] = {
        {.attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU, .emb = 6, .hidden = 8},
        {.attn = TS_ATTN_GENERAL, .decoder = TS_DECODER_LUONG, .emb = 6, .hidden = 8, .bidirectional = 1},
        {.attn = TS_ATTN_DOT, .decoder = TS_DECODER_LUONG, .emb = 6, .hidden = 8, .bidirectional = 1, .cell = TS_CELL_LSTM},
        {.arch = TS_ARCH_TRANSFORMER, .emb = 8, .hidden = 8, .d_model = 8, .heads = 2, .layers = 2, .ff = 12},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ts_model_config cfg = cfgs[i];
        cfg.src_vocab = (int)ts_vocab_size(src_vocab), cfg.tgt_vocab = (int)ts_vocab_size(tgt_vocab);
        cfg.dtype = TS_F32;
        ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
        cr_assert_not_null(m, "%s", ts_last_error());
        char name[64];
        snprintf(name, sizeof name, "float32 %s %s", ts_arch_name(cfg.arch), ts_attn_name(cfg.attn));
        check_model(m, name);
        // The float64 twin of its weights finds the same outputs, its scores
        // within float32's rounding: the floats are read as floats.
        cfg.dtype = TS_F64;
        ts_seq2seq *twin = ts_seq2seq_new(&cfg, rng);
        cr_assert_not_null(twin, "%s", ts_last_error());
        for (int p = 0; p < m->params.count; p++)
            ts_values_convert(twin->params.items[p]->raw, TS_F64, m->params.items[p]->raw, TS_F32, m->params.items[p]->size);
        int limit[N];
        for (int b = 0; b < N; b++) limit[b] = ts_output_limit(len[b]);
        ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
        ts_hypothesis h32[N], h64[N];
        for (int K = 1; K <= 3; K += 2) {
            ts_ctx_reset(&ctx);
            int rc = K == 1 ? ts_seq2seq_greedy(m, &ctx, &bv, ts_output_limit(S), h32)
                            : ts_seq2seq_beam_batch(m, &ctx, &bv, K, limit, NULL, h32);
            cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
            ts_ctx_reset(&ctx);
            rc = K == 1 ? ts_seq2seq_greedy(twin, &ctx, &bv, ts_output_limit(S), h64)
                        : ts_seq2seq_beam_batch(twin, &ctx, &bv, K, limit, NULL, h64);
            cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
            for (int b = 0; b < N; b++) {
                cr_assert_eq(h32[b].len, h64[b].len, "%s K=%d sentence %d", name, K, b);
                cr_assert_arr_eq(h32[b].tokens, h64[b].tokens, (size_t)h64[b].len * sizeof(int), "%s K=%d", name, K);
                if (K > 1) assert_allclose(&h32[b].score, &h64[b].score, 1, 1e-5, 1e-5);
                ts_hypothesis_free(&h32[b]);
                ts_hypothesis_free(&h64[b]);
            }
        }
        ts_seq2seq_free(twin);
        ts_seq2seq_free(m);
    }
}

// A caller that keeps the scratch arenas (translate, evaluate: batch after
// batch) gets them back in ctx after each search, bigger or reused, and the
// same outputs as searches that make and free their own.
Test(search, kept_scratch_arenas_give_the_same_outputs) {
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                           .emb = 6, .hidden = 8, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    int limit[N];
    for (int b = 0; b < N; b++) limit[b] = ts_output_limit(len[b]);
    ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
    ts_hypothesis fresh[2][N], kept[2][N];
    for (int keep = 0; keep < 2; keep++) {
        ctx.keep_scratch = keep;
        ts_hypothesis (*out)[N] = keep ? kept : fresh;
        for (int run = 0; run < 2; run++) {  // the second run of a kept ctx reuses the first's arenas
            ts_ctx_reset(&ctx);
            int rc = run == 0 ? ts_seq2seq_beam_batch(m, &ctx, &bv, 3, limit, NULL, out[run])
                              : ts_seq2seq_greedy(m, &ctx, &bv, ts_output_limit(S), out[run]);
            cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
            for (int i = 0; i < 3; i++)
                cr_assert_eq(ctx.scratch[i] != NULL, keep, "keep %d: step arena %d %s", keep, i,
                             keep ? "not kept" : "left behind");
        }
    }
    for (int run = 0; run < 2; run++)
        for (int b = 0; b < N; b++) {
            cr_assert_eq(kept[run][b].len, fresh[run][b].len, "run %d sentence %d", run, b);
            cr_assert_arr_eq(kept[run][b].tokens, fresh[run][b].tokens, (size_t)fresh[run][b].len * sizeof(int));
            cr_assert_eq(kept[run][b].score, fresh[run][b].score);
            ts_hypothesis_free(&kept[run][b]);
            ts_hypothesis_free(&fresh[run][b]);
        }
    ts_ctx_free_scratch(&ctx);
    for (int i = 0; i < TS_SCRATCH_ARENAS; i++) cr_assert_null(ctx.scratch[i]);
    ts_seq2seq_free(m);
}

// Every beam step makes its logits (R, V) in step arena 0, and only the
// reordered states go to arenas 1 and 2 in turn: the logits' pages are
// touched once per search, not in two arenas alternately (docs/performance.md,
// "Beam search: one arena for the logits").
Test(search, beam_steps_make_their_logits_in_one_arena) {
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                           .emb = 6, .hidden = 8, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    enum { K = 3 };
    int limit[N];
    for (int b = 0; b < N; b++) limit[b] = ts_output_limit(len[b]);
    ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
    ts_hypothesis out[N];
    ctx.keep_scratch = 1;
    cr_assert_eq(ts_seq2seq_beam_batch(m, &ctx, &bv, K, limit, NULL, out), TS_OK, "%s", ts_last_error());
    for (int b = 0; b < N; b++) ts_hypothesis_free(&out[b]);
    // The second step decodes N K rows: its logits alone take this much.
    size_t logits = (size_t)N * K * (size_t)cfg.tgt_vocab * sizeof(double);
    cr_assert_geq(ts_arena_peak(ctx.scratch[0]), logits, "the steps' arena held %zu bytes, under the logits' %zu",
                  ts_arena_peak(ctx.scratch[0]), logits);
    for (int i = 1; i < 3; i++)
        cr_assert_lt(ts_arena_peak(ctx.scratch[i]), logits, "reorder arena %d held %zu bytes: a step's logits (%zu) went there",
                     i, ts_arena_peak(ctx.scratch[i]), logits);
    ts_ctx_free_scratch(&ctx);
    ts_seq2seq_free(m);
}

// A batch whose sources are a column longer asks for a little more scratch:
// the kept arenas serve it as they are. Each search used to make new ones
// when its first guess outgrew theirs by a few bytes, and to fault every
// page in again (eval batches differ in S).
Test(search, kept_scratch_arenas_serve_a_slightly_longer_batch) {
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                           .emb = 6, .hidden = 8, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    int limit[N], longer[(TS_TOY_MAX_LEN + 1) * N];
    for (int b = 0; b < N; b++) limit[b] = ts_output_limit(len[b]);
    memcpy(longer, src, (size_t)S * N * sizeof *src);
    for (int b = 0; b < N; b++) longer[S * N + b] = TS_PAD;
    ctx.keep_scratch = 1;
    for (int greedy = 0; greedy < 2; greedy++) {
        ts_arena *first[TS_SCRATCH_ARENAS];
        for (int wider = 0; wider < 2; wider++) {
            ts_batch_view bv = {.B = N, .S = S + wider, .src = wider ? longer : src, .src_len = len};
            ts_hypothesis out[N];
            ts_ctx_reset(&ctx);
            int rc = greedy ? ts_seq2seq_greedy(m, &ctx, &bv, ts_output_limit(S), out)
                            : ts_seq2seq_beam_batch(m, &ctx, &bv, 3, limit, NULL, out);
            cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
            for (int b = 0; b < N; b++) ts_hypothesis_free(&out[b]);
            for (int i = 0; i < 3; i++) {
                if (!wider) first[i] = ctx.scratch[i];
                cr_assert(ctx.scratch[i] && ctx.scratch[i] == first[i],
                          "%s: step arena %d was made again for a batch of %d source columns instead of %d",
                          greedy ? "greedy" : "beam", i, S + 1, S);
            }
        }
    }
    ts_ctx_free_scratch(&ctx);
    ts_seq2seq_free(m);
}

// Bad arguments are refused before anything is decoded, naming the sentence.
Test(search, batched_beam_refuses_bad_limits_and_lengths) {
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src_vocab), .tgt_vocab = (int)ts_vocab_size(tgt_vocab),
                           .emb = 4, .hidden = 4, .attn = TS_ATTN_DOT, .decoder = TS_DECODER_LUONG};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    int limit[N];
    for (int b = 0; b < N; b++) limit[b] = 10;
    limit[3] = 0;
    ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
    ts_hypothesis out[N];
    cr_assert_eq(ts_seq2seq_beam_batch(m, &ctx, &bv, 5, limit, NULL, out), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "sentence 4"), "%s", ts_last_error());
    limit[3] = 10;
    cr_assert_eq(ts_seq2seq_beam_batch(m, &ctx, &bv, 0, limit, NULL, out), TS_ERR_ARG);
    cr_assert_eq(ts_seq2seq_beam_batch(m, &ctx, &bv, 5, limit, &(ts_length_penalty){1, -1.0}, out), TS_ERR_ARG);
    ts_seq2seq_free(m);
}

// One step from state after reorder(rows, n, group): its logits and
// attention rows copied out (n V and n S values of the model's dtype / double).
static void step_after(ts_seq2seq *m, const void *state, const int *rows, int n, int group, const int *tokens,
                       void **next, ts_tensor **logits, ts_tensor **weights) {
    void *moved = m->kind->reorder(m, &ctx, state, rows, n, group);
    cr_assert_not_null(moved, "%s", ts_last_error());
    *logits = m->kind->step(m, &ctx, moved, tokens, n, next, weights);
    cr_assert_not_null(*logits, "%s", ts_last_error());
}

// Beam search keeps what was computed from a source once per sentence, its
// K rows sharing it (reorder's group K), where it kept a copy per row (group
// 1): the same arithmetic, so the same bits. From one state of the batch of
// N sentences of lengths 3..25, rows widened to K per sentence, moved within
// their blocks, then with sentences dropped, each way: logits and attention
// rows equal to the bit, every GRU configuration and the Transformer, both
// dtypes.
Test(search, rows_sharing_their_source_decode_as_rows_with_copies, .timeout = 60) {
    enum { K = 3 };
    ts_model_config cfgs[TS_CELL_COUNT * TS_ATTN_COUNT * TS_DECODER_COUNT + 1];
    int n_cfgs = 0;
    for (int c = 0; c < TS_CELL_COUNT; c++)
        for (int a = 0; a < TS_ATTN_COUNT; a++)
            for (int d = 0; d < TS_DECODER_COUNT; d++)
                cfgs[n_cfgs++] = (ts_model_config){.emb = 6, .hidden = 8, .attn = (ts_attn_type)a, .decoder = (ts_decoder_type)d,
                                                   .bidirectional = (a + d) % 2, .cell = (ts_cell_type)c};
    cfgs[n_cfgs++] = (ts_model_config){.arch = TS_ARCH_TRANSFORMER, .emb = 8, .hidden = 8, .d_model = 8, .heads = 2,
                                       .layers = 2, .ff = 12};
    int widen[N * K], within[N * K], keep[N * K], tokens[N * K], kept = 0;
    for (int r = 0; r < N * K; r++) {
        widen[r] = r / K;                                // sentence r / K's one row, K times
        within[r] = r / K * K + (r % K + 1 + r / K) % K;  // a rotation inside each block
        tokens[r] = TS_EOS + 1 + (r * 7) % ((int)ts_vocab_size(tgt_vocab) - TS_EOS - 1);
        if ((r / K) % 3 != 1) keep[kept++] = r;  // every third sentence leaves
    }
    for (int i = 0; i < 2 * n_cfgs; i++) {
        ts_model_config cfg = cfgs[i / 2];
        cfg.src_vocab = (int)ts_vocab_size(src_vocab), cfg.tgt_vocab = (int)ts_vocab_size(tgt_vocab);
        cfg.dtype = i % 2 ? TS_F32 : TS_F64;
        ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
        cr_assert_not_null(m, "%s", ts_last_error());
        char name[80];
        snprintf(name, sizeof name, "%s %s/%s %s", ts_arch_name(cfg.arch), ts_attn_name(cfg.attn),
                 ts_decoder_name(cfg.decoder), ts_dtype_name(cfg.dtype));
        ts_ctx_reset(&ctx);
        int grad = ts_set_grad_enabled(&ctx, 0);
        ctx.dtype = cfg.dtype;
        ts_batch_view bv = {.B = N, .S = S, .src = src, .src_len = len};
        int sos[N];
        for (int b = 0; b < N; b++) sos[b] = TS_SOS;
        void *state = m->kind->start(m, &ctx, m->kind->encode(m, &ctx, &bv), N, 20), *first;
        ts_tensor *w;
        cr_assert_not_null(m->kind->step(m, &ctx, state, sos, N, &first, &w), "%s", ts_last_error());
        void *shared = first, *copies = first;
        // Three moves, each made both ways from the last step's states.
        const int *moves[3] = {widen, within, keep}, sizes[3] = {N * K, N * K, kept};
        for (int k = 0; k < 3; k++) {
            int group = k == 1 ? 0 : K, rows = sizes[k];
            ts_tensor *l_shared, *w_shared, *l_copies, *w_copies;
            step_after(m, shared, moves[k], rows, group, tokens, &shared, &l_shared, &w_shared);
            step_after(m, copies, moves[k], rows, group ? 1 : 0, tokens, &copies, &l_copies, &w_copies);
            cr_assert_arr_eq(l_shared->raw, l_copies->raw, ts_tensor_bytes(l_copies), "%s, move %d: logits", name, k);
            cr_assert_eq(w_shared == NULL, w_copies == NULL, "%s", name);
            if (w_shared)
                cr_assert_arr_eq(w_shared->raw, w_copies->raw, ts_tensor_bytes(w_copies), "%s, move %d: attention", name, k);
        }
        // A run of rows of two sentences cannot share one source: refused.
        cr_assert_null(m->kind->reorder(m, &ctx, shared, (int[]){0, 1, K}, K, K), "%s", name);
        cr_assert(strstr(ts_last_error(), "one run"), "%s: %s", name, ts_last_error());
        ctx.status = TS_OK;
        ts_set_grad_enabled(&ctx, grad);
        ts_seq2seq_free(m);
    }
    ts_ctx_reset(&ctx);
}
