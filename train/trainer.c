// The training loop. One step: batch -> loss -> backward -> clip -> update ->
// arena reset. After every epoch: evaluate on dev, keep the best model, decay
// the learning rate on a plateau, stop early without progress, save.
//
// Resume is exact: the checkpoint holds the parameters, the optimizer state,
// the step, the epoch and the position in it, the shuffling RNG's state at the
// epoch's start (the epoch's batch order is replayed from it), the teacher-
// forcing RNG's state, and every running sum a later checkpoint depends on.
#include "train/trainer.h"

#include "data/batch.h"
#include "data/corpus.h"
#include "data/toy.h"
#include "autograd/ops.h"
#include "data/vocab.h"
#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "ckpt/ckpt.h"
#include "infer/evaluate.h"
#include "infer/load.h"
#include "viz/heatmap.h"
#include "viz/plot.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_SKIPPED_IN_A_ROW = 10 };
// The most any saved counter (steps, tokens of an epoch) may reach: far past
// any real run (2^52 steps), low enough that no increment from a loaded value
// can overflow, and exact as a double.
#define COUNT_MAX ((long)1 << 52)
// The step arena starts at this size and doubles whenever a step or an
// evaluation needs more (the work is then redone): its size follows the
// longest batches of the data, not a guess.
#define ARENA_START ((size_t)64 << 20)

ts_train_opts ts_train_defaults(void) {
    return (ts_train_opts){
        .toy_pairs = TS_TOY_PAIRS, .toy_seed = TS_TOY_SEED, .max_len = 0, .dev_pairs = 0, .min_count = 1,
        .model = {.emb = 64, .hidden = 128, .attn = TS_ATTN_BAHDANAU, .decoder = TS_DECODER_BAHDANAU},
        .optim = TS_OPTIM_ADAM, .lr = 3e-3, .clip = 5.0, .tf = 1.0, .batch = 32, .epochs = 5, .steps = 0,
        .lr_decay = 0.5, .patience = 3, .seed = 1, .out_dir = "runs/default", .warmup = 3, .show = 4,
        .out = stdout, .log = stderr,
    };
}

typedef struct {
    const ts_train_opts *opts;
    ts_corpus *corpus;
    ts_split split;
    ts_vocab *src_vocab, *tgt_vocab;
    ts_batcher *batcher;
    ts_seq2seq *model;
    ts_optim optim;
    ts_arena *arena;
    ts_ctx ctx;
    gsl_rng *shuffle_rng, *tf_rng;
    unsigned char *tf_state;           // (gsl_rng_size) the teacher-forcing RNG before this step, to redo it
    unsigned char *epoch_start_state;  // (gsl_rng_size) the shuffle RNG before this epoch's shuffle
    // state saved in checkpoints
    long step, epoch, position, stale, skipped, skipped_in_row;
    double best_dev, epoch_loss_sum;
    long epoch_tokens;
    double *history_train, *history_dev;  // (epoch) losses of the finished epochs
    // measurement only (never saved)
    double step_seconds, measured_tokens, measured_seconds, last_loss;
    double run_tokens, run_seconds;    // every step of this run, warm-up included
    double started;
    double last_log;
} trainer;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int path_join(char *buf, size_t n, const char *dir, const char *name) {
    if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n) return ts_fail(TS_ERR_ARG, "path too long: %s/%s", dir, name);
    return TS_OK;
}

// mkdir -p
static int make_dirs(const char *path) {
    char buf[4096];
    if (strlen(path) >= sizeof buf) return ts_fail(TS_ERR_ARG, "output path too long");
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return ts_fail(TS_ERR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
            *p = saved;
            if (!saved) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return ts_fail(TS_ERR_IO, "'%s' is not a directory", path);
    return TS_OK;
}

// ---- the run directory ---------------------------------------------------------
//
// --out holds one run. A new run refuses a directory that holds one (unless
// --force, which deletes that run's files and nothing else); --resume from a
// checkpoint in the same directory continues it, dropping what the previous
// run wrote after that checkpoint.

// The length of the run file name that `name` starts with (last.ckpt ...
// attention-<epoch>.svg), or 0; *epoch gets an attention figure's epoch (else -1).
static size_t run_file_stem(const char *name, long *epoch) {
    static const char *const fixed[] = {"last.ckpt", "best.ckpt", "metrics.csv", "config.txt", "loss.svg"};
    *epoch = -1;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strncmp(name, fixed[i], strlen(fixed[i]))) return strlen(fixed[i]);
    if (strncmp(name, "attention-", 10) || name[10] < '0' || name[10] > '9') return 0;
    char *end;
    long n = strtol(name + 10, &end, 10);
    if (strncmp(end, ".svg", 4)) return 0;
    *epoch = n;
    return (size_t)(end + 4 - name);
}

// 1 when `name` is a file tinyseq train writes: a run file, or the temporary
// file of one's atomic save ("<name>.tmp" for figures, "<name>.tmp-XXXXXX"
// for checkpoints) left by a killed run.
static int is_run_file(const char *name, long *epoch) {
    size_t n = run_file_stem(name, epoch);
    if (!n) return 0;
    const char *rest = name + n;
    return !*rest || !strcmp(rest, ".tmp") || (!strncmp(rest, ".tmp-", 5) && strlen(rest + 5) == 6);
}

// Counts the run files in dir and lists up to a few in `names` (for the message).
static int find_run_files(const char *dir, size_t *count, char *names, size_t names_size) {
    DIR *d = opendir(dir);
    if (!d) return ts_fail(TS_ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    *count = 0;
    names[0] = '\0';
    struct dirent *e;
    long epoch;
    while ((e = readdir(d)))
        if (is_run_file(e->d_name, &epoch) && (*count)++ < 4) {
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

// Deletes the run files of dir: every one (all = 1), or the attention figures
// of epochs after `epoch` (all = 0). Nothing else in dir is touched.
static int remove_run_files(const char *dir, int all, long epoch) {
    DIR *d = opendir(dir);
    if (!d) return ts_fail(TS_ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    int rc = TS_OK;
    struct dirent *e;
    long figure_epoch;
    while (!rc && (e = readdir(d))) {
        if (!is_run_file(e->d_name, &figure_epoch) || (!all && figure_epoch <= epoch)) continue;
        char path[4096];
        if (!(rc = path_join(path, sizeof path, dir, e->d_name)) && unlink(path) != 0 && errno != ENOENT)
            rc = ts_fail(TS_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
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

typedef enum { RUN_NEW, RUN_CONTINUE, RUN_REPLACE } run_dir_use;

// What this run does with --out: start in an empty one, continue the run it
// holds (--resume from its own checkpoint), or replace it (--force). A
// directory holding a run is refused otherwise (TS_ERR_ARG).
static int check_run_dir(const ts_train_opts *o, run_dir_use *use) {
    size_t count = 0;
    char names[512];
    int rc = find_run_files(o->out_dir, &count, names, sizeof names);
    if (rc) return rc;
    *use = count == 0 ? RUN_NEW : o->resume && in_directory(o->resume, o->out_dir) ? RUN_CONTINUE : o->force ? RUN_REPLACE : RUN_NEW;
    if (count > 0 && *use == RUN_NEW)
        return ts_fail(TS_ERR_ARG,
                       "--out %s already holds a run (%s): continue it with --resume %s/last.ckpt (and its flags), "
                       "or start over with --force (deletes that run's checkpoints, metrics and figures), or choose another --out",
                       o->out_dir, names, o->out_dir);
    return TS_OK;
}

// A continued run's metrics.csv keeps the header and the rows of the epochs
// up to the checkpoint's; later ones are the previous run's future.
static int trim_metrics(const char *dir, long epoch) {
    char path[4096], tmp[4200];
    int rc = path_join(path, sizeof path, dir, "metrics.csv");
    if (rc) return rc;
    FILE *in = fopen(path, "r");
    if (!in) return errno == ENOENT ? TS_OK : ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fclose(in);
        return ts_fail(TS_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    }
    char line[1024];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        char *end;
        long row_epoch = strtol(line, &end, 10);
        int header = first && !strncmp(line, "epoch,", 6);
        first = 0;
        if (header || (end != line && *end == ',' && row_epoch >= 1 && row_epoch <= epoch)) fputs(line, out);
    }
    int failed = ferror(in);
    fclose(in);
    if (fclose(out) != 0 || failed) rc = ts_fail(TS_ERR_IO, "cannot rewrite '%s'", path);
    if (!rc && rename(tmp, path) != 0) rc = ts_fail(TS_ERR_IO, "cannot rename '%s': %s", tmp, strerror(errno));
    if (rc) unlink(tmp);
    return rc;
}

// Adds n >= 0 to a counter that checkpoints save, refusing to pass COUNT_MAX
// (only a checkpoint that says it is nearly there can bring it close).
static int count_up(long *counter, long n, const char *name) {
    if (*counter > COUNT_MAX - n)
        return ts_fail(TS_ERR_NUMERIC, "the %s counter (%ld) cannot grow by %ld past its limit %ld", name, *counter, n, COUNT_MAX);
    *counter += n;
    return TS_OK;
}

// ---- checkpoints -------------------------------------------------------------

// What this run trains must be what the loader reads back: refuses (TS_ERR_ARG,
// naming the flags) a model whose checkpoint would pass the loader's payload
// cap, before anything is allocated. The estimate is an upper bound: the
// parameters and the optimizer's moments (8 bytes a value), the vocabularies
// (a 4-byte length and the bytes of each word), the epoch histories, and 1 MiB
// for the header, names, shapes and RNG states (a few tens of KiB in fact).
static int check_checkpoint_size(const ts_train_opts *o, const ts_model_config *cfg, const ts_vocab *src,
                                 const ts_vocab *tgt, long max_epochs) {
    double values = (double)ts_seq2seq_param_count(cfg) * (o->optim == TS_OPTIM_ADAM ? 3 : 2);
    double bytes = 8 * values + 16.0 * (double)max_epochs + (double)(1 << 20);
    const ts_vocab *vocabs[2] = {src, tgt};
    for (int k = 0; k < 2; k++)
        for (size_t id = 0; id < ts_vocab_size(vocabs[k]); id++) {
            const char *word = ts_vocab_word(vocabs[k], (int32_t)id);
            bytes += 4 + (word ? (double)strlen(word) : 0);
        }
    double cap = (double)TS_CKPT_DEFAULT_MAX_PAYLOAD;
    if (bytes <= cap) return TS_OK;
    return ts_fail(TS_ERR_ARG,
                   "--emb %d --hidden %d%s with vocabularies of %d / %d words: a checkpoint would hold %.2f GB "
                   "(%zu parameters, each with %s), more than the %.0f GiB a checkpoint may hold; choose a smaller --emb or "
                   "--hidden (or a larger --min-count)",
                   cfg->emb, cfg->hidden, cfg->bidirectional ? " --bidirectional" : "", cfg->src_vocab, cfg->tgt_vocab,
                   bytes / 1e9, ts_seq2seq_param_count(cfg), o->optim == TS_OPTIM_ADAM ? "Adam's two moments" : "its velocity",
                   cap / (1 << 30));
}

// Everything that decides what a continued run computes is saved; nothing
// that depends on time or the machine is. Without `full` (best.ckpt), only
// what inference needs and how the model was trained: no optimizer state,
// RNGs or position, a third of the bytes to load for translate.
static int save_checkpoint(trainer *t, const char *name, int full) {
    const ts_train_opts *o = t->opts;
    // An update can overflow even when its loss and gradient were finite:
    // refuse to write such a model (the previous file stays as it was).
    for (int i = 0; i < t->model->params.count; i++) {
        const ts_tensor *p = t->model->params.items[i];
        for (size_t k = 0; k < p->size; k++)
            if (!isfinite(p->data[k]))
                return ts_fail(TS_ERR_NUMERIC, "step %ld: %s[%zu] is %g; not saving %s", t->step, p->name, k, p->data[k], name);
    }
    ts_ckpt *ck = ts_ckpt_new();
    if (!ck) return ts_fail(TS_ERR_NOMEM, "cannot allocate a checkpoint");
    int rc = ts_model_to_ckpt(ck, t->model, t->src_vocab, t->tgt_vocab, (int)o->max_len);
    if (!rc) rc = ts_ckpt_set(ck, "data.corpus", o->corpus ? o->corpus : "toy");
    if (!rc) rc = ts_ckpt_set_int(ck, "data.toy_pairs", o->toy_pairs);
    if (!rc) rc = ts_ckpt_set_int(ck, "data.toy_seed", o->toy_seed);
    if (!rc) rc = ts_ckpt_set_int(ck, "data.dev_pairs", o->dev_pairs);
    if (!rc) rc = ts_ckpt_set_int(ck, "data.min_count", o->min_count);
    if (!rc) rc = ts_ckpt_set_int(ck, "data.skip_bad", o->skip_bad);
    if (!rc) rc = ts_ckpt_set(ck, "train.optimizer", ts_optim_name(o->optim));
    if (!rc) rc = ts_ckpt_set_double(ck, "train.lr", t->optim.lr);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.lr_initial", o->lr);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.clip", o->clip);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.tf", o->tf);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.dropout", o->dropout);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.label_smoothing", o->label_smoothing);
    if (!rc) rc = ts_ckpt_set_int(ck, "train.batch", o->batch);
    if (!rc) rc = ts_ckpt_set_double(ck, "train.lr_decay", o->lr_decay);
    if (!rc) rc = ts_ckpt_set_int(ck, "train.patience", o->patience);
    if (!rc) rc = ts_ckpt_set_int(ck, "train.seed", o->seed);
    if (!rc) rc = ts_ckpt_set(ck, "checkpoint.kind", full ? "training" : "inference");
    if (!rc && !full) goto save;
    if (!rc) rc = ts_ckpt_set_int(ck, "state.step", t->step);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.epoch", t->epoch);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.position", t->position);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.stale", t->stale);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.skipped", t->skipped);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.best_dev_loss", t->best_dev);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.epoch_loss_sum", t->epoch_loss_sum);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.epoch_tokens", t->epoch_tokens);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.optimizer_step", t->optim.step);
    if (!rc) rc = ts_ckpt_set_blob(ck, "rng.shuffle_epoch_start", t->epoch_start_state, gsl_rng_size(t->shuffle_rng));
    if (!rc) rc = ts_ckpt_set_blob(ck, "rng.teacher_forcing", gsl_rng_state(t->tf_rng), gsl_rng_size(t->tf_rng));
    const char *moment_names[2] = {t->opts->optim == TS_OPTIM_SGD ? "sgd.velocity" : "adam.m", "adam.v"};
    for (int i = 0; !rc && i < t->model->params.count; i++) {
        ts_tensor *p = t->model->params.items[i];
        size_t shape[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        for (int k = 0; k < 2 && !rc; k++) {
            double *moment = k == 0 ? t->optim.m[i] : t->optim.v[i];
            if (!moment) continue;
            char tensor_name[128];
            snprintf(tensor_name, sizeof tensor_name, "%s.%s", moment_names[k], p->name);
            rc = ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, tensor_name, p->ndim, shape, moment);
        }
    }
    if (!rc && t->epoch > 0) {
        size_t n = (size_t)t->epoch;
        rc = ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "history.train_loss", 1, &n, t->history_train);
        if (!rc) rc = ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "history.dev_loss", 1, &n, t->history_dev);
    }
save:;
    char path[4096];
    if (!rc) rc = path_join(path, sizeof path, o->out_dir, name);
    if (!rc) rc = ts_ckpt_save(ck, path);
    ts_ckpt_free(ck);
    return rc;
}

static int restore_rng(const ts_ckpt *ck, const char *name, gsl_rng *rng, unsigned char *into) {
    const void *bytes;
    size_t n;
    int rc = ts_ckpt_get_blob(ck, name, &bytes, &n);
    if (rc) return rc;
    if (n != gsl_rng_size(rng)) return ts_fail(TS_ERR_FORMAT, "blob %s has %zu bytes, the RNG needs %zu", name, n, gsl_rng_size(rng));
    memcpy(into ? (void *)into : gsl_rng_state(rng), bytes, n);
    return TS_OK;
}

// A resumed run must ask for what the saved run did, or it would not
// continue it exactly: every option that shapes the computation is compared.
static int check_same_options(const trainer *t, const ts_ckpt *ck) {
    const ts_train_opts *o = t->opts;
    struct { const char *key, *flag; long want; } ints[] = {
        {"data.toy_pairs", "--toy-pairs", o->toy_pairs}, {"data.toy_seed", "toy seed", o->toy_seed},
        {"data.max_len", "--max-len", o->max_len},       {"data.dev_pairs", "--dev", o->dev_pairs},
        {"data.min_count", "--min-count", o->min_count}, {"data.skip_bad", "--skip-bad", o->skip_bad},
        {"train.batch", "--batch", o->batch},            {"train.patience", "--patience", o->patience},
        {"train.seed", "--seed", o->seed},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t saved;
        int rc = ts_ckpt_get_int(ck, ints[i].key, INT64_MIN, INT64_MAX, &saved);
        if (rc) return rc;
        if (saved != ints[i].want)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %lld; this run asks for %ld (resuming must keep the flags)",
                           o->resume, ints[i].flag, (long long)saved, ints[i].want);
    }
    struct { const char *key, *flag; double want; int optional; } reals[] = {
        {"train.lr_initial", "--lr", o->lr, 0}, {"train.clip", "--clip", o->clip, 0},
        {"train.tf", "--tf", o->tf, 0},         {"train.lr_decay", "--lr-decay", o->lr_decay, 0},
        {"train.dropout", "--dropout", o->dropout, 1}, {"train.label_smoothing", "--label-smoothing", o->label_smoothing, 1},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        double saved = 0.0;  // checkpoints from before a flag existed trained without it
        const char *present;
        if (reals[i].optional && ts_ckpt_get_string(ck, reals[i].key, &present) != TS_OK) {
            ts_clear_error();
        } else {
            int rc = ts_ckpt_get_double(ck, reals[i].key, -INFINITY, INFINITY, &saved);
            if (rc) return rc;
        }
        if (saved != reals[i].want)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %g; this run asks for %g (resuming must keep the flags)",
                           o->resume, reals[i].flag, saved, reals[i].want);
    }
    const char *optimizer;
    int rc = ts_ckpt_get_string(ck, "train.optimizer", &optimizer);
    if (!rc && strcmp(optimizer, ts_optim_name(o->optim)))
        rc = ts_fail(TS_ERR_ARG, "%s was trained with --optim %s; this run asks for %s", o->resume, optimizer,
                     ts_optim_name(o->optim));
    return rc;
}

// Restores the training state saved by save_checkpoint (the parameters come
// with the model, loaded by the caller). Each field is bounded here, once,
// by what a run can have written: a value outside is a damaged or hostile
// file (TS_ERR_FORMAT), and nothing later needs to doubt it. An --epochs or
// --steps below what the checkpoint has done is TS_ERR_ARG.
static int restore_state(trainer *t, const ts_ckpt *ck, long max_epochs) {
    const ts_train_opts *o = t->opts;
    int64_t step, epoch, position, stale, skipped, tokens, optim_step;
    double lr;
    const char *kind;
    if (!ts_ckpt_get_string(ck, "checkpoint.kind", &kind) && !strcmp(kind, "inference"))
        return ts_fail(TS_ERR_FORMAT, "%s holds a model for inference, no training state: resume from last.ckpt",
                       t->opts->resume);
    int rc = ts_ckpt_get_int(ck, "state.step", 0, COUNT_MAX, &step);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.epoch", 0, TS_MAX_EPOCHS, &epoch);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.position", 0, (int64_t)ts_batcher_count(t->batcher), &position);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.stale", 0, o->patience, &stale);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.skipped", 0, step, &skipped);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.epoch_tokens", 0, COUNT_MAX, &tokens);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.optimizer_step", 0, step, &optim_step);
    if (!rc) rc = ts_ckpt_get_double(ck, "state.best_dev_loss", 0, INFINITY, &t->best_dev);
    if (!rc) rc = ts_ckpt_get_double(ck, "state.epoch_loss_sum", 0, DBL_MAX, &t->epoch_loss_sum);
    if (!rc) rc = ts_ckpt_get_double(ck, "train.lr", 0, o->lr, &lr);  // decay only lowers it
    if (!rc) rc = restore_rng(ck, "rng.shuffle_epoch_start", t->shuffle_rng, t->epoch_start_state);
    if (!rc) rc = restore_rng(ck, "rng.teacher_forcing", t->tf_rng, NULL);
    if (rc) return rc;
    if (epoch > max_epochs)  // only with --epochs: max_epochs is TS_MAX_EPOCHS with --steps
        return ts_fail(TS_ERR_ARG, "it has done %lld epochs; --epochs %ld asks for fewer (give --epochs %lld or more to continue it)",
                       (long long)epoch, o->epochs, (long long)epoch);
    if (o->steps > 0 && step > o->steps)
        return ts_fail(TS_ERR_ARG, "it has done %lld steps; --steps %ld asks for fewer (give --steps %lld or more to continue it)",
                       (long long)step, o->steps, (long long)step);
    t->step = step;
    t->epoch = epoch;
    t->position = position;
    t->stale = stale;
    t->skipped = skipped;
    t->epoch_tokens = tokens;
    t->optim.step = optim_step;
    t->optim.lr = lr;
    const char *moment_names[2] = {t->opts->optim == TS_OPTIM_SGD ? "sgd.velocity" : "adam.m", "adam.v"};
    for (int i = 0; i < t->model->params.count; i++) {
        ts_tensor *p = t->model->params.items[i];
        size_t shape[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        for (int k = 0; k < 2; k++) {
            double *moment = k == 0 ? t->optim.m[i] : t->optim.v[i];
            if (!moment) continue;
            char name[128];
            snprintf(name, sizeof name, "%s.%s", moment_names[k], p->name);
            const ts_ckpt_tensor *stored;
            if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, name, p->ndim, shape, &stored))) return rc;
            memcpy(moment, stored->data, p->size * sizeof(double));
        }
    }
    if (epoch > 0) {
        size_t n = (size_t)epoch;
        const ts_ckpt_tensor *train, *dev;
        if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, "history.train_loss", 1, &n, &train)) ||
            (rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, "history.dev_loss", 1, &n, &dev)))
            return rc;
        memcpy(t->history_train, train->data, n * sizeof(double));
        memcpy(t->history_dev, dev->data, n * sizeof(double));
    }
    return TS_OK;
}

// The vocabulary a checkpoint was trained with must be the one this run's
// data builds, word for word: the same size with other words would make
// every id mean another word.
static int check_same_vocab(const char *side, const ts_vocab *saved, const ts_vocab *now) {
    size_t n_saved = ts_vocab_size(saved), n_now = ts_vocab_size(now);
    for (size_t id = 0; id < n_saved || id < n_now; id++) {
        const char *a = id < n_saved ? ts_vocab_word(saved, (int32_t)id) : NULL;
        const char *b = id < n_now ? ts_vocab_word(now, (int32_t)id) : NULL;
        if (a && b && !strcmp(a, b)) continue;
        return ts_fail(TS_ERR_ARG,
                       "the data changed since it was saved: %s word %zu is %s%s%s in the checkpoint but %s%s%s in this "
                       "run's corpus (%zu words then, %zu now); resuming needs the same corpus and flags",
                       side, id, a ? "'" : "", a ? a : "absent", a ? "'" : "", b ? "'" : "", b ? b : "absent", b ? "'" : "",
                       n_saved, n_now);
    }
    return TS_OK;
}

// Continues from checkpoint ck: the same vocabularies, model and flags, then
// the parameters and the training state.
static int resume_from(trainer *t, const ts_ckpt *ck, long max_epochs) {
    ts_translator loaded;
    int rc = ts_translator_from_ckpt(ck, &loaded);
    if (rc) return rc;
    rc = check_same_vocab("source", loaded.src_vocab, t->src_vocab);
    if (!rc) rc = check_same_vocab("target", loaded.tgt_vocab, t->tgt_vocab);
    // The data and flags rebuild the same model; take its values.
    int same = loaded.model->params.count == t->model->params.count;
    for (int i = 0; !rc && same && i < t->model->params.count; i++) {
        ts_tensor *dst = t->model->params.items[i], *src = loaded.model->params.items[i];
        same = ts_same_shape(dst, src) && !strcmp(dst->name, src->name);
        if (same) memcpy(dst->data, src->data, dst->size * sizeof(double));
    }
    ts_translator_free(&loaded);
    if (!rc && !same) rc = ts_fail(TS_ERR_ARG, "it was trained with another model configuration (--attn, --decoder, --bidirectional, --emb, --hidden)");
    if (!rc) rc = check_same_options(t, ck);
    if (!rc) rc = restore_state(t, ck, max_epochs);
    return rc;
}

// Puts "<checkpoint path>: " before the message of a failure rc, unless the
// message names it already.
static int in_checkpoint(int rc, const char *path) {
    if (!rc || strstr(ts_last_error(), path)) return rc;
    char message[2048];  // ts_fail writes into the buffer ts_last_error reads
    snprintf(message, sizeof message, "%s", ts_last_error());
    return ts_fail(rc, "%s: %s", path, message);
}

// ---- progress ------------------------------------------------------------------

static void format_duration(char *buf, size_t n, double seconds) {
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

static void show_progress(trainer *t, size_t total, int final) {
    FILE *log = t->opts->log;
    if (!log) return;
    int tty = isatty(fileno(log));
    double elapsed = now() - t->started;
    if (!tty && !final && elapsed - t->last_log < 5.0) return;
    if (tty && !final && elapsed - t->last_log < 0.1) return;
    t->last_log = elapsed;
    double rate = t->measured_seconds > 0 ? t->measured_tokens / t->measured_seconds : 0;
    double per_batch = t->position > 0 ? t->step_seconds / (double)t->position : 0;
    char eta[32];
    format_duration(eta, sizeof eta, per_batch * (double)(total - (size_t)t->position));
    double loss = t->epoch_tokens ? t->epoch_loss_sum / (double)t->epoch_tokens : NAN;
    if (tty) {
        int width = 24, filled = total ? (int)((double)t->position / (double)total * width) : 0;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '=' : i == filled ? '>' : ' ';
        bar[width] = '\0';
        fprintf(log, "\r\033[Kepoch %ld [%s] %ld/%zu  loss %.4f  %.0f tok/s  ETA %s", t->epoch + 1, bar,
                t->position, total, loss, rate, eta);
        if (final) fputc('\n', log);
    } else {
        fprintf(log, "epoch %ld: %ld/%zu batches, loss %.4f, %.0f tok/s, ETA %s\n", t->epoch + 1, t->position, total,
                loss, rate, eta);
    }
    fflush(log);
}

// ---- evaluation ------------------------------------------------------------------

static ts_translator view_of(trainer *t) {
    return (ts_translator){.model = t->model, .src_vocab = t->src_vocab, .tgt_vocab = t->tgt_vocab,
                           .max_len = (int)t->opts->max_len};
}

// The attention of the first dev sentence, as attention-<epoch>.svg. The
// hypothesis was decoded in a batch: its rows are h->S wide (the batch's
// longest source), of which the first n are this sentence's words.
static int write_attention_figure(trainer *t, const ts_hypothesis *h, size_t row) {
    if (t->model->cfg.attn == TS_ATTN_NONE || !h->attention) return TS_OK;
    const ts_pair *pair = &t->corpus->pairs[row];
    size_t T = (size_t)h->len + 1, n = (size_t)pair->src_len, S = (size_t)h->S;
    if (n > S) return ts_fail(TS_ERR_SHAPE, "figure: %zu source words, attention rows of %zu", n, S);
    const char **target = malloc(T * sizeof *target);
    double *weights = malloc(T * n * sizeof *weights);  // (T, n) without the batch's padding
    if (!target || !weights) {
        free(target);
        free(weights);
        return ts_fail(TS_ERR_NOMEM, "figure labels");
    }
    for (size_t j = 0; j < T; j++) memcpy(weights + j * n, h->attention + j * S, n * sizeof *weights);
    for (size_t j = 0; j < T; j++) {
        const char *w = j < (size_t)h->len ? ts_vocab_word(t->tgt_vocab, h->tokens[j]) : h->ended ? "<eos>" : "<cut>";
        target[j] = w ? w : "<unk>";
    }
    char name[64], path[4096], title[128];
    snprintf(name, sizeof name, "attention-%ld.svg", t->epoch);
    snprintf(title, sizeof title, "attention: %s (%s decoder), epoch %ld", ts_attn_name(t->model->cfg.attn),
             ts_decoder_name(t->model->cfg.decoder), t->epoch);
    int rc = path_join(path, sizeof path, t->opts->out_dir, name);
    if (!rc) rc = ts_render_heatmap_svg_path(path, weights, T, n, target, (const char *const *)pair->src, title);
    free(target);
    free(weights);
    return rc;
}

static void free_hyps(ts_hypothesis *hyps, size_t n) {
    if (!hyps) return;
    for (size_t i = 0; i < n; i++) ts_hypothesis_free(&hyps[i]);
    free(hyps);
}

// Replaces the step arena by one twice as large (called when the work that
// just failed with TS_ERR_ARENA is about to be redone). TS_ERR_NOMEM when
// the machine has no such block.
static int grow_arena(trainer *t) {
    size_t capacity = ts_arena_capacity(t->arena);
    if (capacity > SIZE_MAX / 2) return ts_fail(TS_ERR_NOMEM, "the step arena cannot grow past %zu bytes", capacity);
    ts_arena *bigger = ts_arena_new(2 * capacity);
    if (!bigger)
        return ts_fail(TS_ERR_NOMEM, "out of memory: a step needs more than %zu MiB of arena, and %zu MiB cannot be allocated",
                       capacity >> 20, (2 * capacity) >> 20);
    ts_arena_free(t->arena);
    t->arena = bigger;
    t->ctx.arena = bigger;
    ts_ctx_reset(&t->ctx);
    return TS_OK;
}

static int evaluate_dev(trainer *t, ts_eval_result *res, ts_hypothesis **hyps) {
    ts_translator view = view_of(t);
    ts_eval_opts eo = {.beam = 1, .batch = 64};
    int rc;
    // A failed ts_evaluate has freed its hypotheses.
    while ((rc = ts_evaluate(&view, &t->ctx, t->corpus, t->split.dev, t->split.n_dev, &eo, res, hyps)) == TS_ERR_ARENA)
        if ((rc = grow_arena(t))) break;
    ts_ctx_reset(&t->ctx);
    return rc;
}

// After an epoch: evaluate, keep the best, decay on a plateau, record, save.
// Sets *stop when early stopping says so.
static int end_epoch(trainer *t, int *stop) {
    const ts_train_opts *o = t->opts;
    ts_eval_result res;
    ts_hypothesis *hyps = NULL;
    int rc = evaluate_dev(t, &res, &hyps);
    if (rc) return rc;
    double train_loss = t->epoch_tokens ? t->epoch_loss_sum / (double)t->epoch_tokens : NAN;
    t->history_train[t->epoch] = train_loss;
    t->history_dev[t->epoch] = res.loss;
    t->epoch++;  // below max_epochs <= TS_MAX_EPOCHS: the loop stops there
    t->position = 0;
    t->epoch_loss_sum = 0;
    t->epoch_tokens = 0;
    int improved = res.loss < t->best_dev;
    if (improved) {
        t->best_dev = res.loss;
        t->stale = 0;
    } else {
        t->stale++;  // at most patience: the run stops there
        t->optim.lr *= o->lr_decay;
    }
    *stop = t->stale >= o->patience;
    // The next epoch starts here, so a checkpoint saved now resumes into it.
    memcpy(t->epoch_start_state, gsl_rng_state(t->shuffle_rng), gsl_rng_size(t->shuffle_rng));
    double elapsed = now() - t->started;
    double rate = t->measured_seconds > 0 ? t->measured_tokens / t->measured_seconds : 0;
    fprintf(o->out,
            "epoch %ld: train loss %.4f, dev loss %.4f, dev ppl %.3f, dev BLEU %.4f, chrF %.4f, exact %.1f%%, lr %.3g, "
            "%.0f tok/s, %.1f s%s\n",
            t->epoch, train_loss, res.loss, res.perplexity, res.bleu, res.chrf, 100 * res.exact, t->optim.lr, rate, elapsed,
            improved ? " (best)" : "");
    fflush(o->out);
    char path[4096];
    if ((rc = path_join(path, sizeof path, o->out_dir, "metrics.csv"))) goto done;
    FILE *csv = fopen(path, "a");
    if (!csv) {
        rc = ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        goto done;
    }
    if (ftell(csv) == 0)
        fputs("epoch,step,train_loss,dev_loss,dev_ppl,dev_bleu,dev_chrf,dev_exact,lr,tokens_per_s,elapsed_s\n", csv);
    fprintf(csv, "%ld,%ld,%.6f,%.6f,%.4f,%.6f,%.6f,%.6f,%.6g,%.1f,%.2f\n", t->epoch, t->step, train_loss, res.loss,
            res.perplexity, res.bleu, res.chrf, res.exact, t->optim.lr, rate, elapsed);
    if (fclose(csv) != 0) {
        rc = ts_fail(TS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        goto done;
    }
    if (improved && (rc = save_checkpoint(t, "best.ckpt", 0))) goto done;
    if ((rc = save_checkpoint(t, "last.ckpt", 1))) goto done;
    if (hyps && t->split.n_dev > 0 && (rc = write_attention_figure(t, &hyps[0], t->split.dev[0]))) goto done;
    if (!(rc = path_join(path, sizeof path, o->out_dir, "loss.svg")))
        rc = ts_render_loss_svg_path(path, t->history_train, t->history_dev, (size_t)t->epoch, "loss per epoch");
done:
    free_hyps(hyps, t->split.n_dev);
    return rc;
}

// ---- setup -------------------------------------------------------------------------

static int write_config(const ts_train_opts *o, const ts_seq2seq *m, size_t n_train, size_t n_dev) {
    char path[4096];
    int rc = path_join(path, sizeof path, o->out_dir, "config.txt");
    if (rc) return rc;
    FILE *f = fopen(path, "w");
    if (!f) return ts_fail(TS_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    const ts_model_config *c = &m->cfg;
    fprintf(f, "corpus=%s\n", o->corpus ? o->corpus : "toy");
    if (!o->corpus) fprintf(f, "toy_pairs=%ld\ntoy_seed=%ld\n", o->toy_pairs, o->toy_seed);  // only what applies
    fprintf(f, "max_len=%ld\ndev_pairs=%zu\ntrain_pairs=%zu\nmin_count=%ld\n", o->max_len, n_dev, n_train, o->min_count);
    fprintf(f, "attention=%s\ndecoder=%s\nbidirectional=%d\nemb=%d\nhidden=%d\nsource_vocabulary=%d\ntarget_vocabulary=%d\n",
            ts_attn_name(c->attn), ts_decoder_name(c->decoder), c->bidirectional, c->emb, c->hidden, c->src_vocab,
            c->tgt_vocab);
    fprintf(f, "optimizer=%s\nlr=%g\nclip=%g\ntf=%g\ndropout=%g\nlabel_smoothing=%g\nbatch=%ld\nepochs=%ld\nsteps=%ld\n"
               "lr_decay=%g\npatience=%ld\nseed=%ld\n",
            ts_optim_name(o->optim), o->lr, o->clip, o->tf, o->dropout, o->label_smoothing, o->batch, o->epochs, o->steps,
            o->lr_decay, o->patience, o->seed);
    fprintf(f, "parameters=%zu\nresume=%s\n", ts_params_size(&m->params), o->resume ? o->resume : "");
    if (fclose(f) != 0) return ts_fail(TS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return TS_OK;
}

static int load_data(trainer *t) {
    const ts_train_opts *o = t->opts;
    ts_corpus_opts co = {.max_len = (size_t)o->max_len, .skip_bad = o->skip_bad};
    int rc;
    if (o->corpus) {
        rc = ts_corpus_read(o->corpus, &co, &t->corpus);
        if (!rc && t->corpus->n_bad && o->log)
            fprintf(o->log, "skipped %zu malformed lines of %s\n", t->corpus->n_bad, o->corpus);
    } else {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!rng) return ts_fail(TS_ERR_NOMEM, "rng");
        gsl_rng_set(rng, (unsigned long)o->toy_seed);
        rc = ts_toy_generate(rng, (size_t)o->toy_pairs, &t->corpus);
        gsl_rng_free(rng);
        if (!rc) rc = ts_corpus_filter(t->corpus, &co);
    }
    if (rc) return rc;
    size_t n_pairs = t->corpus->n_pairs;
    if (n_pairs < 2)
        return ts_fail(TS_ERR_FORMAT, "%s has %zu usable pairs%s; training needs at least 2", o->corpus ? o->corpus : "the toy corpus",
                       n_pairs, o->max_len ? " within --max-len" : "");
    // --dev N is held out as asked; without it, 500 or a tenth of the corpus.
    size_t n_dev = (size_t)o->dev_pairs;
    if (n_dev >= n_pairs)
        return ts_fail(TS_ERR_ARG, "--dev %zu: %s has %zu usable pairs, so at most %zu can be held out", n_dev,
                       o->corpus ? o->corpus : "the toy corpus", n_pairs, n_pairs - 1);
    if (n_dev == 0) n_dev = n_pairs / 10 < TS_DEFAULT_DEV_PAIRS ? n_pairs / 10 : TS_DEFAULT_DEV_PAIRS;
    if (n_dev == 0) n_dev = 1;
    gsl_rng *split_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!split_rng) return ts_fail(TS_ERR_NOMEM, "rng");
    gsl_rng_set(split_rng, (unsigned long)o->seed);
    rc = ts_corpus_split(t->corpus, split_rng, n_dev, 0, &t->split);
    gsl_rng_free(split_rng);
    if (!rc) rc = ts_vocab_build(t->corpus, TS_SRC, t->split.train, t->split.n_train, (size_t)o->min_count, &t->src_vocab);
    if (!rc) rc = ts_vocab_build(t->corpus, TS_TGT, t->split.train, t->split.n_train, (size_t)o->min_count, &t->tgt_vocab);
    ts_batcher_opts bo = {.batch_size = (size_t)o->batch, .bucket_batches = 50};
    if (!rc) rc = ts_batcher_new(t->corpus, t->split.train, t->split.n_train, t->src_vocab, t->tgt_vocab, &bo, &t->batcher);
    return rc;
}

static void trainer_free(trainer *t) {
    ts_corpus_free(t->corpus);
    ts_split_free(&t->split);
    ts_vocab_free(t->src_vocab);
    ts_vocab_free(t->tgt_vocab);
    ts_batcher_free(t->batcher);
    ts_seq2seq_free(t->model);
    ts_optim_free(&t->optim);
    ts_arena_free(t->arena);
    if (t->shuffle_rng) gsl_rng_free(t->shuffle_rng);
    if (t->tf_rng) gsl_rng_free(t->tf_rng);
    free(t->epoch_start_state);
    free(t->tf_state);
    free(t->history_train);
    free(t->history_dev);
}

// ---- the loop ------------------------------------------------------------------------

// The value of the caller's stop flag (0: carry on).
static int stop_requested(const ts_train_opts *o) { return o->stop ? (int)*o->stop : 0; }

// One optimizer step on batch b. A non-finite loss or gradient skips the
// update (the parameters stay finite) and counts; too many in a row fail.
// The gradients are zero on entry and on return: ts_optim_step zeroes them
// as it consumes them, and every path that does not reach it zeroes them here.
static int train_step(trainer *t, const ts_batch *b) {
    const ts_train_opts *o = t->opts;
    double t0 = now();
    ts_batch_view view = {.B = b->B, .S = b->S, .T = b->T, .src = b->src, .src_len = b->src_len,
                          .tgt_in = b->tgt_in, .tgt_out = b->tgt_out};
    int n_tokens = 0;
    double value, plain;  // the loss optimised, and its plain cross-entropy (they differ with label smoothing)
    ts_regularizer reg = {o->dropout, o->label_smoothing};
    // A full arena redoes the step in a larger one, with the teacher-forcing
    // draws it made given back: the step computes what it would have.
    size_t tf_bytes = gsl_rng_size(t->tf_rng);
    memcpy(t->tf_state, gsl_rng_state(t->tf_rng), tf_bytes);
    for (;;) {
        ts_ctx_reset(&t->ctx);
        ts_tensor *loss = ts_seq2seq_loss(t->model, &t->ctx, &view, o->tf, t->tf_rng, &reg, &n_tokens);
        int rc = loss ? TS_OK : t->ctx.status;
        value = loss ? loss->data[0] : NAN;
        plain = loss ? ts_cross_entropy_nll(loss) : NAN;
        if (!rc && isfinite(value)) rc = ts_backward(&t->ctx, loss);
        if (!rc) break;
        ts_params_zero_grad(&t->model->params);
        if (rc != TS_ERR_ARENA || (rc = grow_arena(t))) return rc;
        memcpy(gsl_rng_state(t->tf_rng), t->tf_state, tf_bytes);
    }
    double norm = isfinite(value) ? ts_grad_norm(&t->model->params, t->optim.threads) : NAN;
    int rc = count_up(&t->step, 1, "step");
    if (rc) {
        ts_params_zero_grad(&t->model->params);
        return rc;
    }
    t->position++;  // at most the epoch's batches (restore_state checks a loaded one)
    if (!isfinite(value) || !isfinite(norm)) {
        ts_params_zero_grad(&t->model->params);
        t->skipped++;  // at most t->step
        if (o->log)
            fprintf(o->log, "\nstep %ld: %s is %s; update skipped (%ld in a row)\n", t->step,
                    isfinite(value) ? "the gradient norm" : "the loss", isfinite(value) ? (isnan(norm) ? "NaN" : "Inf") : (isnan(value) ? "NaN" : "Inf"),
                    t->skipped_in_row + 1);
        if (++t->skipped_in_row >= MAX_SKIPPED_IN_A_ROW)
            return ts_fail(TS_ERR_NUMERIC, "%d steps in a row had a non-finite loss or gradient (last: step %ld); stopping without saving them",
                           MAX_SKIPPED_IN_A_ROW, t->step);
        return TS_OK;
    }
    t->skipped_in_row = 0;
    if ((rc = ts_optim_step(&t->optim, &t->model->params, ts_clip_factor(norm, o->clip)))) return rc;
    double dt = now() - t0;
    t->step_seconds += dt;
    t->run_tokens += n_tokens;
    t->run_seconds += dt;
    if ((rc = count_up(&t->epoch_tokens, n_tokens, "epoch token"))) return rc;
    t->epoch_loss_sum += plain * n_tokens;  // reported train loss: comparable with dev loss
    t->last_loss = plain;
    if (t->step > o->warmup) {
        t->measured_tokens += n_tokens;
        t->measured_seconds += dt;
    }
    return TS_OK;
}

// The end of a run: the dev set evaluated with the final model (a failure
// fails the run), best.ckpt written if no epoch has ended yet (so every
// finished run has one), then the examples and the summary.
static int finish_run(trainer *t) {
    const ts_train_opts *o = t->opts;
    ts_eval_result res;
    ts_hypothesis *hyps = NULL;
    int rc = evaluate_dev(t, &res, &hyps);
    if (rc) return rc;
    // The saved state is left as it is (best_dev stays unset), so a run
    // resumed from here computes what an uninterrupted one does.
    int best_is_last = t->epoch == 0 && isinf(t->best_dev);
    if (best_is_last && (rc = save_checkpoint(t, "best.ckpt", 0))) {
        free_hyps(hyps, t->split.n_dev);
        return rc;
    }
    if (!o->out) {
        free_hyps(hyps, t->split.n_dev);
        return TS_OK;
    }
    size_t n = (size_t)o->show < t->split.n_dev ? (size_t)o->show : t->split.n_dev;
    char buf[4096];
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = &t->corpus->pairs[t->split.dev[i]];
        fputs("  source:    ", o->out);
        for (int k = 0; k < p->src_len; k++) fprintf(o->out, "%s%s", k ? " " : "", p->src[k]);
        fputs("\n  reference: ", o->out);
        for (int k = 0; k < p->tgt_len; k++) fprintf(o->out, "%s%s", k ? " " : "", p->tgt[k]);
        ts_vocab_decode(t->tgt_vocab, hyps[i].tokens, (size_t)hyps[i].len, buf, sizeof buf);
        fprintf(o->out, "\n  output:    %s\n\n", buf);
    }
    fprintf(o->out, "dev: loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%% on %zu pairs (last model: %s/last.ckpt)\n",
            res.loss, res.perplexity, res.bleu, res.chrf, 100 * res.exact, res.pairs, o->out_dir);
    if (res.pairs && res.short_refs == res.pairs)
        fprintf(o->out, "note: BLEU-4 is 0 on this dev set whatever the outputs (no reference has 4 words): read chrF\n");
    long best_epoch = 0;  // history_dev[e] is epoch e + 1's
    for (long e = 0; e < t->epoch; e++)
        if (t->history_dev[e] == t->best_dev) best_epoch = e + 1;
    if (best_epoch)
        fprintf(o->out, "best: epoch %ld, dev loss %.4f (%s/best.ckpt)\n",
                best_epoch, t->best_dev, o->out_dir);
    else if (best_is_last)
        fprintf(o->out, "best: step %ld (no epoch has ended yet), dev loss %.4f (%s/best.ckpt)\n", t->step, res.loss,
                o->out_dir);
    free_hyps(hyps, t->split.n_dev);
    return TS_OK;
}

int ts_train(const ts_train_opts *o, ts_train_report *report) {
    trainer t = {.opts = o, .best_dev = INFINITY};
    memset(report, 0, sizeof *report);
    ts_gsl_quiet();
    if (o->threads < 0 || o->threads > TS_MAX_THREADS)
        return ts_fail(TS_ERR_ARG, "--threads must be between 1 and %d, got %ld", TS_MAX_THREADS, o->threads);
    // Set even when it is OpenBLAS's own count: that turns on ts_gemm's
    // one-thread path for small products.
    int threads = o->threads > 0 ? (int)o->threads : ts_blas_threads();
    ts_blas_set_threads(threads);
    int rc = make_dirs(o->out_dir);
    run_dir_use use = RUN_NEW;
    if (!rc) rc = check_run_dir(o, &use);
    ts_ckpt *resume = NULL;
    if (!rc && o->resume) rc = ts_ckpt_load(o->resume, NULL, &resume);
    if (!rc) rc = load_data(&t);
    if (rc) goto done;
    ts_model_config cfg = o->model;
    cfg.src_vocab = (int)ts_vocab_size(t.src_vocab);
    cfg.tgt_vocab = (int)ts_vocab_size(t.tgt_vocab);
    long max_epochs = o->steps > 0 ? TS_MAX_EPOCHS : o->epochs;
    if ((rc = ts_model_config_check(&cfg)) ||
        (rc = check_checkpoint_size(o, &cfg, t.src_vocab, t.tgt_vocab, max_epochs)))
        goto done;
    gsl_rng *init_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!init_rng) {
        rc = ts_fail(TS_ERR_NOMEM, "rng");
        goto done;
    }
    gsl_rng_set(init_rng, (unsigned long)o->seed);
    t.model = ts_seq2seq_new(&cfg, init_rng);
    gsl_rng_free(init_rng);
    t.shuffle_rng = gsl_rng_alloc(gsl_rng_mt19937);
    t.tf_rng = gsl_rng_alloc(gsl_rng_mt19937);
    t.history_train = calloc((size_t)max_epochs + 1, sizeof(double));
    t.history_dev = calloc((size_t)max_epochs + 1, sizeof(double));
    t.arena = ts_arena_new(o->arena_start ? o->arena_start : ARENA_START);
    if (!t.model || !t.shuffle_rng || !t.tf_rng || !t.history_train || !t.history_dev || !t.arena) {
        // The configuration was checked above: what failed is memory.
        rc = ts_fail(TS_ERR_NOMEM, "out of memory: cannot allocate the %s", !t.model ? "model" : !t.arena ? "step arena" : "trainer");
        goto done;
    }
    t.epoch_start_state = malloc(gsl_rng_size(t.shuffle_rng));
    t.tf_state = malloc(gsl_rng_size(t.tf_rng));
    if (!t.epoch_start_state || !t.tf_state || (rc = ts_optim_init(&t.optim, &t.model->params, o->optim, o->lr))) {
        rc = rc ? rc : ts_fail(TS_ERR_NOMEM, "rng state");
        goto done;
    }
    ts_ctx_init(&t.ctx, t.arena);
    ts_params_zero_grad(&t.model->params);  // train_step's invariant
    t.optim.threads = threads > 1 ? 2 : 1;  // the memory-bound passes gain little beyond two
    gsl_rng_set(t.shuffle_rng, (unsigned long)o->seed + 1);
    gsl_rng_set(t.tf_rng, (unsigned long)o->seed + 2);
    memcpy(t.epoch_start_state, gsl_rng_state(t.shuffle_rng), gsl_rng_size(t.shuffle_rng));
    if (resume && (rc = in_checkpoint(resume_from(&t, resume, max_epochs), o->resume))) goto done;
    // Everything is ready: only now is the directory changed.
    if (use == RUN_REPLACE && (rc = remove_run_files(o->out_dir, 1, 0))) goto done;
    if (use == RUN_CONTINUE && ((rc = trim_metrics(o->out_dir, t.epoch)) || (rc = remove_run_files(o->out_dir, 0, t.epoch))))
        goto done;
    if ((rc = write_config(o, t.model, t.split.n_train, t.split.n_dev))) goto done;
    if (o->out) {
        fprintf(o->out, "kernels: %s; %d BLAS threads\n", ts_blas_kernels(), ts_blas_threads());
        fprintf(o->out, "data: %s, %zu train / %zu dev pairs, vocabularies %d / %d\n", o->corpus ? o->corpus : "toy corpus",
                t.split.n_train, t.split.n_dev, cfg.src_vocab, cfg.tgt_vocab);
        fprintf(o->out, "model: %s attention, %s decoder%s, emb %d, hidden %d, %zu parameters; %s lr %g, batch %ld\n",
                ts_attn_name(cfg.attn), ts_decoder_name(cfg.decoder), cfg.bidirectional ? ", bidirectional" : "", cfg.emb,
                cfg.hidden, ts_params_size(&t.model->params), ts_optim_name(o->optim), t.optim.lr, o->batch);
        if (resume) fprintf(o->out, "resumed from %s at step %ld (epoch %ld, batch %ld)\n", o->resume, t.step, t.epoch + 1, t.position);
        fflush(o->out);
    }
    t.started = now();
    int stop = (o->steps > 0 && t.step >= o->steps) || t.epoch >= max_epochs;
    while (!stop) {
        // Replay this epoch's batch order from its starting RNG state.
        memcpy(gsl_rng_state(t.shuffle_rng), t.epoch_start_state, gsl_rng_size(t.shuffle_rng));
        ts_batcher_epoch(t.batcher, t.shuffle_rng);
        size_t total = ts_batcher_count(t.batcher);
        t.step_seconds = 0;
        for (size_t i = (size_t)t.position; i < total && !stop; i++) {
            if ((stop = stop_requested(o))) break;  // a step boundary: last.ckpt resumes here
            if ((rc = train_step(&t, ts_batcher_get(t.batcher, i)))) goto done;
            show_progress(&t, total, 0);
            if (o->steps > 0 && t.step >= o->steps && (size_t)t.position < total) stop = 1;
        }
        if (stop_requested(o)) break;  // a step boundary too, before the epoch's evaluation
        if ((size_t)t.position == total) {
            show_progress(&t, total, 1);
            if ((rc = end_epoch(&t, &stop))) goto done;
            if (o->steps > 0 && t.step >= o->steps) stop = 1;
            if (t.epoch >= max_epochs) stop = 1;
        } else if (o->log && isatty(fileno(o->log))) {
            fputc('\n', o->log);
        }
    }
    report->stopped = stop_requested(o);  // read once: a signal from here on waits for the end
    if (o->log && report->stopped && isatty(fileno(o->log))) fputc('\n', o->log);
    if ((rc = save_checkpoint(&t, "last.ckpt", 1))) goto done;
    report->epoch = t.epoch;
    report->position = t.position;
    report->epoch_batches = (long)ts_batcher_count(t.batcher);
    if (!report->stopped && (rc = finish_run(&t))) goto done;
    report->steps = t.step;
    report->skipped = t.skipped;
    report->last_loss = t.last_loss;
    report->best_dev_loss = t.best_dev;
    // After the warm-up if the run went past it, else over every step it made.
    report->tokens_per_s = t.measured_seconds > 0 ? t.measured_tokens / t.measured_seconds
                           : t.run_seconds > 0    ? t.run_tokens / t.run_seconds
                                                  : 0;
    if (o->out && !report->stopped) {
        fprintf(o->out, "train: tokens_per_s=%.1f steps=%ld loss=%.4f\n", report->tokens_per_s, t.step, t.last_loss);
        fflush(o->out);
    }
done:
    ts_ckpt_free(resume);
    trainer_free(&t);
    return rc;
}
