// The shared libtinyseq's C API (api/tinyseq.h) as a foreign caller sees it:
// linked against libtinyseq.so alone, every result freed. In the sanitizer
// build LeakSanitizer checks each test's process, which the Python tests
// cannot have (docs/python.md): this is where a leak in api/ shows.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tinyseq.h"
#include "models/search.h"  // TS_BEAM_DEFAULT
#include "testutil.h"

TestSuite(api);

static void count_line(const char *line, int err, void *user) {
    (void)line;
    (void)err;
    (*(int *)user)++;
}

// A tiny model trained through the API into dir/run; returns dir/run/best.ckpt (malloc'd).
static char *train_tiny(const char *dir) {
    char out[4096];
    snprintf(out, sizeof out, "%s/run", dir);
    const char *keys[] = {"out", "toy_pairs", "epochs", "emb", "hidden", "beam", "show", "threads"};
    const char *values[] = {out, "200", "1", "4", "4", "0", "0", "1"};
    int lines = 0, stopped = -1;
    long steps = 0;
    int rc = tinyseq_train(keys, values, 8, count_line, &lines, &stopped, &steps);
    cr_assert_eq(rc, TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(lines > 3 && stopped == 0 && steps > 0, "lines %d, stopped %d, steps %ld", lines, stopped, steps);
    char *path = malloc(strlen(out) + 16);
    sprintf(path, "%s/best.ckpt", out);
    return path;
}

Test(api, trains_loads_translates_attends_evaluates_and_frees_everything) {
    char *dir = test_tmpdir(), *ckpt = train_tiny(dir);
    tinyseq_model *m;
    cr_assert_eq(tinyseq_load(ckpt, &m), TINYSEQ_OK, "%s", tinyseq_last_error());
    const char *texts[] = {"the cat sees the dog .", "my brother sells old books ."};
    char *out, *json;
    cr_assert_eq(tinyseq_translate(m, texts, 2, 0, -1, &out), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(strchr(out, '\n'), "two lines: %s", out);
    char *out_default;  // beam 0 is the default width, as everywhere (models/search.h: ts_beam_width)
    cr_assert_eq(tinyseq_translate(m, texts, 2, TS_BEAM_DEFAULT, -1, &out_default), TINYSEQ_OK);
    cr_assert_str_eq(out, out_default);
    tinyseq_free(out_default);
    tinyseq_free(out);
    cr_assert_eq(tinyseq_attend(m, texts[0], 3, 0.6, 0, &json), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(strstr(json, "\"weights\"") && strstr(json, "\"source\": [\"the\", \"cat\""), "%s", json);
    char *merged;  // a word model's units are words already: words changes nothing
    cr_assert_eq(tinyseq_attend(m, texts[0], 3, 0.6, 1, &merged), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert_str_eq(merged, json);
    tinyseq_free(merged);
    tinyseq_free(json);
    cr_assert_eq(tinyseq_info(m, &json), TINYSEQ_OK);
    cr_assert(strstr(json, "\"architecture\": \"gru\"") && strstr(json, "\"model.hidden\": \"4\""), "%s", json);
    const char *once = strstr(json, "\"architecture\":");
    cr_assert(!strstr(once + 1, "\"architecture\":"), "the model's architecture is one key, not two:\n%s", json);
    tinyseq_free(json);
    char tsv[4096], align[4096];
    snprintf(tsv, sizeof tsv, "%s/test.tsv", dir);
    snprintf(align, sizeof align, "%s/test.align", dir);
    cr_assert_eq(tinyseq_toy_corpus(20, 3, tsv, align), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert_eq(tinyseq_eval(m, tsv, align, 1, -1, &json), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(strstr(json, "\"pairs\": 20") && !strstr(json, "\"aer\": null"), "%s", json);
    tinyseq_free(json);
    char *json_default;  // eval's beam 0 too (the library's evaluation once read it as greedy)
    cr_assert_eq(tinyseq_eval(m, tsv, NULL, 0, -1, &json), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert_eq(tinyseq_eval(m, tsv, NULL, TS_BEAM_DEFAULT, -1, &json_default), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert_str_eq(json, json_default);
    tinyseq_free(json_default);
    tinyseq_free(json);
    // Bad input is a status and a message, never a crash.
    const char *empty[] = {"the cat .", " "};
    cr_assert_eq(tinyseq_translate(m, empty, 2, 1, -1, &out), -6);  // TS_ERR_FORMAT
    cr_assert(strstr(tinyseq_last_error(), "empty"), "%s", tinyseq_last_error());
    cr_assert_eq(tinyseq_translate(m, texts, 1, 1001, -1, &out), -4);  // TS_ERR_ARG
    cr_assert_eq(tinyseq_eval(m, "/nonexistent/x.tsv", NULL, 1, -1, &json), -5);  // TS_ERR_IO
    cr_assert(strstr(tinyseq_last_error(), "/nonexistent/x.tsv"), "%s", tinyseq_last_error());
    tinyseq_model_free(m);
    tinyseq_model_free(NULL);
    free(ckpt);
    free(dir);
}

// The rows of the "weights" matrix of an attend JSON: each row's sum into
// sums[], the row count returned.
static int weight_rows(const char *json, double *sums, int max) {
    const char *at = strstr(json, "\"weights\": [");
    cr_assert(at, "%s", json);
    at += strlen("\"weights\": [");
    int rows = 0;
    while (*at == '[' || *at == ',' || *at == ' ' || *at == '\n') {
        if (*at != '[') {
            at++;
            continue;
        }
        cr_assert(rows < max);
        char *end;
        sums[rows] = 0;
        for (at++; *at != ']'; at = end + (*end == ',')) sums[rows] += strtod(at, &end);
        rows++;
        at++;
    }
    return rows;
}

// words: a subword model's attention over pieces merged into words, as
// `attend --words` merges it: the source's words as columns, each row still
// a distribution; without it, the pieces.
Test(api, attend_merges_a_subword_models_pieces_into_words) {
    char *dir = test_tmpdir(), out[4096];
    snprintf(out, sizeof out, "%s/run", dir);
    const char *keys[] = {"out", "toy_pairs", "epochs", "emb", "hidden", "beam", "show", "threads", "subword"};
    const char *values[] = {out, "300", "1", "8", "8", "0", "0", "1", "300"};
    int lines = 0, stopped = -1;
    long steps = 0;
    int rc = tinyseq_train(keys, values, 9, count_line, &lines, &stopped, &steps);
    if (rc != TINYSEQ_OK && strstr(tinyseq_last_error(), "SentencePiece")) cr_skip_test("a build without SentencePiece");
    cr_assert_eq(rc, TINYSEQ_OK, "%s", tinyseq_last_error());
    char ckpt[4200];
    snprintf(ckpt, sizeof ckpt, "%s/best.ckpt", out);
    tinyseq_model *m;
    cr_assert_eq(tinyseq_load(ckpt, &m), TINYSEQ_OK, "%s", tinyseq_last_error());
    char *pieces, *words;
    const char *text = "the heavy cats visit some blue markets .";
    cr_assert_eq(tinyseq_attend(m, text, 1, -1, 0, &pieces), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert_eq(tinyseq_attend(m, text, 1, -1, 1, &words), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(strstr(words, "\"source\": [\"the\", \"heavy\", \"cats\", \"visit\", \"some\", \"blue\", \"markets\", \".\"]"),
              "%s", words);
    cr_assert_null(strstr(pieces, "\"heavy\""), "a 300-piece model spells 'heavy' in pieces: %s", pieces);
    double sums[512];
    int n_pieces = weight_rows(pieces, sums, 512), n_words = weight_rows(words, sums, 512);
    cr_assert(n_words >= 1 && n_words <= n_pieces, "%d word rows, %d piece rows", n_words, n_pieces);
    // float32 weights (the default dtype): a row sums to 1 within their rounding
    for (int r = 0; r < n_words; r++) cr_assert(fabs(sums[r] - 1) < 1e-6, "row %d sums to %.17g", r, sums[r]);
    tinyseq_free(pieces);
    tinyseq_free(words);
    tinyseq_model_free(m);
    free(dir);
}

Test(api, a_missing_or_corrupt_checkpoint_is_an_error_naming_it) {
    tinyseq_model *m = (tinyseq_model *)1;
    cr_assert_eq(tinyseq_load("/nonexistent/model.ckpt", &m), -5);
    cr_assert_null(m);
    cr_assert(strstr(tinyseq_last_error(), "/nonexistent/model.ckpt"), "%s", tinyseq_last_error());
    char *dir = test_tmpdir(), *bad = test_write_file(dir, "bad.ckpt", "not a checkpoint", 16);
    cr_assert_eq(tinyseq_load(bad, &m), -6);  // TS_ERR_FORMAT
    cr_assert(strstr(tinyseq_last_error(), "bad.ckpt"), "%s", tinyseq_last_error());
    free(bad);
    free(dir);
}

Test(api, bad_train_options_name_themselves) {
    const char *keys[] = {"epochs"}, *zero[] = {"0"}, *bogus[] = {"bogus"};
    cr_assert_eq(tinyseq_train(keys, zero, 1, NULL, NULL, NULL, NULL), -4);
    cr_assert(strstr(tinyseq_last_error(), "epochs is 0"), "%s", tinyseq_last_error());
    cr_assert_eq(tinyseq_train(bogus, zero, 1, NULL, NULL, NULL, NULL), -4);
    cr_assert(strstr(tinyseq_last_error(), "unknown option 'bogus'"), "%s", tinyseq_last_error());
}

Test(api, ops_give_the_walkthroughs_numbers_and_gradients) {
    const double h[3] = {5, 1, 20}, a[12] = {3, 12, 45, 59, 2, 5, 1, 43, 5, 4, 3, 45.3};
    tinyseq_array in[2] = {{h, 1, {3}}, {a, 2, {4, 3}}};
    double scores[4], weights[4], d_scores[4], dout[4] = {0, 0, 0, 1};
    cr_assert_eq(tinyseq_op("dot_scores", in, 2, scores, 4, NULL, NULL), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(scores[0] == 927 && scores[3] == 929);
    tinyseq_array s = {scores, 1, {4}};
    double *din[1] = {d_scores};
    cr_assert_eq(tinyseq_op("softmax", &s, 1, weights, 4, dout, din), TINYSEQ_OK, "%s", tinyseq_last_error());
    cr_assert(weights[0] > 0.1192 && weights[0] < 0.1193 && weights[3] > 0.8807 && weights[3] < 0.8809);
    // d w_4 / d e_4 = w_4 (1 - w_4).
    cr_assert(fabs(d_scores[3] - weights[3] * (1 - weights[3])) < 1e-15, "%.17g", d_scores[3]);
    int ndim, dims[3];
    cr_assert_eq(tinyseq_op_shape("context", (tinyseq_array[]){{weights, 1, {4}}, {a, 2, {4, 3}}}, 2, &ndim, dims),
                 TINYSEQ_OK);
    cr_assert(ndim == 1 && dims[0] == 3);
    cr_assert_eq(tinyseq_op("dot_scores", (tinyseq_array[]){{h, 1, {2}}, {a, 2, {4, 3}}}, 2, scores, 4, NULL, NULL),
                 -3);  // TS_ERR_SHAPE
    cr_assert_eq(tinyseq_op("context", in, 2, scores, 2, NULL, NULL), -3, "room for 2 values, not 3");
}
