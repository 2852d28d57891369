// tinyseq info, run as a program: on a checkpoint written by tinyseq train,
// on inference-only ones, on hostile files and with bad flags.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "ckpt/ckpt.h"
#include "infer/load.h"

static char *dir;

static void setup(void) {
    dir = test_tmpdir();
}

static void teardown(void) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_info, .init = setup, .fini = teardown);


// dir/name, malloc'd.
static char *in_dir(const char *name) {
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    return path;
}

// The dtype make_checkpoint's models have (each test runs in its own process).
static int model_dtype = TS_F64;

// Saves an inference-only checkpoint (model, vocabularies, no training state)
// of a random luong/general model of model_dtype, plus the extra header entries key=value
// given as pairs (NULL-terminated); returns its path.
static char *make_checkpoint(const char *name, ...) {
    ts_corpus *c = ts_corpus_new();
    cr_assert_eq(ts_corpus_add(c, "le chat dort .", "the cat sleeps .", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "le chien mange", "the dog eats", NULL, 0), TS_OK);
    ts_vocab *src, *tgt;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &src), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &tgt), TS_OK);
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src), .tgt_vocab = (int)ts_vocab_size(tgt), .emb = 5,
                           .hidden = 6, .attn = TS_ATTN_GENERAL, .decoder = TS_DECODER_LUONG, .bidirectional = 1,
                           .dtype = model_dtype};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 12};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    va_list ap;
    va_start(ap, name);
    for (const char *key; (key = va_arg(ap, const char *));)
        cr_assert_eq(ts_ckpt_set(ck, key, va_arg(ap, const char *)), TS_OK, "%s", ts_last_error());
    va_end(ap);
    char *path = in_dir(name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    ts_corpus_free(c);
    return path;
}

// A one-epoch run of the real trainer on a tiny toy corpus: its last.ckpt.
static char *train_checkpoint(void) {
    char *out, *run_dir = in_dir("run");
    int rc = test_runf(&out, "'%s' train --toy-pairs 200 --dev 20 --emb 4 --hidden 5 --epochs 1 --threads 1 --out '%s'",
                 TS_PROGRAM, run_dir);
    cr_assert_eq(rc, 0, "train: exit %d\n%s", rc, out);
    free(out);
    char *path = malloc(strlen(run_dir) + 16);
    sprintf(path, "%s/last.ckpt", run_dir);
    free(run_dir);
    return path;
}

// Structural checks that hold for any valid JSON text: brackets balance
// outside strings, strings close, no bare inf/nan, one top-level object.
static void assert_json_shape(const char *text) {
    int depth = 0, in_string = 0, top_level_values = 0;
    for (const char *p = text; *p; p++) {
        if (in_string) {
            if (*p == '\\') p++;
            else if (*p == '"') in_string = 0;
            else cr_assert((unsigned char)*p >= 0x20, "control byte %#x inside a JSON string", *p);
            continue;
        }
        if (*p == '"') in_string = 1;
        else if (*p == '{' || *p == '[') top_level_values += depth++ == 0;
        else if (*p == '}' || *p == ']') cr_assert_geq(--depth, 0, "unbalanced '%c' at %.40s", *p, p);
        else if (!strncmp(p, "inf", 3) || !strncmp(p, "nan", 3) || !strncmp(p, "0x", 2))
            cr_assert_fail("not JSON: %.40s", p);
    }
    cr_assert_eq(in_string, 0, "a JSON string does not end");
    cr_assert_eq(depth, 0, "unbalanced brackets");
    cr_assert_eq(top_level_values, 1, "not one JSON object");
}

// Parses file with Debian's python3 when it is there and runs `check` (a
// Python expression on the parsed object d that must be true).
static void python_check(const char *file, const char *check) {
    if (access("/usr/bin/python3", X_OK) != 0) {
        cr_log_info("skipped the json.load check: /usr/bin/python3 is absent");
        return;
    }
    char *out;
    int rc = test_runf(&out, "/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert %s, d' '%s'",
                 check, file);
    cr_assert_eq(rc, 0, "json.load / check failed (%s):\n%s", check, out);
    free(out);
}

// `info --json CKPT` written to dir/NAME (its path in *json_path, malloc'd),
// checked to be well-formed JSON; returns the text (malloc'd).
static char *info_json(const char *ckpt, const char *name, char **json_path) {
    *json_path = in_dir(name);
    int rc = test_runf(NULL, "'%s' info --json '%s' > '%s'", TS_PROGRAM, ckpt, *json_path);
    cr_assert_eq(rc, 0, "info --json %s exited %d", ckpt, rc);
    char *out = test_read_file(*json_path, NULL);
    assert_json_shape(out);
    return out;
}

Test(cli_info, shows_a_training_checkpoint_in_decimal, .timeout = 120) {
    char *ckpt = train_checkpoint(), *out;
    int rc = test_runf(&out, "'%s' info '%s'", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "exit %d\n%s", rc, out);
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(ckpt, NULL, &ck), TS_OK, "%s", ts_last_error());
    cr_assert(strstr(out, "model: bahdanau attention, bahdanau decoder, unidirectional encoder, embedding 4, hidden 5"),
              "%s", out);
    const ts_ckpt_vocab *sv = ts_ckpt_find_vocab(ck, "source"), *tv = ts_ckpt_find_vocab(ck, "target");
    char line[512];
    snprintf(line, sizeof line, "vocabularies: source %zu, target %zu", sv->count, tv->count);
    cr_assert(strstr(out, line), "no '%s' in\n%s", line, out);
    // Every parameter, with its shape and count, and their total.
    size_t total = 0, n = ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS);
    cr_assert_geq(n, 10);
    for (size_t i = 0; i < n; i++) {
        const ts_ckpt_tensor *p = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        const char *at = strstr(out, p->name);
        cr_assert(at, "parameter %s missing:\n%s", p->name, out);
        size_t d0, d1 = 0, count;
        int got = p->ndim == 2 ? sscanf(at + strlen(p->name), " %zu x %zu %zu", &d0, &d1, &count)
                               : sscanf(at + strlen(p->name), " %zu %zu", &d0, &count);
        cr_assert_eq(got, p->ndim + 1, "cannot read the shape of %s: %.60s", p->name, at);
        cr_assert(d0 == p->shape[0] && (p->ndim < 2 || d1 == p->shape[1]) && count == p->size,
                  "%s: printed %zu x %zu = %zu", p->name, d0, d1, count);
        total += p->size;
    }
    snprintf(line, sizeof line, "parameters: %zu values in %zu tensors", total, n);
    cr_assert(strstr(out, line), "no '%s' in\n%s", line, out);
    // The training state in decimal, equal to the header's (hex) values.
    int64_t step;
    double best;
    cr_assert_eq(ts_ckpt_get_int(ck, "state.step", 0, INT64_MAX, &step), TS_OK);
    cr_assert_eq(ts_ckpt_get_double(ck, "state.best_dev_loss", 0, INFINITY, &best), TS_OK);
    snprintf(line, sizeof line, "training state: epoch 1, step %lld, best dev loss ", (long long)step);
    const char *state = strstr(out, line);
    cr_assert(state, "no '%s' in\n%s", line, out);
    cr_assert_eq(strtod(state + strlen(line), NULL), best, "best dev loss does not read back exactly");
    cr_assert(strstr(state, ", lr 0.003 (adam)\n"), "%s", state);
    cr_assert(strstr(out, "  train.clip = 5\n") && strstr(out, "  train.lr_decay = 0.5\n"), "%s", out);
    // After the first line: the checkpoint's path is a mkdtemp name, whose
    // six random characters hold "0x" in about one run in a thousand.
    cr_assert_null(strstr(strchr(out, '\n'), "0x"), "a hex number is left:\n%s", out);

    // --json: the same facts, valid JSON.
    char *json_path;
    free(out);
    out = info_json(ckpt, "info.json", &json_path);
    snprintf(line, sizeof line, "\"parameter_count\": %zu", total);
    cr_assert(strstr(out, line), "no '%s' in\n%s", line, out);
    snprintf(line, sizeof line, "\"training\": {\"epoch\": 1, \"step\": %lld, \"best_dev_loss\": ", (long long)step);
    cr_assert(strstr(out, line), "no '%s' in\n%s", line, out);
    char check[1024];
    snprintf(check, sizeof check,
             "d[\"parameter_count\"] == %zu and len(d[\"parameters\"]) == %zu and d[\"training\"][\"lr\"] == 0.003"
             " and d[\"training\"][\"best_dev_loss\"] == %.17g and d[\"vocabularies\"][\"target\"] == %zu"
             " and d[\"header\"][\"train.clip\"] == 5 and d[\"model\"][\"hidden\"] == 5"
             " and sum(p[\"count\"] for p in d[\"parameters\"]) == %zu",
             total, n, best, tv->count, total);
    python_check(json_path, check);
    ts_ckpt_free(ck);
    free(json_path);
    free(out);
    free(ckpt);
}

Test(cli_info, an_inference_only_checkpoint_has_no_training_state) {
    char *ckpt = make_checkpoint("plain.ckpt", NULL), *out;
    int rc = test_runf(&out, "'%s' info '%s'", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "exit %d\n%s", rc, out);
    cr_assert(strstr(out, "model: general attention, luong decoder, bidirectional encoder, embedding 5, hidden 6"),
              "%s", out);
    cr_assert(strstr(out, "sentences: at most 12 tokens per side in training"), "%s", out);
    cr_assert(strstr(out, "encoder.bridge.weight"), "the bidirectional bridge is listed:\n%s", out);
    cr_assert(strstr(out, "training state: none (an inference-only checkpoint)\n"), "%s", out);
    cr_assert(strstr(out, "optimizer tensors: 0\n"), "%s", out);
    free(out);
    char *json_path;
    out = info_json(ckpt, "plain.json", &json_path);
    cr_assert(strstr(out, "\"training\": null"), "%s", out);
    // The model's fields as checkpoints (and tinyseq_info) name them.
    cr_assert(strstr(out, "\"architecture\": \"gru\", \"attention\": \"general\", \"decoder\": \"luong\", "
                          "\"bidirectional\": 1, \"cell\": \"gru\""), "%s", out);
    python_check(json_path, "d[\"training\"] is None and d[\"model\"][\"max_len\"] == 12");
    free(out);
    free(json_path);
    free(ckpt);
}

// A float32 model's file says its dtype and the one its weights are stored
// in (float32; float64 in files from before float32 storage); a float64
// file prints no dtype line, as before float32 existed.
Test(cli_info, shows_the_dtype_of_a_float32_model_and_of_its_stored_weights) {
    char *plain = make_checkpoint("f64.ckpt", NULL), *out;
    cr_assert_eq(test_runf(&out, "'%s' info '%s'", TS_PROGRAM, plain), 0, "%s", out);
    cr_assert_null(strstr(out, "dtype"), "%s", out);
    free(out);
    char *old = make_checkpoint("old.ckpt", "model.dtype", "float32", NULL);  // float64 values, float32 model
    cr_assert_eq(test_runf(&out, "'%s' info '%s'", TS_PROGRAM, old), 0, "%s", out);
    cr_assert(strstr(out, "\ndtype: float32, its weights stored as float64 (converted on loading)\n"), "%s", out);
    free(out);
    model_dtype = TS_F32;
    char *ckpt = make_checkpoint("f32.ckpt", NULL);
    cr_assert_eq(test_runf(&out, "'%s' info '%s'", TS_PROGRAM, ckpt), 0, "%s", out);
    cr_assert(strstr(out, "\ndtype: float32, its weights stored as float32\n"), "%s", out);
    free(out);
    char *json_path;
    out = info_json(ckpt, "f32.json", &json_path);
    python_check(json_path, "d[\"model\"][\"dtype\"] == \"float32\" and "
                            "all(p[\"dtype\"] == \"float32\" for p in d[\"parameters\"])");
    free(out);
    free(json_path);
    free(ckpt);
    free(old);
    free(plain);
}

Test(cli_info, a_run_without_a_dev_evaluation_yet_and_odd_header_text) {
    // best_dev_loss = inf (no evaluation yet), a header string with a quote,
    // a backslash and a control byte: JSON must stay valid, the terminal clean.
    char *ckpt = make_checkpoint("fresh.ckpt", "state.epoch", "0", "state.step", "3", "state.best_dev_loss", "inf",
                                 "train.lr", "0x1.89374bc6a7efap-9", "data.corpus", "my \"data\"\\x\x01.tsv", NULL);
    char *out;
    int rc = test_runf(&out, "'%s' info '%s'", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "exit %d\n%s", rc, out);
    cr_assert(strstr(out, "training state: epoch 0, step 3, best dev loss none yet, lr 0.003\n"), "%s", out);
    cr_assert(strstr(out, "  data.corpus = my \"data\"\\x\\x01.tsv\n"), "%s", out);
    free(out);
    char *json_path;
    out = info_json(ckpt, "fresh.json", &json_path);
    cr_assert(strstr(out, "\"best_dev_loss\": null"), "%s", out);
    python_check(json_path, "d[\"training\"][\"best_dev_loss\"] is None and d[\"training\"][\"step\"] == 3"
                            " and d[\"header\"][\"data.corpus\"] == \"my \\\"data\\\"\\\\x\\x01.tsv\"");
    free(out);
    free(json_path);
    free(ckpt);
}

Test(cli_info, hostile_files_get_the_loaders_errors_and_exit_1) {
    char *good = make_checkpoint("good.ckpt", NULL), *out;
    // Missing, a directory, truncated, one flipped byte, not a checkpoint at all.
    char *missing = in_dir("missing.ckpt");
    char *truncated = in_dir("truncated.ckpt"), *flipped = in_dir("flipped.ckpt");
    cr_assert_eq(test_runf(NULL, "head -c 200 '%s' > '%s'", good, truncated), 0);
    cr_assert_eq(test_runf(NULL, "{ head -c 600 '%s'; printf X; tail -c +602 '%s'; } > '%s'", good, good, flipped), 0);
    char *text = test_write_file(dir, "text.ckpt", "hello\n", 6);
    // A valid container whose header disagrees with its tensors.
    char *liar = make_checkpoint("liar.ckpt", "model.hidden", "7", NULL);
    // A training state that is not a number.
    char *bad_state = make_checkpoint("bad_state.ckpt", "state.epoch", "two", NULL);
    const char *const cases[] = {missing, dir, truncated, flipped, text, liar, bad_state};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int json = 0; json < 2; json++) {
            int rc = test_runf(&out, "'%s' info %s '%s'", TS_PROGRAM, json ? "--json" : "", cases[i]);
            cr_assert_eq(rc, 1, "%s: exit %d\n%s", cases[i], rc, out);
            cr_assert(strstr(out, cases[i]), "the message names the file %s:\n%s", cases[i], out);
            free(out);
        }
    }
    cr_assert_eq(test_runf(&out, "'%s' info '%s' 2>&1", TS_PROGRAM, bad_state), 1);
    cr_assert(strstr(out, "state.epoch"), "the message names the key:\n%s", out);
    free(out);
    free(good), free(missing), free(truncated), free(flipped), free(text), free(liar), free(bad_state);
}

Test(cli_info, usage_errors_exit_2_and_help_exits_0) {
    char *ckpt = make_checkpoint("m.ckpt", NULL), *out;
    const char *const bad[] = {"", "--bogus", "--json=1", "--json=", "a.ckpt b.ckpt", "--model"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = test_runf(&out, "'%s' info %s %s 2>&1", TS_PROGRAM, bad[i], i == 4 || i == 0 ? "" : ckpt);
        cr_assert_eq(rc, 2, "info %s: exit %d\n%s", bad[i], rc, out);
        cr_assert(strstr(out, "tinyseq info:"), "%s", out);
        free(out);
    }
    cr_assert_eq(test_runf(&out, "'%s' info --help", TS_PROGRAM), 0);
    cr_assert(strstr(out, "usage: tinyseq info CKPT [--json]"), "%s", out);
    free(out);
    cr_assert_eq(test_runf(&out, "'%s' --help", TS_PROGRAM), 0);
    cr_assert(strstr(out, "  info "), "tinyseq --help lists info:\n%s", out);
    free(out);
    free(ckpt);
}
