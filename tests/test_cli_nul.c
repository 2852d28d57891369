// Every reader of a text file refuses a NUL byte naming the file (or
// standard input) and the line (issue 38): C's string functions stop at a
// NUL, so the bytes after it went unread, silently. The report's files have
// their own test (test_cli_report.c, hostile_lines_...).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define RUN_FLAGS "--toy-pairs 300 --emb 8 --hidden 8 --show 0 --beam 1 --threads 1"

static char *dir;

static void setup(void) {
    dir = test_tmpdir();
    char *out;
    int rc = test_runf(&out, "'%s' train " RUN_FLAGS " --epochs 1 --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void teardown(void) {
    test_runf(NULL, "rm -rf '%s'", dir);
    free(dir);
}

TestSuite(cli_nul, .init = setup, .fini = teardown);

Test(cli_nul, every_text_reader_refuses_a_nul_naming_the_file_and_line, .timeout = 120) {
    static const char corpus[] = "the cat .\tle chat .\nthe dog .\tle chien .\n";
    static const struct {
        const char *what, *text;
        size_t len;
        const char *command;  // %1$s the program, %2$s the directory, %3$s the file
        int exit;
        const char *says;     // after the file's name
    } cases[] = {
        {"a corpus", "the cat .\tle chat .\nthe dog .\tle chien .\0 x\n", 42,
         "'%1$s' eval --model %2$s/run/best.ckpt --corpus %3$s", 1, ":2: NUL byte"},
        {"gold alignments", "0-0\n0-0\0 1-1\n", 12,
         "'%1$s' eval --model %2$s/run/best.ckpt --corpus %2$s/corpus.tsv --align %3$s", 1, ":2: a NUL byte"},
        {"a config file", "epochs = 1\nemb = 8\0 hidden = 900\n", 31,
         "'%1$s' train " RUN_FLAGS " --config %3$s --out %2$s/other", 2, ":2: a NUL byte"},
        {"attend's standard input", "the cat .\0 the dog .\n", 21,
         "'%1$s' attend --model %2$s/run/best.ckpt < %3$s", 1, "standard input: line 1: a NUL byte"},
        {"translate's standard input", "the cat .\nthe cat .\0 x\n", 22,
         "'%1$s' translate --model %2$s/run/best.ckpt < %3$s", 1, "line 2: NUL byte"},
    };
    free(test_write_file(dir, "corpus.tsv", corpus, strlen(corpus)));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *path = test_write_file(dir, "file.txt", cases[i].text, cases[i].len), *out;
        int rc = test_runf(&out, cases[i].command, TS_PROGRAM, dir, path);
        cr_assert_eq(rc, cases[i].exit, "%s: exit %d: %s", cases[i].what, rc, out);
        const char *named = strstr(out, cases[i].says);
        cr_assert(named, "%s: the message does not say '%s': %s", cases[i].what, cases[i].says, out);
        if (strncmp(cases[i].says, ":", 1) == 0)
            cr_assert(strstr(out, path), "%s: the message does not name %s: %s", cases[i].what, path, out);
        free(out);
        free(path);
    }
}

// A continued run rewrites metrics.csv, steps.csv and attention.jsonl up to
// its checkpoint: a line with a NUL would have been cut there. The resume is
// refused instead, and the files stay as they were.
Test(cli_nul, resume_refuses_a_run_file_with_a_nul_and_keeps_it, .timeout = 120) {
    const char *files[] = {"metrics.csv", "steps.csv", "attention.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4200], saved[4200], *out;
        snprintf(path, sizeof path, "%s/run/%s", dir, files[i]);
        snprintf(saved, sizeof saved, "%s/saved", dir);
        cr_assert_eq(test_runf(NULL, "cp '%s' '%s' && printf '1,2\\0000,3\\n' >> '%s' && cp '%s' '%s.nul'", path, saved,
                               path, path, saved), 0);
        int rc = test_runf(&out, "'%s' train " RUN_FLAGS " --epochs 2 --resume %s/run/last.ckpt --out %s/run", TS_PROGRAM,
                           dir, dir);
        cr_assert_eq(rc, 1, "%s: exit %d: %s", files[i], rc, out);
        cr_assert(strstr(out, path) && strstr(out, ": a NUL byte"), "%s: %s", files[i], out);
        free(out);
        snprintf(saved, sizeof saved, "%s/saved.nul", dir);
        cr_assert(test_same_bytes(path, saved), "%s was changed", files[i]);
        cr_assert_eq(test_runf(NULL, "mv '%s/saved' '%s'", dir, path), 0);
    }
}
