// The run directory: --out as a whole. It holds one run (last.ckpt,
// best.ckpt, epoch-<epoch>.ckpt with --keep, metrics.csv, steps.csv,
// config.txt, dev-pairs.tsv, loss.svg, attention-<epoch>.svg,
// attention-step-<step>.svg, attention.jsonl, heads.csv, report.html, and
// the temporary files of their atomic saves); nothing else in it is
// touched. Here: whether a run may use the directory, what a replaced or
// continued run deletes, and the files written once at the start
// (config.txt, dev-pairs.tsv). What the run appends as it goes and the
// figures drawn from it are the run log (train/runlog.h).
#ifndef TS_TRAIN_RUNDIR_H
#define TS_TRAIN_RUNDIR_H

#include <stddef.h>

#include "data/corpus.h"
#include "models/seq2seq.h"
#include "tensor/atomic_write.h"  // ts_path_join, ts_make_dirs
#include "train/options.h"


typedef enum { TS_RUN_NEW, TS_RUN_CONTINUE, TS_RUN_REPLACE } ts_rundir_use;

// What this run does with --out: start in an empty one, continue the run it
// holds (--resume from its own checkpoint), or replace it (--force). A
// directory holding a run is refused otherwise (TS_ERR_ARG). Changes nothing.
int ts_rundir_check(const ts_train_opts *o, ts_rundir_use *use);

// TS_OK when dir is absent, empty, or holds nothing but a run's files (the
// ones --force replaces); else TS_ERR_ARG naming the first other entry, or
// TS_ERR_IO when dir cannot be listed. Changes nothing (train --check-out).
int ts_rundir_holds_only_a_run(const char *dir);

// Makes the directory ready once everything else is: deletes the old run's
// files (TS_RUN_REPLACE), or keeps the run log's lines up to `step`
// (ts_runlog_trim), the per-epoch figures and checkpoints up to `epoch` and
// the per-step figures up to `step` (TS_RUN_CONTINUE).
int ts_rundir_prepare(const char *dir, ts_rundir_use use, long epoch, long step);

// dev-pairs.tsv: the dev pairs held out of the corpus, normalised, in the order the
// run evaluates them (so `tinyseq eval --corpus DIR/dev-pairs.tsv` repeats its numbers).
int ts_rundir_write_dev(const char *dir, const ts_corpus *c, const size_t *rows, size_t n);

// config.txt's facts (after its options, train/options.h): what the run
// found and did, read back by --config but not applied.
#define TS_CONFIG_FACTS 10
extern const char *const ts_config_facts[TS_CONFIG_FACTS];

// config.txt: the options, the data's sizes and the model's, and the ranks
// that trained it (a fact: the same options train the same model on any).
int ts_rundir_write_config(const ts_train_opts *o, const ts_seq2seq *m, size_t n_train, size_t n_dev, int ranks);

#endif
