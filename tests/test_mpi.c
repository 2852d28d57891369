// Data-parallel training under mpirun (train/dist.c, docs/scaling.md): two
// ranks train what one process trains with the same global batch (the GRU
// and the Transformer; in float32 within float32's rounding), --accumulate
// does too, a resumed MPI run is the uninterrupted one, a killed rank ends
// the job, and ranks with different flags are refused. Skipped, saying why,
// in a build without MPI (CI's build has it: scripts/setup.sh installs it).
#include <criterion/criterion.h>

#include "infer/load.h"
#include "train/dist.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

// Open MPI's mpirun as root and with more ranks than the 2 cores CI has. In
// the sanitizer build, LeakSanitizer ignores what Open MPI itself leaks
// (tests/lsan-openmpi.supp says what and why); tinyseq's leaks still count.
#define MPIRUN                                                                                                   \
    "env LSAN_OPTIONS=fast_unwind_on_malloc=0:suppressions=" TS_SOURCE_DIR "/tests/lsan-openmpi.supp " TS_MPIEXEC \
    " --allow-run-as-root --oversubscribe"
// A small model on a small toy corpus: 270 training pairs, 17 batches of 16
// an epoch, so a 40-step run ends two epochs and starts a third.
// float64 (compared at 1e-10) unless a test appends --dtype float32 (the last --dtype wins)
#define SMALL "--dtype float64 --toy-pairs 300 --emb 16 --hidden 24 --batch 16 --threads 1 --show 0"

static void need_mpi(void) {
    if (!ts_dist_compiled()) cr_skip_test("this build has no MPI (cmake found none, or -DTS_MPI=OFF): scripts/setup.sh installs Open MPI");
    if (!*TS_MPIEXEC) cr_skip_test("MPI is built in but CMake found no mpiexec to start ranks with");
}

// Runs a command that must succeed; returns its output.
static char *must_run(const char *what, const char *cmd) {
    char *out;
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "%s: exit %d\n%s\n%s", what, rc, cmd, out);
    return out;
}

// The largest difference between the weights of two checkpoints of one
// model, each relative to the largest magnitude in its tensor. Not value by
// value: the key third of a Transformer's in_proj_bias has a gradient that
// is 0 in exact arithmetic (softmax ignores a shift shared by every key), so
// it holds rounding noise near 1e-13 whose sign depends on the order of
// summation, beside query and value biases of 1e-3.
static double max_relative_difference(const char *a_path, const char *b_path) {
    ts_translator a, b;
    cr_assert_eq(ts_translator_load(a_path, &a), 0, "%s: %s", a_path, ts_last_error());
    cr_assert_eq(ts_translator_load(b_path, &b), 0, "%s: %s", b_path, ts_last_error());
    const ts_params *pa = &a.model->params, *pb = &b.model->params;
    cr_assert_eq(pa->count, pb->count);
    double worst = 0;
    for (int i = 0; i < pa->count; i++) {
        cr_assert_eq(pa->items[i]->size, pb->items[i]->size, "%s", pa->items[i]->name);
        double scale = 0, diff = 0;
        for (size_t k = 0; k < pa->items[i]->size; k++) {
            double x = ts_value(pa->items[i], k), y = ts_value(pb->items[i], k);  // either dtype
            scale = fmax(scale, fmax(fabs(x), fabs(y)));
            diff = fmax(diff, fabs(x - y));
        }
        if (scale > 0 && diff / scale > worst) worst = diff / scale;
    }
    ts_translator_free(&a);
    ts_translator_free(&b);
    return worst;
}

// metrics.csv's dev_loss column (6 decimals): the epochs' lines and the last
// (a run that stops inside an epoch also records its final model, so a run
// continued from a --steps stop has one more line than one that went on).
static char *dev_losses(const char *dir) {
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    char *csv = test_read_file(path, NULL), *out = calloc(1, strlen(csv) + 1);
    char *line = strchr(csv, '\n');  // past the header
    while (line && line[1]) {
        line++;
        const char *field = line;
        if (line[strcspn(line, ",.")] == '.' && strchr(line, '\n') && strchr(line, '\n')[1]) {
            line = strchr(line, '\n');  // between epochs, not the last line
            continue;
        }
        for (int comma = 0; comma < 3 && field; comma++) field = strchr(field, ',') + 1;  // epoch,step,train_loss,
        strncat(out, field, strcspn(field, ","));
        strcat(out, " ");
        line = strchr(line, '\n');
    }
    free(csv);
    return out;
}

// The greedy translations of the sources of a toy test set.
static char *greedy(const char *dir, const char *ckpt) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 30 --seed 77 | cut -f1 | %s translate --model %s --beam 1", TS_PROGRAM,
             TS_PROGRAM, ckpt);
    (void)dir;
    return must_run("translate", cmd);
}

// 1 when the dev losses of dev_losses() agree, each within `tolerance`
// (0: the same text, all 6 decimals).
static int same_losses(const char *a, const char *b, double tolerance) {
    if (!*a || tolerance == 0) return *a && !strcmp(a, b);
    char *end_a, *end_b;
    for (;; a = end_a, b = end_b) {
        double x = strtod(a, &end_a), y = strtod(b, &end_b);
        if (end_a == a || end_b == b) return end_a == a && end_b == b;
        if (fabs(x - y) > tolerance) return 0;
    }
}

// The tolerances of one dtype's comparison of two runs (see the tests).
typedef struct {
    double weights;  // the largest weight difference relative to its tensor's largest weight
    double losses;   // absolute, on the dev losses; 0: the same 6 decimals
} agreement;

static const agreement FLOAT64_AGREEMENT = {1e-10, 0};

// Run `b` trained what run `a` did: every weight within want.weights
// relative, the same greedy translations, the same dev losses (within
// want.losses).
static void expect_same_training(const char *a, const char *b, const char *label, agreement want) {
    char ca[1100], cb[1100];
    snprintf(ca, sizeof ca, "%s/last.ckpt", a);
    snprintf(cb, sizeof cb, "%s/last.ckpt", b);
    double worst = max_relative_difference(ca, cb);
    fprintf(stderr, "%s: largest relative weight difference after 40 steps: %.3g\n", label, worst);
    cr_expect_leq(worst, want.weights, "%s: a weight differs by %.3g relative", label, worst);
    char *la = dev_losses(a), *lb = dev_losses(b);
    cr_expect(same_losses(la, lb, want.losses), "%s: dev losses %s vs %s", label, la, lb);
    char *ta = greedy(a, ca), *tb = greedy(b, cb);
    cr_expect_str_eq(ta, tb, "%s: the greedy translations differ", label);
    free(la);
    free(lb);
    free(ta);
    free(tb);
}

// One process and two ranks train a model of `flags` for 40 steps: the same model.
static void expect_two_ranks_train_what_one_process_trains(const char *flags, const char *label, agreement want) {
    need_mpi();
    char *dir = test_tmpdir(), cmd[8192], one[1024], two[1024];
    snprintf(one, sizeof one, "%s/one", dir);
    snprintf(two, sizeof two, "%s/two", dir);
    snprintf(cmd, sizeof cmd, "%s train %s --steps 40 --out %s", TS_PROGRAM, flags, one);
    free(must_run("one process", cmd));
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train %s --steps 40 --out %s", TS_PROGRAM, flags, two);
    char *out = must_run("mpirun -np 2", cmd);
    // Rank 0 alone prints: one summary, and the first line names the ranks.
    cr_expect(!strncmp(out, "data-parallel: 2 ranks", 22), "%s", out);
    cr_expect(strstr(out, "\nallreduce: 40 steps, "), "%s", out);
    const char *train = strstr(out, "train: tokens_per_s=");
    cr_expect(train && !strstr(train + 1, "train: tokens_per_s="), "%s", out);
    free(out);
    expect_same_training(one, two, label, want);
    free(dir);
}

Test(mpi, two_ranks_train_what_one_process_trains_with_the_same_batch, .timeout = 120) {
    expect_two_ranks_train_what_one_process_trains(SMALL, "mpirun -np 2 vs one process", FLOAT64_AGREEMENT);
}

// In float32 too, within float32's rounding: each rank's backward sums its
// half of the batch in float32 (the one process sums the whole batch in
// another order), and 40 Adam steps carry those 6e-8-relative differences
// on. Measured after 40 steps: 5.4e-6 relative on the worst weight, the dev
// losses 1e-6 apart, the same greedy translations. The allreduce sums the
// float32 gradients in float64 and rounds once (train/shard.c): with 2 ranks
// the sum in float32 (MPI_FLOAT) gave the same checkpoint byte for byte
// (two floats' sum rounded once either way), with 4 ranks it differed by
// 4.9e-7 relative, the float64 sum not depending on MPI's order of
// summation. So the difference from one process is the shards', not the
// allreduce's: --accumulate 2 in one process (the same shards, no MPI) is
// 6.5e-7 from two ranks.
Test(mpi, two_ranks_train_what_one_process_trains_in_float32, .timeout = 120) {
    expect_two_ranks_train_what_one_process_trains(SMALL " --dtype float32", "float32, mpirun -np 2 vs one process",
                                                   (agreement){1e-4, 1e-5});
}

Test(mpi, two_ranks_train_the_transformer_one_process_trains, .timeout = 120) {
    expect_two_ranks_train_what_one_process_trains(
        "--arch transformer --dtype float64 --d-model 16 --heads 2 --layers 1 --ff 24 --warmup-steps 8 --toy-pairs 300 --batch 16 "
        "--threads 1 --show 0",
        "a Transformer, mpirun -np 2 vs one process", FLOAT64_AGREEMENT);
}

Test(mpi, accumulate_trains_what_the_whole_batch_trains, .timeout = 120) {
    // One process: needs no MPI, so it runs in every build.
    char *dir = test_tmpdir(), cmd[8192], one[1024], two[1024];
    snprintf(one, sizeof one, "%s/one", dir);
    snprintf(two, sizeof two, "%s/acc", dir);
    snprintf(cmd, sizeof cmd, "%s train " SMALL " --steps 40 --out %s", TS_PROGRAM, one);
    free(must_run("--batch 16", cmd));
    snprintf(cmd, sizeof cmd, "%s train " SMALL " --steps 40 --accumulate 2 --out %s", TS_PROGRAM, two);
    char *out = must_run("--batch 16 --accumulate 2", cmd);
    cr_expect(strstr(out, "data-parallel: 1 rank x --accumulate 2"), "%s", out);
    free(out);
    char config[1100];
    snprintf(config, sizeof config, "%s/config.txt", two);
    char *text = test_read_file(config, NULL);
    cr_expect(strstr(text, "\naccumulate = 2\n") && strstr(text, "\nranks = 1\n"), "%s", text);
    free(text);
    expect_same_training(one, two, "--accumulate 2 vs the whole batch", FLOAT64_AGREEMENT);
    free(dir);
}

Test(mpi, more_parts_than_sentences_in_a_batch_is_refused_naming_the_flags) {
    char *out, *dir = test_tmpdir();
    int rc = test_runf(&out, "%s train --batch 3 --accumulate 4 --steps 1 --out %s/x", TS_PROGRAM, dir);
    cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "--batch 3 cannot be cut into 4 parts"), "%s", out);
    free(out);
    free(dir);
}

Test(mpi, a_resumed_mpi_run_is_the_uninterrupted_one_to_the_bit, .timeout = 120) {
    need_mpi();
    // Dropout and teacher forcing below 1: each shard's draws come from
    // (seed, step, shard), so they too resume exactly.
    char *dir = test_tmpdir(), cmd[8192];
    const char *flags = SMALL " --dropout 0.1 --tf 0.75";
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train %s --steps 40 --out %s/whole", TS_PROGRAM, flags, dir);
    free(must_run("uninterrupted", cmd));
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train %s --steps 25 --out %s/parts", TS_PROGRAM, flags, dir);
    free(must_run("first part", cmd));
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train %s --steps 40 --out %s/parts --resume %s/parts/last.ckpt", TS_PROGRAM,
             flags, dir, dir);
    char *out = must_run("resumed", cmd);
    cr_expect(strstr(out, "resumed from ") && strstr(out, " at step 25 "), "%s", out);
    free(out);
    const char *names[2] = {"last.ckpt", "best.ckpt"};
    for (int i = 0; i < 2; i++) {
        char a[1100], b[1100];
        snprintf(a, sizeof a, "%s/whole/%s", dir, names[i]);
        snprintf(b, sizeof b, "%s/parts/%s", dir, names[i]);
        cr_expect(test_same_bytes(a, b), "%s of the resumed run differs from the uninterrupted run's", names[i]);
    }
    free(dir);
}

Test(mpi, a_signal_to_one_rank_stops_every_rank_at_one_step_and_the_run_continues, .timeout = 120) {
    need_mpi();
    // Rank 1 raises SIGTERM after step 20: its flag travels in step 21's
    // allreduce, so both ranks stop after step 21 and rank 0 saves there.
    char *dir = test_tmpdir(), cmd[8192], *out;
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train " SMALL " --steps 40 --out %s/whole", TS_PROGRAM, dir);
    free(must_run("uninterrupted", cmd));
    int rc = test_runf(&out, "TINYSEQ_TEST_KILL=1:20:15 " MPIRUN " -np 2 %s train " SMALL " --steps 40 --out %s/part",
                       TS_PROGRAM, dir);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "stopped by SIGTERM at step 21 "), "%s", out);
    char want[2048];
    snprintf(want, sizeof want, "continue with: mpirun -np 2 %s train ", TS_PROGRAM);
    cr_expect(strstr(out, want), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train " SMALL " --steps 40 --out %s/part --resume %s/part/last.ckpt",
             TS_PROGRAM, dir, dir);
    free(must_run("continued", cmd));
    char a[1100], b[1100];
    snprintf(a, sizeof a, "%s/whole/last.ckpt", dir);
    snprintf(b, sizeof b, "%s/part/last.ckpt", dir);
    cr_expect(test_same_bytes(a, b), "the stopped and continued run's last.ckpt differs from the uninterrupted run's");
    free(dir);
}

Test(mpi, a_run_of_two_ranks_continues_in_one_process, .timeout = 120) {
    need_mpi();
    // The ranks are not among what a checkpoint must match: one process
    // continues a 2-rank run and ends where one process alone does (to rounding).
    char *dir = test_tmpdir(), cmd[8192], alone[1024], moved[1024];
    snprintf(alone, sizeof alone, "%s/alone", dir);
    snprintf(moved, sizeof moved, "%s/moved", dir);
    snprintf(cmd, sizeof cmd, "%s train " SMALL " --steps 40 --out %s", TS_PROGRAM, alone);
    free(must_run("one process", cmd));
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s train " SMALL " --steps 25 --out %s", TS_PROGRAM, moved);
    free(must_run("two ranks", cmd));
    snprintf(cmd, sizeof cmd, "%s train " SMALL " --steps 40 --out %s --resume %s/last.ckpt", TS_PROGRAM, moved, moved);
    free(must_run("continued in one process", cmd));
    expect_same_training(alone, moved, "2 ranks for 25 steps, then 1 process, vs 1 process", FLOAT64_AGREEMENT);
    free(dir);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Test(mpi, a_killed_rank_ends_the_job_and_the_last_checkpoint_loads, .timeout = 120) {
    need_mpi();
    // Rank 1 raises SIGKILL after step 30, in epoch 2: last.ckpt is epoch
    // 1's (step 17). timeout(1) ends a hung job: exit 124 fails the test.
    char *dir = test_tmpdir(), *out;
    double start = now();
    int rc = test_runf(&out, "TINYSEQ_TEST_KILL=1:30 timeout 60 " MPIRUN " -np 2 %s train " SMALL " --steps 1000 --out %s/run",
                       TS_PROGRAM, dir);
    double seconds = now() - start;
    fprintf(stderr, "a rank killed at step 30: mpirun exited %d after %.2f s\n", rc, seconds);
    cr_assert(rc != 0 && rc != 124, "mpirun exited %d after %.1f s\n%s", rc, seconds, out);
    cr_expect(strstr(out, "signal 9"), "mpirun does not name the signal:\n%s", out);
    free(out);
    char *info;
    rc = test_runf(&info, "%s info %s/run/last.ckpt", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "the last checkpoint does not load:\n%s", info);
    cr_expect(strstr(info, "training state: epoch 1, step 17,"), "%s", info);
    free(info);
    free(dir);
}

Test(mpi, ranks_with_different_flags_are_refused_naming_the_flag, .timeout = 60) {
    need_mpi();
    char *dir = test_tmpdir(), *out;
    int rc = test_runf(&out, MPIRUN " -np 1 %s train " SMALL " --steps 2 --lr 0.1 --out %s/x : -np 1 %s train " SMALL
                             " --steps 2 --lr 0.2 --out %s/x",
                       TS_PROGRAM, dir, TS_PROGRAM, dir);
    cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "different --lr (rank 0: 0.1)"), "%s", out);
    free(out);
    struct stat st;
    char path[1100];
    snprintf(path, sizeof path, "%s/x", dir);
    cr_expect_neq(stat(path, &st), 0, "a refused run created %s", path);
    free(dir);
}

Test(mpi, a_build_without_mpi_started_by_mpirun_says_so) {
    if (ts_dist_compiled()) cr_skip_test("this build has MPI: the refusal belongs to builds without it (-DTS_MPI=OFF)");
    // What Open MPI's mpirun puts in each rank's environment.
    char *out, *dir = test_tmpdir();
    int rc = test_runf(&out, "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 %s train --steps 1 --out %s/x", TS_PROGRAM, dir);
    cr_expect_eq(rc, 2, "exit %d\n%s", rc, out);
    cr_expect(strstr(out, "this build of tinyseq has no MPI"), "%s", out);
    free(out);
    free(dir);
}
