// The run log: what a run appends to its directory (train/rundir.h) as it
// goes, and the figures drawn from it. metrics.csv has a row per dev
// evaluation, steps.csv the training loss every --log-every steps, heads.csv
// a Transformer's per-head AER at each evaluation, attention.jsonl the
// report's sentences (docs/runs.md); loss.svg and attention-<epoch>.svg /
// attention-step-<step>.svg are drawn from them. A continued run keeps the
// lines up to its checkpoint (ts_runlog_trim) and its clock goes on
// (ts_runlog_elapsed).
#ifndef TS_TRAIN_RUNLOG_H
#define TS_TRAIN_RUNLOG_H

#include <stddef.h>

#include "data/corpus.h"
#include "data/vocab.h"
#include "infer/evaluate.h"
#include "infer/heads.h"
#include "infer/load.h"
#include "infer/translate.h"
#include "models/seq2seq.h"

// Keeps the lines of metrics.csv, steps.csv, heads.csv and attention.jsonl
// in dir up to `step` (a line from before steps were recorded: up to
// `epoch`), and the CSV files' headers (their first lines); a line of
// another shape is dropped. Each file is replaced atomically, a missing
// one left missing. TS_ERR_IO or TS_ERR_FORMAT (a NUL byte) naming the file.
int ts_runlog_trim(const char *dir, long epoch, long step);

// *seconds = the later elapsed_s of the last rows of steps.csv and
// metrics.csv in dir, 0 when there is none: a continued run's clock goes on
// from there.
int ts_runlog_elapsed(const char *dir, double *seconds);

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
int ts_runlog_append_metrics(const char *dir, const ts_metrics_row *row);

// The training loss, logged every --log-every steps, at each epoch's end and
// where the run stops.
typedef struct {
    ts_run_point at;
    double train_loss;  // the mean over the steps since the last row
    double lr, tokens_per_s, elapsed;
} ts_steps_row;

// Appends one row to steps.csv (with the header when it is new).
int ts_runlog_append_steps(const char *dir, const ts_steps_row *row);

// Appends an evaluation's rows to heads.csv (with the header when it is new):
// "epoch,step,layer,head,aer", one row per layer and head of head_aer (a
// Transformer's cross-attention AER, infer/head_table.h), the layer's head
// mean after its heads as head "mean".
int ts_runlog_append_heads(const char *dir, const ts_run_point *at, const ts_head_table *head_aer);

// attention-<epoch>.svg at an epoch's end, else attention-step-<step>.svg:
// hypothesis h's attention over the source of `pair` (nothing for a model
// without attention), titled with what it draws (ts_model_attention_title)
// and the reference. `trained` labels it: its target vocabulary, and for a
// subword model the pieces merged into words as attend --words merges them.
int ts_runlog_write_attention(const char *dir, const ts_run_point *at, const ts_model_config *cfg,
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
int ts_runlog_append_report(const char *dir, const ts_run_point *at, const ts_eval_result *dev,
                            const ts_vocab *tgt_vocab, int attends, const ts_report_sentence *sentences, size_t n);

// loss.svg: the training loss of steps.csv as a curve over the steps and
// the dev loss of metrics.csv as points on it (read back from the files, so
// a continued run draws its whole history).
int ts_runlog_write_loss(const char *dir);

#endif
