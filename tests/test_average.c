// Checkpoint averaging (infer/average): the mean of every parameter, and
// clear refusals of checkpoints of another model or other vocabularies.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "infer/average.h"
#include "testutil.h"

static const char *const source_words[] = {"<pad>", "<sos>", "<eos>", "<unk>", "le", "chat"};
static const char *const target_words[] = {"<pad>", "<sos>", "<eos>", "<unk>", "the", "cat"};

// The dtype write_model's models have (each test runs in its own process).
static int model_dtype = TS_F64;

// Writes a checkpoint of a fresh model (seed picks the values) to dir/name.
static char *write_model(const char *dir, const char *name, unsigned long seed, int hidden, const char *last_word) {
    const char *tgt[6];
    memcpy(tgt, target_words, sizeof tgt);
    tgt[5] = last_word;
    ts_vocab *sv, *tv;
    cr_assert_eq(ts_vocab_from_words(source_words, 6, &sv), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_vocab_from_words(tgt, 6, &tv), TS_OK, "%s", ts_last_error());
    ts_model_config cfg = {.src_vocab = 6, .tgt_vocab = 6, .emb = 3, .hidden = hidden, .attn = TS_ATTN_GENERAL,
                           .decoder = TS_DECODER_LUONG, .bidirectional = 1, .dtype = model_dtype};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = sv, .tgt_vocab = tv, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(sv);
    ts_vocab_free(tv);
    return path;
}

Test(average, every_parameter_is_the_mean_of_the_files) {
    char *dir = test_tmpdir();
    char *paths[3] = {write_model(dir, "a.ckpt", 1, 4, "cat"), write_model(dir, "b.ckpt", 2, 4, "cat"),
                      write_model(dir, "c.ckpt", 3, 4, "cat")};
    ts_translator one[3], mean;
    for (int k = 0; k < 3; k++) cr_assert_eq(ts_translator_load(paths[k], &one[k]), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_average_models((const char *const *)paths, 3, &mean), TS_OK, "%s", ts_last_error());
    cr_assert_eq(mean.model->params.count, one[0].model->params.count);
    for (int i = 0; i < mean.model->params.count; i++) {
        const ts_tensor *p = mean.model->params.items[i];
        for (size_t j = 0; j < p->size; j++) {
            double want = (one[0].model->params.items[i]->data[j] + one[1].model->params.items[i]->data[j] +
                           one[2].model->params.items[i]->data[j]) / 3;
            cr_assert(p->data[j] == want, "%s[%zu]: %.17g, want %.17g", p->name, j, p->data[j], want);
        }
    }
    // One file averages to itself, bit for bit.
    ts_translator self;
    cr_assert_eq(ts_average_models((const char *const *)paths, 1, &self), TS_OK);
    for (int i = 0; i < self.model->params.count; i++)
        cr_assert(memcmp(self.model->params.items[i]->data, one[0].model->params.items[i]->data,
                         self.model->params.items[i]->size * sizeof(double)) == 0);
    ts_translator_free(&self);
    ts_translator_free(&mean);
    for (int k = 0; k < 3; k++) {
        ts_translator_free(&one[k]);
        free(paths[k]);
    }
    free(dir);
}

Test(average, another_model_or_other_words_are_refused_naming_the_file) {
    char *dir = test_tmpdir();
    char *a = write_model(dir, "a.ckpt", 1, 4, "cat"), *wide = write_model(dir, "wide.ckpt", 2, 5, "cat"),
         *dog = write_model(dir, "dog.ckpt", 3, 4, "dog");
    ts_translator out;
    const char *mixed[2] = {a, wide};
    cr_assert_eq(ts_average_models(mixed, 2, &out), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), wide) && strstr(ts_last_error(), "hidden 5"), "%s", ts_last_error());
    cr_assert_null(out.model);
    const char *words[2] = {a, dog};
    cr_assert_eq(ts_average_models(words, 2, &out), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "target word 5 is 'dog'") && strstr(ts_last_error(), "'cat'"), "%s",
              ts_last_error());
    const char *missing[2] = {a, "/nonexistent/x.ckpt"};
    cr_assert_neq(ts_average_models(missing, 2, &out), TS_OK);
    cr_assert(strstr(ts_last_error(), "/nonexistent/x.ckpt"), "%s", ts_last_error());
    cr_assert_eq(ts_average_models(missing, 0, &out), TS_ERR_ARG);
    free(a);
    free(wide);
    free(dog);
    free(dir);
}

// float32 models average in float64 and come back float32: the mean of two
// floats rounded once; a float32 and a float64 checkpoint are refused.
Test(average, float32_models_average_to_their_rounded_mean) {
    char *dir = test_tmpdir();
    char *f64 = write_model(dir, "f64.ckpt", 1, 4, "cat");
    model_dtype = TS_F32;
    char *paths[2] = {write_model(dir, "a.ckpt", 1, 4, "cat"), write_model(dir, "b.ckpt", 2, 4, "cat")};
    ts_translator one[2], mean;
    for (int k = 0; k < 2; k++) cr_assert_eq(ts_translator_load(paths[k], &one[k]), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_average_models((const char *const *)paths, 2, &mean), TS_OK, "%s", ts_last_error());
    for (int i = 0; i < mean.model->params.count; i++) {
        const ts_tensor *p = mean.model->params.items[i];
        cr_assert_eq(p->dtype, TS_F32, "%s", p->name);
        for (size_t j = 0; j < p->size; j++) {
            float want = (float)(((double)one[0].model->params.items[i]->data_f32[j] +
                                  one[1].model->params.items[i]->data_f32[j]) / 2);
            cr_assert(p->data_f32[j] == want, "%s[%zu]: %.9g, want %.9g", p->name, j, p->data_f32[j], want);
        }
    }
    ts_translator mixed_out;
    const char *mixed[2] = {f64, paths[0]};
    cr_assert_eq(ts_average_models(mixed, 2, &mixed_out), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "has dtype float32"), "%s", ts_last_error());
    ts_translator_free(&mean);
    for (int k = 0; k < 2; k++) {
        ts_translator_free(&one[k]);
        free(paths[k]);
    }
    free(f64);
    free(dir);
}
