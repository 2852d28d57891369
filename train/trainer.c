// The training loop. One step: batch -> loss -> backward -> clip -> update ->
// arena reset. After every epoch: evaluate on dev, keep the best model, decay
// the learning rate on a plateau, stop early without progress, save.
//
// Resume is exact: the checkpoint holds the parameters, the optimizer state,
// the step, the epoch and the position in it, the shuffling RNG's state at the
// epoch's start (the epoch's batch order is replayed from it), the teacher-
// forcing RNG's state, and every running sum a later checkpoint depends on.
//
// Data-parallel (docs/scaling.md): with N ranks (train/dist.h) and
// --accumulate K, every rank builds the same batches and cuts each into N*K
// shards of contiguous columns; rank r runs shards rK .. rK+K-1 one after
// another, each weighted by its share of the batch's target tokens, so the
// summed gradient is that of the whole batch's mean loss. One allreduce per
// step sums the gradients over the ranks, and every rank takes the same
// update. Rank 0 alone evaluates dev (and broadcasts the loss that every
// rank's decisions read), prints and writes out_dir.
//
// The file reads in a run's order: one step (this rank's forward and
// backward, the sum over ranks, the update), then evaluate and save
// (train/record.c writes what an evaluation records), then the setup and the
// loop over epochs and batches (ts_train).
#include "train/trainer.h"

#include "data/dataset.h"
#include "autograd/ops.h"
#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "ckpt/ckpt.h"
#include "infer/evaluate.h"
#include "infer/load.h"
#include "train/options.h"
#include "train/progress.h"
#include "train/record.h"
#include "train/rundir.h"
#include "train/shard.h"
#include "train/state.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_SKIPPED_IN_A_ROW = 10 };

// The step arena starts at this size and doubles whenever a step or an
// evaluation needs more (the work is then redone): its size follows the
// longest batches of the data, not a guess.
#define ARENA_START ((size_t)64 << 20)

typedef struct {
    const ts_train_opts *opts;
    ts_dataset data;                   // corpus, dev and test sets, vocabularies, batches
    ts_seq2seq *model;
    ts_optim optim;
    ts_ctx ctx;                        // on the step arena, which grows when a step needs more
    ts_train_state s;                  // everything a checkpoint saves besides the model and the optimizer
    unsigned char *tf_state;           // (gsl_rng_size) the teacher-forcing RNG before this step, to redo it
    long skipped_in_row;
    ts_progress progress;              // measurement only (never saved)
    double last_loss;
    // The last epoch's dev evaluation (rank 0) and the step of the last
    // last.ckpt: a run that ends where an epoch ended neither evaluates nor
    // saves the same model twice.
    ts_eval_result epoch_dev;
    ts_hypothesis *epoch_hyps;         // (n_dev) or NULL
    long epoch_dev_step, last_saved_step;
    // Data-parallel and --accumulate (shards > 1)
    ts_dist *dist;                     // the group; a group of one when the options give none
    ts_shards shards;                  // the parts of a batch (ranks x accumulate) and the ranks' sum
    int stop_agreed;                   // with ranks: a rank was asked to stop (every rank knows it at the same step)
    ts_record rec;                     // what the run directory records (rank 0), never saved
    long log_every;                    // steps between steps.csv rows
    long start_step;                   // the step this run started from
} trainer;

// Rank 0 prints and writes the run directory; the other ranks only compute.
static int leader(const trainer *t) { return t->dist->rank == 0; }

// Adds n >= 0 to a counter that checkpoints save, refusing to pass TS_COUNT_MAX
// (only a checkpoint that says it is nearly there can bring it close).
static int count_up(long *counter, long n, const char *name) {
    if (*counter > TS_COUNT_MAX - n)
        return ts_fail(TS_ERR_NUMERIC, "the %s counter (%ld) cannot grow by %ld past its limit %ld", name, *counter, n, TS_COUNT_MAX);
    *counter += n;
    return TS_OK;
}

// ---- stopping and the progress bar ---------------------------------------------------

static void show_progress(trainer *t, size_t total, int final) {
    double loss = t->s.epoch_tokens ? t->s.epoch_loss_sum / (double)t->s.epoch_tokens : NAN;
    ts_progress_show(&t->progress, t->opts->log, t->s.epoch, t->opts->steps > 0 ? 0 : t->opts->epochs, t->s.position,
                     total, t->s.step, loss, final);
}

// The value of the caller's stop flag (0: carry on).
static int stop_requested(const ts_train_opts *o) { return o->stop ? (int)*o->stop : 0; }

// Whether to stop at this step boundary: with ranks, what the last step's
// allreduce said (a signal reaches the ranks at different times, and they
// must stop at the same step).
static int should_stop(const trainer *t) { return t->dist->size > 1 ? t->stop_agreed : stop_requested(t->opts); }

// ---- one step: this rank's shards, the sum over ranks, the update --------------------

// What run_shards sums over this rank's shards (and the allreduce over ranks).
enum { SUM_LOSS, SUM_PLAIN, SUM_BAD, SUM_STOP, N_SUMS };

// Forward and backward of this rank's shards of b (all of b when it is one
// part), each shard's gradient weighted by its share of the batch's n_batch
// target tokens and added into the parameters'. sums[SUM_LOSS] and
// sums[SUM_PLAIN] get the optimised loss and its plain cross-entropy times
// tokens, sums[SUM_BAD] the shards whose loss was not finite (no backward
// for them). *plain is the one part's mean cross-entropy. On failure the
// gradients hold part of the work: the caller zeroes them.
static int run_shards(trainer *t, const ts_batch *b, long n_batch, double sums[N_SUMS], double *plain) {
    const ts_train_opts *o = t->opts;
    ts_regularizer reg = {o->dropout, o->label_smoothing};
    int K = (int)o->accumulate;
    memset(sums, 0, N_SUMS * sizeof *sums);
    *plain = NAN;
    for (int k = 0; k < K; k++) {
        ts_batch_view view = {.B = b->B, .S = b->S, .T = b->T, .src = b->src, .src_len = b->src_len,
                              .tgt_in = b->tgt_in, .tgt_out = b->tgt_out};
        gsl_rng *rng = t->s.tf_rng;
        if (t->shards.count > 1) {
            int shard = t->dist->rank * K + k, empty;
            int rc = ts_shard_view(&t->shards, b, shard, &view, &empty);
            if (rc) return rc;
            if (empty) continue;
            rng = ts_shard_rng(&t->shards, o->seed, t->s.step, shard);
        }
        ts_ctx_reset(&t->ctx);
        int n_tokens = 0;
        ts_tensor *loss = ts_seq2seq_loss(t->model, &t->ctx, &view, o->tf, rng, &reg, &n_tokens);
        if (!loss) return t->ctx.status;
        double value = ts_value(loss, 0);
        *plain = ts_cross_entropy_nll(loss);
        if (!isfinite(value)) {
            sums[SUM_BAD] += 1;
            continue;
        }
        // One part: the weight is 1 and the step is what it always was.
        double weight = t->shards.count > 1 ? (double)n_tokens / (double)n_batch : 1.0;
        int rc = ts_backward_weighted(&t->ctx, loss, weight);
        if (rc) return rc;
        sums[SUM_LOSS] += value * n_tokens;
        sums[SUM_PLAIN] += *plain * n_tokens;
    }
    return TS_OK;
}

// One optimizer step on batch b. A non-finite loss or gradient skips the
// update (the parameters stay finite) and counts; too many in a row fail.
// The gradients are zero on entry and on return: ts_optim_step zeroes them
// as it consumes them, and every path that does not reach it zeroes them here.
static int train_step(trainer *t, const ts_batch *b) {
    const ts_train_opts *o = t->opts;
    double t0 = ts_progress_now();
    long n_batch = 0;  // the loss's divisor, the same on every rank: no communication needed
    for (size_t i = 0; i < (size_t)b->T * b->B; i++) n_batch += b->tgt_out[i] != TS_PAD;
    double sums[N_SUMS], plain;
    // A full arena redoes the step in a larger one, with the teacher-forcing
    // draws it made given back: the step computes what it would have.
    size_t tf_bytes = gsl_rng_size(t->s.tf_rng);
    memcpy(t->tf_state, gsl_rng_state(t->s.tf_rng), tf_bytes);
    int rc;
    while ((rc = run_shards(t, b, n_batch, sums, &plain))) {
        ts_params_zero_grad(&t->model->params);
        if (rc != TS_ERR_ARENA || (rc = ts_record_grow_arena(&t->ctx, "a training step"))) return rc;
        memcpy(gsl_rng_state(t->s.tf_rng), t->tf_state, tf_bytes);
    }
    if (t->dist->size > 1) {
        // The stop flag travels with the sums: the ranks stop at one step.
        sums[SUM_STOP] = stop_requested(o) ? 1 : 0;
        if ((rc = ts_shards_sum_over_ranks(&t->shards, t->dist, &t->model->params, sums, N_SUMS))) {
            ts_params_zero_grad(&t->model->params);
            return rc;
        }
        t->stop_agreed = sums[SUM_STOP] > 0;
    }
    if (t->shards.count > 1) plain = sums[SUM_PLAIN] / (double)n_batch;
    int finite_loss = sums[SUM_BAD] == 0;
    double norm = finite_loss ? ts_grad_norm(&t->model->params, t->optim.threads) : NAN;
    if ((rc = count_up(&t->s.step, 1, "step"))) {
        ts_params_zero_grad(&t->model->params);
        return rc;
    }
    t->s.position++;  // at most the epoch's batches (restore_state checks a loaded one)
    if (!finite_loss || !isfinite(norm)) {
        ts_params_zero_grad(&t->model->params);
        t->s.skipped++;  // at most t->s.step
        if (o->log)
            fprintf(o->log, "\nstep %ld: %s is %s; update skipped (%ld in a row)\n", t->s.step,
                    finite_loss ? "the gradient norm" : "the loss", finite_loss ? (isnan(norm) ? "NaN" : "Inf") : "not finite",
                    t->skipped_in_row + 1);
        if (++t->skipped_in_row >= MAX_SKIPPED_IN_A_ROW)
            return ts_fail(TS_ERR_NUMERIC, "%d steps in a row had a non-finite loss or gradient (last: step %ld); stopping without saving them",
                           MAX_SKIPPED_IN_A_ROW, t->s.step);
        return TS_OK;
    }
    t->skipped_in_row = 0;
    // The warmup and the schedule scale the learning rate of this update only:
    // optim.lr (decayed on a plateau, checkpointed) stays the rate they scale.
    double lr = t->optim.lr;
    t->optim.lr = ts_record_lr(&t->rec, t->s.step);
    rc = ts_optim_step(&t->optim, &t->model->params, ts_clip_factor(norm, o->clip));
    t->optim.lr = lr;
    if (rc) return rc;
    ts_progress_step(&t->progress, ts_progress_now() - t0, (int)n_batch, t->s.step > o->warmup);
    if ((rc = count_up(&t->s.epoch_tokens, n_batch, "epoch token"))) return rc;
    t->s.epoch_loss_sum += sums[SUM_PLAIN];  // reported train loss: comparable with dev loss
    t->rec.window_loss += sums[SUM_PLAIN];
    t->rec.window_tokens += n_batch;
    t->last_loss = plain;
    return TS_OK;
}

// ---- evaluate and save ---------------------------------------------------------------

static int save_checkpoint(trainer *t, const char *name, int full) {
    if (!leader(t)) return TS_OK;
    return ts_train_state_save(&t->s, t->opts, &t->rec.trained, &t->optim, name, full);
}

// Where the run stands; at an epoch's end (epoch_end) the epoch is whole.
static ts_run_point run_point(const trainer *t, int epoch_end) {
    double total = (double)ts_batcher_count(t->data.batcher);
    return (ts_run_point){.epoch = (double)t->s.epoch + (epoch_end ? 0 : (double)t->s.position / total),
                          .step = t->s.step, .epoch_end = epoch_end};
}

// The mean training loss of the epoch so far (NaN before its first step).
static double epoch_train_loss(const trainer *t) {
    return t->s.epoch_tokens ? t->s.epoch_loss_sum / (double)t->s.epoch_tokens : NAN;
}

// A steps.csv row for the steps since the last one (rank 0).
static int log_steps(trainer *t) {
    if (!leader(t)) return TS_OK;
    ts_run_point at = run_point(t, 0);
    if ((size_t)t->s.position == ts_batcher_count(t->data.batcher)) at.epoch = (double)t->s.epoch + 1;  // exact, not e + total / total
    return ts_record_steps(&t->rec, &at);
}

// --eval-every: dev evaluated inside an epoch and recorded (rank 0 alone;
// nothing any rank decides reads it).
static int evaluate_between(trainer *t) {
    if (!leader(t)) return TS_OK;
    ts_run_point at = run_point(t, 0);
    return ts_record_between(&t->rec, &at, epoch_train_loss(t));
}

// After an epoch: evaluate, keep the best, decay on a plateau, record, save.
// Sets *stop when early stopping says so.
static int end_epoch(trainer *t, int *stop) {
    const ts_train_opts *o = t->opts;
    ts_eval_result res = {0};
    ts_hypothesis *hyps = NULL;
    // Rank 0 evaluates; every rank's decisions below read its dev loss.
    int rc = leader(t) ? ts_record_dev(&t->rec, 1, &res, &hyps) : TS_OK;
    if (!rc) rc = ts_dist_broadcast(t->dist, &res.loss, 1);
    if (rc) {
        ts_record_free_hyps(hyps, t->data.n_dev);
        return rc;
    }
    double train_loss = epoch_train_loss(t);
    t->s.history_train[t->s.epoch] = train_loss;
    t->s.history_dev[t->s.epoch] = res.loss;
    t->s.epoch++;  // below max_epochs <= TS_MAX_EPOCHS: the loop stops there
    t->s.position = 0;
    t->s.epoch_loss_sum = 0;
    t->s.epoch_tokens = 0;
    // best.ckpt follows --best; the schedule and early stopping, dev loss.
    int best = ts_train_state_is_best(&t->s, o->best, res.loss, res.bleu);
    if (best) {
        t->s.best_epoch = t->s.epoch;
        t->s.best_bleu = res.bleu;
    }
    if (res.loss < t->s.best_dev) {
        t->s.best_dev = res.loss;
        t->s.stale = 0;
    } else {
        t->s.stale++;  // at most patience: the run stops there
        t->optim.lr *= o->lr_decay;
    }
    *stop = t->s.stale >= o->patience;
    // The next epoch starts here, so a checkpoint saved now resumes into it.
    memcpy(t->s.epoch_start_state, gsl_rng_state(t->s.shuffle_rng), gsl_rng_size(t->s.shuffle_rng));
    if (!leader(t)) return TS_OK;
    double elapsed = ts_record_elapsed(&t->rec);
    ts_progress_epoch(&t->progress, o->out, t->s.epoch, train_loss, &res, ts_record_lr(&t->rec, t->s.step + 1), elapsed, best);
    if (best && (rc = save_checkpoint(t, "best.ckpt", 0))) goto done;
    if ((rc = save_checkpoint(t, "last.ckpt", 1))) goto done;
    t->last_saved_step = t->s.step;
    if (o->keep > 0 && (rc = ts_record_keep_epoch(&t->rec, &t->s, &t->optim))) goto done;
    ts_run_point at = run_point(t, 1);
    rc = ts_record_evaluation(&t->rec, &at, train_loss, &res, hyps);
done:
    ts_record_free_hyps(t->epoch_hyps, t->data.n_dev);  // kept for finish_run
    t->epoch_dev = res;
    t->epoch_hyps = hyps;
    t->epoch_dev_step = t->s.step;
    return rc;
}


// The end of a run: the dev set evaluated with the final model (a failure
// fails the run), best.ckpt written if no epoch has ended yet (so every
// finished run has one), then the examples and the summary.
static int finish_run(trainer *t) {
    ts_eval_result res;
    ts_hypothesis *hyps = NULL;
    int rc = TS_OK;
    if (t->epoch_hyps && t->epoch_dev_step == t->s.step) {  // the model the last epoch's evaluation saw
        res = t->epoch_dev;
        hyps = t->epoch_hyps;
        t->epoch_hyps = NULL;
    } else if ((rc = ts_record_dev(&t->rec, 1, &res, &hyps))) {
        return rc;
    } else if (t->s.step > t->start_step && t->rec.recorded_step != t->s.step) {
        // A run that stopped inside an epoch (--steps) records its final
        // model too: every run that trained ends with its rows and figures.
        ts_run_point at = run_point(t, 0);
        if ((rc = ts_record_evaluation(&t->rec, &at, epoch_train_loss(t), &res, hyps))) {
            ts_record_free_hyps(hyps, t->data.n_dev);
            return rc;
        }
    }
    // The saved state is left as it is (best_dev stays unset), so a run
    // resumed from here computes what an uninterrupted one does.
    int best_is_last = t->s.epoch == 0 && isinf(t->s.best_dev);
    if (best_is_last && (rc = save_checkpoint(t, "best.ckpt", 0))) {
        ts_record_free_hyps(hyps, t->data.n_dev);
        return rc;
    }
    return ts_record_final(&t->rec, &t->s, &res, hyps, best_is_last);
}

// ---- setup -------------------------------------------------------------------------


// The subword models of checkpoint ck (read from --resume PATH) into
// sw[2] (source, target), naming the file and the blob when one is missing
// or damaged.
static int stored_subwords(const ts_ckpt *ck, const char *path, ts_subword *sw[2]) {
    static const char *const blobs[2] = {TS_CKPT_SUBWORD_SOURCE, TS_CKPT_SUBWORD_TARGET};
    for (int k = 0; k < 2; k++) {
        const void *bytes;
        size_t n;
        int rc = ts_ckpt_get_blob(ck, blobs[k], &bytes, &n);
        if (!rc) rc = ts_subword_load(bytes, n, &sw[k]);
        if (rc) return ts_fail(rc, "--resume %s: blob %s: %s", path, blobs[k], ts_last_error());
    }
    return TS_OK;
}

// The run's data. Resuming a subword run reads its pieces from the
// checkpoint instead of learning them again: the model's ids mean those
// pieces, whatever the training file holds now (docs/data.md).
static int load_data(trainer *t, const ts_ckpt *resume) {
    const ts_train_opts *o = t->opts;
    ts_subword *stored[2] = {NULL, NULL};
    int rc = resume && o->data.subword ? stored_subwords(resume, o->resume, stored) : TS_OK;
    ts_dataset_use use = {.seed = o->seed, .batch = o->batch, .stored_src_sw = stored[0], .stored_tgt_sw = stored[1],
                          .log = o->log};
    if (!rc) rc = ts_dataset_load(&o->data, &use, &t->data);
    ts_subword_free(stored[0]);
    ts_subword_free(stored[1]);
    return rc;
}

static void trainer_free(trainer *t) {
    ts_record_free_hyps(t->epoch_hyps, t->data.n_dev);
    ts_record_free(&t->rec);
    ts_dataset_free(&t->data);
    ts_seq2seq_free(t->model);
    ts_optim_free(&t->optim);
    ts_arena_free(t->ctx.arena);
    ts_train_state_free(&t->s);
    free(t->tf_state);
    ts_shards_free(&t->shards);
}

// The model this run trains, *cfg its configuration completed from the data
// and the flags: the checkpoint's when resuming (checked to be the one these
// data and flags build), else a new one initialised from --seed. A model that
// cannot be allocated leaves t->model NULL with TS_OK (the caller says so).
static int build_model(trainer *t, const ts_ckpt *resume, long max_epochs, ts_model_config *cfg) {
    const ts_train_opts *o = t->opts;
    *cfg = o->model;
    int rc;
    ts_model_config_default_sizes(cfg);
    cfg->src_vocab = (int)ts_vocab_size(t->data.src_vocab);
    cfg->tgt_vocab = (int)ts_vocab_size(t->data.tgt_vocab);
    if ((rc = ts_model_config_check_as(cfg, 1)) ||
        (rc = ts_train_state_check_size(o, cfg, t->data.src_vocab, t->data.tgt_vocab, max_epochs)))
        return rc;
    if (resume) return ts_train_state_resume_model(resume, o->resume, t->data.src_vocab, t->data.tgt_vocab, cfg, &t->model);
    gsl_rng *init_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!init_rng) return ts_fail(TS_ERR_NOMEM, "rng");
    gsl_rng_set(init_rng, (unsigned long)o->seed);
    t->model = ts_seq2seq_new(cfg, init_rng);
    gsl_rng_free(init_rng);
    return TS_OK;
}

// ---- the same run on every rank ------------------------------------------------------

int ts_train(const ts_train_opts *o, ts_train_report *report) {
    ts_dist alone = {.rank = 0, .size = 1, .local_size = 1};
    trainer t = {.opts = o, .dist = o->dist ? o->dist : &alone, .epoch_dev_step = -1, .last_saved_step = -1};
    memset(report, 0, sizeof *report);
    ts_gsl_quiet();
    // The ranks compare their flags first: every check below then fails on
    // every rank alike.
    int rc = ts_train_options_check_ranks(o, t.dist);
    if (rc) return rc;
    int setup_agreed = 0;
    ts_ckpt *resume = NULL;
    if ((rc = ts_train_options_check_parts(o, t.dist->size))) goto done;
    // The checkpoint to resume from is read once, first: a file that cannot
    // be read fails before any work or any change to --out.
    if (o->resume && (rc = ts_train_state_load(o->resume, &resume))) goto done;
    // A resumed run must ask for what the saved run did, or it would not
    // continue it exactly: every option that shapes the computation (the
    // data's too, so a flag is named before the data it changes) is compared.
    if (resume && (rc = ts_train_options_compare(resume, o))) goto done;
    // Set even when it is OpenBLAS's own count: that turns on ts_gemm's
    // one-thread path for small products. Ranks on one machine share its
    // cores unless the user said otherwise.
    int threads = o->threads > 0 ? (int)o->threads : ts_blas_threads();
    if (!o->threads && t.dist->local_size > 1 && !getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS"))
        threads = threads / t.dist->local_size > 1 ? threads / t.dist->local_size : 1;
    ts_blas_set_threads(threads);
    ts_rundir_use use = TS_RUN_NEW;
    if (leader(&t)) {
        rc = ts_make_dirs(o->out_dir);
        if (!rc) rc = ts_rundir_check(o, &use);
    }
    if (!rc) rc = load_data(&t, resume);
    if (rc) goto done;
    long max_epochs = o->steps > 0 ? TS_MAX_EPOCHS : o->epochs;
    ts_model_config cfg;
    if ((rc = build_model(&t, resume, max_epochs, &cfg))) goto done;
    t.ctx.arena = ts_arena_new(o->arena_start ? o->arena_start : ARENA_START);
    if (!t.model || !t.ctx.arena) {
        // The configuration was checked above: what failed is memory.
        rc = ts_fail(TS_ERR_NOMEM, "out of memory: cannot allocate the %s", !t.model ? "model" : "step arena");
        goto done;
    }
    if ((rc = ts_train_state_init(&t.s, o->seed, max_epochs))) goto done;
    t.s.lr_horizon = o->steps > 0 ? o->steps : o->epochs * (long)ts_batcher_count(t.data.batcher);
    if (!(t.tf_state = malloc(gsl_rng_size(t.s.tf_rng)))) {
        rc = ts_fail(TS_ERR_NOMEM, "rng state");
        goto done;
    }
    if ((rc = ts_optim_init(&t.optim, &t.model->params, o->optim, o->lr))) goto done;
    if ((rc = ts_shards_init(&t.shards, t.dist->size, o->accumulate, ts_params_size(&t.model->params), N_SUMS))) goto done;
    ts_ctx_init(&t.ctx, t.ctx.arena);
    t.rec = (ts_record){.opts = o, .model = t.model, .data = &t.data, .ctx = &t.ctx, .optim = &t.optim,
                        .progress = &t.progress, .recorded_step = -1, .lr_horizon = t.s.lr_horizon,
                        .trained = {.model = t.model, .src_vocab = t.data.src_vocab, .tgt_vocab = t.data.tgt_vocab,
                                    .src_sw = t.data.src_sw, .tgt_sw = t.data.tgt_sw, .max_len = (int)o->data.max_len}};
    if ((rc = ts_record_init_heads(&t.rec))) goto done;
    ts_params_zero_grad(&t.model->params);  // train_step's invariant
    t.optim.threads = threads > 1 ? 2 : 1;  // the memory-bound passes gain little beyond two
    if (resume && (rc = ts_train_state_restore(&t.s, &t.optim, &t.model->params, resume, o,
                                               (long)ts_batcher_count(t.data.batcher), max_epochs)))
        goto done;
    t.start_step = t.s.step;
    t.log_every = ts_train_log_every(o, ts_batcher_count(t.data.batcher));
    // Everything is ready: only now is the directory changed.
    if (leader(&t) && (rc = ts_rundir_prepare(o->out_dir, use, t.s.epoch, t.s.step))) goto done;
    if (leader(&t) && use == TS_RUN_CONTINUE && (rc = ts_rundir_elapsed(o->out_dir, &t.rec.elapsed_before))) goto done;
    if (leader(&t) && (rc = ts_rundir_write_config(o, t.model, t.data.split.n_train, t.data.n_dev, t.dist->size))) goto done;
    if (leader(&t) && !t.data.dev_file && (rc = ts_rundir_write_dev(o->out_dir, t.data.words ? t.data.words : t.data.dev, t.data.dev_rows, t.data.n_dev)))
        goto done;
    setup_agreed = 1;
    if ((rc = ts_dist_agree(t.dist, TS_OK))) goto done;
    if (o->out) {
        ts_progress_start st = {.opts = o, .model = &cfg, .parameters = ts_params_size(&t.model->params),
                                .lr = t.optim.lr, .n_train = t.data.split.n_train, .n_dev = t.data.n_dev,
                                .ranks = t.dist->size, .parts = t.shards.count, .resumed = resume != NULL,
                                .step = t.s.step, .epoch = t.s.epoch, .position = t.s.position,
                                .batches = (long)ts_batcher_count(t.data.batcher)};
        ts_progress_banner(o->out, &st);
    }
    t.progress.started = ts_progress_now();
    t.progress.first_step = t.s.step;
    t.progress.last_step = o->steps > 0 ? o->steps : max_epochs * (long)ts_batcher_count(t.data.batcher);
    int stop = (o->steps > 0 && t.s.step >= o->steps) || t.s.epoch >= max_epochs, interrupted = 0;
    while (!stop) {
        // Replay this epoch's batch order from its starting RNG state.
        memcpy(gsl_rng_state(t.s.shuffle_rng), t.s.epoch_start_state, gsl_rng_size(t.s.shuffle_rng));
        ts_batcher_epoch(t.data.batcher, t.s.shuffle_rng);
        size_t total = ts_batcher_count(t.data.batcher);
        t.progress.step_seconds = 0;
        for (size_t i = (size_t)t.s.position; i < total && !stop; i++) {
            if ((stop = interrupted = should_stop(&t))) break;  // a step boundary: last.ckpt resumes here
            if ((rc = train_step(&t, ts_batcher_get(t.data.batcher, i)))) goto done;
            if (o->after_step) o->after_step(t.s.step, t.dist->rank);
            show_progress(&t, total, 0);
            if ((t.s.step % t.log_every == 0 || (size_t)t.s.position == total) && (rc = log_steps(&t))) goto done;
            if (o->eval_every > 0 && t.s.step % o->eval_every == 0 && (size_t)t.s.position < total &&
                (rc = evaluate_between(&t)))
                goto done;
            if (o->steps > 0 && t.s.step >= o->steps && (size_t)t.s.position < total) stop = 1;
        }
        if (!stop && (interrupted = should_stop(&t))) break;  // a step boundary too, before the epoch's evaluation
        if ((size_t)t.s.position == total) {
            show_progress(&t, total, 1);
            if ((rc = end_epoch(&t, &stop))) goto done;
            if (o->steps > 0 && t.s.step >= o->steps) stop = 1;
            if (t.s.epoch >= max_epochs) stop = 1;
        } else if (o->log && isatty(fileno(o->log))) {
            fputc('\n', o->log);
        }
    }
    // Read once: a signal from here on waits for the end. A rank stopped by
    // another's signal says SIGTERM.
    report->stopped = t.dist->size > 1 ? (t.stop_agreed ? (stop_requested(o) ? stop_requested(o) : SIGTERM) : 0)
                                       : stop_requested(o);
    // A signal during the last evaluation finds the training done: the final
    // evaluations are skipped, and nothing is left to continue.
    report->finished = !interrupted;
    if (o->log && report->stopped && isatty(fileno(o->log))) fputc('\n', o->log);
    // Where the run stops, its last steps' row and the curve that shows it.
    if (t.rec.window_tokens && leader(&t) && ((rc = log_steps(&t)) || (rc = ts_rundir_write_loss(o->out_dir)))) goto done;
    if (t.last_saved_step != t.s.step && (rc = save_checkpoint(&t, "last.ckpt", 1))) goto done;
    report->epoch = t.s.epoch;
    report->position = t.s.position;
    report->epoch_batches = (long)ts_batcher_count(t.data.batcher);
    if (!report->stopped && leader(&t) && (rc = finish_run(&t))) goto done;
    report->steps = t.s.step;
    report->skipped = t.s.skipped;
    report->last_loss = t.last_loss;
    report->best_dev_loss = t.s.best_dev;
    // After the warm-up if the run went past it, else over every step it made.
    report->tokens_per_s = t.progress.measured_seconds > 0 ? ts_progress_rate(&t.progress)
                           : t.progress.run_seconds > 0    ? t.progress.run_tokens / t.progress.run_seconds
                                                  : 0;
    if (o->out && !report->stopped) ts_progress_summary(o->out, report, t.dist, ts_params_size(&t.model->params));
done:
    if (!setup_agreed) rc = ts_dist_agree(t.dist, rc);
    ts_ckpt_free(resume);
    trainer_free(&t);
    return rc;
}
