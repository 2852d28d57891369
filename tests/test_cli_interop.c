// tinyseq export and import, run as programs on small models trained for a
// few steps: the round trip keeps every weight bit-exact and every
// translation; numpy.load reads the export (when Debian's python3 has numpy);
// bad usage exits 2 naming the flag, bad files exit 1 naming the file and
// the entry, and nothing is overwritten without --force.
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interop/model_npz.h"
#include "testutil.h"
#include "ckpt/ckpt.h"

static char *dir;


// Trains `name` for a few steps on a small toy corpus; returns its last.ckpt.
static char *train(const char *name, const char *flags) {
    char *out;
    // float64 unless a test asks for float32 (the last --dtype wins): exports are compared to the bit
    int rc = test_runf(&out, "%s train --toy-pairs 300 --emb 8 --hidden 16 --steps 12 --dev 20 --show 0 --dtype float64 %s --out %s/%s",
                 TS_PROGRAM, flags, dir, name);
    cr_assert_eq(rc, 0, "train %s exited %d:\n%s", flags, rc, out);
    free(out);
    char *path = malloc(strlen(dir) + strlen(name) + 16);
    sprintf(path, "%s/%s/last.ckpt", dir, name);
    return path;
}

static char *in_dir(const char *name) {
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    return path;
}

static void setup(void) { dir = test_tmpdir(); }

static void teardown(void) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_interop, .init = setup, .fini = teardown);

static ts_ckpt *load_ckpt(const char *path) {
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
    return ck;
}

// 1 when the parameter sections of a and b hold the same names, dtypes, shapes and bytes.
static int same_params(const ts_ckpt *a, const ts_ckpt *b) {
    size_t n = ts_ckpt_tensor_count(a, TS_CKPT_PARAMS);
    if (n != ts_ckpt_tensor_count(b, TS_CKPT_PARAMS)) return 0;
    for (size_t i = 0; i < n; i++) {
        const ts_ckpt_tensor *x = ts_ckpt_tensor_at(a, TS_CKPT_PARAMS, i);
        const ts_ckpt_tensor *y = ts_ckpt_find_tensor(b, TS_CKPT_PARAMS, x->name);
        if (!y || x->dtype != y->dtype || x->ndim != y->ndim || x->size != y->size ||
            memcmp(x->shape, y->shape, sizeof x->shape) != 0 || memcmp(x->raw, y->raw, x->size * ts_dtype_size(x->dtype)) != 0)
            return 0;
    }
    return 1;
}

static const char *const sentences[] = {"the cat sees a dog .", "a small bird sings", "he reads the old book .",
                                        "zyzzyva", "the red car is fast ."};

// The translations of `sentences` by `ckpt` with beam `beam`, one per line.
static char *translations(const char *ckpt, int beam) {
    char *out;
    int rc = test_runf(&out, "%s translate --model %s --beam %d '%s' '%s' '%s' '%s' '%s'", TS_PROGRAM, ckpt, beam,
                 sentences[0], sentences[1], sentences[2], sentences[3], sentences[4]);
    cr_assert_eq(rc, 0, "translate exited %d:\n%s", rc, out);
    return out;
}

// export `ckpt` (with extra flags), import it into the model of `like`;
// returns the path of the imported checkpoint.
static char *round_trip(const char *ckpt, const char *like, const char *export_flags, const char *stem) {
    char npz_name[64], out_name[64], *out;
    snprintf(npz_name, sizeof npz_name, "%s.npz", stem);
    snprintf(out_name, sizeof out_name, "%s.ckpt", stem);
    char *npz = in_dir(npz_name), *imported = in_dir(out_name);
    int rc = test_runf(&out, "%s export %s %s %s", TS_PROGRAM, ckpt, npz, export_flags);
    cr_assert_eq(rc, 0, "export exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "export: "), "%s", out);
    free(out);
    rc = test_runf(&out, "%s import %s --like %s -o %s", TS_PROGRAM, npz, like, imported);
    cr_assert_eq(rc, 0, "import exited %d:\n%s", rc, out);
    free(out);
    free(npz);
    return imported;
}

Test(cli_interop, round_trip_keeps_every_weight_bit_exact_and_every_translation) {
    struct {
        const char *name, *flags;
    } models[] = {{"bahdanau", ""}, {"general-bi", "--attn general --bidirectional"}, {"none", "--attn none"},
                  {"float32", "--dtype float32"}, {"lstm-bi", "--cell lstm --attn dot --bidirectional"}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char *ckpt = train(models[m].name, models[m].flags);
        ts_ckpt *original = load_ckpt(ckpt);
        char *want1 = translations(ckpt, 1), *want3 = translations(ckpt, 3);
        for (int stored = 0; stored < 2; stored++) {
            char stem[64];
            snprintf(stem, sizeof stem, "%s-%s", models[m].name, stored ? "stored" : "deflated");
            char *imported = round_trip(ckpt, ckpt, stored ? "--stored" : "", stem);
            ts_ckpt *back = load_ckpt(imported);
            cr_assert(same_params(original, back), "%s: the weights changed", stem);
            char *got1 = translations(imported, 1), *got3 = translations(imported, 3);
            cr_assert_str_eq(got1, want1, "%s greedy", stem);
            cr_assert_str_eq(got3, want3, "%s beam 3", stem);
            free(got1);
            free(got3);
            ts_ckpt_free(back);
            free(imported);
        }
        free(want1);
        free(want3);
        ts_ckpt_free(original);
        free(ckpt);
    }
}

// The weights come from the .npz, not from --like: import model A's weights
// into the checkpoint of B (same configuration and data, fewer steps).
Test(cli_interop, import_takes_the_weights_from_the_npz_not_from_like) {
    char *a = train("a", ""), *b = train("b", "--steps 3");
    char *imported = round_trip(a, b, "", "a-into-b");
    // The same checkpoint exports to the same bytes.
    char *out;
    cr_assert_eq(test_runf(&out, "%s export %s %s/again.npz && cmp %s/a-into-b.npz %s/again.npz", TS_PROGRAM, a, dir, dir,
                     dir), 0, "%s", out);
    free(out);
    ts_ckpt *ca = load_ckpt(a), *cb = load_ckpt(b), *ci = load_ckpt(imported);
    cr_assert(same_params(ca, ci), "imported weights differ from A's");
    cr_assert(!same_params(cb, ci), "imported weights are B's");
    char *want = translations(a, 1), *got = translations(imported, 1);
    cr_assert_str_eq(got, want);
    // The imported checkpoint holds the model alone (no optimizer state).
    cr_assert_gt(ts_ckpt_tensor_count(ca, TS_CKPT_OPTIM), 0);
    cr_assert_eq(ts_ckpt_tensor_count(ci, TS_CKPT_OPTIM), 0);
    free(want);
    free(got);
    ts_ckpt_free(ca);
    ts_ckpt_free(cb);
    ts_ckpt_free(ci);
    free(a);
    free(b);
    free(imported);
}

// Importing an export of the other dtype converts every array into the
// --like model's and says how many: a float64 export into a float32 model
// rounds each weight once (the file stores float32), a float32 export into a
// float64 model is exact.
Test(cli_interop, import_across_dtypes_converts_and_says_so) {
    char *f64 = train("f64", ""), *f32 = train("f32", "--dtype float32");
    const char *from[2] = {f64, f32}, *like[2] = {f32, f64}, *stem[2] = {"f64-into-f32", "f32-into-f64"};
    const char *said[2] = {"arrays converted from float64 ('<f8') to the model's float32",
                           "arrays converted from float32 ('<f4') to the model's float64"};
    for (int k = 0; k < 2; k++) {
        char npz_name[64], out_name[64], *out;
        snprintf(npz_name, sizeof npz_name, "%s.npz", stem[k]);
        snprintf(out_name, sizeof out_name, "%s.ckpt", stem[k]);
        char *npz = in_dir(npz_name), *imported = in_dir(out_name);
        cr_assert_eq(test_runf(&out, "%s export %s %s", TS_PROGRAM, from[k], npz), 0, "%s", out);
        free(out);
        int rc = test_runf(&out, "%s import %s --like %s -o %s", TS_PROGRAM, npz, like[k], imported);
        cr_assert_eq(rc, 0, "import exited %d:\n%s", rc, out);
        cr_assert(strstr(out, said[k]), "%s", out);
        free(out);
        ts_ckpt *source = load_ckpt(from[k]), *back = load_ckpt(imported);
        for (size_t i = 0; i < ts_ckpt_tensor_count(source, TS_CKPT_PARAMS); i++) {
            const ts_ckpt_tensor *x = ts_ckpt_tensor_at(source, TS_CKPT_PARAMS, i);
            const ts_ckpt_tensor *y = ts_ckpt_find_tensor(back, TS_CKPT_PARAMS, x->name);
            cr_assert(y && y->size == x->size, "%s", x->name);
            cr_assert_eq(y->dtype, k == 0 ? TS_F32 : TS_F64, "%s is stored as %s", x->name, ts_dtype_name(y->dtype));
            for (size_t j = 0; j < x->size; j++) {
                double want = k == 0 ? (double)(float)x->data[j] : x->data_f32[j];
                double got = k == 0 ? y->data_f32[j] : y->data[j];
                cr_assert(got == want, "%s[%zu]: %.17g, want %.17g", x->name, j, got, want);
            }
        }
        ts_ckpt_free(source);
        ts_ckpt_free(back);
        free(npz);
        free(imported);
    }
    free(f64);
    free(f32);
}

static int have_numpy(void) {
    return test_run("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1", NULL) == 0;
}

// numpy.load reads the export without allow_pickle: names, dtypes, shapes and
// values (compared exactly, through hex floats), vocabularies, configuration.
// Then files that numpy itself writes (savez, savez_compressed, other order)
// import back to the same weights.
Test(cli_interop, numpy_loads_the_export_and_numpy_written_files_import) {
    if (!have_numpy()) cr_skip_test("Debian's /usr/bin/python3 has no numpy (apt-get install python3-numpy)");
    char *ckpt = train("np", "--attn concat --decoder luong");
    char *npz = in_dir("np.npz"), *script_path = in_dir("check.py"), *out;
    cr_assert_eq(test_runf(&out, "%s export %s %s", TS_PROGRAM, ckpt, npz), 0, "%s", out);
    free(out);
    ts_ckpt *ck = load_ckpt(ckpt);
    // A Python script with the expected names, shapes and values written in.
    size_t cap = 1 << 20, at = 0;
    char *script = malloc(cap);
    at += (size_t)snprintf(script + at, cap - at,
                           "import sys, numpy as np\n"
                           "z = np.load(sys.argv[1], allow_pickle=False)\n"
                           "names = set(z.files)\n"
                           "def check(name, shape, first, last):\n"
                           "    a = z[name]\n"
                           "    assert a.dtype == np.dtype('<f8'), (name, a.dtype)\n"
                           "    assert a.flags.c_contiguous, name\n"
                           "    assert a.shape == shape, (name, a.shape, shape)\n"
                           "    assert a.flat[0] == float.fromhex(first), (name, a.flat[0], first)\n"
                           "    assert a.flat[-1] == float.fromhex(last), (name, a.flat[-1], last)\n"
                           "    names.remove(name)\n");
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        char shape[64];
        if (t->ndim == 1) snprintf(shape, sizeof shape, "(%zu,)", t->shape[0]);
        else snprintf(shape, sizeof shape, "(%zu, %zu)", t->shape[0], t->shape[1]);
        at += (size_t)snprintf(script + at, cap - at, "check('%s', %s, '%a', '%a')\n", t->name, shape, t->data[0],
                               t->data[t->size - 1]);
    }
    const ts_ckpt_vocab *src = ts_ckpt_find_vocab(ck, "source"), *tgt = ts_ckpt_find_vocab(ck, "target");
    // The last source word, as hex: words such as "n'est" would break a Python literal.
    char hex[2 * 1024 + 1] = "";
    for (const unsigned char *w = (const unsigned char *)src->tokens[src->count - 1]; *w; w++)
        sprintf(hex + strlen(hex), "%02x", *w);
    at += (size_t)snprintf(script + at, cap - at,
                           "s, t = z['tinyseq.vocab.source'], z['tinyseq.vocab.target']\n"
                           "assert s.shape == (%zu,) and t.shape == (%zu,), (s.shape, t.shape)\n"
                           "assert list(t[:4]) == ['<pad>', '<sos>', '<eos>', '<unk>'], list(t[:4])\n"
                           "assert s[%zu] == bytes.fromhex('%s').decode(), s[%zu]\n"
                           "c = str(z['tinyseq.config'])\n"
                           "assert 'model.attention=concat\\nmodel.decoder=luong\\n' in c, c\n"
                           "assert 'model.hidden=16\\n' in c, c\n"
                           "names -= {'tinyseq.vocab.source', 'tinyseq.vocab.target', 'tinyseq.config'}\n"
                           "assert not names, names\n"
                           "w = {k: z[k] for k in reversed(z.files)}\n"
                           "np.savez(sys.argv[2], **w)\n"
                           "np.savez_compressed(sys.argv[3], **{k: v for k, v in w.items() if not k.startswith('tinyseq.')})\n"
                           "print('numpy', np.__version__, 'ok')\n",
                           src->count, tgt->count, src->count - 1, hex, src->count - 1);
    FILE *f = fopen(script_path, "w");
    fputs(script, f);
    fclose(f);
    free(script);
    char *saved = in_dir("numpy.npz"), *compressed = in_dir("numpy-compressed.npz");
    int rc = test_runf(&out, "/usr/bin/python3 %s %s %s %s", script_path, npz, saved, compressed);
    cr_assert_eq(rc, 0, "numpy check failed (%d):\n%s", rc, out);
    cr_log_info("%s", out);
    free(out);
    const char *files[] = {saved, compressed};
    for (int i = 0; i < 2; i++) {
        char *imported = in_dir(i ? "from-compressed.ckpt" : "from-savez.ckpt");
        rc = test_runf(&out, "%s import %s --like %s -o %s", TS_PROGRAM, files[i], ckpt, imported);
        cr_assert_eq(rc, 0, "import of %s exited %d:\n%s", files[i], rc, out);
        free(out);
        ts_ckpt *back = load_ckpt(imported);
        cr_assert(same_params(ck, back), "%s: weights differ", files[i]);
        ts_ckpt_free(back);
        free(imported);
    }
    free(saved);
    free(compressed);
    ts_ckpt_free(ck);
    free(script_path);
    free(npz);
    free(ckpt);
}

static void expect(int want, const char *fragment, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void expect(int want, const char *fragment, const char *fmt, ...) {
    char cmd[8192], *out;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, want, "'%s' exited %d, wanted %d:\n%s", cmd, rc, want, out);
    cr_assert(strstr(out, fragment), "'%s' said:\n%s\n(expected '%s')", cmd, out, fragment);
    free(out);
}

Test(cli_interop, usage_errors_exit_2_naming_the_flag) {
    const char *p = TS_PROGRAM;
    expect(0, "usage: tinyseq export CKPT OUT.npz", "%s export --help", p);
    expect(0, "usage: tinyseq import IN.npz --like CKPT -o OUT.ckpt", "%s import --help", p);
    expect(0, "export", "%s --help", p);
    expect(0, "import", "%s --help", p);
    expect(2, "CKPT is required", "%s export", p);
    expect(2, "OUT.npz is required", "%s export a.ckpt", p);
    expect(2, "unexpected argument 'c'", "%s export a b c", p);
    expect(2, "unknown option --bogus", "%s export a b --bogus", p);
    expect(2, "IN.npz is required", "%s import --like a -o b", p);
    expect(2, "--like CKPT is required", "%s import x.npz -o b", p);
    expect(2, "-o OUT.ckpt is required", "%s import x.npz --like a", p);
    expect(2, "-o needs a value", "%s import x.npz --like a -o", p);
    expect(2, "--like needs a value", "%s import x.npz --like", p);
    expect(2, "unknown option --stored", "%s import x.npz --like a -o b --stored", p);
    expect(2, "unexpected argument 'y.npz'", "%s import x.npz y.npz --like a -o b", p);
}

// Copies the npz at `in` to `out`, leaving out the entry `drop` (may be NULL)
// and adding `extra` (may be NULL) as a float64 (2,) or as strings.
static void rewrite(const char *in, const char *out, const char *drop, const char *replace_strings,
                    const char *const *strings, size_t n_strings) {
    ts_npz *z, *copy = ts_npz_new();
    cr_assert_eq(ts_npz_load(in, NULL, &z), TS_OK, "%s", ts_last_error());
    for (size_t i = 0; i < ts_npz_count(z); i++) {
        const ts_npz_array *a = ts_npz_at(z, i);
        if (drop && !strcmp(a->name, drop)) continue;
        if (replace_strings && !strcmp(a->name, replace_strings)) {
            size_t shape[1] = {n_strings};
            cr_assert_eq(ts_npz_add_strings(copy, a->name, n_strings == 1 && !strncmp(a->name, "tinyseq.c", 9) ? 0 : 1,
                                            shape, strings), TS_OK, "%s", ts_last_error());
            continue;
        }
        if (a->dtype == TS_NPZ_F8) {
            cr_assert_eq(ts_npz_add_f8(copy, a->name, a->ndim, a->shape, a->values), TS_OK);
        } else if (a->dtype == TS_NPZ_F4) {  // held as double, exactly: back to float
            float *v = malloc((a->size ? a->size : 1) * sizeof *v);
            for (size_t j = 0; j < a->size; j++) v[j] = (float)a->values[j];
            cr_assert_eq(ts_npz_add_f4(copy, a->name, a->ndim, a->shape, v), TS_OK);
            free(v);
        } else if (a->dtype == TS_NPZ_U1) {
            cr_assert_eq(ts_npz_add_u1(copy, a->name, a->ndim, a->shape, a->bytes), TS_OK);
        } else {
            cr_assert_eq(ts_npz_add_strings(copy, a->name, a->ndim, a->shape, a->strings), TS_OK);
        }
    }
    cr_assert_eq(ts_npz_save(copy, out, TS_NPZ_DEFLATE), TS_OK, "%s", ts_last_error());
    ts_npz_free(z);
    ts_npz_free(copy);
}

Test(cli_interop, bad_files_exit_1_naming_the_file_and_the_entry) {
    const char *p = TS_PROGRAM;
    char *ckpt = train("m", ""), *small = train("small", "--hidden 8"), *npz = in_dir("m.npz"),
         *out_ckpt = in_dir("out.ckpt"), *bad = in_dir("bad.npz"), *out;
    cr_assert_eq(test_runf(&out, "%s export %s %s", p, ckpt, npz), 0, "%s", out);
    free(out);
    // Unreadable inputs.
    expect(1, "/nonexistent/x.ckpt", "%s export /nonexistent/x.ckpt %s/y.npz", p, dir);
    expect(1, "/nonexistent/dir/y.npz", "%s export %s /nonexistent/dir/y.npz", p, ckpt);
    expect(1, "cannot open /nonexistent/x.npz", "%s import /nonexistent/x.npz --like %s -o %s", p, ckpt, out_ckpt);
    expect(1, "no zip end-of-central-directory record", "%s import %s --like %s -o %s", p, ckpt, ckpt, out_ckpt);
    // A truncated export.
    cr_assert_eq(test_runf(NULL, "head -c 3000 %s > %s", npz, bad), 0);
    expect(1, bad, "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    // Another configuration: names the entry and both shapes.
    expect(1, "entry 'encoder.gru.weight_ih_l0' has shape (48, 8), the model needs (24, 8)",
           "%s import %s --like %s -o %s", p, npz, small, out_ckpt);
    // A missing parameter, an extra entry, a mismatched vocabulary or configuration.
    rewrite(npz, bad, "decoder.out.bias", NULL, NULL, 0);
    expect(1, "no entry 'decoder.out.bias'", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    const char *words[] = {"a", "b"};
    rewrite(npz, bad, NULL, "decoder.out.bias", words, 2);
    expect(1, "entry 'decoder.out.bias' is not float64", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    rewrite(npz, bad, NULL, "tinyseq.vocab.target", words, 2);
    expect(1, "entry 'tinyseq.vocab.target' has 2 words", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    const char *config[] = {"model.attention=dot\nmodel.hidden=16\n"};
    rewrite(npz, bad, NULL, "tinyseq.config", config, 1);
    expect(1, "model.attention=dot, the model has bahdanau", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    const char *junk[] = {"no equals sign here"};
    rewrite(npz, bad, NULL, "tinyseq.config", junk, 1);
    expect(1, "line 1 is not key=value", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    // Without the optional tinyseq.* entries (an npz saved from PyTorch) it imports.
    rewrite(npz, bad, "tinyseq.config", NULL, NULL, 0);
    expect(0, "import: ", "%s import %s --like %s -o %s", p, bad, ckpt, out_ckpt);
    // An entry the model does not have.
    ts_npz *z;
    cr_assert_eq(ts_npz_load(npz, NULL, &z), TS_OK);
    double v[2] = {1, 2};
    size_t two[] = {2};
    cr_assert_eq(ts_npz_add_f8(z, "decoder.combine.weight", 1, two, v), TS_OK);
    cr_assert_eq(ts_npz_save(z, bad, TS_NPZ_STORE), TS_OK);
    ts_npz_free(z);
    expect(1, "entry 'decoder.combine.weight' is not a parameter of the model (bahdanau attention, bahdanau decoder",
           "%s import %s --like %s -o %s --force", p, bad, ckpt, out_ckpt);
    // A non-finite weight.
    cr_assert_eq(ts_npz_load(npz, NULL, &z), TS_OK);
    ts_npz *nan_copy = ts_npz_new();
    for (size_t i = 0; i < ts_npz_count(z); i++) {
        const ts_npz_array *a = ts_npz_at(z, i);
        if (a->dtype == TS_NPZ_STR) continue;
        double *vals = malloc(a->size * sizeof *vals);
        memcpy(vals, a->values, a->size * sizeof *vals);
        if (!strcmp(a->name, "decoder.out.weight")) vals[5] = NAN;
        cr_assert_eq(ts_npz_add_f8(nan_copy, a->name, a->ndim, a->shape, vals), TS_OK);
        free(vals);
    }
    cr_assert_eq(ts_npz_save(nan_copy, bad, TS_NPZ_STORE), TS_OK);
    ts_npz_free(nan_copy);
    ts_npz_free(z);
    expect(1, "entry 'decoder.out.weight' holds a non-finite value (nan at flat index 5)",
           "%s import %s --like %s -o %s --force", p, bad, ckpt, out_ckpt);
    free(ckpt);
    free(small);
    free(npz);
    free(out_ckpt);
    free(bad);
}

// An existing output is an error unless --force; a failed import leaves it alone.
Test(cli_interop, never_overwrites_without_force) {
    const char *p = TS_PROGRAM;
    char *ckpt = train("m", ""), *npz = in_dir("m.npz"), *out_ckpt = in_dir("out.ckpt"), *out;
    const char keep[] = "precious";
    char *existing = test_write_file(dir, "m.npz", keep, sizeof keep - 1);
    expect(1, "exists; pass --force to replace it", "%s export %s %s", p, ckpt, npz);
    char *content;
    cr_assert_eq(test_runf(&content, "cat %s", existing), 0);
    cr_assert_str_eq(content, keep);
    free(content);
    cr_assert_eq(test_runf(&out, "%s export %s %s --force", p, ckpt, npz), 0, "%s", out);
    free(out);
    char *existing_ckpt = test_write_file(dir, "out.ckpt", keep, sizeof keep - 1);
    expect(1, "out.ckpt' exists; pass --force", "%s import %s --like %s -o %s", p, npz, ckpt, out_ckpt);
    // A failing import with --force leaves it too.
    expect(1, "no zip end-of-central-directory", "%s import %s --like %s -o %s --force", p, ckpt, ckpt, out_ckpt);
    cr_assert_eq(test_runf(&content, "cat %s", existing_ckpt), 0);
    cr_assert_str_eq(content, keep);
    free(content);
    expect(0, "import: ", "%s import %s --like %s -o %s --force", p, npz, ckpt, out_ckpt);
    expect(0, "", "%s translate --model %s 'the cat'", p, out_ckpt);
    free(existing);
    free(existing_ckpt);
    free(ckpt);
    free(npz);
    free(out_ckpt);
}
