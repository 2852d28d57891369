// One run a run directory (issue 38: two `train` runs into one new --out
// both exited 0 and mixed their metrics.csv rows). train holds
// DIR/train.lock (train/runlock.h) while it runs: a second run is refused
// naming the first's pid and host and changes nothing; the lock goes when
// the run ends, and a crashed run's lock is taken over.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

// A run that lasts until it is stopped.
#define LONG_RUN "--toy-pairs 2000 --emb 8 --hidden 8 --epochs 1000 --show 0 --beam 1 --threads 1"
#define SHORT_RUN "--toy-pairs 300 --emb 8 --hidden 8 --epochs 1 --show 0 --beam 1 --threads 1"

static char *dir;
static long background;  // the pid of a run started in the background, to stop in teardown

static void setup(void) { dir = test_tmpdir(); }

static void teardown(void) {
    if (background > 0) kill((pid_t)background, SIGKILL);
    test_runf(NULL, "rm -rf '%s'", dir);
    free(dir);
}

TestSuite(cli_lock, .init = setup, .fini = teardown);

static int alive(long pid) { return kill((pid_t)pid, 0) == 0; }

// Starts `train LONG_RUN --out DIR/run` in the background and waits until it
// holds the lock (its pid in DIR/run/train.lock); returns the pid.
static long start_long_run(void) {
    char *out;
    int rc = test_runf(&out, "'%s' train " LONG_RUN " --out %s/run > %s/first.log 2>&1 & echo $!", TS_PROGRAM, dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    background = strtol(out, NULL, 10);
    free(out);
    char path[4200], want[64];
    snprintf(path, sizeof path, "%s/run/train.lock", dir);
    snprintf(want, sizeof want, "pid=%ld\n", background);
    for (int waited = 0; waited < 1200; waited++) {  // up to 120 s on a busy machine
        if (access(path, R_OK) == 0) {
            char *text = test_read_file(path, NULL);
            int held = !strncmp(text, want, strlen(want));
            free(text);
            if (held) return background;
        }
        cr_assert(alive(background), "the first run ended before it took the lock");
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    cr_assert_fail("the first run never took the lock");
    return -1;
}

static void wait_until_dead(long pid) {
    for (int waited = 0; alive(pid) && waited < 1200; waited++) nanosleep(&(struct timespec){0, 100000000}, NULL);
    cr_assert(!alive(pid), "run %ld did not end", pid);
}

Test(cli_lock, a_second_run_is_refused_while_the_first_holds_the_directory, .timeout = 300) {
    long first = start_long_run();
    char *out;
    int rc = test_runf(&out, "'%s' train " SHORT_RUN " --out %s/run", TS_PROGRAM, dir);
    char says[128];
    snprintf(says, sizeof says, "is in use by another run (pid %ld on this host)", first);
    cr_assert(rc == 1 && strstr(out, says), "exit %d: %s", rc, out);
    cr_assert_null(strstr(out, "model: "), "the refused run got as far as its banner: %s", out);
    free(out);
    // --force does not take it either.
    rc = test_runf(&out, "'%s' train " SHORT_RUN " --force --out %s/run", TS_PROGRAM, dir);
    cr_assert(rc == 1 && strstr(out, says), "--force: exit %d: %s", rc, out);
    free(out);
    // The first run stops (SIGTERM: at a step boundary, saving last.ckpt) and lets go.
    kill((pid_t)first, SIGTERM);
    wait_until_dead(first);
    background = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/run/train.lock", dir);
    cr_assert_neq(access(path, F_OK), 0, "the lock outlived its run");
    // metrics.csv and steps.csv hold one run's rows: one header each.
    rc = test_runf(&out, "cd %s/run && for f in metrics.csv steps.csv; do [ ! -e $f ] || [ $(grep -c '^[a-z]' $f) = 1 ] "
                         "|| { echo $f; exit 1; }; done", dir);
    cr_assert_eq(rc, 0, "more than one header in %s", out);
    free(out);
}

// A run killed with SIGKILL leaves its lock file, which nobody holds: the
// next run into the directory takes it over (--check-out, which scripts/
// demo.sh asks before it replaces a run, says the directory holds only a
// run's files).
Test(cli_lock, a_killed_runs_lock_is_taken_over, .timeout = 300) {
    long first = start_long_run();
    kill((pid_t)first, SIGKILL);
    wait_until_dead(first);
    background = 0;
    char path[4200], *out;
    snprintf(path, sizeof path, "%s/run/train.lock", dir);
    cr_assert_eq(access(path, F_OK), 0, "SIGKILL left no lock: nothing to take over");
    int rc = test_runf(&out, "'%s' train --out %s/run --check-out", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "--check-out: exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' train " SHORT_RUN " --force --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    cr_assert_neq(access(path, F_OK), 0, "the lock outlived the run that took it over");
}

// A lock another host wrote is not taken over (that run may be alive: flock
// does not reach across every network file system); the message says to
// delete it once that run is over. A lock file that is not one a run wrote
// (garbage, a NUL, a name with control characters) is taken over.
Test(cli_lock, another_hosts_lock_is_refused_and_garbage_taken_over, .timeout = 120) {
    char run[4200], *out;
    snprintf(run, sizeof run, "%s/run", dir);
    mkdir(run, 0755);
    static const char elsewhere[] = "pid=4242\nhost=elsewhere.example\n";
    char *path = test_write_file(run, "train.lock", elsewhere, sizeof elsewhere - 1);
    int rc = test_runf(&out, "'%s' train " SHORT_RUN " --out %s", TS_PROGRAM, run);
    cr_assert(rc == 1 && strstr(out, "pid 4242 on elsewhere.example") && strstr(out, "delete") && strstr(out, path),
              "exit %d: %s", rc, out);
    free(out);
    char *text = test_read_file(path, NULL);
    cr_assert_str_eq(text, elsewhere, "the refused run changed the lock");
    free(text);
    static const char garbage[] = "pid=4242\nhost=\x1b[31mred\n\0junk";
    free(test_write_file(run, "train.lock", garbage, sizeof garbage - 1));
    rc = test_runf(&out, "'%s' train " SHORT_RUN " --out %s", TS_PROGRAM, run);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    free(out);
    cr_assert_neq(access(path, F_OK), 0, "the lock outlived the run");
    free(path);
}
