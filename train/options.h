// The training options in one table (ggml's style): each row is one field of
// ts_train_opts and says how every consumer treats it. The row drives
//   its default                       ts_train_defaults()
//   its --flag, range and help line   cli/cmd_train.c (flag table, usage, --config)
//   its config.txt key                train/rundir.c writes it, --config reads it back
//   its checkpoint key                train/state.c saves it and compares it on resume
//   whether the ranks must agree      ts_train_options_check_ranks()
// Adding an option: a field in ts_train_opts (train/trainer.h), one row in
// train/options.c, and the code that uses it.
#ifndef TS_TRAIN_OPTIONS_H
#define TS_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "ckpt/ckpt.h"
#include "train/dist.h"
#include "train/trainer.h"

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

// The size of the default run directory's name, "runs/20261127-075050".
#define TS_RUN_NAME_SIZE 64

// What every front end (tinyseq train, tinyseq_train, Python through it)
// does once the options given are set, for each row i not given[i] (i
// indexes ts_train_options): o->preset's flags (ts_train_presets), then the
// defaults of o->model.arch (its row's `defaults`), the decoder that
// goes with the attention (bahdanau with bahdanau, else luong), and without
// --out the run directory runs/<date-time>, written into default_out, which
// o->out_dir then points to. TS_OK, or a bad table's TS_ERR_ARG.
int ts_train_options_finish(ts_train_opts *o, const int given[], char default_out[TS_RUN_NAME_SIZE]);

// Sets row r of o from text as its flag would; TS_ERR_ARG naming `name` otherwise.
int ts_train_option_set(ts_train_opts *o, const ts_train_option *r, const char *name, const char *text);

// 1 when r is the INT row of two in a row with one flag ("--dev N|FILE"): a
// whole number is r's value, anything else the next row's text.
int ts_train_option_takes_file(const ts_train_option *r);

// The row of --flag, or NULL (the first of two rows sharing a flag).
const ts_train_option *ts_train_option_by_flag(const char *flag);
// The first row with config.txt key `key` that has a flag, or NULL.
const ts_train_option *ts_train_option_by_key(const char *key);

// What messages call the option: "--max-len" or the row's name.
const char *ts_train_option_label(const ts_train_option *r, char buf[64]);

// The value of r in o as config.txt writes it ("0.003", "toy", "bahdanau");
// `buf` holds numbers; returns buf or the text.
const char *ts_train_option_format(const ts_train_opts *o, const ts_train_option *r, char buf[32]);

// The field of r in o (for the cli's flag table).
void *ts_train_option_field(ts_train_opts *o, const ts_train_option *r);
// Sets an INT row's field from v (long or int as the field is).
void ts_train_option_set_whole(ts_train_opts *o, const ts_train_option *r, long v);

// config.txt's option lines, "key = value", in table order.
void ts_train_options_write_config(FILE *f, const ts_train_opts *o);

// The checkpoint's option rows (lr_now: the optimizer's learning rate now).
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

#endif
