// The run directory: everything `tinyseq train` writes into --out besides
// the checkpoints' bytes. --out holds one run (last.ckpt, best.ckpt,
// epoch-<epoch>.ckpt with --keep, metrics.csv, steps.csv, config.txt, dev-pairs.tsv,
// loss.svg, attention-<epoch>.svg, attention-step-<step>.svg, attention.jsonl,
// heads.csv, report.html, and the temporary files of their atomic saves);
// nothing else in it is touched.
#ifndef TS_TRAIN_RUNDIR_H
#define TS_TRAIN_RUNDIR_H

#include <stddef.h>

#include "data/corpus.h"
#include "data/vocab.h"
#include "models/seq2seq.h"
#include "infer/evaluate.h"
#include "infer/heads.h"
#include "infer/load.h"
#include "infer/translate.h"
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

// *seconds = the later elapsed_s of the last rows of steps.csv and
// metrics.csv in dir, 0 when there is none: a continued run's clock goes on
// from there.
int ts_rundir_elapsed(const char *dir, double *seconds);

// Makes the directory ready once everything else is: deletes the old run's
// files (TS_RUN_REPLACE), or keeps the lines of metrics.csv, steps.csv,
// heads.csv and attention.jsonl up to `step`, the per-epoch figures and checkpoints up to
// `epoch` and the per-step figures up to `step` (TS_RUN_CONTINUE).
int ts_rundir_prepare(const char *dir, ts_rundir_use use, long epoch, long step);

// dev-pairs.tsv: the dev pairs held out of the corpus, normalised, in the order the
// run evaluates them (so `tinyseq eval --corpus DIR/dev-pairs.tsv` repeats its numbers).
int ts_rundir_write_dev(const char *dir, const ts_corpus *c, const size_t *rows, size_t n);

// config.txt's facts (after its options, train/options.h): what the run
// found and did, read back by --config but not applied.
#define TS_CONFIG_FACTS 8
extern const char *const ts_config_facts[TS_CONFIG_FACTS];

// config.txt: the options, the data's sizes and the model's, and the ranks
// that trained it (a fact: the same options train the same model on any).
int ts_rundir_write_config(const ts_train_opts *o, const ts_seq2seq *m, size_t n_train, size_t n_dev, int ranks);

// Where a run stands when it writes a row or a figure: epochs done, with the
// fraction of the current one (1.5: half of the second epoch), the
// optimizer step, and whether an epoch has just ended (epoch is then whole).
typedef struct {
    double epoch;
    long step;
    int epoch_end;
} ts_run_point;

// buf = at's epoch as the files write it ("3", "0.330"); returns buf.
const char *ts_run_point_epoch(char buf[32], const ts_run_point *at);

// A dev evaluation: at the end of each epoch, every --eval-every steps, and
// at the end of a run that stopped inside an epoch.
typedef struct {
    ts_run_point at;
    double train_loss;  // the mean training loss of the epoch so far
    const ts_eval_result *dev;
    double lr, tokens_per_s, elapsed;
} ts_metrics_row;

// Appends one row to metrics.csv (with the header when it is new).
int ts_rundir_append_metrics(const char *dir, const ts_metrics_row *row);

// The training loss, logged every --log-every steps, at each epoch's end and
// where the run stops.
typedef struct {
    ts_run_point at;
    double train_loss;  // the mean over the steps since the last row
    double lr, tokens_per_s, elapsed;
} ts_steps_row;

// Appends one row to steps.csv (with the header when it is new).
int ts_rundir_append_steps(const char *dir, const ts_steps_row *row);

// Appends an evaluation's rows to heads.csv (with the header when it is new):
// "epoch,step,layer,head,aer", one row per layer and head of head_aer (a
// Transformer's cross-attention AER, infer/head_table.h), the layer's head
// mean after its heads as head "mean".
int ts_rundir_append_heads(const char *dir, const ts_run_point *at, const ts_head_table *head_aer);

// attention-<epoch>.svg at an epoch's end, else attention-step-<step>.svg:
// hypothesis h's attention over the source of `pair` (nothing for a model
// without attention), titled with what it draws (ts_model_attention_title)
// and the reference. `trained` labels it: its target vocabulary, and for a
// subword model the pieces merged into words as attend --words merges them.
int ts_rundir_write_attention(const char *dir, const ts_run_point *at, const ts_model_config *cfg,
                              const ts_translator *trained, const ts_pair *pair, const ts_hypothesis *h);

// How many dev sentences attention.jsonl follows through the epochs; of a
// Transformer, the first TS_REPORT_HEAD_SENTENCES also with every head
// (a few: L x (H + 1) x 3 matrices a sentence and evaluation add up).
#define TS_REPORT_SENTENCES 24
#define TS_REPORT_HEAD_SENTENCES 4

// One sentence as attention.jsonl records it: the source pair and the greedy
// and beam hypotheses of this epoch's model, and (NULL unless a Transformer)
// every head of the greedy output.
typedef struct {
    const ts_pair *pair;
    const ts_hypothesis *greedy, *beam;
    const ts_heads *heads;
} ts_report_sentence;

// Appends one line to attention.jsonl (what `tinyseq report` reads): this
// evaluation's point, its dev BLEU by source length and, for each sentence, its words and the
// attention of its greedy and beam outputs (none when `attends` is 0: a model
// with attention "none"), and with `heads` a "heads" object: {"layers": L,
// "heads": H, "cross", "enc", "dec": each [layer][head][row][col] with index
// H the layer's head mean} (docs/runs.md). JSON; '<', '>' and '&' are written as \u escapes so
// the line can sit inside an HTML script element.
int ts_rundir_append_report(const char *dir, const ts_run_point *at, const ts_eval_result *dev,
                            const ts_vocab *tgt_vocab, int attends, const ts_report_sentence *sentences, size_t n);

// loss.svg: the training loss of steps.csv as a curve over the steps and
// the dev loss of metrics.csv as points on it (read back from the files, so
// a continued run draws its whole history).
int ts_rundir_write_loss(const char *dir);

#endif
