// A batch cut into parts, and the parts' gradients summed over the ranks
// (docs/scaling.md). With N ranks and --accumulate K every rank builds the
// same batches and cuts each into N*K shards of contiguous columns; rank r
// runs shards rK .. rK+K-1. One allreduce a step sums the gradients (and a
// few running sums) of the ranks through one flat buffer (train/dist.h).
#ifndef TS_TRAIN_SHARD_H
#define TS_TRAIN_SHARD_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "autograd/params.h"
#include "data/batch.h"
#include "models/model.h"
#include "train/dist.h"

typedef struct {
    int count;          // ranks x accumulate: the parts of a batch (1: the batch is one part)
    int32_t *ids;       // (room) one shard's src (S, b), src_len (b), tgt_in, tgt_out (T, b)
    size_t room;
    gsl_rng *rng;       // a shard's dropout and teacher-forcing draws (count > 1)
    double *flat;       // (parameters + sums) what the ranks sum (ranks > 1)
} ts_shards;

// Ready for `ranks` x `accumulate` parts of models with n_params values and
// n_sums running sums. TS_OK or TS_ERR_NOMEM (free it either way).
int ts_shards_init(ts_shards *sh, int ranks, long accumulate, size_t n_params, size_t n_sums);
void ts_shards_free(ts_shards *sh);

// Shard `shard` of b, as a batch of its own trimmed to its longest source and
// target (ids copied into sh), in *view. *empty is set when the shard has no
// sentence (a last batch of the epoch with fewer sentences than shards).
int ts_shard_view(ts_shards *sh, const ts_batch *b, int shard, ts_batch_view *view, int *empty);

// The first of b's B columns that shard `shard` holds (its rows start at b->rows + this).
int ts_shard_first(const ts_shards *sh, int B, int shard);

// The generator of shard `shard`'s draws at step `step`: seeded from (seed,
// step, shard), so they depend on nothing a rank would have to share or a
// checkpoint to save.
gsl_rng *ts_shard_rng(ts_shards *sh, long seed, long step, int shard);

// The gradients of p and sums[0..n_sums) of every rank, summed, on every
// rank: one allreduce of sh->flat (parameters in registration order, then
// the sums).
int ts_shards_sum_over_ranks(ts_shards *sh, ts_dist *d, ts_params *p, double *sums, size_t n_sums);

#endif
