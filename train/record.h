// What a training run records between its steps (rank 0): the dev and test
// evaluations, the steps.csv rows of the loss window, an evaluation's rows,
// figure and attention.jsonl line (with the beam-5 outputs of
// TS_REPORT_SENTENCES dev sentences), and --keep's epoch checkpoints. The
// files themselves are written by train/rundir.c; the lines on the output
// stream by train/progress.c.
#ifndef TS_TRAIN_RECORD_H
#define TS_TRAIN_RECORD_H

#include "data/dataset.h"
#include "infer/evaluate.h"
#include "train/optim.h"
#include "train/progress.h"
#include "train/runlog.h"
#include "train/state.h"

typedef struct {
    const ts_train_opts *opts;
    ts_seq2seq *model;
    const ts_dataset *data;
    // The model with the data's vocabularies and subword models and
    // --max-len, as checkpoints save it and evaluations read it; every member
    // borrowed (never ts_translator_free'd).
    ts_translator trained;
    ts_ctx *ctx;                       // the step's context: its arena grows for work about to be redone
    const ts_optim *optim;             // its learning rate (the rate the schedule scales) goes into the rows
    long lr_horizon;                   // the schedule's last step (ts_train_state's)
    const ts_progress *progress;       // the measured speed and the run's clock
    double elapsed_before;             // a continued run's elapsed_s where its files stop (its clock goes on)
    // Never saved: a continued run starts a new window where the previous
    // one stopped (and logged).
    double window_loss;                // plain cross-entropy x tokens of the steps since the last row
    long window_tokens;
    long recorded_step;                // the step of the last evaluation recorded in the files (-1: none)
    ts_head_table head_aer;            // a Transformer's AER per cross-attention head and layer mean in the
                                       // last greedy dev evaluation (infer/head_table.h), when the dev pairs
                                       // have gold links; cells NULL otherwise. Owned (ts_record_free)
} ts_record;

// Allocates r->head_aer when r's model is a Transformer and its dev pairs
// have gold links (the toy corpus): the greedy dev evaluations then score
// every head. TS_OK or TS_ERR_NOMEM.
int ts_record_init_heads(ts_record *r);
void ts_record_free(ts_record *r);

// The learning rate of update k >= 1: the optimizer's, through the warmup
// and --lr-schedule (train/schedule.h).
double ts_record_lr(const ts_record *r, long k);

// Seconds since the run (or the run it continues) started.
double ts_record_elapsed(const ts_record *r);

// The dev set decoded with `beam` (1: greedy) and scored; *hyps (NULL: not
// wanted) receives the n_dev hypotheses (free with ts_record_free_hyps).
// Greedy with r->head_aer: every head scored too (res->has_head_aer).
int ts_record_dev(ts_record *r, int beam, ts_eval_result *res, ts_hypothesis **hyps);

// --test FILE: the final model on the held-out corpus, one line on out for
// greedy decoding and one for --beam's search (train/progress.h).
int ts_record_test(ts_record *r);

void ts_record_free_hyps(ts_hypothesis *hyps, size_t n);

// The end of a finished run on out: the dev examples (hyps, n_dev of them),
// the final model's dev line `res`, its --beam line (the dev set decoded
// again), what best.ckpt holds (`best`: the final model when its step is
// s->step), then --test's lines. Takes and frees hyps.
int ts_record_final(ts_record *r, const ts_train_state *s, const ts_eval_result *res, ts_hypothesis *hyps,
                    const ts_train_best *best);

// A steps.csv row for the steps of the window (nothing when it is empty),
// which then starts anew.
int ts_record_steps(ts_record *r, const ts_run_point *at);

// An evaluation into the run directory: its metrics.csv row, the first dev
// sentence's attention figure, its attention.jsonl line, loss.svg redrawn,
// and when res scored every head, heads.csv's rows and the best head on out.
int ts_record_evaluation(ts_record *r, const ts_run_point *at, double train_loss, const ts_eval_result *res,
                         const ts_hypothesis *hyps);

// --keep N: epoch s->epoch's model as epoch-<E>.ckpt (inference kind, for
// `tinyseq average`), and the one N epochs older deleted.
int ts_record_keep_epoch(ts_record *r, const ts_train_state *s, const ts_optim *optim);

#endif
