// tinyseq train from the command line: error paths exit 2 with a message;
// a short run writes its files, and its checkpoint translates unknown words.
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static void expect_usage_error(const char *args, const char *message) {
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "%s train %s", TS_PROGRAM, args);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 2, "'%s' exited %d:\n%s", args, rc, out);
    cr_assert(strstr(out, message), "'%s' said:\n%s\n(expected '%s')", args, out, message);
    free(out);
}

Test(cli_train, bad_flags_values_and_files_exit_2) {
    expect_usage_error("--bogus", "unknown option --bogus");
    expect_usage_error("--hidden", "--hidden needs a value");
    expect_usage_error("--hidden 0", "--hidden must be between 1 and 8192");
    expect_usage_error("--lr abc", "--lr expects a number, got 'abc'");
    expect_usage_error("--tf 1.5", "--tf must be between 0 and 1");
    expect_usage_error("--attn luong", "unknown attention 'luong'");
    expect_usage_error("--optim rmsprop", "unknown optimizer 'rmsprop'");
    expect_usage_error("--corpus /nonexistent/pairs.tsv", "cannot open '/nonexistent/pairs.tsv'");
    expect_usage_error("--resume /nonexistent/last.ckpt", "cannot open '/nonexistent/last.ckpt'");
    expect_usage_error("stray", "unexpected argument 'stray'");
}

Test(cli_train, a_malformed_corpus_line_is_named_and_exits_1) {
    char *dir = test_tmpdir();
    const char text[] = "one\tun\ntwo without a tab\n";
    char *corpus = test_write_file(dir, "bad.tsv", text, sizeof text - 1);
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd, "%s train --corpus %s --out %s/run", TS_PROGRAM, corpus, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "bad.tsv:2"), "the message names file:line:\n%s", out);
    free(out);
}

Test(cli_train, a_short_run_writes_its_files_and_translates_unknown_words, .timeout = 120) {
    char *dir = test_tmpdir();
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd,
             "%s train --toy-pairs 400 --emb 8 --hidden 16 --epochs 2 --dev 20 --show 1 --out %s/run", TS_PROGRAM, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "epoch 2: train loss"), "%s", out);
    cr_assert(strstr(out, "train: tokens_per_s="), "%s", out);
    free(out);
    const char *files[] = {"last.ckpt", "best.ckpt", "metrics.csv", "config.txt", "loss.svg", "attention-1.svg", "attention-2.svg"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/run/%s", dir, files[i]);
        cr_assert_eq(access(path, R_OK), 0, "%s was not written", files[i]);
    }
    snprintf(cmd, sizeof cmd, "%s translate --model %s/run/best.ckpt 'the zyzzyva sees a xylophone .'", TS_PROGRAM, dir);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "unknown words must not fail: exit %d:\n%s", rc, out);
    cr_assert(strlen(out) > 1, "no translation printed");
    free(out);
}
