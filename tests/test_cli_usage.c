// What a learner types in the first hour, and what the program makes of it
// (issue 22): a sentence without quotes, -h and -- after --model, a run
// directory given as --model, attend's sentence on standard input.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *dir, run[4200], model[4300];

// A real run directory from a short run of the real program.
static void setup(void) {
    dir = test_tmpdir();
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(model, sizeof model, "%s/best.ckpt", run);
    char *out;
    int rc = test_runf(&out, "%s train --toy-pairs 300 --emb 4 --hidden 4 --epochs 1 --beam 0 --show 0 --out '%s'",
                       TS_PROGRAM, run);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void teardown(void) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_usage, .init = setup, .fini = teardown);

static int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

// "translate --model M the small cat ." once printed four one-word translations.
Test(cli_usage, a_sentence_typed_without_quotes_is_refused_with_the_quoted_command) {
    const char *commands[] = {"translate", "attend"};
    for (int i = 0; i < 2; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' the small cat sleeps .", TS_PROGRAM, commands[i], model);
        cr_assert_eq(rc, 2, "%s: exit %d\n%s", commands[i], rc, out);
        cr_assert(strstr(out, "quote the sentence") && strstr(out, "--model CKPT 'the small cat sleeps .'"), "%s", out);
        free(out);
    }
    // Quoted, or one word, or sentences with spaces: translated as given.
    char *out;
    int rc = test_runf(&out, "(%s translate --model '%s' 'the small cat sleeps .' cat 'a dog' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert(rc == 0 && count_lines(out) == 3, "exit %d:\n%s", rc, out);
    free(out);
}

// -h after --model was translated as a sentence; -- ends the options.
Test(cli_usage, dash_h_prints_the_usage_and_double_dash_ends_the_options) {
    const char *commands[] = {"translate", "attend", "eval"};
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' -h", TS_PROGRAM, commands[i], model);
        cr_assert(rc == 0 && !strncmp(out, "usage: tinyseq", 14), "%s -h: exit %d\n%s", commands[i], rc, out);
        free(out);
    }
    char *out;
    int rc = test_runf(&out, "(%s translate --model '%s' -- '--beam 2' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert(rc == 0 && count_lines(out) == 1, "one sentence after --: exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s translate --model '%s' -x", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "unknown option -x"), "exit %d\n%s", rc, out);
    free(out);
}

Test(cli_usage, a_run_directory_given_as_model_suggests_its_best_checkpoint) {
    const char *commands[] = {"translate --model '%s' cat", "attend --model '%s' cat",
                              "eval --corpus /dev/null --model '%s'"};
    for (int i = 0; i < 3; i++) {
        char args[8600], want[4400], *out;
        snprintf(args, sizeof args, commands[i], run);
        snprintf(want, sizeof want, "did you mean --model %s/best.ckpt?", run);
        int rc = test_runf(&out, "%s %s", TS_PROGRAM, args);
        cr_assert(rc == 1 && strstr(out, "is a directory, not a checkpoint") && strstr(out, want), "%s: exit %d\n%s", args,
                  rc, out);
        free(out);
    }
    char *out;  // a directory that is not a run: no suggestion
    int rc = test_runf(&out, "%s info '%s'", TS_PROGRAM, dir);
    cr_assert(rc == 1 && strstr(out, "is a directory, not a checkpoint") && !strstr(out, "did you mean"), "exit %d\n%s",
              rc, out);
    free(out);
}

// attend reads its sentence from standard input as translate does.
Test(cli_usage, attend_reads_the_sentence_from_standard_input) {
    char *piped, *given;
    int rc = test_runf(&piped, "(printf '\\nthe small cat .\\n\\n' | %s attend --model '%s' --color never 2>/dev/null)",
                       TS_PROGRAM, model);
    cr_assert_eq(rc, 0, "%s", piped);
    rc = test_runf(&given, "(%s attend --model '%s' --color never 'the small cat .' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert_eq(rc, 0, "%s", given);
    cr_assert_str_eq(piped, given);
    free(piped);
    free(given);
    char *out;
    rc = test_runf(&out, "printf 'the cat .\\na dog .\\n' | %s attend --model '%s'", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "standard input holds 2 sentences"), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' < /dev/null", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "no SENTENCE"), "exit %d\n%s", rc, out);
    free(out);
}
