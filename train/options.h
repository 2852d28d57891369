// The training options in one table (ggml's style): each row is one field of
// ts_train_opts and says how every consumer treats it. The row drives
//   its default                       ts_train_defaults()
//   its --flag, range and help line   cli/cmd_train.c (flag table, usage, --config)
//   its config.txt key                train/rundir.c writes it, --config reads it back
//   its checkpoint key                train/state.c saves it and compares it on resume
//   whether the ranks must agree      ts_train_options_check_ranks()
// Adding an option: a field in ts_train_opts (below), one row in
// train/options.c, and the code that uses it. The functions below: a row's
// value, train/options_value.c; the options given completed and checked, and
// config.txt's lines, train/options_finish.c; the checkpoint's rows,
// train/options_ckpt.c.
#ifndef TS_TRAIN_OPTIONS_H
#define TS_TRAIN_OPTIONS_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "ckpt/ckpt.h"
#include "data/dataset.h"
#include "models/seq2seq.h"
#include "train/dist.h"
#include "train/optim.h"
#include "train/schedule.h"

// The most any saved counter (steps, tokens of an epoch) may reach: far past
// any real run (2^52 steps), low enough that no increment from a loaded value
// can overflow, and exact as a double.
#define TS_COUNT_MAX ((long)1 << 52)

// --threads: at most this many BLAS threads (OpenBLAS's usual build limit,
// MAX_THREADS=64; more than the cores only slows a run down).
#define TS_MAX_THREADS 64
// --epochs: at most this many (also the limit of a run by --steps).
#define TS_MAX_EPOCHS 100000

// What chooses best.ckpt among the epochs' dev evaluations (--best): the
// BLEU of their greedy search (ties go to the lower dev loss), the number a
// user reads, or the dev loss. The plateau schedule and early stopping read
// the dev loss either way.
typedef enum { TS_BEST_BLEU, TS_BEST_LOSS, TS_BEST_COUNT } ts_best_by;

// "bleu", "loss"; NULL out of range.
const char *ts_best_name(ts_best_by by);
extern const ts_names ts_best_names;
// Sets *by from its name: TS_OK, or TS_ERR_ARG naming the choices.
int ts_best_parse(const char *text, ts_best_by *by);

// --guided-weight's default when --guided-alignment is given (Marian's
// --guided-alignment-weight default; docs/attention.md measures what it does).
#define TS_GUIDED_WEIGHT 0.1

typedef struct {
    ts_dataset_opts data;      // corpus, dev and test sets, vocabularies, subwords (data/dataset.h)
    // model: vocabulary sizes are filled from the data
    int preset;                // a named recipe of train/options.c's ts_train_presets (0: none); its flags fill
                               // what was not given, before --arch's defaults
    ts_model_config model;
    // optimisation
    ts_optim_kind optim;
    double weight_decay;       // decoupled weight decay, read by an optimizer whose row decays (AdamW; default
                               // TS_OPTIM_WEIGHT_DECAY, torch's)
    double lr;                 // default 3e-3
    double clip;               // global gradient-norm limit (default 5; 0: none)
    double tf;                 // teacher-forcing ratio (default 1)
    double dropout;            // dropout probability in [0, 1) (docs/models.md "Regularisation"; default 0)
    double label_smoothing;    // label smoothing in [0, 1) (PyTorch's; default 0.1); perplexity stays plain
    // Guided alignment (docs/attention.md): the loss gains guided_weight times the cross-entropy
    // between one cross-attention head's rows and the gold links (train/guided.h). Off (nothing
    // written anywhere) unless guided_alignment is given and guided_weight > 0.
    const char *guided_alignment;  // a Pharaoh file, one line per corpus pair; "toy": the toy corpus's own links
    double guided_weight;      // default TS_GUIDED_WEIGHT
    long guided_layer, guided_head;  // the supervised head; -1: the default (penultimate layer, head 0)
    long batch;                // sentences per batch (default 32): the global batch, whatever the ranks
    long accumulate;           // K >= 1: each rank runs its share of a batch as K parts one after another
                               // (summing gradients, then one update): the same update with 1/K of the
                               // activation memory (default 1)
    long epochs;               // default 5
    long steps;                // stop after this many optimizer steps in all (0: run the epochs)
    double lr_decay;           // multiply the learning rate by this when dev loss stalls (default 0.5)
    long warmup_steps;         // the learning rate rises linearly over the first N steps: step k uses
                               // lr min(1, k / N) (0, the default: no warmup)
    ts_lr_schedule lr_schedule;  // what follows the warmup (train/schedule.h; default TS_LR_PLATEAU)
    long patience;             // stop after this many evaluations without a better dev loss (default 3)
    long seed;                 // initialisation, split, shuffling and teacher forcing (default 1)
    long threads;              // OpenBLAS threads, 1..TS_MAX_THREADS (0: OpenBLAS's own count)
    size_t arena_start;        // first size of the step arena in bytes (0: 64 MiB); it doubles as the work needs
    // output
    const char *out_dir;       // where checkpoints, metrics.csv, config.txt and figures go
    const char *resume;        // a last.ckpt / best.ckpt to continue from, or NULL
    int force;                 // out_dir may hold another run: delete its files (never anything else)
    ts_best_by best;           // what chooses best.ckpt (default TS_BEST_BLEU)
    long keep;                 // also keep the last `keep` epochs as epoch-<N>.ckpt (inference kind; 0: none)
    long warmup;               // steps excluded from tokens/s (default 3)
    long show;                 // dev examples printed at the end (default 4)
    long log_every;            // the training loss goes to steps.csv every N steps, at each epoch's end and where
                               // the run stops (0, the default: about 20 rows an epoch, a round N)
    long eval_every;           // also evaluate dev every N steps inside an epoch (0, the default: at each epoch's
                               // end only); recorded (metrics.csv, attention.jsonl, figures) and offered to
                               // best.ckpt; the learning rate and early stopping follow the epochs' evaluations
    long beam;                 // the final dev (and --test) evaluation also decodes with this beam
                               // width (1: greedy only; 0, the default, ts_train_options_finish makes
                               // TS_BEAM_DEFAULT); epochs are evaluated greedily
    FILE *out;                 // summaries and results (stdout)
    FILE *log;                 // progress (stderr): a live bar on a terminal, else a line every few seconds
    int verbose;               // the banner names the BLAS kernels and threads (train --verbose); without it,
                               // only kernels below the CPU's level are named (ts_blas_kernels_caveat)
    // When *stop becomes non-zero (a signal handler sets it), the run stops at
    // the next step boundary, saves last.ckpt (resumable from there) and
    // returns TS_OK with report->stopped = *stop; no dev evaluation, no summary.
    volatile sig_atomic_t *stop;  // NULL: never
    // Called after every step with the step and this rank (tests stop a run
    // there: cli/cmd_train.c's TINYSEQ_TEST_KILL); NULL: nothing.
    void (*after_step)(long step, int rank);
    // The data-parallel group (train/dist.h) this process trains in; NULL: alone.
    // Only rank 0 prints and writes out_dir (the cli gives the others no streams).
    ts_dist *dist;
} ts_train_opts;

// The defaults above, model included (bahdanau attention and decoder, emb 64, hidden 128).
ts_train_opts ts_train_defaults(void);

// x as config.txt and checkpoints write a real option: the shortest "%.*g"
// that reads back as x ("0.003", not "0.0030000000000000001"). Returns buf.
const char *ts_format_exact(char buf[32], double x);

typedef enum {
    TS_OPTION_INT,     // a long (or an int: size says) in [lo, hi]
    TS_OPTION_REAL,    // a double in [lo, hi]
    TS_OPTION_TEXT,    // a const char *; NULL: not given
    TS_OPTION_SWITCH,  // an int, 0 or 1
    TS_OPTION_CHOICE,  // a name among a few (attention, decoder, optimizer): set->names
} ts_option_kind;

// What a row is used for, besides its flag, key and checkpoint key.
enum {
    TS_OPTION_SAME_RANKS = 1 << 0,  // every rank must be given the same value
    TS_OPTION_RESUME = 1 << 1,      // a resumed run must ask for the value its checkpoint saved
    TS_OPTION_OLDER = 1 << 2,       // checkpoints from before it existed lack it: they trained with 0 / ""
    TS_OPTION_IN_MODEL = 1 << 3,    // the checkpoint gets it with the model (infer/load.c), not from state.c
    TS_OPTION_TOY_ONLY = 1 << 4,    // config.txt has it only for the toy corpus
    TS_OPTION_IF_GIVEN = 1 << 5,    // config.txt has it only when it is not 0
    TS_OPTION_NOW = 1 << 6,         // the checkpoint saves the optimizer's value now, not the option's
    TS_OPTION_SUBWORD_ONLY = 1 << 7,  // config.txt and the checkpoint have it only with --subword
    TS_OPTION_GUIDED_ONLY = 1 << 8,   // config.txt and the checkpoint have it only with guided alignment
                                      // on (ts_guided_on), so an unguided run's bytes
                                      // stay as they were; resuming compares it only then
    TS_OPTION_DECAY_ONLY = 1 << 9,    // config.txt and the checkpoint have it only when --optim's row decays
                                      // (ts_optim_row.decays), so other runs' bytes stay as they were; given
                                      // with another optimizer, it is refused (ts_train_options_refuse)
};

typedef struct ts_train_option {
    const ts_setting *set;  // its flag ("max-len" for --max-len; NULL: none), config.txt key, values, default,
                            // meta and help (tensor/names.h); a model field's is its row's in ts_model_fields.
                            // Two rows in a row with one flag are "--flag N|FILE": a whole number is the
                            // INT row's, anything else the TEXT row's
    const char *saved_as;  // its key in a checkpoint's header; NULL: not saved
    const char *name;      // what messages call an option without a flag ("toy seed")
    ts_option_kind kind;
    size_t offset, size;   // the field in ts_train_opts (a CHOICE's is an int-sized enum)
    const char *absent;    // TEXT: how NULL is spelled in config.txt and checkpoints ("toy"); NULL: ""
    unsigned use;          // TS_OPTION_* bits
    const char *section;   // usage: "data", "model", "training" or "output"
} ts_train_option;

// At most this many rows (the size of the arrays built from the table).
#define TS_TRAIN_OPTIONS_MAX 64
extern const ts_train_option ts_train_options[];
extern const size_t ts_train_options_count;


// A named recipe (train --preset NAME): `flags` as on the command line
// ("--arch transformer --hidden 256 ..."), numbers and choices only.
typedef struct {
    const char *name, *help;  // help: one or two lines for train --help
    const char *flags;
} ts_train_preset;
extern const ts_train_preset ts_train_presets[];  // [0]: "none"
extern const size_t ts_train_presets_count;
extern const ts_names ts_train_preset_names;  // "preset": their names, for the --preset row

// The recipes of the architectures that have one, each named by its
// architecture (ts_arch_name): the flags --arch NAME changes (train --help
// prints them); ts_train_options_finish applies them after the preset's.
extern const ts_train_preset ts_train_arch_recipes[];
extern const size_t ts_train_arch_recipes_count;
// arch's recipe, or NULL when it has none.
const ts_train_preset *ts_train_arch_recipe(ts_model_arch arch);

// The size of the run directory's name that ts_train_options_finish gives
// when --out is not: "runs/20261127-075050", or --resume's own directory.
#define TS_RUN_NAME_SIZE 4096

// What every front end (tinyseq train, tinyseq_train, Python through it)
// does once the options given are set, for each row i not given[i] (i
// indexes ts_train_options): o->preset's flags (ts_train_presets), then the
// recipe of o->model.arch (ts_train_arch_recipe), the decoder that
// goes with the attention (bahdanau with bahdanau, else luong), and without
// --out the run directory: --resume's checkpoint's own directory (the run
// continues there), else runs/<date-time>; written into default_out, which
// o->out_dir then points to. TS_OK, or TS_ERR_ARG for a bad table or a
// --resume path whose directory does not fit default_out.
int ts_train_options_finish(ts_train_opts *o, const int given[], char default_out[TS_RUN_NAME_SIZE]);

// TS_ERR_ARG naming the first flag given[] (by row) that does not apply to
// o->model.arch and what to do ("--heads does not apply to --arch gru (only
// to --arch transformer): ignored; add --arch transformer, or leave --heads
// out"; "use" when --arch is among given[]), for a warning: the run goes on
// without it. Else TS_OK.
int ts_train_options_check_arch(const ts_train_opts *o, const int given[]);

// What a run refuses before its directory is made: TS_ERR_ARG naming the
// first DECAY_ONLY row given[] (by row) when o's optimizer does not decay
// ("--weight-decay applies to --optim adamw only; this run uses --optim
// adam"), or a --tf below 1 for an architecture that trains in one
// teacher-forced pass (ts_model_check_flags). Else TS_OK.
int ts_train_options_refuse(const ts_train_opts *o, const int given[]);

// 0 when config.txt and the checkpoint leave row r out for o (a
// SUBWORD_ONLY row without --subword, a GUIDED_ONLY one without guided
// alignment, a DECAY_ONLY one under an optimizer that does not decay);
// resuming compares only the rows that apply. Else 1.
int ts_train_option_applies(const ts_train_opts *o, const ts_train_option *r);

// Sets row r of o from text as its flag would; TS_ERR_ARG naming `name` otherwise.
int ts_train_option_set(ts_train_opts *o, const ts_train_option *r, const char *name, const char *text);

// 1 when r is the INT row of two in a row with one flag ("--dev N|FILE"): a
// whole number is r's value, anything else the next row's text.
int ts_train_option_takes_file(const ts_train_option *r);

// The row of --flag, or NULL (the first of two rows sharing a flag).
const ts_train_option *ts_train_option_by_flag(const char *flag);
// The first row with config.txt key `key` that has a flag, or NULL.
const ts_train_option *ts_train_option_by_key(const char *key);
// The row a caller names: its flag ("max-len", or "max_len" as Python spells
// it), else its config.txt key ("attention"); NULL if neither.
const ts_train_option *ts_train_option_by_name(const char *name);

// What messages call the option: "--max-len" or the row's name.
const char *ts_train_option_label(const ts_train_option *r, char buf[64]);

// The value of r in o as config.txt writes it ("0.003", "toy", "bahdanau");
// `buf` holds numbers; returns buf or the text.
const char *ts_train_option_format(const ts_train_opts *o, const ts_train_option *r, char buf[32]);

// r's help to f as usage prints it: "{}" the default in o, "{names}" a
// choice's names in words ("gru or lstm"), each line break `newline`.
void ts_train_option_help(FILE *f, const ts_train_option *r, const ts_train_opts *o, const char *newline);

// The field of r in o (for the cli's flag table), and the same read-only.
void *ts_train_option_field(ts_train_opts *o, const ts_train_option *r);
const void *ts_train_option_field_of(const ts_train_opts *o, const ts_train_option *r);
// Sets an INT row's field from v (long or int as the field is).
void ts_train_option_set_whole(ts_train_opts *o, const ts_train_option *r, long v);

// Row r's value in o: an INT or SWITCH row's number, a REAL row's, a TEXT
// row's as files spell it (NULL: the row's `absent`, else ""), a CHOICE row's
// name (an int-sized enum's).
long ts_train_option_whole(const ts_train_opts *o, const ts_train_option *r);
double ts_train_option_real(const ts_train_opts *o, const ts_train_option *r);
const char *ts_train_option_text(const ts_train_opts *o, const ts_train_option *r);
const char *ts_train_option_choice(const ts_train_opts *o, const ts_train_option *r);

// config.txt's option lines, "key = value", in table order: the rows that
// apply to o->model.arch (a Transformer's file has no attention, a GRU's no
// heads). A row written only when given is written at 0 too where o's preset
// or --arch's defaults set it, so that --config reads back o's value, not theirs.
void ts_train_options_write_config(FILE *f, const ts_train_opts *o);

// The checkpoint's option rows (lr_now: the optimizer's learning rate now);
// this and ts_train_options_compare are train/options_ckpt.c.
int ts_train_options_save(ts_ckpt *ck, const ts_train_opts *o, double lr_now);

// TS_ERR_ARG naming the flag when o asks for another value of a RESUME row
// than checkpoint ck saved (the whole numbers first, then the real ones,
// then the texts: the first difference is reported); messages start with o->resume.
int ts_train_options_compare(const ts_ckpt *ck, const ts_train_opts *o);

// Every rank was given the same value of every SAME_RANKS row
// (ts_dist_check_same; TS_ERR_ARG naming the first that differs).
int ts_train_options_check_ranks(const ts_train_opts *o, ts_dist *d);

// Steps between steps.csv rows: --log-every, else about 20 rows an epoch
// at a round number (1, 2 or 5 times a power of ten: 20, 50, 100).
long ts_train_log_every(const ts_train_opts *o, size_t batches_per_epoch);

// TS_ERR_ARG naming the flag when --threads is out of range or --batch
// cannot be cut into `ranks` x --accumulate parts of at least a sentence.
int ts_train_options_check_parts(const ts_train_opts *o, int ranks);

// 1 when o trains with guided alignment (train/guided.h): a --guided-alignment
// and a weight above 0.
int ts_guided_on(const ts_train_opts *o);

#endif
