// The training loop: data, model, optimizer, evaluation, checkpoints,
// progress. `tinyseq train` fills the options (train/options.h) from its
// flags and calls ts_train(); everything it prints goes to the two streams
// in the options.
#ifndef TS_TRAINER_H
#define TS_TRAINER_H

#include "train/options.h"
#include "train/progress.h"  // ts_train_report


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
