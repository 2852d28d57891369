// One optimizer step, the trainer's hot path: this rank's shards of a batch
// forward and backward, the gradients summed over the ranks, the clipped
// update. Data-parallel (docs/scaling.md): with N ranks and --accumulate K,
// every rank cuts the same batch into N*K shards of contiguous columns; rank
// r runs shards rK .. rK+K-1 one after another, each weighted by its share
// of the batch's target tokens, so the summed gradient is that of the whole
// batch's mean loss. One allreduce per step sums the gradients (and the loss
// sums, the non-finite count and the stop flag) over the ranks, and every
// rank takes the same update.
#ifndef TS_TRAIN_STEP_H
#define TS_TRAIN_STEP_H

#include <gsl/gsl_rng.h>

#include "data/batch.h"
#include "train/dist.h"
#include "train/optim.h"
#include "train/options.h"
#include "train/shard.h"

// The numbers a step sums over its shards and the ranks (the loss, its
// plain cross-entropy, the non-finite shards, the stop flag): the shards'
// buffer holds them beside the gradients (ts_shards_init).
#define TS_STEP_SUMS 4

// What a step works with; the trainer owns every part of it.
typedef struct {
    const ts_train_opts *opts;  // dropout, label smoothing, tf, accumulate, clip, seed, the stop flag, log
    ts_seq2seq *model;
    ts_optim *optim;
    ts_ctx *ctx;                // on the step arena, which grows when a step needs more
    ts_dist *dist;              // the group (a group of one without ranks)
    ts_shards *shards;          // the parts of a batch (ranks x accumulate) and the ranks' sum
    // Guided alignment's gold (train/guided.h), read only when it is on: the corpus the
    // batches' rows index, and the same rows with their gold links (units itself, or its words).
    const ts_corpus *units, *aligned;
    long skipped_in_row;        // steps skipped one after another (non-finite loss or gradient)
    int stop_agreed;            // with ranks: a rank was asked to stop (every rank knows it at the same step)
} ts_stepper;

typedef struct {
    long tokens;       // the batch's target tokens: the loss's divisor, the same on every rank
    double plain_sum;  // the plain cross-entropy times tokens, summed over the shards (and ranks)
    double plain;      // the batch's mean plain cross-entropy (the reported last batch loss)
    int skipped;       // 1: the loss or the gradient norm was not finite, and no update was made
} ts_step_result;

// The value of the caller's stop flag, o->stop (0: carry on).
int ts_stop_requested(const ts_train_opts *o);

// Optimizer step number `step` on batch b at learning rate lr (the
// schedule's, for this update only; optim->lr stays the rate it scales),
// the teacher-forcing draws from tf_rng. A step that needs more memory than
// its arena holds gets more blocks (tensor/arena.h). A non-finite loss or gradient skips the update (out->skipped; the parameters
// stay finite) and says so on the log; too many in a row fail
// (TS_ERR_NUMERIC). The gradients are zero on entry and on return.
int ts_step_run(ts_stepper *st, const ts_batch *b, gsl_rng *tf_rng, long step, double lr, ts_step_result *out);

#endif
