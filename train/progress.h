// Progress of a training run: the live line on a terminal (else a line every
// few seconds) on the log stream, and the summary line of each epoch on the
// output stream. Timing is measured here and never saved in checkpoints.
// Every line fits the terminal it goes to: the live line drops fields as it
// narrows, the others wrap (viz/render.h); to a file or pipe they are as
// they always were, one line each.
#ifndef TS_TRAIN_PROGRESS_H
#define TS_TRAIN_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "data/corpus.h"
#include "data/vocab.h"
#include "infer/evaluate.h"
#include "models/config.h"
#include "train/dist.h"
#include "train/options.h"
#include "train/runlog.h"  // ts_run_point
#include "train/state.h"   // ts_train_best

typedef struct {
    double started, last_log;                  // seconds (ts_progress_now)
    double step_seconds;                       // this epoch's steps in this run
    double measured_tokens, measured_seconds;  // steps after the warm-up
    double run_tokens, run_seconds;            // every step of this run, warm-up included
    long last_step;                            // the step the run ends after (its epochs' or --steps')
    long first_step;                           // the step this run started from (a resumed run's is not 0)
    int drawn;                                 // the live line is on the terminal, its line not ended
} ts_progress;

// A monotonic clock, in seconds.
double ts_progress_now(void);

// Target tokens a second after the warm-up (0 before any step is measured).
double ts_progress_rate(const ts_progress *p);

// Counts one step of `seconds` over `tokens` target tokens (measured after the
// warm-up when `measured`).
void ts_progress_step(ts_progress *p, double seconds, int tokens, int measured);

// Where epoch `epoch` (0-based) of `epochs` stands: `position` of `total`
// batches done, `loss` its mean so far, the speed, the time this run has
// taken, the time left to p->last_step (from the wall time per step of this
// run so far, evaluations included; `step` the steps done) and to the
// epoch's end. On a terminal the live line, redrawn at most every 0.1 s and
// fitted to its width (the epoch, batches, loss, time left and elapsed stay
// longest, then the speed, the bar, the epoch's time left); `final` ends its
// line. Elsewhere a line every 5 s, and at `final`. Nothing when log is NULL.
void ts_progress_show(ts_progress *p, FILE *log, long epoch, long epochs, long position, size_t total, long step,
                      double loss, int final);

// The live line ended where it stands (a run that stops inside an epoch), or
// erased (before a line on the output stream): nothing when none is drawn.
void ts_progress_leave(ts_progress *p, FILE *log);
void ts_progress_erase(ts_progress *p, FILE *log);

// "  heads: best-aligned layer L head H, aer A; each layer's head mean M0 M1 .."
// on out, from a Transformer's AER table (infer/head_table.h); with guided
// alignment on head `guided_head` of layer `guided_layer` (-1: none), the
// best-aligned head says "(guided)" when it is that head, else "guided
// layer L head H, aer A" follows it.
void ts_progress_heads(FILE *out, const ts_head_table *head_aer, int guided_layer, int guided_head);

// "epoch N: train loss ..., dev loss ..., ... (best)" on out; `lr` the rate
// the epoch's last update ran at, `elapsed` seconds since the run started.
void ts_progress_epoch(const ts_progress *p, FILE *out, long epoch, double train_loss, const ts_eval_result *dev,
                       double lr, double elapsed, int improved);

// --eval-every's line, "step S (epoch E): dev loss ..., ... (best)", on out
// (nothing when NULL); `best`: the evaluation chose best.ckpt.
void ts_progress_between(FILE *out, const ts_run_point *at, const ts_eval_result *dev, int best);

// What a run says before its first step.
typedef struct {
    const ts_train_opts *opts;
    const ts_model_config *model;
    size_t parameters;
    double lr;               // the optimizer's (a resumed run's may be decayed)
    size_t n_train, n_dev;
    int ranks, parts;        // the data-parallel group and the parts of a batch
    int resumed;             // then where: step, epoch (0-based), position in it
    long step, epoch, position;
    long batches;            // batches in an epoch
} ts_progress_start;

// The lines before the first step on out: data-parallel parts (when a batch
// is cut), kernels (with --verbose, or with a warning when they are below
// the CPU's), data, model, how long it runs (epochs or steps, batches
// an epoch, what may stop it sooner), regularisers and final search, resume point.
void ts_progress_banner(FILE *out, const ts_progress_start *st);

// The first n dev pairs (rows of dev, in the units of `trained`) with their
// outputs hyps[0..n): source, reference and output lines in words (a subword
// model's pieces detokenised), a blank line after each.
void ts_progress_examples(FILE *out, const ts_corpus *dev, const size_t *rows, size_t n, const ts_translator *trained,
                          const ts_hypothesis *hyps);

// The final model's dev line for one search (beam 1: greedy, with the loss
// and where last.ckpt is).
void ts_progress_dev(FILE *out, int beam, const ts_eval_result *res, const char *out_dir);

// After the dev lines: a note when BLEU-4 cannot score this dev set, and
// where the best model is and what chose it (`by`): the epoch (of `batches`
// steps) or the step of the evaluation `best` (its dev BLEU and loss; the
// last model when its step is last_step); nothing when there is none.
void ts_progress_best(FILE *out, const ts_eval_result *dev, ts_best_by by, const ts_train_best *best, long batches,
                      long last_step, const char *out_dir);

// --test's line for one search (beam 1: greedy, with the loss) of the final
// model on test_file.
void ts_progress_test(FILE *out, int beam, const ts_eval_result *res, const char *test_file);

// tokens/s after the warm-up if the run went past it, else over every step
// it made (0 when it made none).
double ts_progress_run_rate(const ts_progress *p);

// What a run did (ts_train fills it; the summary line prints it).
typedef struct {
    long steps;                // optimizer steps in all
    long skipped;              // steps skipped for a non-finite loss or gradient
    double last_loss;          // loss of the last step
    double tokens_per_s;       // non-pad target tokens per second of step time after warm-up (all steps if none
                               // came after it; 0 when this run made no step)
    double best_dev_loss;
    double dev_bleu, dev_exact;
    int stopped;               // non-zero: stopped early by *opts->stop (its value)
    int finished;              // the training itself ended (epochs, --steps, patience): with `stopped`, the
                               // signal came during the last evaluation, and only the final evaluations were skipped
    long epoch, position;      // where last.ckpt stands: epochs done, batches done of the next
    long epoch_batches;        // batches in an epoch
} ts_train_report;


// The run's closing lines: the allreduce's cost (with ranks) and the
// "train:" summary of the report (its steps, speed and last batch loss).
void ts_progress_summary(FILE *out, const ts_train_report *report, const ts_dist *dist, size_t parameters);

#endif
