// How a training run stops and goes on, as a learner meets it (issue 22):
// a second signal before the first checkpoint, a signal after the training
// ended, the clock of a continued run, and the lines train ends with.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define SMALL "--toy-pairs 300 --emb 4 --hidden 4 --show 0 --beam 1"

// Two different signals back to back cannot merge into one: the second
// arrives while the first is still asking for a stop, before any save.
Test(cli_stop, a_second_signal_before_the_first_checkpoint_says_so_and_nothing_points_at_a_missing_file,
     .timeout = 300) {
    char *dir = test_tmpdir(), cmd[4096], path[1100], log[1100];
    snprintf(log, sizeof log, "%s/a.log", dir);
    snprintf(cmd, sizeof cmd, "exec %s train --toy-pairs 15000 --emb 8 --hidden 16 --epochs 100 --show 0 --out %s/a > %s 2>&1",
             TS_PROGRAM, dir, log);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    snprintf(path, sizeof path, "%s/a/config.txt", dir);  // written once the run is set up, before any step
    for (int ms = 0; ms < 120000 && access(path, F_OK) != 0; ms += 5) {
        struct timespec pause = {0, 5000000};
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(access(path, F_OK), 0, "the run never started");
    kill(pid, SIGTERM);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    char *out = test_read_file(log, NULL);
    cr_assert(WIFSIGNALED(status), "status %d:\n%s", status, out);
    cr_assert(strstr(out, "a second signal stops at once; no checkpoint was saved yet"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/a/last.ckpt", dir);
    cr_assert_neq(access(path, F_OK), 0, "a checkpoint was saved after all");
    // The next run into the directory must not suggest that missing file.
    int rc = test_runf(&out, "%s train " SMALL " --epochs 1 --out %s/a", TS_PROGRAM, dir);
    cr_assert(rc == 2 && strstr(out, "stopped before its first checkpoint") && strstr(out, "--force") &&
                  !strstr(out, "--resume"),
              "exit %d:\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s train " SMALL " --epochs 1 --force --out %s/a", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

// A signal once read at the end of a finished run said "0 of N batches
// done" and offered a --resume that trains nothing.
Test(cli_stop, a_signal_after_the_training_ended_skips_only_the_final_evaluation, .timeout = 120) {
    char *dir = test_tmpdir(), *out;
    int rc = test_runf(&out, "TINYSEQ_TEST_KILL=0:5:%d %s train " SMALL " --steps 5 --out %s/run", SIGINT, TS_PROGRAM, dir);
    cr_assert_eq(rc, 130, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "after the training had ended (step 5)") && strstr(out, "only the final evaluation was skipped"),
              "%s", out);
    cr_assert_null(strstr(out, "continue with"), "a resume that would train nothing:\n%s", out);
    char *eval_hint = strstr(out, "tinyseq eval --model ");
    cr_assert_not_null(eval_hint, "%s", out);
    free(out);
    // The command it names runs.
    rc = test_runf(&out, "%s eval --model %s/run/last.ckpt --corpus %s/run/dev-pairs.tsv", TS_PROGRAM, dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

// The largest elapsed_s (last column) of path's rows, and 1 when the rows never go back in time.
static int elapsed_goes_on(const char *path, double *last) {
    char *text = test_read_file(path, NULL), *save = NULL;
    int ok = 1, row = 0;
    *last = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), row++) {
        if (row == 0) continue;
        double e = strtod(strrchr(line, ',') + 1, NULL);
        ok &= e >= *last;
        *last = e;
    }
    free(text);
    return ok;
}

// elapsed_s once restarted at 0 after --resume: a continued run's clock goes on.
Test(cli_stop, elapsed_s_goes_on_after_resume, .timeout = 120) {
    char *dir = test_tmpdir(), *out, path[1100];
    int rc = test_runf(&out, "%s train " SMALL " --epochs 3 --log-every 5 --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/run/steps.csv", dir);
    double before, after;
    cr_assert(elapsed_goes_on(path, &before));
    rc = test_runf(&out, "%s train " SMALL " --epochs 5 --log-every 5 --out %s/run --resume %s/run/last.ckpt", TS_PROGRAM,
                   dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    cr_assert(elapsed_goes_on(path, &after), "steps.csv's elapsed_s goes back after --resume:\n%s",
              test_read_file(path, NULL));
    cr_assert_gt(after, before);
    snprintf(path, sizeof path, "%s/run/metrics.csv", dir);
    cr_assert(elapsed_goes_on(path, &after), "metrics.csv's elapsed_s goes back:\n%s", test_read_file(path, NULL));
}

// The final line once named the last batch's loss "loss=", as if it were the run's.
Test(cli_stop, the_final_line_names_the_last_batch_loss) {
    char *dir = test_tmpdir(), *out;
    int rc = test_runf(&out, "%s train " SMALL " --steps 3 --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    const char *line = strstr(out, "train: tokens_per_s=");
    cr_assert(line && strstr(line, " steps=3 last_batch_loss="), "%s", out);
    free(out);
}

// --config DIR once said only "(a read error, or over 16 MiB)".
Test(cli_stop, config_given_a_directory_says_so) {
    char *dir = test_tmpdir(), *out;
    int rc = test_runf(&out, "%s train --config %s", TS_PROGRAM, dir);
    cr_assert(rc == 1 && strstr(out, "Is a directory") && strstr(out, "DIR/config.txt"), "exit %d:\n%s", rc, out);
    free(out);
}
