// The training loop. One step: batch -> loss -> backward -> clip -> update ->
// arena reset. After every epoch: evaluate on dev, keep the best model, decay
// the learning rate on a plateau, stop early without progress, save.
//
// Resume is exact: the checkpoint holds the parameters, the optimizer state,
// the step, the epoch and the position in it, the shuffling RNG's state at the
// epoch's start (the epoch's batch order is replayed from it), the teacher-
// forcing RNG's state, and every running sum a later checkpoint depends on.
//
// One step (train/step.c) runs this rank's shards of a batch, sums the
// gradients over the ranks (docs/scaling.md) and updates; rank 0 alone
// evaluates dev (and broadcasts the loss every rank's decisions read),
// prints and writes out_dir (train/record.c writes what an evaluation
// records). The file reads in a run's order: a step's counters, evaluate and
// save, the setup, the epochs, the end (ts_train).
#include "train/trainer.h"

#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "tensor/parallel.h"
#include "tensor/threads.h"
#include "train/guided.h"
#include "train/record.h"
#include "train/rundir.h"
#include "train/runlock.h"
#include "train/runlog.h"
#include "train/shard.h"
#include "train/state.h"
#include "train/step.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The step arena starts at this size and chains more blocks whenever a step
// or an evaluation needs more (tensor/arena.h): its size follows the longest
// batches of the data, not a guess.
#define ARENA_START ((size_t)64 << 20)

typedef struct {
    const ts_train_opts *opts;
    ts_dataset data;                   // corpus, dev and test sets, vocabularies, batches
    ts_seq2seq *model;
    ts_optim optim;
    ts_ctx ctx;                        // on the step arena, which grows when a step needs more
    ts_train_state s;                  // everything a checkpoint saves besides the model and the optimizer
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
    ts_stepper step;                   // what one optimizer step works with (train/step.h)
    ts_translator resumed;             // --resume's model, vocabularies and subword models, read once (model
                                       // NULL without --resume; the model moves to `model`)
    long max_epochs;                   // --epochs, or TS_MAX_EPOCHS for a run by --steps
    ts_record rec;                     // what the run directory records (rank 0), never saved
    long log_every;                    // steps between steps.csv rows
    long start_step;                   // the step this run started from
    ts_runlock lock;                   // --out's lock (the leader's), held to the end: one run a directory
} trainer;

// Rank 0 prints and writes the run directory; the other ranks only compute.
static int leader(const trainer *t) { return t->dist->rank == 0; }

// ---- stopping and the progress bar ---------------------------------------------------

static void show_progress(trainer *t, size_t total, int final) {
    double loss = t->s.epoch_tokens ? t->s.epoch_loss_sum / (double)t->s.epoch_tokens : NAN;
    ts_progress_show(&t->progress, t->opts->log, t->s.epoch, t->opts->steps > 0 ? 0 : t->opts->epochs, t->s.position,
                     total, t->s.step, loss, final);
}

// Whether to stop at this step boundary: with ranks, what the last step's
// allreduce said (a signal reaches the ranks at different times, and they
// must stop at the same step).
static int should_stop(const trainer *t) { return t->dist->size > 1 ? t->step.stop_agreed : ts_stop_requested(t->opts); }

// ---- one step: this rank's shards, the sum over ranks, the update --------------------

// One optimizer step on batch b (train/step.c), then the run's counters:
// the step, the position in the epoch, the epoch's and the window's sums.
static int train_step(trainer *t, const ts_batch *b) {
    const ts_train_opts *o = t->opts;
    double t0 = ts_progress_now();
    ts_step_result r;
    // The warmup and the schedule give this update's rate (train/schedule.h).
    int rc = ts_step_run(&t->step, b, t->s.tf_rng, t->s.step + 1, ts_record_lr(&t->rec, t->s.step + 1), &r);
    if (rc) return rc;
    if ((rc = ts_train_state_count_up(&t->s.step, 1, "step"))) return rc;
    t->s.position++;  // at most the epoch's batches (restore_state checks a loaded one)
    if (r.skipped) {
        t->s.skipped++;  // at most t->s.step
        return TS_OK;
    }
    ts_progress_step(&t->progress, ts_progress_now() - t0, (int)r.tokens, t->s.step > o->warmup);
    if ((rc = ts_train_state_count_up(&t->s.epoch_tokens, r.tokens, "epoch token"))) return rc;
    t->s.epoch_loss_sum += r.plain_sum;  // reported train loss: comparable with dev loss
    t->rec.window_loss += r.plain_sum;
    t->rec.window_tokens += r.tokens;
    t->last_loss = r.plain;
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

// --eval-every: dev evaluated inside an epoch, offered as best.ckpt's and
// recorded (rank 0 alone; nothing any rank computes reads it).
static int evaluate_between(trainer *t) {
    if (!leader(t)) return TS_OK;
    ts_eval_result res;
    ts_hypothesis *hyps = NULL;
    int rc = ts_record_dev(&t->rec, 1, &res, &hyps);
    if (rc) return rc;
    int best = ts_train_best_offer(&t->s.best, t->opts->best, t->s.step, &res);
    ts_run_point at = run_point(t, 0);
    ts_progress_erase(&t->progress, t->opts->log);  // the live line is drawn again after the next step
    ts_progress_between(t->opts->out, &at, &res, best);
    if (best) rc = save_checkpoint(t, "best.ckpt", 0);
    if (!rc) rc = ts_record_evaluation(&t->rec, &at, epoch_train_loss(t), &res, hyps);
    ts_record_free_hyps(hyps, t->data.n_dev);
    return rc;
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
    double ran_at = ts_record_lr(&t->rec, t->s.step);  // the epoch's last update's rate, before a decay below
    int best = ts_train_state_end_epoch(&t->s, o, train_loss, &res, &t->optim.lr, stop);
    if (!leader(t)) return TS_OK;
    double elapsed = ts_record_elapsed(&t->rec);
    ts_progress_epoch(&t->progress, o->out, t->s.epoch, train_loss, &res, ran_at, elapsed, best);
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
// fails the run) and, unless the last epoch's evaluation saw it, offered as
// best.ckpt's (so every finished run has one), then the examples and the summary.
static int finish_run(trainer *t) {
    ts_eval_result res;
    ts_hypothesis *hyps = NULL;
    int rc = TS_OK, offered = 0;
    if (t->epoch_hyps && t->epoch_dev_step == t->s.step) {  // the model the last epoch's evaluation saw
        res = t->epoch_dev;
        hyps = t->epoch_hyps;
        t->epoch_hyps = NULL;
        offered = 1;
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
    // The saved state is left as it is: a run that stopped by --steps inside
    // an epoch evaluates a model a longer run does not, and a run resumed
    // from last.ckpt computes what an uninterrupted one does.
    ts_train_best best = t->s.best;
    if (!offered && ts_train_best_offer(&best, t->opts->best, t->s.step, &res) &&
        (rc = save_checkpoint(t, "best.ckpt", 0))) {
        ts_record_free_hyps(hyps, t->data.n_dev);
        return rc;
    }
    return ts_record_final(&t->rec, &t->s, &res, hyps, &best);
}

// ---- setup -------------------------------------------------------------------------


// The run's data. Resuming a subword run takes its pieces from the
// checkpoint's models instead of learning them again: the model's ids mean
// those pieces, whatever the training file holds now (docs/data.md).
static int load_data(trainer *t) {
    const ts_train_opts *o = t->opts;
    int stored = t->resumed.model && o->data.subword;
    ts_dataset_use use = {.seed = o->seed, .batch = o->batch, .stored_src_sw = stored ? t->resumed.src_sw : NULL,
                          .stored_tgt_sw = stored ? t->resumed.tgt_sw : NULL, .log = o->log,
                          .gold = ts_guided_on(o) && strcmp(o->guided_alignment, TS_GUIDED_TOY) ? o->guided_alignment : NULL};
    return ts_dataset_load(&o->data, &use, &t->data);
}

static void trainer_free(trainer *t) {
    ts_runlock_release(&t->lock);
    ts_record_free_hyps(t->epoch_hyps, t->data.n_dev);
    ts_record_free(&t->rec);
    ts_dataset_free(&t->data);
    ts_seq2seq_free(t->model);
    ts_translator_free(&t->resumed);
    ts_optim_free(&t->optim);
    ts_arena_free(t->ctx.arena);
    ts_train_state_free(&t->s);
    ts_shards_free(&t->shards);
}

// The optimizer, the state, the step's and the record's parts around the
// model; with a checkpoint, the state and the optimizer's moments restored.
static int build_run(trainer *t, const ts_ckpt *resume) {
    const ts_train_opts *o = t->opts;
    long batches = (long)ts_batcher_count(t->data.batcher);
    int rc;
    t->ctx.arena = ts_arena_new(o->arena_start ? o->arena_start : ARENA_START);
    if (!t->model || !t->ctx.arena)  // the configuration was checked: what failed is memory
        return ts_fail(TS_ERR_NOMEM, "out of memory: cannot allocate the %s", !t->model ? "model" : "step arena");
    ts_ctx_init(&t->ctx, t->ctx.arena);
    if ((rc = ts_train_state_init(&t->s, o->seed, t->max_epochs))) return rc;
    t->s.lr_horizon = o->steps > 0 ? o->steps : o->epochs * batches;
    if ((rc = ts_optim_init(&t->optim, &t->model->params, o->optim, o->lr)) ||
        (rc = ts_shards_init(&t->shards, t->dist->size, o->accumulate, ts_params_size(&t->model->params), TS_STEP_SUMS)))
        return rc;
    // No count given: as many threads as the model's step keeps busy, now
    // that its size is known (ts_threads_for_training gave this machine's share).
    if (!o->threads && !ts_threads_from_environment())
        ts_threads_use(ts_threads_for_model(ts_params_size(&t->model->params), o->batch, ts_threads_asked()));
    t->optim.threads = ts_threads_asked();
    t->optim.weight_decay = o->weight_decay;  // read only by an optimizer that decays
    t->step = (ts_stepper){.opts = o, .model = t->model, .optim = &t->optim, .ctx = &t->ctx, .dist = t->dist,
                           .shards = &t->shards, .units = t->data.corpus,
                           .aligned = t->data.words ? t->data.words : t->data.corpus};
    t->rec = (ts_record){.opts = o, .model = t->model, .data = &t->data, .ctx = &t->ctx, .optim = &t->optim,
                         .progress = &t->progress, .recorded_step = -1, .lr_horizon = t->s.lr_horizon,
                         .trained = {.model = t->model, .src_vocab = t->data.src_vocab, .tgt_vocab = t->data.tgt_vocab,
                                     .src_sw = t->data.src_sw, .tgt_sw = t->data.tgt_sw, .max_len = (int)o->data.max_len,
                                     .normalisation = o->data.normalisation}};
    if ((rc = ts_record_init_heads(&t->rec))) return rc;
    ts_params_zero_grad(&t->model->params);  // the step's invariant
    if (resume && (rc = ts_train_state_restore(&t->s, &t->optim, &t->model->params, resume, o, batches, t->max_epochs)))
        return rc;
    t->start_step = t->s.step;
    t->log_every = ts_train_log_every(o, (size_t)batches);
    return TS_OK;
}

// Everything before the first step, each check before any change to --out:
// the checkpoint to resume from read once (its options compared with the
// run's, its model, vocabularies and subword models loaded once), the data,
// the model, the run's parts, then the run directory.
static int set_up(trainer *t, ts_ckpt **resume) {
    const ts_train_opts *o = t->opts;
    int rc = ts_train_options_check_parts(o, t->dist->size);
    if (!rc && o->resume) rc = ts_train_state_load(o->resume, resume);
    // A resumed run must ask for what the saved run did, or it would not
    // continue it exactly: every option that shapes the computation (the
    // data's too, so a flag is named before the data it changes) is compared.
    if (!rc && *resume) rc = ts_train_options_compare(*resume, o);
    if (!rc && *resume) rc = ts_train_state_resume_translator(*resume, o->resume, &t->resumed);
    if (rc) return rc;
    ts_threads_use(ts_threads_for_training(o->threads, t->dist->local_size));
    // The data before --out: a corpus or gold file that fails leaves it untouched.
    ts_rundir_use use = TS_RUN_NEW;
    if ((rc = load_data(t))) return rc;
    if (leader(t) && ((rc = ts_make_dirs(o->out_dir)) || (rc = ts_runlock_take(o->out_dir, &t->lock)) ||
                      (rc = ts_rundir_check(o, &use))))
        return rc;
    t->max_epochs = o->steps > 0 ? TS_MAX_EPOCHS : o->epochs;
    if ((rc = ts_train_model(o, &t->data, &t->resumed, t->max_epochs, &t->model)) || (rc = build_run(t, *resume)) ||
        !leader(t))
        return rc;
    // Everything is ready: only now is the directory changed.
    const ts_corpus *dev = t->data.words ? t->data.words : t->data.dev;
    if ((rc = ts_rundir_prepare(o->out_dir, use, t->s.epoch, t->s.step)) ||
        (use == TS_RUN_CONTINUE && (rc = ts_runlog_elapsed(o->out_dir, &t->rec.elapsed_before))) ||
        (rc = ts_rundir_write_config(o, t->model, t->data.split.n_train, t->data.n_dev, t->dist->size)))
        return rc;
    return t->data.dev_file ? TS_OK : ts_rundir_write_dev(o->out_dir, dev, t->data.dev_rows, t->data.n_dev);
}

// The opening lines, and the progress bar's start.
static void start(trainer *t) {
    const ts_train_opts *o = t->opts;
    long batches = (long)ts_batcher_count(t->data.batcher);
    if (o->out) {
        ts_progress_start st = {.opts = o, .model = &t->model->cfg, .parameters = ts_params_size(&t->model->params),
                                .lr = t->optim.lr, .n_train = t->data.split.n_train, .n_dev = t->data.n_dev,
                                .ranks = t->dist->size, .parts = t->shards.count, .resumed = o->resume != NULL,
                                .step = t->s.step, .epoch = t->s.epoch, .position = t->s.position, .batches = batches};
        ts_progress_banner(o->out, &st);
    }
    t->progress.started = ts_progress_now();
    t->progress.first_step = t->s.step;
    t->progress.last_step = o->steps > 0 ? o->steps : t->max_epochs * batches;
}

// The epochs and their batches, from where the state stands. *interrupted:
// stopped by a signal at a step boundary (not by the end of the training).
static int run_epochs(trainer *t, int *interrupted) {
    const ts_train_opts *o = t->opts;
    int rc, stop = (o->steps > 0 && t->s.step >= o->steps) || t->s.epoch >= t->max_epochs;
    *interrupted = 0;
    while (!stop) {
        // Replay this epoch's batch order from its starting RNG state.
        memcpy(gsl_rng_state(t->s.shuffle_rng), t->s.epoch_start_state, gsl_rng_size(t->s.shuffle_rng));
        ts_batcher_epoch(t->data.batcher, t->s.shuffle_rng);
        size_t total = ts_batcher_count(t->data.batcher);
        t->progress.step_seconds = 0;
        for (size_t i = (size_t)t->s.position; i < total && !stop; i++) {
            if ((stop = *interrupted = should_stop(t))) break;  // a step boundary: last.ckpt resumes here
            if ((rc = train_step(t, ts_batcher_get(t->data.batcher, i)))) return rc;
            if (o->after_step) o->after_step(t->s.step, t->dist->rank);
            show_progress(t, total, 0);
            if ((t->s.step % t->log_every == 0 || (size_t)t->s.position == total) && (rc = log_steps(t))) return rc;
            if (o->eval_every > 0 && t->s.step % o->eval_every == 0 && (size_t)t->s.position < total &&
                (rc = evaluate_between(t)))
                return rc;
            if (o->steps > 0 && t->s.step >= o->steps && (size_t)t->s.position < total) stop = 1;
        }
        if (!stop && (*interrupted = should_stop(t))) break;  // a step boundary too, before the epoch's evaluation
        if ((size_t)t->s.position == total) {
            show_progress(t, total, 1);
            if ((rc = end_epoch(t, &stop))) return rc;
            if (o->steps > 0 && t->s.step >= o->steps) stop = 1;
            if (t->s.epoch >= t->max_epochs) stop = 1;
        } else if (t->progress.drawn) {  // stopped inside the epoch: the live line where it stopped stays
            show_progress(t, total, 1);
        }
    }
    return TS_OK;
}

// Where the run stops: its last rows and curve, last.ckpt, and unless a
// signal stopped it, the final evaluations and the summary.
static int end_run(trainer *t, int interrupted, ts_train_report *report) {
    const ts_train_opts *o = t->opts;
    // Read once: a signal from here on waits for the end. A rank stopped by
    // another's signal says SIGTERM.
    int asked = ts_stop_requested(o), rc;
    report->stopped = t->dist->size > 1 ? (t->step.stop_agreed ? (asked ? asked : SIGTERM) : 0) : asked;
    // A signal during the last evaluation finds the training done: the final
    // evaluations are skipped, and nothing is left to continue.
    report->finished = !interrupted;
    if (report->stopped) ts_progress_leave(&t->progress, o->log);
    if (t->rec.window_tokens && leader(t) && ((rc = log_steps(t)) || (rc = ts_runlog_write_loss(o->out_dir)))) return rc;
    if (t->last_saved_step != t->s.step && (rc = save_checkpoint(t, "last.ckpt", 1))) return rc;
    report->epoch = t->s.epoch;
    report->position = t->s.position;
    report->epoch_batches = (long)ts_batcher_count(t->data.batcher);
    if (!report->stopped && leader(t) && (rc = finish_run(t))) return rc;
    report->steps = t->s.step;
    report->skipped = t->s.skipped;
    report->last_loss = t->last_loss;
    report->best_dev_loss = t->s.best_dev;
    report->tokens_per_s = ts_progress_run_rate(&t->progress);
    if (o->out && !report->stopped) {
        ts_progress_summary(o->out, report, t->dist, ts_params_size(&t->model->params));
        ts_guided_print_measure(o->out, o, &t->model->cfg);
    }
    return TS_OK;
}

// ---- the same run on every rank ------------------------------------------------------

int ts_train(const ts_train_opts *given, ts_train_report *report) {
    // The options with guided alignment's completed (off, or its head resolved):
    // what every check, file and step below reads.
    ts_train_opts resolved = *given;
    const ts_train_opts *o = &resolved;
    ts_dist alone = {.rank = 0, .size = 1, .local_size = 1};
    trainer t = {.opts = o, .dist = o->dist ? o->dist : &alone, .epoch_dev_step = -1, .last_saved_step = -1};
    memset(report, 0, sizeof *report);
    ts_gsl_quiet();
    if (ts_guided_resolve(&resolved)) return TS_ERR_ARG;
    // The ranks compare their flags first: every check below then fails on
    // every rank alike.
    int rc = ts_train_options_check_ranks(o, t.dist);
    if (rc) return rc;
    ts_ckpt *resume = NULL;
    // Every rank learns whether all are ready: none waits alone in a collective.
    rc = ts_dist_agree(t.dist, set_up(&t, &resume));
    int interrupted = 0;
    if (!rc) {
        start(&t);
        rc = run_epochs(&t, &interrupted);
    }
    if (!rc) rc = end_run(&t, interrupted, report);
    ts_ckpt_free(resume);
    trainer_free(&t);
    return rc;
}
