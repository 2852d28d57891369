// The C API of the shared libtinyseq: a small, stable surface over the
// library for callers in other languages (python/tinyseq calls it through
// ctypes; docs/python.md). The library's own headers change as it grows;
// these functions keep their signatures.
//
// Conventions:
// - Every function that can fail returns TINYSEQ_OK (0) or a negative status
//   (the library's codes, tensor/status.h) and leaves a message naming the
//   file, option or argument in tinyseq_last_error() (per thread).
// - Handles are opaque; each _new/_load has its _free, and NULL is fine there.
// - Text results are malloc'd by the library and freed with tinyseq_free.
// - Arrays the caller passes are read only for the call's duration; arrays
//   the library fills are the caller's, sized as each contract says.
// - Nothing here calls exit() or prints, except where a contract says so.
#ifndef TINYSEQ_API_H
#define TINYSEQ_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TINYSEQ_OK 0
// The status of a call stopped by tinyseq_train's interrupt (not a failure).
#define TINYSEQ_STOPPED 1

// "0.1.0"; the API changes only by adding functions.
const char *tinyseq_version(void);

// The message of this thread's last failure ("" if none), valid until the
// next call that fails on this thread.
const char *tinyseq_last_error(void);

// Frees text or arrays the library returned; NULL is fine.
void tinyseq_free(void *p);

// ---- a trained model: load, translate, attend, evaluate, describe ----------

typedef struct tinyseq_model tinyseq_model;

// Loads a checkpoint written by tinyseq train (docs/checkpoint.md) into *out.
// Errors: TS_ERR_IO (missing or unreadable file), TS_ERR_FORMAT / TS_ERR_SHAPE
// (not a checkpoint, corrupt, a model this build cannot make), TS_ERR_NOMEM.
int tinyseq_load(const char *path, tinyseq_model **out);
void tinyseq_model_free(tinyseq_model *m);

// Translates texts[0..n), each normalised as training did, with beam search
// of width beam (1: greedy; 2..1000; 0: the default width, 5, as 0 means
// wherever a beam is given: docs/cli.md), in batches of 128 as tinyseq translate decodes
// its lines, so the outputs are the CLI's; alpha >= 0 ranks beam outputs by GNMT's length penalty,
// alpha < 0 by length normalisation (the default). *out receives the n
// outputs joined by '\n' (tinyseq_free). Errors: TS_ERR_ARG (beam outside
// 0..1000, alpha over 100), TS_ERR_FORMAT naming the index of a text that is
// not UTF-8, empty after normalisation or too long; the model's failures.
int tinyseq_translate(tinyseq_model *m, const char *const *texts, int n, int beam, double alpha, char **out);

// Translates one text as tinyseq_translate and writes its attention as
// `tinyseq attend --json` does, the same bytes (viz/render.h; a
// Transformer's with every layer and head, infer/heads.h), into *json
// (tinyseq_free). words != 0: a subword model's pieces merged into words,
// as `attend --words --json` (a word model's are words already). Errors as
// tinyseq_translate; TS_ERR_ARG for a model without attention.
int tinyseq_attend(tinyseq_model *m, const char *text, int beam, double alpha, int words, char **json);

// Translates one text as tinyseq_attend and writes its attributions as
// `tinyseq attend --explain METHOD --json` does, the same bytes: "weights"
// each row's |raw| over its sum, "raw" the signed values, ig's
// "log_prob" and "baseline_log_prob" (models/explain.h; docs/attention.md).
// method "grad" or "ig"; steps: ig's points, 1..1024 (0: 64). words as
// tinyseq_attend. Errors as tinyseq_translate; TS_ERR_ARG for another method
// or steps.
int tinyseq_explain(tinyseq_model *m, const char *text, int beam, double alpha, int words, const char *method, int steps,
                    char **json);

// The model as JSON (tinyseq_free): {"model": {"architecture", then the
// checkpoint's model fields of its architecture (models/config.h's table)},
// "attends", "max_len", "vocabularies": {"source", "target"}, "parameters",
// "header": the checkpoint's key/value header as strings}.
int tinyseq_info(const tinyseq_model *m, char **json);

// Evaluates the model on a TSV corpus (corpus_path) as tinyseq eval does:
// align_path (NULL: none) holds the gold alignments, one Pharaoh line per
// pair; beam as tinyseq_translate's; max_len < 0 keeps the pairs up to
// the model's training limit, 0 every pair. *json receives {"pairs", "tokens", "loss", "perplexity",
// "bleu", "bleu_detok", "chrf", "exact", "bucket_bleu": [4], "bucket_pairs": [4],
// "aer", "aer_diagonal", "entropy", "pad_mass"} (the last four null when they
// do not apply) and "outputs": the decoded sentences. Errors: TS_ERR_IO /
// TS_ERR_FORMAT naming the file and line; TS_ERR_ARG for no pairs left.
int tinyseq_eval(tinyseq_model *m, const char *corpus_path, const char *align_path, int beam, int max_len,
                 char **json);

// Writes n pairs of the toy corpus drawn with seed to tsv_path (TSV) and,
// when align_path is not NULL, their gold alignments there (Pharaoh lines):
// the bytes `tinyseq corpus --toy --n N --seed S --align FILE` writes. Each
// file is replaced whole or not at all. Errors: TS_ERR_ARG (n outside
// 1..1000000, seed outside 0..2^31-1), TS_ERR_IO naming the path.
int tinyseq_toy_corpus(long n, long seed, const char *tsv_path, const char *align_path);

// ---- training ---------------------------------------------------------------

// Called with each line the trainer prints (progress and results, without
// the newline); `err` is 1 for progress lines (the CLI's standard error).
typedef void (*tinyseq_line_fn)(const char *line, int err, void *user);

// Trains as `tinyseq train` with the options keys[i] = values[i], i < n:
// the keys of a run's config.txt (docs/runs.md; "out" for --out, "force",
// "resume"), values as the flags take them. Every printed line goes to
// on_line (NULL: nowhere). While it runs, SIGINT and SIGTERM stop the run at
// the next step and save DIR/last.ckpt, as the CLI does; the caller's
// handlers are restored before it returns. Returns TINYSEQ_OK,
// TINYSEQ_STOPPED (the signal number in *stopped) or the failure: TS_ERR_ARG
// naming the key for an unknown key or a bad value, the trainer's errors.
// *steps (NULL allowed) receives the steps done. One run at a time per
// process: the stop flag is the process's, as signals are.
int tinyseq_train(const char *const *keys, const char *const *values, int n, tinyseq_line_fn on_line,
                  void *user, int *stopped, long *steps);
// tinyseq_train, and *out_dir (NULL allowed) receives the run directory it
// wrote (the "out" given, else the runs/<date-time> it chose), malloc'd for
// tinyseq_free, once the options were read (NULL when they were refused).
int tinyseq_train_dir(const char *const *keys, const char *const *values, int n, tinyseq_line_fn on_line,
                      void *user, int *stopped, long *steps, char **out_dir);

// The options tinyseq_train takes, as JSON in *json (the caller's, tinyseq_free):
// [{"name": "max_len", "flag": "max-len", "key": "max_len" (config.txt's), "meta":
// "N", "default": "0", "help": "..."}, ...] in train --help's order, from the one options table;
// "presets": [{"name", "help", "flags"}] beside them under {"options": [...]}.
// TINYSEQ_OK or TS_ERR_NOMEM.
int tinyseq_train_options(char **json);

// ---- gradients of the whole model -------------------------------------------

// `tinyseq gradcheck` on architecture "gru" with one attention x decoder
// and a cell (names as the flags take them; cell NULL: the GRU), or on
// "transformer" (attention, decoder and cell NULL, bidirectional 0, tf 1):
// *json receives [{"parameter", "checked", "max_abs_err", "max_rel_err",
// "passed"}, ...]. Errors: TS_ERR_ARG naming a bad name, tolerance or a GRU
// option given to the Transformer.
int tinyseq_gradcheck(const char *architecture, const char *attention, const char *decoder, int bidirectional,
                      const char *cell, double tf, long seed, double rtol, double atol, char **json);

// 1 when train's --flag (its name without "--": "attn", "heads") sets a
// field that models of `architecture` have, 0 when it does not, or
// TS_ERR_ARG for an unknown architecture.
int tinyseq_arch_has(const char *architecture, const char *flag);

// ---- the walkthrough's ops on plain arrays -----------------------------------

// An array of doubles in C order: ndim 1..3, dims[ndim].
typedef struct {
    const double *data;
    int ndim;
    int dims[3];
} tinyseq_array;

// Runs op `name` on inputs[0..n_in) with the library's own forward and,
// when dout is not NULL, its backward: out (out_size doubles, the op's
// output) receives the value, and din[i] (each the size of input i, or NULL
// when that gradient is not wanted) receives d(sum(out * dout)) / d input i.
// The ops (S source positions, T queries; widths D, K, A, E):
//   dot_scores          query (D), keys (S, D)                  -> (S)  q . k_s
//   general_scores      query (D), keys (S, K), W (D, K)        -> (S)  q W k_s (Luong)
//   additive_scores     query (D), keys (S, K), W1 (A, D), W2 (A, K), v (A)
//                                                               -> (S)  v . tanh(W1 q + W2 k_s) (Bahdanau)
//   softmax             scores (S) or (R, S), per row           -> same shape
//   context             weights (S), values (S, K)              -> (K)  sum_s w_s k_s
//   scaled_dot_weights  queries (T, D), keys (S, D)             -> (T, S) softmax(Q K^T / sqrt(D))
//   scaled_dot          queries (T, D), keys (S, D), values (S, E) -> (T, E) those weights times V
// Errors: TS_ERR_ARG (unknown op, wrong number of inputs), TS_ERR_SHAPE
// naming the op and the input, or out_size not the output's.
int tinyseq_op(const char *name, const tinyseq_array *inputs, int n_in, double *out, size_t out_size,
               const double *dout, double *const *din);

// The shape of op `name`'s output for these inputs into dims (3 ints) and
// *ndim; the same errors as tinyseq_op.
int tinyseq_op_shape(const char *name, const tinyseq_array *inputs, int n_in, int *ndim, int *dims);

#ifdef __cplusplus
}
#endif

#endif
