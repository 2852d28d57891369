// The data a training run reads, loaded once: the corpus (a TSV file or the
// toy generator), the dev set (held out of the corpus by a seeded split, or a
// file of its own), an optional test corpus, the vocabularies of the train
// split, and the batcher over it. Every rank loads the same data alike.
#ifndef TS_DATA_DATASET_H
#define TS_DATA_DATASET_H

#include <stdio.h>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/subword.h"
#include "data/vocab.h"

// Without --dev: this many dev pairs, or a tenth of the corpus if fewer.
#define TS_DEFAULT_DEV_PAIRS 500

// What data a run reads: the fields of the training options' data section
// (train/trainer.h embeds this struct; the options table has a row each).
typedef struct {
    const char *corpus;     // a TSV file, or NULL: the toy corpus of toy_pairs pairs generated from toy_seed
    long toy_pairs;         // size of the toy corpus (default TS_TOY_PAIRS)
    long toy_seed;          // seed of the toy corpus (default TS_TOY_SEED): a fixed data set
    long max_len;           // keep pairs with 1..max_len tokens per side (0: no limit)
    long dev_pairs;         // pairs held out (0: TS_DEFAULT_DEV_PAIRS or a tenth of the corpus, whichever is fewer)
    const char *dev_file;   // the dev set instead (then nothing is held out; dev_pairs is 0), or NULL
    const char *test_file;  // a corpus to evaluate the final model on, or NULL
    long min_count;         // vocabulary: words seen at least this often (default 1)
    int skip_bad;           // skip malformed lines (counted on the log) instead of failing
    long subword;           // > 0: learn subword models of at most this many pieces on the train split (0: words)
    enum ts_subword_kind subword_kind;  // how pieces are learned (default TS_SUBWORD_BPE)
    int subword_joint;      // one model learned on both sides (default: one per side)
    ts_normalisation normalisation;  // how the model reads text (data/normalize.h; default TS_NORM_SPLIT, the words);
                                     // one that keeps the text needs subword models
} ts_dataset_opts;

// How a run loads its data besides what it reads.
typedef struct {
    long seed;   // the dev split's and the subword models'
    long batch;  // sentences per batch
    // With subword > 0: models to use instead of learning them (--resume: the
    // checkpoint's, whose pieces the model's ids mean), copied; NULL: learn.
    const ts_subword *stored_src_sw, *stored_tgt_sw;
    FILE *log;   // "skipped N malformed lines" (NULL: quiet)
    const char *gold;  // a Pharaoh file of gold links, one line per line of the corpus file as read
                       // (before max_len), attached to its pairs (train --guided-alignment; a file
                       // that does not fit fails with TS_ERR_ARG naming its line); NULL: none
} ts_dataset_use;

// With subword models every corpus the model reads is in their pieces
// (ts_subword_corpus: the same rows in the same order), and the words of the
// corpus stay for what people read (dev-pairs.tsv).
typedef struct {
    ts_corpus *corpus;               // the model's units: words, or pieces with subword models
    ts_corpus *words;                // with subword models, the corpus in words (else NULL: corpus is)
    ts_split split;                  // rows of corpus: train, and dev unless there is a dev file
    ts_corpus *dev_file, *test;      // the files' corpora (in the model's units), or NULL
    const ts_corpus *dev;            // the dev set: rows dev_rows[0..n_dev) of this corpus
    const size_t *dev_rows;
    size_t n_dev;
    ts_subword *src_sw, *tgt_sw;     // the subword models (a joint model twice), or NULL: words
    ts_vocab *src_vocab, *tgt_vocab; // words of the train split, or the models' pieces
    ts_batcher *batcher;             // the train split's batches
} ts_dataset;

// Loads everything up front, so a bad file fails before any training:
// TS_OK, or the corpus line, file or count that is wrong (TS_ERR_FORMAT,
// TS_ERR_ARG for a --dev that holds out too many, TS_ERR_IO, TS_ERR_NOMEM).
// Free *d with ts_dataset_free in both cases (it starts zeroed).
int ts_dataset_load(const ts_dataset_opts *o, const ts_dataset_use *use, ts_dataset *d);
void ts_dataset_free(ts_dataset *d);

#endif
