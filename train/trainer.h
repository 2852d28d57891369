// The training loop: data, model, optimizer, evaluation, checkpoints,
// progress. `tinyseq train` fills the options from its flags and calls
// ts_train(); everything it prints goes to the two streams in the options.
#ifndef TS_TRAINER_H
#define TS_TRAINER_H

#include <signal.h>
#include <stdio.h>

#include "data/dataset.h"
#include "models/seq2seq.h"
#include "train/schedule.h"
#include "train/dist.h"
#include "train/optim.h"

// --threads: at most this many BLAS threads (OpenBLAS's usual build limit,
// MAX_THREADS=64; more than the cores only slows a run down).
#define TS_MAX_THREADS 64
// --epochs: at most this many (also the limit of a run by --steps).
#define TS_MAX_EPOCHS 100000

// What chooses best.ckpt among the epochs' dev evaluations (--best): the
// BLEU of their greedy search (ties go to the lower dev loss), the number a
// user reads, or the dev loss. The plateau schedule and early stopping read
// the dev loss either way.
typedef enum { TS_BEST_BLEU, TS_BEST_LOSS, TS_BEST_COUNT } ts_best_by;

// "bleu", "loss"; NULL out of range.
const char *ts_best_name(ts_best_by by);
extern const ts_names ts_best_names;
// Sets *by from its name: TS_OK, or TS_ERR_ARG naming the choices.
int ts_best_parse(const char *text, ts_best_by *by);

typedef struct {
    ts_dataset_opts data;      // corpus, dev and test sets, vocabularies, subwords (data/dataset.h)
    // model: vocabulary sizes are filled from the data
    int preset;                // a named recipe of train/options.c's ts_train_presets (0: none); its flags fill
                               // what was not given, before --arch's defaults
    ts_model_config model;
    // optimisation
    ts_optim_kind optim;
    double lr;                 // default 3e-3
    double clip;               // global gradient-norm limit (default 5; 0: none)
    double tf;                 // teacher-forcing ratio (default 1)
    double dropout;            // dropout probability in [0, 1) (docs/models.md "Regularisation"; default 0)
    double label_smoothing;    // label smoothing in [0, 1) (PyTorch's; default 0.1); perplexity stays plain
    long batch;                // sentences per batch (default 32): the global batch, whatever the ranks
    long accumulate;           // K >= 1: each rank runs its share of a batch as K parts one after another
                               // (summing gradients, then one update): the same update with 1/K of the
                               // activation memory (default 1)
    long epochs;               // default 5
    long steps;                // stop after this many optimizer steps in all (0: run the epochs)
    double lr_decay;           // multiply the learning rate by this when dev loss stalls (default 0.5)
    long warmup_steps;         // the learning rate rises linearly over the first N steps: step k uses
                               // lr min(1, k / N) (0, the default: no warmup)
    ts_lr_schedule lr_schedule;  // what follows the warmup (train/schedule.h; default TS_LR_PLATEAU)
    long patience;             // stop after this many evaluations without a better dev loss (default 3)
    long seed;                 // initialisation, split, shuffling and teacher forcing (default 1)
    long threads;              // OpenBLAS threads, 1..TS_MAX_THREADS (0: OpenBLAS's own count)
    size_t arena_start;        // first size of the step arena in bytes (0: 64 MiB); it doubles as the work needs
    // output
    const char *out_dir;       // where checkpoints, metrics.csv, config.txt and figures go
    const char *resume;        // a last.ckpt / best.ckpt to continue from, or NULL
    int force;                 // out_dir may hold another run: delete its files (never anything else)
    ts_best_by best;           // what chooses best.ckpt (default TS_BEST_BLEU)
    long keep;                 // also keep the last `keep` epochs as epoch-<N>.ckpt (inference kind; 0: none)
    long warmup;               // steps excluded from tokens/s (default 3)
    long show;                 // dev examples printed at the end (default 4)
    long log_every;            // the training loss goes to steps.csv every N steps, at each epoch's end and where
                               // the run stops (0, the default: about 20 rows an epoch, a round N)
    long eval_every;           // also evaluate dev every N steps inside an epoch (0, the default: at each epoch's
                               // end only); a record (metrics.csv, attention.jsonl, figures), never a decision
                               // (the learning rate, early stopping and best.ckpt follow the epochs' evaluations)
    long beam;                 // the final dev (and --test) evaluation also decodes with this beam
                               // width (default 5; 0 or 1: greedy only); epochs are evaluated greedily
    FILE *out;                 // summaries and results (stdout)
    FILE *log;                 // progress (stderr): a live bar on a terminal, else a line every few seconds
    // When *stop becomes non-zero (a signal handler sets it), the run stops at
    // the next step boundary, saves last.ckpt (resumable from there) and
    // returns TS_OK with report->stopped = *stop; no dev evaluation, no summary.
    volatile sig_atomic_t *stop;  // NULL: never
    // Called after every step with the step and this rank (tests stop a run
    // there: cli/cmd_train.c's TINYSEQ_TEST_KILL); NULL: nothing.
    void (*after_step)(long step, int rank);
    // The data-parallel group (train/dist.h) this process trains in; NULL: alone.
    // Only rank 0 prints and writes out_dir (the cli gives the others no streams).
    ts_dist *dist;
} ts_train_opts;

// The defaults above, model included (bahdanau attention and decoder, emb 64, hidden 128).
ts_train_opts ts_train_defaults(void);

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

// Trains as the options say, writing out_dir/{last.ckpt,best.ckpt,metrics.csv,
// steps.csv,config.txt,loss.svg,attention-<epoch>.svg,attention.jsonl} (docs/runs.md). out_dir holds one run: if it
// holds one already, the run continues it when `resume` is a checkpoint in
// out_dir (metrics.csv keeps the rows up to the checkpoint's epoch), replaces
// it with `force`, and fails with TS_ERR_ARG otherwise. Returns TS_OK or the
// failure (message in ts_last_error(): TS_ERR_ARG for options that cannot
// work, else a corpus line, a checkpoint, a failed save, memory, or too many
// non-finite steps in a row).
int ts_train(const ts_train_opts *opts, ts_train_report *report);

#endif
