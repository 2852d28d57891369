// Every verb's --help states the defaults the code uses (issue 38: train's
// said best.ckpt was the best dev loss where --best bleu is the default;
// report's said an existing report.html is replaced where the README's one
// rule needs --force; export's said float64 where a float32 model exports
// '<f4'). Each claim is compared with what the code does, not with a copy:
// train's "(default X)" with the config.txt of a run given no such flag (the
// options table, train/options.h, makes both), report's with a second
// report, export's with the arrays it writes.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/npz.h"
#include "tensor/status.h"
#include "testutil.h"
#include "train/options.h"

// The flags a run below gives: their defaults are not what the run used.
#define GIVEN "--toy-pairs 300 --emb 8 --hidden 8 --epochs 1 --show 0 --out"

static char *dir;

static void setup(void) {
    dir = test_tmpdir();
    char *out;
    int rc = test_runf(&out, "'%s' train " GIVEN " %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void teardown(void) {
    test_runf(NULL, "rm -rf '%s'", dir);
    free(dir);
}

TestSuite(cli_help, .init = setup, .fini = teardown);

static char *help_of(const char *verb) {
    char *out;
    int rc = test_runf(&out, "'%s' %s --help", TS_PROGRAM, verb);
    cr_assert_eq(rc, 0, "%s --help: exit %d", verb, rc);
    return out;
}

// The value of `key = value` in config.txt's text, malloc'd, or NULL.
static char *config_value(const char *config, const char *key) {
    char want[80];
    snprintf(want, sizeof want, "\n%s = ", key);
    const char *at = strstr(config, want);
    if (!at) return NULL;
    at += strlen(want);
    return strndup(at, strcspn(at, "\n"));
}

Test(cli_help, train_states_the_defaults_a_run_uses, .timeout = 120) {
    char *help = help_of("train"), path[4200];
    snprintf(path, sizeof path, "%s/run/config.txt", dir);
    char *config = test_read_file(path, NULL);
    int checked = 0;
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        const ts_setting *set = r->set;
        if (!set || !set->flag || !set->key || !set->help || !strstr(set->help, "{}")) continue;
        char flag[80];
        snprintf(flag, sizeof flag, "--%s ", set->flag);
        if (strstr(" " GIVEN " ", flag)) continue;
        char *used = config_value(config, set->key);
        if (!used) continue;  // a row config.txt writes only for some runs (--subword's)
        // The flag's lines in the help: up to the next line that starts a flag.
        snprintf(flag, sizeof flag, "\n  --%s ", set->flag);
        const char *at = strstr(help, flag);
        cr_assert_not_null(at, "the help has no line for --%s", set->flag);
        const char *end = strstr(at + 1, "\n  --");
        const char *stated = strstr(at, "default ");
        cr_assert(stated && (!end || stated < end), "--%s: no 'default ...' in its help", set->flag);
        stated += strlen("default ");
        size_t n = strcspn(stated, ";):");
        cr_assert(strlen(used) == n && !strncmp(stated, used, n), "--%s: the help says default %.*s, a run uses %s",
                  set->flag, (int)n, stated, used);
        free(used);
        checked++;
    }
    cr_assert_gt(checked, 15, "only %d defaults checked", checked);
    // What best.ckpt is, said by the flag that chooses it (whose default is checked above).
    const char *best = strstr(help, "best.ckpt (");
    cr_assert(best && strstr(best, "--best") && strstr(best, "--best") < strchr(best, ')'),
              "the help says what best.ckpt is without --best");
    free(config);
    free(help);
}

Test(cli_help, report_says_an_existing_page_needs_force_as_it_does, .timeout = 120) {
    char *help = help_of("report"), *out;
    cr_assert_null(strstr(help, "replaced if there"), "%s", help);
    cr_assert(strstr(help, "--force         replace FILE, RUN_DIR/report.html included"), "%s", help);
    int rc = test_runf(&out, "'%s' report %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = test_runf(&out, "'%s' report %s/run", TS_PROGRAM, dir);
    cr_assert(rc == 1 && strstr(out, "exists; pass --force"), "a second report without --force: exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' report %s/run --force", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    free(help);
}

Test(cli_help, export_states_the_dtype_it_writes, .timeout = 120) {
    char *help = help_of("export"), path[4200], npz[4200], *out;
    snprintf(path, sizeof path, "%s/run/best.ckpt", dir);
    snprintf(npz, sizeof npz, "%s/model.npz", dir);
    const char *other = NULL;  // the dtype the first model does not have
    for (int k = 0; k < 2; k++) {
        if (k) {
            int rc = test_runf(&out, "'%s' train " GIVEN " %s/other --dtype %s", TS_PROGRAM, dir, other);
            cr_assert_eq(rc, 0, "%s", out);
            free(out);
            snprintf(path, sizeof path, "%s/other/best.ckpt", dir);
        }
        int rc = test_runf(&out, "'%s' export %s %s --force", TS_PROGRAM, path, npz);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
        ts_npz *z;
        cr_assert_eq(ts_npz_load(npz, NULL, &z), TS_OK, "%s", ts_last_error());
        const ts_npz_array *a = ts_npz_find(z, "encoder.embedding.weight");
        cr_assert(a && (a->dtype == TS_NPZ_F4 || a->dtype == TS_NPZ_F8), "no float array encoder.embedding.weight");
        const char *name = a->dtype == TS_NPZ_F4 ? "float32 '<f4'" : "float64 '<f8'";
        cr_assert(strstr(help, name), "export wrote %s arrays; its help does not say so", name);
        other = a->dtype == TS_NPZ_F4 ? "float64" : "float32";
        ts_npz_free(z);
    }
    free(help);
}

// The beam width translate, attend and eval state as their default is the
// one they decode with: the same outputs as that --beam given.
Test(cli_help, decoding_verbs_decode_with_the_beam_they_state, .timeout = 120) {
    static const char *const verbs[] = {"translate", "attend", "eval"};
    char corpus[4200];
    snprintf(corpus, sizeof corpus, "%s/run/dev-pairs.tsv", dir);
    for (size_t v = 0; v < sizeof verbs / sizeof *verbs; v++) {
        char *help = help_of(verbs[v]), *plain, *given;
        const char *at = strstr(help, "--beam K");
        cr_assert_not_null(at, "%s: no --beam line", verbs[v]);
        at = strstr(at, "(default ");
        cr_assert_not_null(at);
        long stated = strtol(at + strlen("(default "), NULL, 10);
        cr_assert_gt(stated, 1, "%s: default beam %ld", verbs[v], stated);
        const char *args = v == 2 ? "--corpus" : "";
        const char *what = v == 2 ? corpus : "'the small girl does not see the white cats .'";
        cr_assert_eq(test_runf(&plain, "'%s' %s --model %s/run/best.ckpt %s %s", TS_PROGRAM, verbs[v], dir, args, what), 0);
        cr_assert_eq(test_runf(&given, "'%s' %s --model %s/run/best.ckpt %s %s --beam %ld", TS_PROGRAM, verbs[v], dir, args,
                               what, stated), 0);
        cr_assert_str_eq(plain, given, "%s decodes otherwise than with its stated --beam %ld", verbs[v], stated);
        free(plain);
        free(given);
        free(help);
    }
}

// Every figure eval prints (its last line's NAME=, entropy= and pad_mass=,
// the agreement table) has a one-line reading in eval --help, and
// docs/attention.md reads it too (issue 47).
Test(cli_help, eval_reads_every_figure_it_prints) {
    char *help = help_of("eval"), path[4200];
    snprintf(path, sizeof path, "%s/docs/attention.md", TS_SOURCE_DIR);
    char *doc = test_read_file(path, NULL);
    const char *last = strstr(help, "  eval: "), *end = last ? strstr(last, "\nafter ") : NULL;
    cr_assert(last && end, "eval --help shows no last line:\n%s", help);
    char names[40][32];
    int n = 0;
    for (const char *p = last; p < end && n < 38; p++) {  // each NAME=
        if (*p != '=') continue;
        const char *start = p;
        while (start > last && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z'))) start--;
        snprintf(names[n++], sizeof names[0], "%.*s", (int)(p - start), start);
    }
    snprintf(names[n++], sizeof names[0], "entropy");
    snprintf(names[n++], sizeof names[0], "pad_mass");
    cr_assert_geq(n, 14, "only %d figures found", n);
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "pairs")) continue;  // a count
        char reading[64], quoted[64];
        snprintf(reading, sizeof reading, "\n  %.31s ", names[i]);
        snprintf(quoted, sizeof quoted, "`%.31s", names[i]);
        int own_line = strstr(help, reading) != NULL;
        if (!own_line) {  // a best head's figure is read on its own figure's line
            char with[64];
            snprintf(with, sizeof with, "; %.31s: ", names[i]);
            own_line = strstr(help, with) != NULL;
        }
        cr_expect(own_line, "eval --help gives '%s' no reading", names[i]);
        cr_expect(strstr(doc, quoted), "docs/attention.md does not read '%s'", names[i]);
    }
    cr_expect(strstr(help, "\n  the agreement table (--explain)") && strstr(doc, "the agreement table"),
              "the agreement table has no reading");
    free(doc);
    free(help);
}
