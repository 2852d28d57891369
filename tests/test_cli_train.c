// tinyseq train from the command line: error paths exit 2 with a message;
// a short run writes its files, and its checkpoint translates unknown words;
// at a terminal every line fits its width.
#include <criterion/criterion.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
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
    expect_usage_error("--weight-decay 0.1", "--weight-decay applies to --optim adamw only; this run uses --optim adam");
    expect_usage_error("--optim sgd --weight-decay 0.1", "this run uses --optim sgd");
    expect_usage_error("--optim adamw --weight-decay -1", "--weight-decay must be between 0 and 100");
    expect_usage_error("stray", "unexpected argument 'stray'");
    expect_usage_error("--bidirectional=1", "--bidirectional is a switch and takes no value, got '--bidirectional=1'");
    expect_usage_error("--skip-bad=x", "--skip-bad is a switch and takes no value");
    expect_usage_error("--force=yes", "--force is a switch and takes no value");
    expect_usage_error("--threads 1000", "--threads must be between 1 and 64, got 1000");
    // A checkpoint of 2.4 GB would pass the loader's 2 GiB cap: refused before any work.
    char args[1024];
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 2400 --hidden 2400 --out %s/big", test_tmpdir());
    expect_usage_error(args, "embedding 2400, hidden 2400) with vocabularies");
    expect_usage_error(args, "more than the 2 GiB a checkpoint may hold");
}

static void expect_exit(int status, const char *args, const char *message) {
    char cmd[8192], *out;
    snprintf(cmd, sizeof cmd, "%s train %s", TS_PROGRAM, args);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, status, "'%s' exited %d, not %d:\n%s", args, rc, status, out);
    cr_assert(strstr(out, message), "'%s' said:\n%s\n(expected '%s')", args, out, message);
    free(out);
}

// Usage errors exit 2; what goes wrong with the files at run time exits 1.
Test(cli_train, unreadable_files_and_unusable_corpora_exit_1) {
    char *dir = test_tmpdir();
    char args[2048];
    expect_exit(1, "--corpus /nonexistent/pairs.tsv", "--corpus: cannot open '/nonexistent/pairs.tsv'");
    expect_exit(1, "--resume /nonexistent/last.ckpt", "--resume: cannot open '/nonexistent/last.ckpt'");
    const char one[] = "one\tun\n";
    char *corpus = test_write_file(dir, "one.tsv", one, sizeof one - 1);
    snprintf(args, sizeof args, "--corpus %s --out %s/run", corpus, dir);
    expect_exit(1, args, "one.tsv has 1 usable pairs; training needs at least 2");
    free(corpus);
}

// --dev N holds out N pairs as asked, or says why it cannot.
Test(cli_train, dev_is_honoured_or_refused_naming_the_flag, .timeout = 60) {
    char *dir = test_tmpdir();
    char args[2048];
    snprintf(args, sizeof args, "--toy-pairs 300 --dev 100 --emb 4 --hidden 4 --steps 1 --show 0 --out %s/a", dir);
    expect_exit(0, args, "200 train / 100 dev pairs");
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 4 --hidden 4 --steps 1 --show 0 --out %s/b", dir);
    expect_exit(0, args, "270 train / 30 dev pairs");  // the default: a tenth of a small corpus
    snprintf(args, sizeof args, "--toy-pairs 300 --dev 300 --emb 4 --hidden 4 --steps 1 --out %s/c", dir);
    expect_exit(2, args, "--dev 300: the toy corpus has 300 usable pairs, so at most 299 can be held out");
}

// A run of a few steps, shorter than an epoch, reports a speed and leaves a
// best.ckpt evaluated at its end.
Test(cli_train, a_run_shorter_than_an_epoch_has_a_speed_and_a_best_checkpoint, .timeout = 60) {
    char *dir = test_tmpdir();
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd, "%s train --toy-pairs 400 --emb 8 --hidden 8 --steps 2 --show 0 --out %s/run", TS_PROGRAM, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *line = strstr(out, "train: tokens_per_s=");
    cr_assert_not_null(line, "%s", out);
    double rate = strtod(line + strlen("train: tokens_per_s="), NULL);
    cr_assert(isfinite(rate) && rate > 0, "tokens_per_s: %s", line);
    cr_assert(strstr(out, "best: step 2 (epoch 0.") && strstr(out, ", the last model) by dev BLEU"), "%s", out);
    free(out);
    char path[1024];
    snprintf(path, sizeof path, "%s/run/best.ckpt", dir);
    snprintf(cmd, sizeof cmd, "%s translate --model %s 'the cat .'", TS_PROGRAM, path);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "best.ckpt does not translate: exit %d:\n%s", rc, out);
    free(out);
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

// --skip-bad names the lines it skipped and what was wrong with the first
// (issue 47), in train, eval and corpus alike.
Test(cli_train, skip_bad_names_the_lines_it_skipped, .timeout = 120) {
    char *dir = test_tmpdir(), text[4096] = "", *out;
    for (int i = 1; i <= 40; i++) {
        size_t len = strlen(text);
        if (i == 3 || i == 17) snprintf(text + len, sizeof text - len, "line %d without a tab\n", i);
        else snprintf(text + len, sizeof text - len, "word%d is here .\tmot%d est ici .\n", i % 7, i % 7);
    }
    char *corpus = test_write_file(dir, "bad.tsv", text, strlen(text));
    const char *want = "2 malformed lines of %s: lines 3 and 17 (line 3: no tab (expected source<TAB>target))";
    char expected[4400];
    snprintf(expected, sizeof expected, want, corpus);
    int rc = test_runf(&out, "%s train --corpus %s --skip-bad --emb 4 --hidden 4 --steps 1 --show 0 --beam 1 --out %s/run",
                       TS_PROGRAM, corpus, dir);
    cr_assert(rc == 0 && strstr(out, "skipped ") && strstr(out, expected), "exit %d:\n%s", rc, out);
    free(out);
    snprintf(expected, sizeof expected, "'%s': lines 3 and 17 (line 3: no tab", corpus);
    rc = test_runf(&out, "%s corpus --normalize %s --skip-bad", TS_PROGRAM, corpus);
    cr_assert(rc == 0 && strstr(out, expected), "exit %d:\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s eval --model %s/run/best.ckpt --corpus %s --skip-bad --beam 1 --show 0", TS_PROGRAM, dir, corpus);
    cr_assert(rc == 0 && strstr(out, "2 malformed lines skipped: lines 3 and 17 (line 3: no tab"), "exit %d:\n%s", rc, out);
    free(out);
    free(corpus);
    free(dir);
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

// An attention figure as the trainer wrote it: the cell values row by row,
// and the source words (the rotated column labels), XML entities undone.
typedef struct {
    double values[64 * 64];
    int rows, cols;
    char source[4096];
} svg_figure;

static void unescape_into(char *out, size_t cap, const char *text, size_t n) {
    static const char *const entities[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&#39;", "'"}};
    size_t len = strlen(out);
    for (size_t i = 0; i < n && len + 1 < cap;) {
        int done = 0;
        for (size_t e = 0; e < sizeof entities / sizeof entities[0] && !done; e++) {
            size_t k = strlen(entities[e][0]);
            if (i + k <= n && !strncmp(text + i, entities[e][0], k)) {
                out[len++] = entities[e][1][0];
                i += k;
                done = 1;
            }
        }
        if (!done) out[len++] = text[i++];
    }
    out[len] = '\0';
}

static void read_svg_figure(const char *path, svg_figure *fig) {
    char *svg = test_read_file(path, NULL);
    memset(fig, 0, sizeof *fig);
    double first_y = -1, row_y = -1;
    int n = 0;
    for (const char *p = strstr(svg, "<rect x="); p; p = strstr(p + 1, "<rect x=")) {
        double x, y;
        const char *text = strstr(p, "<text");
        if (sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"44\"", &x, &y) != 2 || !strstr(p, "width=\"44\"") ||
            strstr(p, "width=\"44\"") > strchr(p, '>'))
            continue;  // not a cell
        const char *value = strchr(text, '>') + 1;
        if (first_y < 0) first_y = y;
        if (y != row_y) {
            row_y = y;
            fig->rows++;
        }
        cr_assert(n < 64 * 64);
        fig->values[n++] = strtod(value, NULL);
    }
    cr_assert(fig->rows > 0, "%s has no cells", path);
    fig->cols = n / fig->rows;
    cr_assert_eq(fig->cols * fig->rows, n, "%s: %d cells in %d rows", path, n, fig->rows);
    for (const char *p = strstr(svg, "transform=\"rotate(-45"); p; p = strstr(p + 1, "transform=\"rotate(-45")) {
        const char *start = strchr(p, '>') + 1, *end = strstr(start, "</text>");
        if (fig->source[0]) strcat(fig->source, " ");
        unescape_into(fig->source, sizeof fig->source, start, (size_t)(end - start));
    }
    free(svg);
}

// The numbers of "weights" in attend's JSON, in order.
static int read_json_weights(const char *path, double *out, int cap) {
    char *json = test_read_file(path, NULL);
    const char *p = strstr(json, "\"weights\"");
    cr_assert_not_null(p, "%s has no weights", path);
    const char *end = strstr(p, "]]");
    int n = 0;
    for (p = strchr(p, '['); p < end;) {
        while (p < end && !(*p == '-' || (*p >= '0' && *p <= '9'))) p++;
        if (p >= end) break;
        char *next;
        cr_assert(n < cap);
        out[n++] = strtod(p, &next);
        p = next;
    }
    free(json);
    return n;
}

// Every figure the trainer writes is a distribution per row, and the last
// one shows what `attend` shows for the same sentence and checkpoint.
Test(cli_train, attention_figures_have_rows_that_sum_to_1_and_match_attend, .timeout = 120) {
    char *dir = test_tmpdir();
    char cmd[8192], *out;
    snprintf(cmd, sizeof cmd, "%s train --toy-pairs 400 --emb 8 --hidden 16 --epochs 3 --patience 10 --dev 40 --show 0 --out %s/run",
             TS_PROGRAM, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    static svg_figure fig;
    for (int epoch = 1; epoch <= 3; epoch++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/run/attention-%d.svg", dir, epoch);
        read_svg_figure(path, &fig);
        for (int j = 0; j < fig.rows; j++) {
            double sum = 0;
            for (int i = 0; i < fig.cols; i++) sum += fig.values[j * fig.cols + i];
            // Each value is printed to 2 decimals: the sum may be off by cols * 0.005.
            cr_assert(fabs(sum - 1) <= 0.005 * fig.cols + 1e-9, "attention-%d.svg row %d sums to %.2f over %d columns",
                      epoch, j, sum, fig.cols);
        }
    }
    // attention-3.svg shows the model that last.ckpt holds (the run ends there).
    cr_assert(strlen(fig.source) < 400, "a long first dev sentence: %s", fig.source);
    char quoted[2048] = "'";
    for (const char *c = fig.source; *c; c++) strcat(quoted, *c == '\'' ? "'\\''" : (char[2]){*c, 0});
    strcat(quoted, "'");
    // The figures show the epoch's greedy outputs: attend --beam 1 decodes so.
    snprintf(cmd, sizeof cmd, "%s attend --beam 1 --model %s/run/last.ckpt --json %s/a.json %s", TS_PROGRAM, dir, dir,
             quoted);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    static double want[64 * 64];
    char json_path[1024];
    snprintf(json_path, sizeof json_path, "%s/a.json", dir);
    int n = read_json_weights(json_path, want, 64 * 64);
    cr_assert_eq(n, fig.rows * fig.cols, "attend gives %d weights, the figure %d x %d", n, fig.rows, fig.cols);
    for (int k = 0; k < n; k++)
        cr_assert(fabs(fig.values[k] - want[k]) <= 0.005 + 1e-9, "cell (%d, %d): figure %.2f, attend %.6f",
                  k / fig.cols, k % fig.cols, fig.values[k], want[k]);
}

// The epochs column of dir/metrics.csv, which must start with its header.
static int metrics_epochs(const char *dir, int *epochs, int cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    char *csv = test_read_file(path, NULL);
    cr_assert(!strncmp(csv, "epoch,step,", 11), "metrics.csv starts with: %.40s", csv);
    int n = 0;
    for (char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        cr_assert(n < cap);
        cr_assert_eq(sscanf(line + 1, "%d,", &epochs[n]), 1, "metrics.csv row: %.40s", line + 1);
        n++;
    }
    free(csv);
    return n;
}

// One run per --out: a second run into it is refused with what to do;
// --force starts clean without touching other files; --resume continues.
Test(cli_train, a_directory_holding_a_run_is_refused_replaced_with_force_or_continued, .timeout = 120) {
    char *dir = test_tmpdir();
    char run[1024], args[4096], path[1100];
    snprintf(run, sizeof run, "%s/run", dir);
    const char *flags = "--toy-pairs 300 --emb 4 --hidden 4 --patience 10 --show 0";
    snprintf(args, sizeof args, "%s --epochs 2 --out %s", flags, run);
    expect_exit(0, args, "epoch 2:");
    char *notes = test_write_file(run, "notes.txt", "mine\n", 5);

    char message[4096];
    snprintf(message, sizeof message, "--out %s already holds a run", run);
    expect_exit(2, args, message);
    snprintf(message, sizeof message, "continue it with --resume %s/last.ckpt", run);
    expect_exit(2, args, message);
    expect_exit(2, args, "--force");

    snprintf(args, sizeof args, "%s --epochs 1 --force --out %s", flags, run);
    expect_exit(0, args, "epoch 1:");
    int epochs[16];
    int n = metrics_epochs(run, epochs, 16);
    cr_assert(n == 1 && epochs[0] == 1, "after --force, metrics.csv has %d rows", n);
    snprintf(path, sizeof path, "%s/attention-2.svg", run);
    cr_assert_neq(access(path, F_OK), 0, "the replaced run's attention-2.svg is still there");
    cr_assert_eq(access(notes, F_OK), 0, "--force deleted a file tinyseq did not write");

    snprintf(args, sizeof args, "%s --epochs 3 --resume %s/last.ckpt --out %s", flags, run, run);
    expect_exit(0, args, "epoch 3:");
    n = metrics_epochs(run, epochs, 16);
    cr_assert(n == 3 && epochs[0] == 1 && epochs[1] == 2 && epochs[2] == 3, "after --resume, metrics.csv has %d rows", n);
    cr_assert_eq(access(notes, F_OK), 0);
    free(notes);
}

// --resume without --out continues the run in the checkpoint's own
// directory, as train --help says: it went to a new runs/<date-time> in the
// working directory, and the run's metrics.csv stopped where it was. Both
// spellings: a path with a directory, and a bare name from inside the run.
Test(cli_train, resume_without_out_continues_in_the_checkpoints_directory, .timeout = 120) {
    char *dir = test_tmpdir();
    char run[1024], args[4096], cmd[8192], path[1100], *out;
    snprintf(run, sizeof run, "%s/run", dir);
    const char *flags = "--toy-pairs 300 --emb 4 --hidden 4 --patience 10 --show 0";
    snprintf(args, sizeof args, "%s --epochs 1 --out %s", flags, run);
    expect_exit(0, args, "epoch 1:");
    const char *resumes[][2] = {{dir, "run/last.ckpt"}, {run, "last.ckpt"}};
    for (int k = 0; k < 2; k++) {
        // From a scratch directory, so that a new run directory would be made there.
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' train %s --epochs %d --resume %s", resumes[k][0], TS_PROGRAM, flags,
                 k + 2, resumes[k][1]);
        int rc = test_run(cmd, &out);
        cr_assert_eq(rc, 0, "%s\nexit %d:\n%s", cmd, rc, out);
        free(out);
        int epochs[16];
        int n = metrics_epochs(run, epochs, 16);
        cr_assert(n == k + 2 && epochs[n - 1] == k + 2, "after --resume %s without --out, %s/metrics.csv has %d rows",
                  resumes[k][1], run, n);
        snprintf(path, sizeof path, "%s/runs", resumes[k][0]);
        cr_assert_neq(access(path, F_OK), 0, "--resume %s without --out made %s", resumes[k][1], path);
    }
}

// Starts `tinyseq train ARGS` in the background, its output into log.
static pid_t start_train(const char *args, const char *log) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s train %s > %s 2>&1", TS_PROGRAM, args, log);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

// Waits (up to 5 minutes) until path exists.
static void wait_for_file(const char *path, pid_t child) {
    for (int ms = 0; ms < 300000 && access(path, F_OK) != 0; ms++) {
        int status;
        cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "the run ended before %s appeared", path);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(access(path, F_OK), 0, "%s never appeared", path);
}

// Ctrl-C stops at a step boundary, saves last.ckpt, prints where and the
// command that continues; that command finishes the run exactly as if it had
// never stopped (the same checkpoints to the byte).
Test(cli_train, sigint_saves_a_checkpoint_that_resumes_exactly, .timeout = 600) {
    char *dir = test_tmpdir();
    char args[4096], log[1024], metrics[1024];
    const char *flags = "--toy-pairs 1500 --emb 8 --hidden 16 --epochs 4 --patience 10 --tf 0.75 --show 0";
    snprintf(args, sizeof args, "%s --out %s/a", flags, dir);
    snprintf(log, sizeof log, "%s/a.log", dir);
    snprintf(metrics, sizeof metrics, "%s/a/metrics.csv", dir);
    pid_t pid = start_train(args, log);
    wait_for_file(metrics, pid);  // epoch 1 is done: stop it in epoch 2
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    char *out = test_read_file(log, NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d:\n%s", status, out);
    cr_assert(strstr(out, "stopped by SIGINT at step "), "%s", out);
    char saved[1100];
    snprintf(saved, sizeof saved, "saved %s/a/last.ckpt", dir);
    cr_assert(strstr(out, saved), "%s", out);
    char *line = strstr(out, "continue with: ");
    cr_assert_not_null(line, "%s", out);
    line += strlen("continue with: ");
    *strchr(line, '\n') = '\0';
    char want[2048];
    snprintf(want, sizeof want, "--out %s/a --resume %s/a/last.ckpt", dir, dir);
    cr_assert(strstr(line, want), "%s", line);
    long step = -1;
    sscanf(strstr(out, "at step ") + 8, "%ld", &step);
    char cmd[8192], *resumed;
    snprintf(cmd, sizeof cmd, "%s", line);
    int rc = test_run(cmd, &resumed);
    cr_assert_eq(rc, 0, "%s\nexit %d:\n%s", cmd, rc, resumed);
    char resumed_at[64];
    snprintf(resumed_at, sizeof resumed_at, "at step %ld ", step);
    cr_assert(strstr(resumed, resumed_at), "the resumed run does not start at step %ld:\n%s", step, resumed);
    free(resumed);
    free(out);

    snprintf(cmd, sizeof cmd, "%s train %s --out %s/b", TS_PROGRAM, flags, dir);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    const char *names[2] = {"last.ckpt", "best.ckpt"};
    for (int i = 0; i < 2; i++) {
        char a[1100], b[1100];
        snprintf(a, sizeof a, "%s/a/%s", dir, names[i]);
        snprintf(b, sizeof b, "%s/b/%s", dir, names[i]);
        char *x = test_read_file(a, NULL), *y = test_read_file(b, NULL);
        struct stat sa, sb;
        stat(a, &sa);
        stat(b, &sb);
        cr_assert(sa.st_size == sb.st_size && !memcmp(x, y, (size_t)sa.st_size), "%s differs from the uninterrupted run's", names[i]);
        free(x);
        free(y);
    }
    int epochs[16];
    snprintf(metrics, sizeof metrics, "%s/a", dir);
    int n = metrics_epochs(metrics, epochs, 16);
    cr_assert(n == 4 && epochs[0] == 1 && epochs[3] == 4, "metrics.csv has %d rows", n);
}

// A second Ctrl-C ends the process at once; the checkpoint saved before stays loadable.
Test(cli_train, a_second_sigint_stops_at_once_and_keeps_the_last_checkpoint, .timeout = 600) {
    char *dir = test_tmpdir();
    char args[4096], log[1024], last[1024];
    snprintf(args, sizeof args, "--toy-pairs 1500 --emb 8 --hidden 16 --epochs 100 --patience 100 --show 0 --out %s/a", dir);
    snprintf(log, sizeof log, "%s/a.log", dir);
    snprintf(last, sizeof last, "%s/a/last.ckpt", dir);
    pid_t pid = start_train(args, log);
    wait_for_file(last, pid);
    kill(pid, SIGINT);
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    // Killed by the second signal, or (if the first stop's save was faster than the second signal) the first's exit.
    cr_assert((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) || (WIFEXITED(status) && WEXITSTATUS(status) == 130),
              "status %d", status);
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd, "%s translate --model %s 'the cat .'", TS_PROGRAM, last);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "last.ckpt does not load after two Ctrl-C: exit %d:\n%s", rc, out);
    free(out);
}

// Running out of memory is a failure at run time (exit 1), not a usage error.
Test(cli_train, out_of_memory_exits_1, .timeout = 60) {
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer reserves more address space than ulimit -v leaves");
#endif
    char *dir = test_tmpdir();
    char cmd[2048], *out;
    // The model alone needs over 1 GB (its values and gradients); 600 MB of address space cannot hold it.
    snprintf(cmd, sizeof cmd, "ulimit -v 600000; %s train --toy-pairs 300 --emb 2000 --hidden 2000 --steps 1 --out %s/run",
             TS_PROGRAM, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "out of memory"), "%s", out);
    free(out);
}

// Continuing from an earlier checkpoint of the same directory drops what the
// run wrote after it: metrics.csv rows and attention figures of later epochs.
Test(cli_train, continuing_from_an_earlier_checkpoint_drops_the_later_epochs, .timeout = 120) {
    char *dir = test_tmpdir();
    char run[1024], args[4096], path[1100];
    snprintf(run, sizeof run, "%s/run", dir);
    const char *flags = "--toy-pairs 300 --emb 4 --hidden 4 --patience 10 --show 0";
    snprintf(args, sizeof args, "%s --epochs 1 --out %s", flags, run);
    expect_exit(0, args, "epoch 1:");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp %s/last.ckpt %s/epoch1.ckpt", run, run);
    cr_assert_eq(test_run(cmd, NULL), 0);
    snprintf(args, sizeof args, "%s --epochs 3 --resume %s/last.ckpt --out %s", flags, run, run);
    expect_exit(0, args, "epoch 3:");
    snprintf(args, sizeof args, "%s --epochs 2 --resume %s/epoch1.ckpt --out %s", flags, run, run);
    expect_exit(0, args, "epoch 2:");
    int epochs[16];
    int n = metrics_epochs(run, epochs, 16);
    cr_assert(n == 2 && epochs[0] == 1 && epochs[1] == 2, "metrics.csv has %d rows, the last for epoch %d", n, n ? epochs[n - 1] : 0);
    snprintf(path, sizeof path, "%s/attention-3.svg", run);
    cr_assert_neq(access(path, F_OK), 0, "attention-3.svg of the dropped epoch is still there");
    snprintf(path, sizeof path, "%s/epoch1.ckpt", run);
    cr_assert_eq(access(path, F_OK), 0, "the user's epoch1.ckpt was deleted");
}

// --keep N keeps the last N epochs' models; tinyseq average takes them and
// writes one checkpoint that translates; --force removes the kept files too.
Test(cli_train, keep_then_average_gives_a_model_that_translates, .timeout = 120) {
    char *dir = test_tmpdir();
    char run[1024], args[4096], path[1100], cmd[8192];
    snprintf(run, sizeof run, "%s/run", dir);
    const char *flags = "--toy-pairs 300 --emb 4 --hidden 4 --patience 10 --show 0";
    snprintf(args, sizeof args, "%s --epochs 3 --keep 2 --out %s", flags, run);
    expect_exit(0, args, "epoch 3:");
    for (int e = 1; e <= 3; e++) {
        snprintf(path, sizeof path, "%s/epoch-%d.ckpt", run, e);
        cr_assert_eq(access(path, F_OK) == 0, e >= 2, "epoch-%d.ckpt %s", e, e >= 2 ? "is missing" : "was kept");
    }
    char *out;
    snprintf(cmd, sizeof cmd, "%s average %s/epoch-2.ckpt %s/epoch-3.ckpt -o %s/avg.ckpt", TS_PROGRAM, run, run, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "average: 2 checkpoints -> "), "%s", out);
    free(out);
    rc = test_run(cmd, &out);  // the output exists now
    cr_assert(rc == 1 && strstr(out, "exists; pass --force"), "exit %d: %s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s translate --model %s/avg.ckpt 'the cat sleeps .'", TS_PROGRAM, dir);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s average %s/epoch-2.ckpt", TS_PROGRAM, run);
    rc = test_run(cmd, &out);
    cr_assert(rc == 2 && strstr(out, "-o OUT.ckpt is required"), "exit %d: %s", rc, out);
    free(out);
    snprintf(args, sizeof args, "%s --epochs 1 --force --out %s", flags, run);
    expect_exit(0, args, "epoch 1:");
    snprintf(path, sizeof path, "%s/epoch-3.ckpt", run);
    cr_assert_neq(access(path, F_OK), 0, "--force left the old run's epoch-3.ckpt");
    free(dir);
}

// A run's config.txt read back with --config repeats the run to the bit;
// flags on the command line win; bad lines are named by file and line.
Test(cli_train, config_txt_repeats_the_run_and_names_bad_lines, .timeout = 120) {
    char *dir = test_tmpdir();
    char args[4096], path[1100], cmd[8192];
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 6 --hidden 8 --steps 12 --lr 0.0123456789 --dropout 0.1 "
                                "--show 0 --out %s/a", dir);
    expect_exit(0, args, "train: tokens_per_s=");
    snprintf(args, sizeof args, "--config %s/a/config.txt --out %s/b", dir, dir);
    expect_exit(0, args, "train: tokens_per_s=");
    snprintf(cmd, sizeof cmd, "cmp %s/a/last.ckpt %s/b/last.ckpt", dir, dir);
    cr_assert_eq(test_run(cmd, NULL), 0, "the run repeated from config.txt differs");
    snprintf(args, sizeof args, "--config %s/a/config.txt --hidden 10 --out %s/c", dir, dir);
    expect_exit(0, args, "train: tokens_per_s=");
    snprintf(path, sizeof path, "%s/c/config.txt", dir);
    char *text = NULL;
    cr_assert_eq(test_run((snprintf(cmd, sizeof cmd, "cat %s", path), cmd), &text), 0);
    cr_assert(strstr(text, "hidden = 10\n") && strstr(text, "emb = 6\n") && strstr(text, "dropout = 0.1\n"), "%s", text);
    free(text);

    // Paths given in the file stay valid while later lines are read.
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 200 --seed 3 > %s/pairs.tsv && %s corpus --toy --n 20 --seed 4 > %s/held.tsv",
             TS_PROGRAM, dir, TS_PROGRAM, dir);
    cr_assert_eq(test_run(cmd, NULL), 0);
    char lines[4096];
    int n = snprintf(lines, sizeof lines, "corpus = %s/pairs.tsv   # a comment\ndev = %s/held.tsv\nemb = 4\nhidden = 4\n"
                                          "epochs = 1\nbidirectional = 1\n", dir, dir);
    char *paths = test_write_file(dir, "paths.txt", lines, (size_t)n);
    snprintf(args, sizeof args, "--config %s --show 0 --out %s/e", paths, dir);
    expect_exit(0, args, "epoch 1:");
    snprintf(cmd, sizeof cmd, "cat %s/e/config.txt", dir);
    cr_assert_eq(test_run(cmd, &text), 0);
    snprintf(lines, sizeof lines, "corpus = %s/pairs.tsv\n", dir);
    cr_assert(strstr(text, lines) && strstr(text, "/held.tsv\n") && strstr(text, "bidirectional = 1\n"), "%s", text);
    free(text);
    free(paths);

    char *bad = test_write_file(dir, "bad.txt", "# mine\nemb = 6\n\nwidth = 3\n", 25);
    snprintf(args, sizeof args, "--config %s --out %s/d", bad, dir);
    char message[2048];
    snprintf(message, sizeof message, "%s:4: unknown key 'width'", bad);
    expect_exit(2, args, message);
    char *zero = test_write_file(dir, "zero.txt", "emb = 0\n", 8);
    snprintf(args, sizeof args, "--config %s --out %s/d", zero, dir);
    snprintf(message, sizeof message, "%s:1: --emb must be between 1 and", zero);
    expect_exit(2, args, message);
    char *no_eq = test_write_file(dir, "noeq.txt", "emb 6\n", 6);
    snprintf(args, sizeof args, "--config %s --out %s/d", no_eq, dir);
    expect_exit(2, args, ":1: expected key = value");
    snprintf(args, sizeof args, "--config %s/missing.txt --out %s/d", dir, dir);
    expect_exit(1, args, "--config: cannot open");
    snprintf(args, sizeof args, "--config %s --out %s/d", dir, dir);  // a directory opens but cannot be read
    expect_exit(1, args, "--config: cannot read");
    free(bad);
    free(zero);
    free(no_eq);
    free(dir);
}

// config.txt's facts name the thread count and the kernels, which fix a
// run's bits (docs/design.md, "Same answers"): repeating them repeats it.
Test(cli_train, config_txt_names_the_threads_and_kernels_that_fix_its_bits, .timeout = 120) {
    char *dir = test_tmpdir(), *text = NULL, cmd[4200];
    char args[4096];
    snprintf(args, sizeof args, "--toy-pairs 40 --emb 4 --hidden 4 --steps 1 --show 0 --beam 0 --threads 2 --out %s/run", dir);
    expect_exit(0, args, "steps=1");
    snprintf(cmd, sizeof cmd, "cat %s/run/config.txt", dir);
    cr_assert_eq(test_run(cmd, &text), 0);
    const char *facts = strstr(text, "# facts\n"), *kernels = facts ? strstr(facts, "\nkernels = ") : NULL;
    cr_assert(facts && strstr(facts, "\nthreads = 2\n"), "%s", text);
    cr_assert(kernels && kernels[strlen("\nkernels = ")] > ' ', "%s", text);
    free(text);
    free(dir);
}

// --dev FILE is the dev set (nothing held out of the corpus), --test FILE is
// evaluated at the end; a resumed run must keep the same --dev.
Test(cli_train, dev_and_test_files_are_held_out_corpora, .timeout = 120) {
    char *dir = test_tmpdir();
    char args[4096], cmd[8192];
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 40 --seed 7 > %s/dev.tsv && %s corpus --toy --n 30 --seed 8 > %s/test.tsv",
             TS_PROGRAM, dir, TS_PROGRAM, dir);
    cr_assert_eq(test_run(cmd, NULL), 0);
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 4 --hidden 4 --epochs 1 --show 0 --dev %s/dev.tsv "
                                "--test %s/test.tsv --out %s/run", dir, dir, dir);
    expect_exit(0, args, "test: loss ");
    expect_exit(2, args, "already holds a run");  // (the same run again is refused, as any)
    char *text = NULL;
    snprintf(cmd, sizeof cmd, "cat %s/run/config.txt", dir);
    cr_assert_eq(test_run(cmd, &text), 0);
    cr_assert(strstr(text, "dev_pairs = 40\n") && strstr(text, "train_pairs = 300\n") && strstr(text, "/dev.tsv\n"),
              "%s", text);
    free(text);
    snprintf(cmd, sizeof cmd, "cp %s/dev.tsv %s/other.tsv", dir, dir);
    cr_assert_eq(test_run(cmd, NULL), 0);
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 4 --hidden 4 --epochs 2 --show 0 --dev %s/other.tsv "
                                "--resume %s/run/last.ckpt --out %s/run2", dir, dir, dir);
    expect_exit(2, args, "was trained with --dev");
    snprintf(args, sizeof args, "--toy-pairs 300 --emb 4 --hidden 4 --epochs 1 --dev %s/none.tsv --out %s/x", dir, dir);
    expect_exit(1, args, "none.tsv");
    free(dir);
}

// dev-pairs.tsv holds the pairs the run evaluated on: eval on it repeats the run's
// final dev lines, greedy and beam. (Without it a user could not reproduce a held-out score.)
Test(cli_train, dev_tsv_repeats_the_final_dev_line_with_eval, .timeout = 120) {
    char *dir = test_tmpdir(), *train_out = NULL, *eval_out = NULL;
    cr_assert_eq(test_runf(&train_out, "%s train --toy-pairs 1500 --emb 16 --hidden 32 --epochs 6 --lr 0.01 --show 0 --out %s/run",
                           TS_PROGRAM, dir), 0);
    cr_assert_eq(test_runf(&eval_out, "%s eval --beam 1 --model %s/run/last.ckpt --corpus %s/run/dev-pairs.tsv --show 0",
                           TS_PROGRAM, dir, dir), 0, "%s", eval_out);
    double loss, ppl, bleu, chrf, exact, e_bleu, e_chrf, e_ppl, e_exact;
    int pairs, e_pairs;
    const char *dev = strstr(train_out, "\ndev: ");
    cr_assert(dev && sscanf(dev, "\ndev: loss %lf, ppl %lf, BLEU %lf, chrF %lf, exact %lf%% on %d pairs", &loss, &ppl,
                            &bleu, &chrf, &exact, &pairs) == 6, "%s", train_out);
    const char *ev = strstr(eval_out, "\neval: ");
    cr_assert(ev && sscanf(ev, "\neval: bleu=%lf chrf=%lf ppl=%lf exact=%lf pairs=%d", &e_bleu, &e_chrf, &e_ppl, &e_exact,
                           &e_pairs) == 5, "%s", eval_out);
    cr_assert_eq(e_pairs, pairs);
    cr_assert_eq(pairs, 150, "a tenth of 1500 pairs is held out");
    cr_assert_gt(bleu, 0.01, "BLEU %g: too little training to compare it", bleu);
    cr_assert_float_eq(e_ppl, ppl, 5e-3 * ppl, "ppl %g vs %g", e_ppl, ppl);
    cr_assert_float_eq(e_bleu, bleu, 1e-4, "BLEU %g vs %g", e_bleu, bleu);
    cr_assert_float_eq(e_chrf, chrf, 1e-4, "chrF %g vs %g", e_chrf, chrf);
    cr_assert_float_eq(100 * e_exact, exact, 0.05, "exact %g vs %g", e_exact, exact);
    // The final beam line (--beam 5 by default) is eval's by default.
    free(eval_out);
    cr_assert_eq(test_runf(&eval_out, "%s eval --model %s/run/last.ckpt --corpus %s/run/dev-pairs.tsv --show 0",
                           TS_PROGRAM, dir, dir), 0, "%s", eval_out);
    const char *beam = strstr(train_out, "\ndev, beam 5: ");
    cr_assert(beam && sscanf(beam, "\ndev, beam 5: BLEU %lf, chrF %lf, exact %lf%%", &bleu, &chrf, &exact) == 3, "%s",
              train_out);
    ev = strstr(eval_out, "\neval: ");
    cr_assert(ev && sscanf(ev, "\neval: bleu=%lf chrf=%lf ppl=%lf exact=%lf", &e_bleu, &e_chrf, &e_ppl, &e_exact) == 4,
              "%s", eval_out);
    cr_assert_float_eq(e_bleu, bleu, 1e-4, "beam BLEU %g vs %g", e_bleu, bleu);
    cr_assert_float_eq(e_chrf, chrf, 1e-4, "beam chrF %g vs %g", e_chrf, chrf);
    cr_assert_float_eq(100 * e_exact, exact, 0.05, "beam exact %g vs %g", e_exact, exact);
    // The defaults the run used are written down (docs/models.md: the recipe).
    char path[4200];
    snprintf(path, sizeof path, "%s/run/config.txt", dir);
    char *config = test_read_file(path, NULL);
    cr_assert(strstr(config, "\nlabel_smoothing = 0.1\n") && strstr(config, "\nbeam = 5\n"), "%s", config);
    cr_assert(strstr(train_out, "\ntraining: label smoothing 0.1, dropout 0, teacher forcing 1; final dev evaluation "
                                "greedy and beam 5\n"), "the run does not say its defaults:\n%s", train_out);
    free(config);
    free(train_out);
    free(eval_out);
    free(dir);
}

// A run says how long it is before it starts (--arch transformer's 20
// epochs are not the GRU's 5), and its progress lines count the epochs and
// give the whole run's ETA beside the epoch's.
Test(cli_train, a_run_says_its_length_and_the_whole_runs_eta, .timeout = 120) {
    char *dir = test_tmpdir(), *out;
    int rc = test_runf(&out, "%s train --arch transformer --d-model 8 --heads 2 --layers 1 --toy-pairs 60 --show 0 "
                             "--beam 1 --out %s/t", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "\nlength: 20 epochs (--epochs) of 2 batches, 40 steps\n"), "%s", out);
    cr_assert(strstr(out, "\nepoch 1/20: 2/2 batches, ") && strstr(out, ", elapsed 0:") && strstr(out, ", left 0:"), "%s",
              out);
    cr_assert(strstr(out, "\nepoch 20/20: 2/2 batches, ") && strstr(out, ", left 0:00 (epoch 0:00)\n"), "%s", out);
    free(out);
    rc = test_runf(&out, "%s train --toy-pairs 60 --emb 8 --hidden 8 --steps 3 --show 0 --beam 1 --out %s/s", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "\nlength: 3 steps (--steps), 2 batches an epoch\n"), "%s", out);
    free(out);
    free(dir);
}

// ---- at a terminal ---------------------------------------------------------------

// What a short `tinyseq train --out OUT_DIR` writes to a terminal of
// `columns` columns (a pseudo-terminal, stdout and stderr both), read until
// it exits; *status its wait status. `test_kill`: TINYSEQ_TEST_KILL's value, or
// NULL. malloc'd.
static char *train_at_terminal(int columns, const char *out_dir, const char *test_kill, int *status) {
    struct winsize size = {.ws_row = 40, .ws_col = (unsigned short)columns};
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, &size);
    cr_assert_neq(pid, -1, "forkpty failed");
    if (pid == 0) {
        unsetenv("COLUMNS");
        if (test_kill) setenv("TINYSEQ_TEST_KILL", test_kill, 1);
        execl(TS_PROGRAM, TS_PROGRAM, "train", "--toy-pairs", "600", "--emb", "8", "--hidden", "8", "--epochs", "2",
              "--eval-every", "7", "--show", "2", "--out", out_dir, (char *)NULL);
        _exit(127);
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    time_t end = time(NULL) + 100;
    for (;;) {
        struct pollfd p = {.fd = master, .events = POLLIN};
        if (time(NULL) > end) break;
        if (poll(&p, 1, 200) <= 0) continue;
        if (len + 4096 > cap) text = realloc(text, cap *= 2);
        ssize_t got = read(master, text + len, cap - 1 - len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;  // EIO: the program has closed the terminal
        len += (size_t)got;
    }
    text[len] = '\0';
    if (waitpid(pid, status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, status, 0);
    }
    close(master);
    return text;
}

// The widest stretch of `text` as a terminal shows it, between line ends
// and carriage returns, escape sequences left out, in columns (a UTF-8
// character each: the toy corpus has no wide ones); *where its start.
static int widest_stretch(const char *text, const char **where) {
    int widest = 0, cols = 0;
    const char *start = text;
    *where = text;
    for (const char *c = text; *c; c++) {
        if (*c == '\r' || *c == '\n') {
            cols = 0;
            start = c + 1;
        } else if (*c == '\033') {
            for (c++; *c && !(*c >= '@' && *c <= '~' && *c != '['); c++) {}
            if (!*c) break;
        } else if ((*c & 0xc0) != 0x80 && ++cols > widest) {
            widest = cols;
            *where = start;
        }
    }
    return widest;
}

// At a terminal nothing train prints is wider than it (issue 47: at 80
// columns the progress line wrapped at each redraw, 110 lines for a
// 15-second run): the live line drops fields as it narrows (the epoch,
// batches, loss, time left and elapsed stay longest) and says which time is
// elapsed and which is left; the other lines wrap.
Test(cli_train, at_a_terminal_no_line_is_wider_than_it, .timeout = 300) {
    static const struct {
        int columns;
        const char *live[4], *absent;  // in the live line; not in it
    } cases[] = {
        {120, {"epoch 2/2 [", "loss ", "elapsed 0:", "(epoch 0:"}, NULL},
        {80, {"epoch 2/2 ", "loss ", "elapsed 0:", "left 0:"}, "(epoch 0:"},
        {48, {"epoch 2/2 ", "loss ", "left 0:", NULL}, "tok/s"},
        {36, {"epoch 2/2 ", "17/17", "loss ", NULL}, "left"},
    };
    char *dir = test_tmpdir();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out_dir[4200];
        snprintf(out_dir, sizeof out_dir, "%s/run-%d", dir, cases[i].columns);
        int status = -1;
        char *text = train_at_terminal(cases[i].columns, out_dir, NULL, &status);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%d columns: status %d:\n%s", cases[i].columns, status, text);
        cr_assert(strstr(text, "epoch 2: train loss") && strstr(text, "best: ") && strstr(text, "\ntrain: tokens_per_s="),
                  "%d columns: lines missing:\n%s", cases[i].columns, text);
        const char *where;
        int widest = widest_stretch(text, &where);
        cr_assert(widest <= cases[i].columns, "%d columns: a line of %d:\n%.*s\nin:\n%s", cases[i].columns, widest,
                  (int)strcspn(where, "\r\n"), where, text);
        // The live line at the last epoch's end, as it stays on the screen.
        const char *live = strstr(text, "\033[Kepoch 2/2");
        cr_assert_not_null(live, "%d columns: no live line:\n%s", cases[i].columns, text);
        while (strstr(live + 1, "\033[Kepoch 2/2")) live = strstr(live + 1, "\033[Kepoch 2/2");
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(live + 3, "\r\n"), live + 3);
        cr_assert((int)strlen(line) <= cases[i].columns - 3, "%d columns: the live line leaves no room for ^C: '%s'",
                  cases[i].columns, line);
        for (int k = 0; k < 4 && cases[i].live[k]; k++)
            cr_assert(strstr(line, cases[i].live[k]), "%d columns: no '%s' in '%s'", cases[i].columns, cases[i].live[k], line);
        if (cases[i].absent)
            cr_assert_null(strstr(line, cases[i].absent), "%d columns: '%s' in '%s'", cases[i].columns, cases[i].absent, line);
        free(text);
    }
    free(dir);
}

// Stopped at a terminal, a run says where in lines that fit it, and the
// command that continues it goes on over lines ended by " \": pasted into a
// shell as it shows, it continues the run.
Test(cli_train, at_a_terminal_the_command_that_continues_a_run_pastes_whole, .timeout = 120) {
    char *dir = test_tmpdir(), out_dir[4200];
    snprintf(out_dir, sizeof out_dir, "%s/a run", dir);
    int status = -1, columns = 60;
    char *text = train_at_terminal(columns, out_dir, "0:5:2", &status);  // SIGINT after step 5
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d:\n%s", status, text);
    const char *where;
    int widest = widest_stretch(text, &where);
    cr_assert(widest <= columns, "a line of %d:\n%.*s\nin:\n%s", widest, (int)strcspn(where, "\r\n"), where, text);
    char *command = strstr(text, "continue with: ");
    cr_assert(command && strstr(command, " \\\r\n "), "not on several lines:\n%s", text);
    command += strlen("continue with: ");
    // As a shell reads it: a backslash before the line's end joins the lines.
    char *to = command;
    for (const char *from = command; *from && *from != '\n'; to++) {
        if (from[0] == '\\' && from[1] == '\r' && from[2] == '\n') from += 3;
        *to = *from++;
    }
    while (to > command && (to[-1] == '\r' || to[-1] == ' ')) to--;
    *to = '\0';
    cr_assert(strstr(command, "--resume ") && strstr(command, "/a run/last.ckpt'"), "%s", command);
    char *out;
    int rc = test_runf(&out, "%s", command);
    cr_assert_eq(rc, 0, "'%s' exited %d:\n%s", command, rc, out);
    cr_assert(strstr(out, "resumed from ") && strstr(out, "at step 5 (epoch 1, batch 5)"), "%s", out);
    free(out);
    free(text);
    free(dir);
}

// One epoch is "1 epoch" (issue 47); the BLAS kernels are --verbose's unless
// they are below the CPU's, where a warning says what sets the CPU's own.
Test(cli_train, the_banner_counts_in_words_and_names_the_kernels_when_they_matter, .timeout = 120) {
    char *dir = test_tmpdir(), *out;
    const char *quick = "--toy-pairs 40 --emb 4 --hidden 4 --batch 64 --show 0 --beam 1";
    int rc = test_runf(&out, "env -u OPENBLAS_CORETYPE %s train %s --epochs 1 --out %s/a", TS_PROGRAM, quick, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "\nlength: 1 epoch (--epochs) of 1 batch, 1 step\n"), "%s", out);
    cr_assert(!strstr(out, "kernels:") || strstr(out, "warning: "), "kernels named without --verbose or a reason:\n%s", out);
    free(out);
    rc = test_runf(&out, "%s train %s --steps 1 --verbose --out %s/b", TS_PROGRAM, quick, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "\nlength: 1 step (--steps), 1 batch an epoch\n"), "%s", out);
    cr_assert(strstr(out, "kernels: ") && strstr(out, " BLAS threads\n"), "--verbose names no kernels:\n%s", out);
    free(out);
    ts_cpu_features f = ts_cpu_features_detect();
    const char *better = ts_blas_core_for(ts_cpu_level_of(&f), "Prescott");
    if (strcmp(ts_blas_name(), "OpenBLAS") || !better) {
        free(dir);
        cr_skip_test("Prescott's kernels are this CPU's level (or no OpenBLAS): nothing to warn of");
    }
    rc = test_runf(&out, "OPENBLAS_CORETYPE=Prescott %s train %s --steps 1 --out %s/c", TS_PROGRAM, quick, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    char want[160];
    snprintf(want, sizeof want, "); OPENBLAS_CORETYPE=%s uses the CPU's\n", better);
    cr_assert(strstr(out, "kernels: Prescott, set by OPENBLAS_CORETYPE") &&
              strstr(out, "warning: Prescott's kernels are below this CPU's ") && strstr(out, want), "%s", out);
    free(out);
    free(dir);
}

// A guided run ends with the command that measures the alignment it taught
// (issue 47), and that command runs as printed.
Test(cli_train, a_guided_run_ends_with_the_command_that_measures_its_alignment, .timeout = 120) {
    char *dir = test_tmpdir(), *out, *copy = strdup(TS_PROGRAM);
    int rc = test_runf(&out, "cd %s && %s train --guided-alignment toy --toy-pairs 100 --emb 4 --hidden 4 --steps 2 "
                             "--show 0 --beam 1 --out run", dir, TS_PROGRAM);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *line = strstr(out, "\nalignment: "), *measures = line ? strstr(line, " measures it on held-out pairs: ") : NULL;
    cr_assert(line && measures && strstr(measures, "aer_forced= is its attention reading the reference") &&
              !strchr(measures, '\n')[1], "no closing alignment line:\n%s", out);
    char command[1024];
    snprintf(command, sizeof command, "%.*s", (int)(measures - line - 12), line + 12);
    free(out);
    rc = test_runf(&out, "cd %s && PATH=\"%s:$PATH\" && %s", dir, dirname(copy), command);
    cr_assert(rc == 0 && strstr(out, " aer_forced="), "'%s': exit %d\n%s", command, rc, out);
    free(out);
    free(copy);
    free(dir);
}
