// A model loaded for use with its arena and context (infer/session.h): what
// translate, attend, eval and the C API share.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "infer/session.h"

static char *ckpt_path;

// A small word model saved where ts_session_open can map it.
static void setup(void) {
    ts_corpus *c = ts_corpus_new();
    cr_assert(c);
    cr_assert_eq(ts_corpus_add(c, "le chat dort .", "the cat sleeps .", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "le chien mange", "the dog eats", NULL, 0), TS_OK);
    ts_translator t = {.max_len = 10};
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &t.src_vocab), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &t.tgt_vocab), TS_OK);
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(t.src_vocab), .tgt_vocab = (int)ts_vocab_size(t.tgt_vocab),
                           .emb = 5, .hidden = 6, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_LUONG};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    t.model = ts_seq2seq_new(&cfg, rng);
    gsl_rng_free(rng);
    cr_assert(t.model, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert(ck);
    cr_assert_eq(ts_model_to_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    char *dir = test_tmpdir();
    ckpt_path = malloc(strlen(dir) + 16);
    sprintf(ckpt_path, "%s/model.ckpt", dir);
    cr_assert_eq(ts_ckpt_save(ck, ckpt_path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_translator_free(&t);
    ts_corpus_free(c);
    free(dir);
}

static void teardown(void) { free(ckpt_path); }

TestSuite(session, .init = setup, .fini = teardown);

Test(session, opens_a_checkpoint_and_attends_as_translate_and_label_do) {
    ts_session s;
    cr_assert_eq(ts_session_open(&s, ckpt_path), TS_OK, "%s", ts_last_error());
    cr_assert(s.t.model && s.t.weights, "the weights stay in the file's mapping");
    cr_assert(s.ctx.arena);
    ts_attended a;
    cr_assert_eq(ts_session_attend(&s, "le chat  dort .", 3, &a), TS_OK, "%s", ts_last_error());
    cr_assert_str_eq(a.source, "le chat dort .");
    cr_assert_eq(a.S, 4);
    cr_assert_str_eq(a.labels.source[1], "chat");
    cr_assert_str_eq(a.labels.target[a.hyp.len], a.hyp.ended ? "<eos>" : "<cut>");
    // The same as the two calls it stands for.
    ts_ctx ctx;
    ts_ctx_init(&ctx, s.ctx.arena);
    ts_hypothesis h;
    char *source;
    int S;
    cr_assert_eq(ts_translate_text(&s.t, &ctx, "le chat  dort .", 3, &h, &source, &S), TS_OK);
    cr_assert_eq(h.len, a.hyp.len);
    cr_assert_eq(memcmp(h.tokens, a.hyp.tokens, (size_t)h.len * sizeof *h.tokens), 0);
    cr_assert_eq(memcmp(h.attention, a.hyp.attention, (size_t)(h.len + 1) * (size_t)S * sizeof(double)), 0);
    ts_hypothesis_free(&h);
    free(source);
    ts_attended_free(&a);
    cr_assert_null(a.source);
    cr_assert_eq(ts_session_attend(&s, "   ", 1, &a), TS_ERR_FORMAT, "nothing to translate");
    cr_assert_null(a.labels.source);
    ts_session_free(&s);
    cr_assert_null(s.t.model);
}

Test(session, bounds_the_search_as_every_front_end_does) {
    ts_session s;
    cr_assert_eq(ts_session_open(&s, ckpt_path), TS_OK, "%s", ts_last_error());
    int beam = 1;
    cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){0, 0.0}), TS_OK);
    cr_assert_eq(beam, 1, "1 is greedy");
    beam = TS_BEAM_MAX;
    cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){1, 0.6}), TS_OK);
    cr_assert_eq(beam, TS_BEAM_MAX);
    cr_assert(s.t.length_penalty.gnmt && s.t.length_penalty.alpha == 0.6);
    beam = 0;
    cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){1, 0.6}), TS_OK);
    cr_assert_eq(beam, TS_BEAM_DEFAULT, "0 asks for the default width, as everywhere");
    int bad[] = {-1, TS_BEAM_MAX + 1};
    for (int i = 0; i < 2; i++) {
        beam = bad[i];
        cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){0, 0.0}), TS_ERR_ARG);
        char want[64];
        snprintf(want, sizeof want, "beam %d is outside 0..%d", bad[i], TS_BEAM_MAX);
        cr_assert(strstr(ts_last_error(), want), "%s", ts_last_error());
        cr_assert_eq(beam, bad[i], "a refused width stays as it was");
    }
    beam = 5;
    cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){1, 100.5}), TS_ERR_ARG);
    cr_assert_eq(ts_session_search(&s, &beam, (ts_length_penalty){1, NAN}), TS_ERR_ARG);
    cr_assert(s.t.length_penalty.gnmt && s.t.length_penalty.alpha == 0.6, "a refused setting changes nothing");
    ts_session_free(&s);
}

// A call's context is new whatever the last one left, but a command's kept
// scratch arenas stay.
Test(session, each_call_gets_a_fresh_context_keeping_the_scratch_arenas) {
    ts_session s;
    cr_assert_eq(ts_session_open(&s, ckpt_path), TS_OK, "%s", ts_last_error());
    s.ctx.keep_scratch = 1;
    ts_arena *kept = ts_arena_new(4096);
    s.ctx.scratch[0] = kept;
    s.ctx.status = TS_ERR_SHAPE;
    s.ctx.grad_enabled = 0;
    s.ctx.dtype = TS_F32;
    ts_ctx *ctx = ts_session_ctx(&s);
    cr_assert_eq(ctx, &s.ctx);
    cr_assert_eq(ctx->status, TS_OK);
    cr_assert_eq(ctx->grad_enabled, 1);
    cr_assert_eq(ctx->dtype, TS_F64);
    cr_assert_eq(ctx->scratch[0], kept);
    cr_assert_eq(ctx->keep_scratch, 1);
    ts_session_free(&s);  // frees the kept arena too
}

Test(session, a_missing_checkpoint_is_an_error_naming_it) {
    ts_session s;
    char path[4096];
    snprintf(path, sizeof path, "%s.missing", ckpt_path);
    cr_assert_neq(ts_session_open(&s, path), TS_OK);
    cr_assert(strstr(ts_last_error(), "model.ckpt.missing"), "%s", ts_last_error());
    cr_assert_null(s.t.model);
    cr_assert_null(s.ctx.arena);
    ts_session_free(&s);  // a failed open leaves nothing to free, and freeing it again is harmless
}
