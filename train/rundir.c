// The run directory (train/rundir.h): --out holds one run. A new run
// refuses a directory that holds one (unless --force, which deletes that
// run's files and nothing else); --resume from a checkpoint in the same
// directory continues it, dropping what the previous run wrote after that
// checkpoint.
#include "train/rundir.h"
#include "train/runlock.h"
#include "train/runlog.h"  // ts_runlog_trim

#include "tensor/atomic_write.h"
#include "tensor/blas_setup.h"  // ts_blas_kernels
#include "tensor/threads.h"
#include "train/options.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The length of the run file name that `name` starts with (last.ckpt ...
// attention-<epoch>.svg, attention-step-<step>.svg, epoch-<epoch>.ckpt), or
// 0; *epoch gets the epoch of a per-epoch file, *step the step of a per-step
// one (else -1).
static size_t run_file_stem(const char *name, long *epoch, long *step) {
    static const char *const fixed[] = {"last.ckpt", "best.ckpt", "metrics.csv", "steps.csv", "config.txt",
                                        "dev-pairs.tsv", "loss.svg", "attention.jsonl", "report.html", "heads.csv",
                                        TS_RUNLOCK_NAME};
    static const struct { const char *prefix, *suffix; int per_step; } numbered[] = {
        {"attention-", ".svg", 0}, {"epoch-", ".ckpt", 0}, {"attention-step-", ".svg", 1}};
    *epoch = *step = -1;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strncmp(name, fixed[i], strlen(fixed[i]))) return strlen(fixed[i]);
    for (size_t i = 0; i < sizeof numbered / sizeof numbered[0]; i++) {
        size_t n = strlen(numbered[i].prefix), m = strlen(numbered[i].suffix);
        if (strncmp(name, numbered[i].prefix, n) || name[n] < '0' || name[n] > '9') continue;
        char *end;
        long e = strtol(name + n, &end, 10);
        if (strncmp(end, numbered[i].suffix, m)) return 0;
        *(numbered[i].per_step ? step : epoch) = e;
        return (size_t)(end + m - name);
    }
    return 0;
}

// 1 when `name` is a file tinyseq train writes: a run file, or the temporary
// file of one's atomic save ("<name>.tmp" for figures, "<name>.tmp-XXXXXX"
// for checkpoints) left by a killed run.
static int is_run_file(const char *name, long *epoch, long *step) {
    size_t n = run_file_stem(name, epoch, step);
    if (!n) return 0;
    const char *rest = name + n;
    return !*rest || !strcmp(rest, ".tmp") || (!strncmp(rest, ".tmp-", 5) && strlen(rest + 5) == 6);
}

// The lock (train/runlock.h) is a run file, but no part of the run a
// directory holds: never counted, never deleted but by its holder.
static int is_lock(const char *name) { return !strcmp(name, TS_RUNLOCK_NAME); }

// Counts the run files in dir and lists up to a few in `names` (for the message).
static int find_run_files(const char *dir, size_t *count, char *names, size_t names_size) {
    DIR *d = opendir(dir);
    if (!d) return ts_fail(TS_ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    *count = 0;
    names[0] = '\0';
    struct dirent *e;
    long epoch, step;
    while ((e = readdir(d)))
        if (is_run_file(e->d_name, &epoch, &step) && !is_lock(e->d_name) && (*count)++ < 4) {
            size_t len = strlen(names);
            snprintf(names + len, names_size - len, "%s%s", len ? ", " : "", e->d_name);
        }
    closedir(d);
    if (*count > 4) {
        size_t len = strlen(names);
        snprintf(names + len, names_size - len, ", ...");
    }
    return TS_OK;
}

// Deletes the run files of dir: every one (all = 1), or the per-epoch and
// per-step files (figures, kept checkpoints) of epochs after `epoch` and
// steps after `step` (all = 0). Nothing else in dir is touched.
static int remove_run_files(const char *dir, int all, long epoch, long step) {
    DIR *d = opendir(dir);
    if (!d) return ts_fail(TS_ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    int rc = TS_OK;
    struct dirent *e;
    long file_epoch, file_step;
    while (!rc && (e = readdir(d))) {
        if (!is_run_file(e->d_name, &file_epoch, &file_step) || is_lock(e->d_name) ||
            (!all && file_epoch <= epoch && file_step <= step))
            continue;
        char path[4096];
        if (!(rc = ts_path_join(path, sizeof path, dir, e->d_name)) && unlink(path) != 0 && errno != ENOENT)
            rc = ts_fail(TS_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
    }
    closedir(d);
    return rc;
}

int ts_rundir_holds_only_a_run(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? TS_OK : ts_fail(TS_ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    int rc = TS_OK;
    struct dirent *e;
    long epoch, step;
    while (!rc && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[4096];
        struct stat st;
        if ((rc = ts_path_join(path, sizeof path, dir, e->d_name))) break;
        // A directory or a link under a run file's name is still not one.
        if (!is_run_file(e->d_name, &epoch, &step) || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            rc = ts_fail(TS_ERR_ARG, "'%s' is not a tinyseq run directory ('%s' is not a file tinyseq writes there)", dir,
                         e->d_name);
    }
    closedir(d);
    return rc;
}

// 1 when the checkpoint `ckpt` lies in directory `dir`.
static int in_directory(const char *ckpt, const char *dir) {
    char parent[4096];
    const char *slash = strrchr(ckpt, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if ((size_t)(slash - ckpt) >= sizeof parent) return 0;
    else snprintf(parent, sizeof parent, "%.*s", slash == ckpt ? 1 : (int)(slash - ckpt), ckpt);
    struct stat a, b;
    return stat(parent, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}


// What this run does with --out: start in an empty one, continue the run it
// holds (--resume from its own checkpoint), or replace it (--force). A
// directory holding a run is refused otherwise (TS_ERR_ARG).
int ts_rundir_check(const ts_train_opts *o, ts_rundir_use *use) {
    size_t count = 0;
    char names[512];
    int rc = find_run_files(o->out_dir, &count, names, sizeof names);
    if (rc) return rc;
    *use = count == 0 ? TS_RUN_NEW : o->resume && in_directory(o->resume, o->out_dir) ? TS_RUN_CONTINUE : o->force ? TS_RUN_REPLACE : TS_RUN_NEW;
    if (count == 0 || *use != TS_RUN_NEW) return TS_OK;
    // A run stopped before its first save has nothing to continue from.
    char last[4096];
    struct stat st;
    if ((rc = ts_path_join(last, sizeof last, o->out_dir, "last.ckpt"))) return rc;
    if (stat(last, &st) != 0)
        return ts_fail(TS_ERR_ARG,
                       "--out %s already holds a run that stopped before its first checkpoint (%s; no last.ckpt to "
                       "continue from): start over with --force (deletes that run's files), or choose another --out",
                       o->out_dir, names);
    return ts_fail(TS_ERR_ARG,
                   "--out %s already holds a run (%s): continue it with --resume %s (and its flags), "
                   "or start over with --force (deletes that run's checkpoints, metrics and figures), or choose another --out",
                   o->out_dir, names, last);
}

const char *const ts_config_facts[TS_CONFIG_FACTS] = {"toy_seed", "dev_pairs", "train_pairs", "source_vocabulary",
                                                      "target_vocabulary", "parameters", "resume", "ranks",
                                                      "threads", "kernels"};

struct config_args {
    const ts_train_opts *o;
    const ts_seq2seq *m;
    size_t n_train, n_dev;
    int ranks;
    const char *path;
};

static int fill_config(void *ctx, FILE *f) {
    const struct config_args *a = ctx;
    const ts_train_opts *o = a->o;
    const char *path = a->path;
    size_t n_train = a->n_train, n_dev = a->n_dev;
    int ranks = a->ranks;
    const ts_model_config *c = &a->m->cfg;
    fprintf(f, "# the options of this run: `tinyseq train --config %s` repeats it (flags given\n"
               "# on the command line win); the facts at the end are read back but not applied\n", path);
    ts_train_options_write_config(f, o);
    char numbers[TS_CONFIG_FACTS][32];
    snprintf(numbers[0], 32, "%ld", o->data.toy_seed);
    snprintf(numbers[1], 32, "%zu", n_dev);
    snprintf(numbers[2], 32, "%zu", n_train);
    snprintf(numbers[3], 32, "%d", c->src_vocab);
    snprintf(numbers[4], 32, "%d", c->tgt_vocab);
    snprintf(numbers[5], 32, "%zu", ts_params_size(&a->m->params));
    snprintf(numbers[7], 32, "%d", ranks);
    snprintf(numbers[8], 32, "%d", ts_threads_asked());
    // A run's bits are fixed by its thread count and kernel set (docs/design.md, "Same answers").
    const char *facts[TS_CONFIG_FACTS] = {o->data.corpus ? NULL : numbers[0], numbers[1], numbers[2], numbers[3], numbers[4],
                                          numbers[5], o->resume ? o->resume : "", numbers[7], numbers[8], ts_blas_kernels()};
    fprintf(f, "# facts\n");
    for (int i = 0; i < TS_CONFIG_FACTS; i++)
        if (facts[i]) fprintf(f, "%s = %s\n", ts_config_facts[i], facts[i]);
    return TS_OK;
}

int ts_rundir_write_config(const ts_train_opts *o, const ts_seq2seq *m, size_t n_train, size_t n_dev, int ranks) {
    char path[4096];
    int rc = ts_path_join(path, sizeof path, o->out_dir, "config.txt");
    if (rc) return rc;
    struct config_args a = {o, m, n_train, n_dev, ranks, path};
    return ts_write_atomic(path, fill_config, &a, NULL);
}

struct dev_rows {
    const ts_corpus *c;
    const size_t *rows;
    size_t n;
};

static int fill_dev(void *ctx, FILE *out) {
    const struct dev_rows *d = ctx;
    return ts_corpus_write_rows(d->c, d->rows, d->n, out);
}

int ts_rundir_write_dev(const char *dir, const ts_corpus *c, const size_t *rows, size_t n) {
    char path[4096];
    int rc = ts_path_join(path, sizeof path, dir, "dev-pairs.tsv");
    if (rc) return rc;
    struct dev_rows d = {c, rows, n};
    return ts_write_atomic(path, fill_dev, &d, NULL);
}

int ts_rundir_prepare(const char *dir, ts_rundir_use use, long epoch, long step) {
    if (use == TS_RUN_REPLACE) return remove_run_files(dir, 1, 0, 0);
    if (use != TS_RUN_CONTINUE) return TS_OK;
    int rc = ts_runlog_trim(dir, epoch, step);
    return rc ? rc : remove_run_files(dir, 0, epoch, step);
}
