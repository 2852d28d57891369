// Padded, time-major batches of token ids, with length bucketing.
//
// B = sentences in the batch, S = longest source, T = longest target + 1.
// Layout is time-major: element (t, b) of a (T, B) array is at [t * B + b],
// so a decoder step t reads the B contiguous ids of row t.
//
// Ownership: a ts_batcher owns its batch buffers, allocated once at
// ts_batcher_new for the largest batch it can make; every batch it hands out
// reuses them, so a ts_batch is valid only until the next call to
// ts_batcher_next / ts_batcher_get / ts_batcher_epoch / ts_batcher_free.
#ifndef TS_BATCH_H
#define TS_BATCH_H

#include "data/corpus.h"
#include "data/vocab.h"

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t B, S, T;
    int32_t *src;        // (S, B) source ids, TS_PAD after the sentence
    int32_t *src_len;    // (B) source tokens of each column
    int32_t *tgt_in;     // (T, B) decoder input:  <sos> y1 .. yn, then TS_PAD
    int32_t *tgt_out;    // (T, B) decoder output: y1 .. yn <eos>, then TS_PAD
    int32_t *tgt_len;    // (B) decoder steps of each column: n + 1 (<eos>)
    const size_t *rows;  // (B) the corpus row of each column
} ts_batch;
// No masks here: the lengths say it all, and each model builds the masks it
// needs, in its layout, in the step's arena for the columns it runs.

typedef struct {
    size_t batch_size;      // sentences per batch (the last one may be smaller), >= 1
    // 0: no bucketing. k > 0: each epoch, the shuffled rows are cut into
    // chunks of k * batch_size, each chunk is sorted by (target length,
    // source length), cut into batches, and the batch order is shuffled, so
    // a batch holds sentences of similar length. 50 is a good value.
    size_t bucket_batches;
} ts_batcher_opts;

typedef struct ts_batcher ts_batcher;

// A batcher over the corpus rows `rows` (n_rows; NULL means every pair),
// encoded once with the vocabularies. The corpus and vocabularies are only
// read here; the batcher keeps no pointer to them. The rows start in a plain
// epoch (as from ts_batcher_epoch with rng NULL).
// Errors (*out = NULL): TS_ERR_ARG (no rows, a row out of range,
// batch_size 0), TS_ERR_NOMEM.
int ts_batcher_new(const ts_corpus *c, const size_t *rows, size_t n_rows, const ts_vocab *src,
                   const ts_vocab *tgt, const ts_batcher_opts *opts, ts_batcher **out);

// Frees the batcher and its batch buffers; NULL is fine.
void ts_batcher_free(ts_batcher *b);

// Plans a new epoch and rewinds. With an rng, the rows are shuffled (and
// bucketed), then the batch order is shuffled, using only gsl_ran_shuffle on
// that rng: the same rng state gives the same batches. With rng NULL, rows
// keep their given order (still bucketed if asked), for evaluation.
void ts_batcher_epoch(ts_batcher *b, gsl_rng *rng);

// Batches per epoch: ceil(n_rows / batch_size).
size_t ts_batcher_count(const ts_batcher *b);

// The next batch of the epoch, or NULL when the epoch is over.
const ts_batch *ts_batcher_next(ts_batcher *b);

// Batch i (< ts_batcher_count) of the current epoch, or NULL when out of range.
const ts_batch *ts_batcher_get(ts_batcher *b, size_t i);

#endif
