// The training options table (train/options.h) and the walks over it that
// its consumers share: defaults, formatting, config.txt lines, checkpoint
// rows and their resume check, the ranks' check.
#include "train/options.h"

#include "data/toy.h"
#include "models/search.h"  // TS_BEAM_DEFAULT
#include "train/rundir.h"
#include "train/state.h"  // TS_COUNT_MAX

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *attn_name(const ts_train_opts *o) { return ts_attn_name(o->model.attn); }
static int attn_parse(ts_train_opts *o, const char *text) { return ts_attn_parse(text, &o->model.attn); }
static const char *decoder_name(const ts_train_opts *o) { return ts_decoder_name(o->model.decoder); }
static int decoder_parse(ts_train_opts *o, const char *text) { return ts_decoder_parse(text, &o->model.decoder); }
static const char *arch_name(const ts_train_opts *o) { return ts_arch_name(o->model.arch); }
static int arch_parse(ts_train_opts *o, const char *text) { return ts_arch_parse(text, &o->model.arch); }
static const char *dtype_name(const ts_train_opts *o) { return ts_dtype_name(o->model.dtype); }
static int dtype_parse(ts_train_opts *o, const char *text) { return ts_dtype_parse(text, &o->model.dtype); }
static const char *const best_names[] = {[TS_BEST_BLEU] = "bleu", [TS_BEST_LOSS] = "loss"};
_Static_assert(sizeof best_names / sizeof *best_names == TS_BEST_COUNT, "a name per criterion");

const char *ts_best_name(ts_best_by by) { return (unsigned)by < TS_BEST_COUNT ? best_names[by] : NULL; }

int ts_best_parse(const char *text, ts_best_by *by) {
    for (int i = 0; i < TS_BEST_COUNT; i++)
        if (!strcmp(text, best_names[i])) return *by = (ts_best_by)i, TS_OK;
    return ts_fail(TS_ERR_ARG, "unknown criterion '%s' (choose bleu or loss)", text);
}

static const char *best_name(const ts_train_opts *o) { return ts_best_name(o->best); }
static int best_parse(ts_train_opts *o, const char *text) { return ts_best_parse(text, &o->best); }
static const char *subword_kind_name(const ts_train_opts *o) { return ts_subword_kind_name(o->data.subword_kind); }
static int subword_kind_parse(ts_train_opts *o, const char *text) {
    for (int i = 0; i < TS_SUBWORD_KIND_COUNT; i++)
        if (!strcmp(text, ts_subword_kind_name((enum ts_subword_kind)i))) return o->data.subword_kind = (enum ts_subword_kind)i, TS_OK;
    return ts_fail(TS_ERR_ARG, "unknown subword kind '%s' (choose bpe or unigram)", text);
}
static const char *lr_schedule_name(const ts_train_opts *o) { return ts_lr_schedule_name(o->lr_schedule); }
static int lr_schedule_parse(ts_train_opts *o, const char *text) { return ts_lr_schedule_parse(text, &o->lr_schedule); }
static const char *preset_name(const ts_train_opts *o) { return ts_train_presets[o->preset].name; }
static int preset_parse(ts_train_opts *o, const char *text) {
    char names[256] = "";
    for (size_t i = 0; i < ts_train_presets_count; i++) {
        if (!strcmp(text, ts_train_presets[i].name)) return o->preset = (int)i, TS_OK;
        if (i) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i > 1 ? ", " : "", ts_train_presets[i].name);
    }
    return ts_fail(TS_ERR_ARG, "unknown preset '%s' (choose %s; train --help lists them)", text, names);
}
static const char *optim_name(const ts_train_opts *o) { return ts_optim_name(o->optim); }
static int optim_parse(ts_train_opts *o, const char *text) { return ts_optim_parse(text, &o->optim); }

// A row's field: its place, its size and its kind.
#define FIELD(f) .offset = offsetof(ts_train_opts, f), .size = sizeof(((ts_train_opts *)0)->f)
#define INT(f, low, high, v) .kind = TS_OPTION_INT, FIELD(f), .lo = (low), .hi = (high), .value = (v)
#define REAL(f, low, high, v) .kind = TS_OPTION_REAL, FIELD(f), .lo = (low), .hi = (high), .value = (v)
#define TEXT(f, v) .kind = TS_OPTION_TEXT, FIELD(f), .text = (v)
#define SWITCH(f) .kind = TS_OPTION_SWITCH, FIELD(f)
#define CHOICE(f, v, names) .kind = TS_OPTION_CHOICE, FIELD(f), .text = (v), .name_of = names##_name, .parse = names##_parse
#define SAME TS_OPTION_SAME_RANKS
#define RESUME TS_OPTION_RESUME

// The order is config.txt's and the checkpoint's (their bytes follow it);
// the usage lists each section's rows in this order.
const ts_train_option ts_train_options[] = {
    // data
    {.flag = "corpus", .key = "corpus", .saved_as = "data.corpus", TEXT(data.corpus, NULL), .absent = "toy", .use = SAME,
     .section = "data", .meta = "FILE", .help = "tab-separated pairs: source<TAB>target[<TAB>ignored]"},
    {.flag = "toy-pairs", .key = "toy_pairs", .saved_as = "data.toy_pairs", INT(data.toy_pairs, 10, 10000000, TS_TOY_PAIRS),
     .use = SAME | RESUME | TS_OPTION_TOY_ONLY, .section = "data", .meta = "N", .help = "size of the toy corpus (default {})"},
    {.name = "toy seed", .saved_as = "data.toy_seed", INT(data.toy_seed, 0, 0, TS_TOY_SEED), .use = SAME | RESUME},
    {.flag = "max-len", .key = "max_len", .saved_as = "data.max_len", INT(data.max_len, 1, 100000, 0),
     .use = SAME | RESUME | TS_OPTION_IN_MODEL, .section = "data", .meta = "N",
     .help = "keep pairs with at most N tokens per side (default: no limit)"},
    {.flag = "dev", .key = "dev", .saved_as = "data.dev_pairs", INT(data.dev_pairs, 1, 10000000, 0),
     .use = SAME | RESUME | TS_OPTION_IF_GIVEN, .section = "data", .meta = "N|FILE",
     .help = "dev pairs held out (default: 500 or a tenth of the corpus, whichever is\n"
             "fewer), or a TSV file to use as the dev set (then nothing is held out)"},
    {.flag = "dev", .key = "dev", .saved_as = "data.dev_file", TEXT(data.dev_file, NULL), .use = SAME | RESUME | TS_OPTION_OLDER},
    {.flag = "test", .key = "test", TEXT(data.test_file, NULL), .use = SAME, .section = "data", .meta = "FILE",
     .help = "a TSV file the final model is evaluated on (a \"test:\" line at the end)"},
    {.flag = "min-count", .key = "min_count", .saved_as = "data.min_count", INT(data.min_count, 1, 1000000, 1),
     .use = SAME | RESUME, .section = "data", .meta = "N", .help = "vocabulary: words seen at least N times (default {})"},
    {.flag = "skip-bad", .key = "skip_bad", .saved_as = "data.skip_bad", SWITCH(data.skip_bad), .use = SAME | RESUME,
     .section = "data", .help = "skip malformed corpus lines (and count them) instead of stopping"},
    // A subword run's files have its rows (a word-level run's keep their bytes).
    {.flag = "subword", .key = "subword", .saved_as = "data.subword", INT(data.subword, 0, TS_SUBWORD_MAX_VOCAB, 0),
     .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN, .section = "data", .meta = "N",
     .help = "train on subword pieces: SentencePiece models of at most N pieces each\n"
             "(300 or more), learned on the training pairs and stored in the checkpoint;\n"
             "no word is then unknown (default 0: words; docs/data.md)"},
    {.flag = "subword-kind", .key = "subword_kind", .saved_as = "data.subword_kind", CHOICE(data.subword_kind, "bpe", subword_kind),
     .use = SAME | RESUME | TS_OPTION_SUBWORD_ONLY, .section = "data", .meta = "NAME",
     .help = "--subword: bpe or unigram (default {})"},
    {.flag = "subword-joint", .key = "subword_joint", .saved_as = "data.subword_joint", SWITCH(data.subword_joint),
     .use = SAME | RESUME | TS_OPTION_SUBWORD_ONLY, .section = "data",
     .help = "--subword: one model for both sides (default: one per side)"},
    // model
    // The architecture and the Transformer's sizes: config.txt has them only when given (a GRU run's file
    // stays as it was); the checkpoint has them with the model.
    // A preset fills the rows not given (ts_train_apply_arch_defaults); config.txt names it only when given.
    {.flag = "preset", .key = "preset", CHOICE(preset, "none", preset), .use = SAME | TS_OPTION_IF_GIVEN,
     .section = "model", .meta = "NAME",
     .help = "a named recipe: its flags, below, fill in what the command line and\n"
             "--config do not give (flags given win)"},
    {.flag = "arch", .key = "arch", CHOICE(model.arch, "gru", arch), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model",
     .meta = "NAME", .help = "gru or transformer (default {}; docs/models.md)"},
    {.flag = "d-model", .key = "d_model", INT(model.d_model, 1, TS_MODEL_MAX_HIDDEN, 0), .use = SAME | TS_OPTION_IF_GIVEN,
     .section = "model", .meta = "N", .help = "transformer: model width (default: --hidden)"},
    {.flag = "heads", .key = "heads", INT(model.heads, 1, TS_MODEL_MAX_HIDDEN, 0), .use = SAME | TS_OPTION_IF_GIVEN,
     .section = "model", .meta = "N", .help = "transformer: attention heads, dividing --d-model (default: below)"},
    {.flag = "layers", .key = "layers", INT(model.layers, 1, TS_MODEL_MAX_LAYERS, 0), .use = SAME | TS_OPTION_IF_GIVEN,
     .section = "model", .meta = "N", .help = "transformer: layers per stack (default: below)"},
    {.flag = "ff", .key = "ff", INT(model.ff, 1, TS_MODEL_MAX_FF, 0), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model",
     .meta = "N", .help = "transformer: feed-forward width (default 4 d_model)"},
    {.flag = "attn", .key = "attention", CHOICE(model.attn, "bahdanau", attn), .use = SAME, .section = "model",
     .meta = "NAME", .help = "bahdanau, dot, general, concat, scaled-dot or none (default {})"},
    {.flag = "decoder", .key = "decoder", CHOICE(model.decoder, "bahdanau", decoder), .use = SAME, .section = "model",
     .meta = "NAME", .help = "bahdanau or luong (default: bahdanau for --attn bahdanau, else luong)"},
    {.flag = "bidirectional", .key = "bidirectional", SWITCH(model.bidirectional), .use = SAME, .section = "model",
     .help = "bidirectional encoder"},
    {.flag = "dtype", .key = "dtype", CHOICE(model.dtype, "float32", dtype), .use = SAME,
     .section = "model", .meta = "NAME",
     .help = "float64 or float32, GRU and Transformer: the parameters, the\n"
             "optimizer's moments, every step's numbers and the checkpoint's\n"
             "tensors (default {}; sums and the loss stay float64;\n"
             "translate, attend and eval run in the checkpoint's dtype)"},
    {.flag = "emb", .key = "emb", INT(model.emb, 1, TS_MODEL_MAX_EMB, 64), .use = SAME, .section = "model", .meta = "N",
     .help = "embedding size (default {})"},
    {.flag = "hidden", .key = "hidden", INT(model.hidden, 1, TS_MODEL_MAX_HIDDEN, 128), .use = SAME, .section = "model",
     .meta = "N", .help = "hidden size (default {}; a Transformer's: below)"},
    // training
    {.flag = "optim", .key = "optimizer", .saved_as = "train.optimizer", CHOICE(optim, "adam", optim), .use = SAME | RESUME,
     .section = "training", .meta = "NAME", .help = "adam or sgd with momentum 0.9 (default {})"},
    {.saved_as = "train.lr", .name = "learning rate now", REAL(lr, 0, 0, 0), .use = TS_OPTION_NOW},
    {.flag = "lr", .key = "lr", .saved_as = "train.lr_initial", REAL(lr, 1e-12, 100, 3e-3), .use = SAME | RESUME,
     .section = "training", .meta = "X", .help = "learning rate (default {})"},
    {.flag = "clip", .key = "clip", .saved_as = "train.clip", REAL(clip, 0, 1e12, 5), .use = SAME | RESUME,
     .section = "training", .meta = "X", .help = "clip the global gradient norm at X (default {}; 0: off)"},
    {.flag = "tf", .key = "tf", .saved_as = "train.tf", REAL(tf, 0, 1, 1), .use = SAME | RESUME, .section = "training",
     .meta = "RATIO", .help = "teacher-forcing ratio in [0, 1] (default {})"},
    {.flag = "dropout", .key = "dropout", .saved_as = "train.dropout", REAL(dropout, 0, 0.99, 0),
     .use = SAME | RESUME | TS_OPTION_OLDER, .section = "training", .meta = "P",
     .help = "dropout on embeddings, encoder outputs and the pre-output layer,\nin [0, 0.99] (default {}; docs/models.md)"},
    {.flag = "label-smoothing", .key = "label_smoothing", .saved_as = "train.label_smoothing",
     REAL(label_smoothing, 0, 0.99, 0.1), .use = SAME | RESUME | TS_OPTION_OLDER, .section = "training", .meta = "E",
     .help = "PyTorch's label smoothing in [0, 0.99] (default {}); the reported\n"
             "losses and perplexity stay plain cross-entropy"},
    {.flag = "batch", .key = "batch", .saved_as = "train.batch", INT(batch, 1, 100000, 32), .use = SAME | RESUME,
     .section = "training", .meta = "N",
     .help = "sentences per batch (default {}); under mpirun the batch of all the\n"
             "ranks together: the same flags train the same model on any number"},
    {.flag = "accumulate", .key = "accumulate", INT(accumulate, 1, 100000, 1), .use = SAME, .section = "training",
     .meta = "K",
     .help = "run each batch as K parts one after another, summing their gradients,\n"
             "then one update: the same update with about 1/K of the activation\n"
             "memory, so a batch K times larger than fits (default {})"},
    {.flag = "epochs", .key = "epochs", INT(epochs, 1, TS_MAX_EPOCHS, 5), .use = SAME, .section = "training",
     .meta = "N", .help = "epochs (default {})"},
    {.flag = "steps", .key = "steps", INT(steps, 1, 1000000000, 0), .use = SAME, .section = "training", .meta = "N",
     .help = "stop after N optimizer steps in all, counting those before --resume"},
    {.flag = "lr-decay", .key = "lr_decay", .saved_as = "train.lr_decay", REAL(lr_decay, 1e-6, 1, 0.5),
     .use = SAME | RESUME, .section = "training", .meta = "X",
     .help = "multiply the learning rate by X when dev loss does not improve (default {})"},
    {.flag = "warmup-steps", .key = "warmup_steps", .saved_as = "train.warmup_steps", INT(warmup_steps, 0, 1000000000, 0),
     .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN, .section = "training", .meta = "N",
     .help = "raise the learning rate linearly over the first N steps: step k uses\n"
             "lr min(1, k / N), as Transformers need (default {}: none)"},
    {.flag = "lr-schedule", .key = "lr_schedule", .saved_as = "train.lr_schedule", CHOICE(lr_schedule, "plateau", lr_schedule),
     .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN, .section = "training", .meta = "NAME",
     .help = "the learning rate after the warmup: plateau (only --lr-decay), inverse-sqrt\n"
             "(sqrt(N / k), N the warmup's steps), cosine or linear (down to 0 at the\n"
             "last step of --epochs or --steps) (default {}; --lr-decay applies to all)"},
    {.flag = "patience", .key = "patience", .saved_as = "train.patience", INT(patience, 1, 100000, 3),
     .use = SAME | RESUME, .section = "training", .meta = "N",
     .help = "stop after N epochs without a better dev loss (default {})"},
    {.flag = "seed", .key = "seed", .saved_as = "train.seed", INT(seed, 0, 2147483647L, 1), .use = SAME | RESUME,
     .section = "training", .meta = "N", .help = "initialisation, split, shuffling and teacher forcing (default {})"},
    // --threads changes no result: each machine may want its own.
    {.flag = "threads", INT(threads, 1, TS_MAX_THREADS, 0), .section = "training", .meta = "N",
     .help = "BLAS threads, 1 to 64 (default: OPENBLAS_NUM_THREADS, else the cores;\n"
             "under mpirun, the cores shared among the machine's ranks)"},
    // output
    {.flag = "out", TEXT(out_dir, NULL), .use = SAME, .section = "output", .meta = "DIR",
     .help = "where everything is written (default runs/<date-time>); it holds one run:\n"
             "a new run into a directory holding one is refused without --force"},
    {.flag = "resume", TEXT(resume, NULL), .use = SAME, .section = "output", .meta = "CKPT",
     .help = "continue a run exactly from its last.ckpt (same data and flags); into\n"
             "the checkpoint's own directory, metrics.csv continues where it stopped"},
    {.flag = "force", SWITCH(force), .use = SAME, .section = "output",
     .help = "start over in an --out holding a run: deletes that run's checkpoints,\n"
             "metrics.csv, config.txt and figures (nothing else)"},
    {.flag = "show", INT(show, 0, 1000, 4), .use = SAME, .section = "output", .meta = "N",
     .help = "dev examples printed at the end (default {})"},
    {.flag = "best", .key = "best", CHOICE(best, "bleu", best), .use = SAME, .section = "output", .meta = "WHAT",
     .help = "what chooses best.ckpt among the epochs: bleu (dev BLEU of their greedy\n"
             "search; ties by dev loss) or loss (dev loss) (default {}); the learning\n"
             "rate and early stopping follow dev loss either way"},
    {.flag = "keep", .key = "keep", INT(keep, 0, 1000, 0), .use = SAME, .section = "output", .meta = "N",
     .help = "also keep the last N epochs' models as DIR/epoch-<E>.ckpt (for\ntinyseq average; default {}: none)"},
    {.flag = "beam", .key = "beam", INT(beam, 0, 1000, TS_BEAM_DEFAULT), .use = SAME, .section = "output", .meta = "K",
     .help = "the final dev (and --test) evaluation also decodes with beam K,\n"
             "as tinyseq eval --beam K would (default {}; 0: greedy only)"},
    // --log-every and --eval-every change what the run directory records, never
    // what is computed: a continued run may change them (no checkpoint row).
    {.flag = "log-every", .key = "log_every", INT(log_every, 1, 1000000000, 0), .use = SAME, .section = "output",
     .meta = "N",
     .help = "the training loss into DIR/steps.csv every N steps (default: about 20\n"
             "rows an epoch, a round N), at each epoch's end and where the run stops"},
    {.flag = "eval-every", .key = "eval_every", INT(eval_every, 1, 1000000000, 0), .use = SAME, .section = "output",
     .meta = "N",
     .help = "also evaluate dev every N steps inside an epoch, recorded like the\n"
             "epochs' evaluations (default: at each epoch's end only; the learning\n"
             "rate, early stopping and best.ckpt follow the epochs' alone)"},
    {.name = "warm-up steps", INT(warmup, 0, 0, 3), .use = SAME},
};
const size_t ts_train_options_count = sizeof ts_train_options / sizeof ts_train_options[0];
_Static_assert(sizeof ts_train_options / sizeof ts_train_options[0] < TS_TRAIN_OPTIONS_MAX, "raise TS_TRAIN_OPTIONS_MAX");

#undef FIELD
#undef INT
#undef REAL
#undef TEXT
#undef SWITCH
#undef CHOICE
#undef SAME
#undef RESUME

// The defaults --arch changes, in one place: a Transformer trains the toy
// recipe of docs/models.md unless told otherwise (d_model follows --hidden,
// the feed-forward width 4 d_model: models/config.c). The GRU's are the rows' own.
const ts_arch_default ts_arch_defaults[] = {
    {TS_ARCH_TRANSFORMER, "hidden", "128"},
    {TS_ARCH_TRANSFORMER, "heads", "2"},
    {TS_ARCH_TRANSFORMER, "layers", "2"},
    {TS_ARCH_TRANSFORMER, "lr", "0.003"},
    {TS_ARCH_TRANSFORMER, "warmup-steps", "300"},
    {TS_ARCH_TRANSFORMER, "lr-schedule", "cosine"},
    {TS_ARCH_TRANSFORMER, "lr-decay", "1"},  // cosine alone: a plateau's halving on top decayed too far
    {TS_ARCH_TRANSFORMER, "epochs", "20"},    // 12 left seed 3 at 96.6% (docs/models.md)
    {TS_ARCH_TRANSFORMER, "patience", "20"},
};
const size_t ts_arch_defaults_count = sizeof ts_arch_defaults / sizeof ts_arch_defaults[0];

// The named recipes of --preset, each a measured run's flags (Marian's
// --task): docs/models.md has their figures. Row 0 is "no preset".
const ts_train_preset ts_train_presets[] = {
    {"none", NULL, ""},
    {"transformer-small",
     "the Tatoeba recipe: Transformer d 256, 4 heads, 2 layers, BPE 4000 a side,\n"
     "sentences of at most 10 tokens, 10 epochs (Tatoeba dev BLEU 0.31-0.35)",
     "--max-len 10 --arch transformer --hidden 256 --heads 4 --layers 2 --ff 1024 --dropout 0.1 "
     "--warmup-steps 400 --lr 0.001 --batch 64 --epochs 10 --lr-schedule plateau --lr-decay 0.5 "
     "--patience 3 --subword 4000"},
    {"gru-small",
     "the GRU on real data: Bahdanau attention, emb and hidden 256, words,\n"
     "sentences of at most 10 tokens, 10 epochs (Tatoeba dev BLEU 0.26-0.27)",
     "--max-len 10 --emb 256 --hidden 256 --batch 64 --epochs 10"},
};
const size_t ts_train_presets_count = sizeof ts_train_presets / sizeof ts_train_presets[0];

// Preset p's flags into o for each row not given[]; given[] marks them (so
// --arch's defaults leave them alone). A bad flag in the table: TS_ERR_ARG.
static int apply_preset(ts_train_opts *o, const ts_train_preset *p, int given[]) {
    char words[512];
    if (snprintf(words, sizeof words, "%s", p->flags) >= (int)sizeof words)
        return ts_fail(TS_ERR_ARG, "preset %s: its flags are too long", p->name);
    char *save = NULL;
    for (char *word = strtok_r(words, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        const ts_train_option *r = strncmp(word, "--", 2) ? NULL : ts_train_option_by_flag(word + 2);
        if (!r || r->kind == TS_OPTION_TEXT)  // a preset names no file: its texts would not outlive this call
            return ts_fail(TS_ERR_ARG, "preset %s: '%s' is not a flag it can set", p->name, word);
        const char *value = r->kind == TS_OPTION_SWITCH ? "1" : strtok_r(NULL, " ", &save);
        if (!value) return ts_fail(TS_ERR_ARG, "preset %s: %s has no value", p->name, word);
        size_t i = (size_t)(r - ts_train_options);
        if (given[i]) continue;
        int rc = ts_train_option_set(o, r, word, value);
        if (rc) return ts_fail(rc, "preset %s: %s", p->name, ts_last_error());
        given[i] = 1;
    }
    return TS_OK;
}

void *ts_train_option_field(ts_train_opts *o, const ts_train_option *r) { return (char *)o + r->offset; }

static const void *field_of(const ts_train_opts *o, const ts_train_option *r) { return (const char *)o + r->offset; }

// An INT or SWITCH row's value.
static long whole(const ts_train_opts *o, const ts_train_option *r) {
    return r->size == sizeof(long) ? *(const long *)field_of(o, r) : *(const int *)field_of(o, r);
}

static double real(const ts_train_opts *o, const ts_train_option *r) { return *(const double *)field_of(o, r); }

// A TEXT row's value as files spell it (NULL: `absent`, else "").
static const char *text(const ts_train_opts *o, const ts_train_option *r) {
    const char *value = *(const char *const *)field_of(o, r);
    return value ? value : r->absent ? r->absent : "";
}

void ts_train_option_set_whole(ts_train_opts *o, const ts_train_option *r, long v) {
    if (r->size == sizeof(long)) *(long *)ts_train_option_field(o, r) = v;
    else *(int *)ts_train_option_field(o, r) = (int)v;
}

ts_train_opts ts_train_defaults(void) {
    ts_train_opts o = {.out = stdout, .log = stderr};
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (r->use & TS_OPTION_NOW) continue;  // the --lr row has the default
        switch (r->kind) {
        case TS_OPTION_INT:
        case TS_OPTION_SWITCH: ts_train_option_set_whole(&o, r, (long)r->value); break;
        case TS_OPTION_REAL: *(double *)ts_train_option_field(&o, r) = r->value; break;
        case TS_OPTION_TEXT: *(const char **)ts_train_option_field(&o, r) = r->text; break;
        case TS_OPTION_CHOICE: r->parse(&o, r->text); break;  // the table's own names: cannot fail
        }
    }
    return o;
}

// Two rows in a row with one flag take "N|FILE" (--dev): a whole number is
// the first row's, anything else the second's.
static int count_or_text(const ts_train_option *r) {
    return r->flag && r + 1 < ts_train_options + ts_train_options_count && r[1].flag && !strcmp(r[1].flag, r->flag);
}

int ts_train_option_set(ts_train_opts *o, const ts_train_option *r, const char *name, const char *text) {
    void *field = ts_train_option_field(o, r);
    char *end;
    errno = 0;
    switch (r->kind) {
    case TS_OPTION_INT: {
        long v = strtol(text, &end, 10);
        if (end == text || *end || errno) {
            if (count_or_text(r)) {  // --dev FILE
                *(const char **)ts_train_option_field(o, r + 1) = text;
                ts_train_option_set_whole(o, r, 0);
                return TS_OK;
            }
            return ts_fail(TS_ERR_ARG, "%s expects a whole number, got '%s'", name, text);
        }
        if (v < r->lo || v > r->hi)
            return ts_fail(TS_ERR_ARG, "%s is %ld, outside %.0f..%.0f", name, v, r->lo, r->hi);
        ts_train_option_set_whole(o, r, v);
        if (count_or_text(r)) *(const char **)ts_train_option_field(o, r + 1) = NULL;
        return TS_OK;
    }
    case TS_OPTION_REAL: {
        double v = strtod(text, &end);
        if (end == text || *end || !isfinite(v))
            return ts_fail(TS_ERR_ARG, "%s expects a number, got '%s'", name, text);
        if (v < r->lo || v > r->hi) return ts_fail(TS_ERR_ARG, "%s is %g, outside %g..%g", name, v, r->lo, r->hi);
        *(double *)field = v;
        return TS_OK;
    }
    case TS_OPTION_TEXT: *(const char **)field = text; return TS_OK;
    case TS_OPTION_SWITCH:
        if (strcmp(text, "0") && strcmp(text, "1")) return ts_fail(TS_ERR_ARG, "%s is 0 or 1, got '%s'", name, text);
        *(int *)field = text[0] == '1';
        return TS_OK;
    case TS_OPTION_CHOICE: {
        int rc = r->parse(o, text);
        return rc ? ts_fail(rc, "%s: %s", name, ts_last_error()) : TS_OK;
    }
    }
    return ts_fail(TS_ERR_ARG, "%s: an option of unknown kind", name);
}

int ts_train_options_finish(ts_train_opts *o, const int given[], char default_out[TS_RUN_NAME_SIZE]) {
    int set[TS_TRAIN_OPTIONS_MAX];  // given, or set by the preset
    memcpy(set, given, sizeof(int) * ts_train_options_count);
    if ((size_t)o->preset >= ts_train_presets_count) return ts_fail(TS_ERR_ARG, "preset %d does not exist", o->preset);
    int rc = apply_preset(o, &ts_train_presets[o->preset], set);
    if (rc) return rc;
    for (size_t i = 0; i < ts_arch_defaults_count; i++) {
        const ts_arch_default *d = &ts_arch_defaults[i];
        const ts_train_option *r = ts_train_option_by_flag(d->flag);
        if (d->arch != o->model.arch || !r || set[r - ts_train_options]) continue;
        if ((rc = ts_train_option_set(o, r, d->flag, d->value))) return rc;
    }
    // --attn bahdanau goes with the Bahdanau decoder, the others with Luong's.
    if (!set[ts_train_option_by_flag("decoder") - ts_train_options])
        o->model.decoder = o->model.attn == TS_ATTN_BAHDANAU ? TS_DECODER_BAHDANAU : TS_DECODER_LUONG;
    if (!o->out_dir) {
        time_t now = time(NULL);
        struct tm tm;
        strftime(default_out, TS_RUN_NAME_SIZE, "runs/%Y%m%d-%H%M%S", localtime_r(&now, &tm));
        o->out_dir = default_out;
    }
    return TS_OK;
}

const ts_train_option *ts_train_option_by_flag(const char *flag) {
    for (size_t i = 0; i < ts_train_options_count; i++)
        if (ts_train_options[i].flag && !strcmp(ts_train_options[i].flag, flag)) return &ts_train_options[i];
    return NULL;
}

const ts_train_option *ts_train_option_by_key(const char *key) {
    for (size_t i = 0; i < ts_train_options_count; i++)
        if (ts_train_options[i].key && ts_train_options[i].flag && !strcmp(ts_train_options[i].key, key))
            return &ts_train_options[i];
    return NULL;
}

const char *ts_train_option_label(const ts_train_option *r, char buf[64]) {
    if (!r->flag) return r->name;
    snprintf(buf, 64, "--%s", r->flag);
    return buf;
}

const char *ts_train_option_format(const ts_train_opts *o, const ts_train_option *r, char buf[32]) {
    switch (r->kind) {
    case TS_OPTION_INT:
    case TS_OPTION_SWITCH: snprintf(buf, 32, "%ld", whole(o, r)); return buf;
    case TS_OPTION_REAL: return ts_format_exact(buf, real(o, r));
    case TS_OPTION_TEXT: return text(o, r);
    case TS_OPTION_CHOICE: return r->name_of(o);
    }
    return "";
}

void ts_train_options_write_config(FILE *f, const ts_train_opts *o) {
    char buf[32];
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->key || ((r->use & TS_OPTION_TOY_ONLY) && o->data.corpus) || ((r->use & TS_OPTION_SUBWORD_ONLY) && !o->data.subword))
            continue;
        if (r->kind == TS_OPTION_TEXT && !*(const char *const *)field_of(o, r) && !r->absent) continue;
        if ((r->use & TS_OPTION_IF_GIVEN) && whole(o, r) == 0) continue;
        fprintf(f, "%s = %s\n", r->key, ts_train_option_format(o, r, buf));
    }
}

int ts_train_options_save(ts_ckpt *ck, const ts_train_opts *o, double lr_now) {
    int rc = TS_OK;
    for (size_t i = 0; !rc && i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->saved_as || (r->use & TS_OPTION_IN_MODEL) || ((r->use & TS_OPTION_SUBWORD_ONLY) && !o->data.subword)) continue;
        // A newer row only written when given is absent at 0, as in a checkpoint from before it
        // (which OLDER reads as 0): checkpoints of runs that do not use it keep their bytes.
        const unsigned newer = TS_OPTION_IF_GIVEN | TS_OPTION_OLDER;
        if ((r->use & newer) == newer && (r->kind == TS_OPTION_INT || r->kind == TS_OPTION_CHOICE) && whole(o, r) == 0)
            continue;
        switch (r->kind) {
        case TS_OPTION_INT:
        case TS_OPTION_SWITCH: rc = ts_ckpt_set_int(ck, r->saved_as, whole(o, r)); break;
        case TS_OPTION_REAL: rc = ts_ckpt_set_double(ck, r->saved_as, r->use & TS_OPTION_NOW ? lr_now : real(o, r)); break;
        case TS_OPTION_TEXT: rc = ts_ckpt_set(ck, r->saved_as, text(o, r)); break;
        case TS_OPTION_CHOICE: rc = ts_ckpt_set(ck, r->saved_as, r->name_of(o)); break;
        }
    }
    return rc;
}

// Row r of checkpoint ck against o: TS_OK when they agree.
static int compare_row(const ts_ckpt *ck, const ts_train_opts *o, const ts_train_option *r) {
    char label[64];
    const char *flag = ts_train_option_label(r, label);
    int older = r->use & TS_OPTION_OLDER, rc;
    // An older checkpoint without the row trained with 0 or "".
    const char *present;
    if (older && ts_ckpt_get_string(ck, r->saved_as, &present) != TS_OK) {
        ts_clear_error();
        if (r->kind == TS_OPTION_INT && whole(o, r) != 0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s 0; this run asks for %ld (resuming must keep the flags)",
                           o->resume, flag, whole(o, r));
        if (r->kind == TS_OPTION_REAL && real(o, r) != 0.0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %g; this run asks for %g (resuming must keep the flags)",
                           o->resume, flag, 0.0, real(o, r));
        if (r->kind == TS_OPTION_TEXT && *text(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s ''; this run asks for '%s' (resuming must keep the flags)",
                           o->resume, flag, text(o, r));
        // An older choice's default is its value 0 (plateau): what the checkpoint trained with.
        if (r->kind == TS_OPTION_CHOICE && whole(o, r) != 0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s '%s'; this run asks for '%s' (resuming must keep the flags)",
                           o->resume, flag, r->text, r->name_of(o));
        return TS_OK;
    }
    if (r->kind == TS_OPTION_INT || r->kind == TS_OPTION_SWITCH) {
        int64_t saved;
        if ((rc = ts_ckpt_get_int(ck, r->saved_as, INT64_MIN, INT64_MAX, &saved))) return rc;
        if (saved != whole(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %lld; this run asks for %ld (resuming must keep the flags)",
                           o->resume, flag, (long long)saved, whole(o, r));
        return TS_OK;
    }
    if (r->kind == TS_OPTION_REAL) {
        double saved;
        if ((rc = ts_ckpt_get_double(ck, r->saved_as, -INFINITY, INFINITY, &saved))) return rc;
        if (saved != real(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %g; this run asks for %g (resuming must keep the flags)",
                           o->resume, flag, saved, real(o, r));
        return TS_OK;
    }
    const char *saved, *now = r->kind == TS_OPTION_CHOICE ? r->name_of(o) : text(o, r);
    if ((rc = ts_ckpt_get_string(ck, r->saved_as, &saved))) return rc;
    if (strcmp(saved, now))
        return ts_fail(TS_ERR_ARG, "%s was trained with %s '%s'; this run asks for '%s' (resuming must keep the flags)",
                       o->resume, flag, saved, now);
    return TS_OK;
}

int ts_train_options_compare(const ts_ckpt *ck, const ts_train_opts *o) {
    static const int pass_of[] = {[TS_OPTION_INT] = 0, [TS_OPTION_SWITCH] = 0, [TS_OPTION_REAL] = 1,
                                  [TS_OPTION_TEXT] = 2, [TS_OPTION_CHOICE] = 2};
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < ts_train_options_count; i++) {
            const ts_train_option *r = &ts_train_options[i];
            if (!(r->use & TS_OPTION_RESUME) || pass_of[r->kind] != pass) continue;
            if ((r->use & TS_OPTION_SUBWORD_ONLY) && !o->data.subword) continue;  // --subword's row refuses a subword checkpoint
            int rc = compare_row(ck, o, r);
            if (rc) return rc;
        }
    return TS_OK;
}

int ts_train_options_check_ranks(const ts_train_opts *o, ts_dist *d) {
    enum { N = TS_TRAIN_OPTIONS_MAX };
    char numbers[N][32], labels[N][64];
    const char *what[N], *values[N];
    int n = 0;
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!(r->use & TS_OPTION_SAME_RANKS)) continue;
        what[n] = ts_train_option_label(r, labels[n]);
        values[n] = ts_train_option_format(o, r, numbers[n]);
        n++;
    }
    return ts_dist_check_same(d, what, values, n);
}

int ts_train_options_check_parts(const ts_train_opts *o, int ranks) {
    if (o->threads < 0 || o->threads > TS_MAX_THREADS)
        return ts_fail(TS_ERR_ARG, "--threads must be between 1 and %d, got %ld", TS_MAX_THREADS, o->threads);
    if (o->accumulate < 1 || o->accumulate > o->batch || ranks * o->accumulate > o->batch)
        return ts_fail(TS_ERR_ARG, "--batch %ld cannot be cut into %ld parts (%d rank%s x --accumulate %ld): each needs a "
                       "sentence; give --batch %ld or more", o->batch, ranks * o->accumulate, ranks,
                       ranks > 1 ? "s" : "", o->accumulate, ranks * o->accumulate);
    return TS_OK;
}

// The 1-2-5 number nearest to x (at least 1): --log-every's default, so the
// rows fall on round steps (20, 50, 100).
static long round_count(double x) {
    long best = 1;
    for (long mag = 1; mag <= TS_COUNT_MAX / 10; mag *= 10)
        for (int k = 0; k < 3; k++) {
            long v = mag * (k == 0 ? 1 : k == 1 ? 2 : 5);
            if (fabs((double)v - x) < fabs((double)best - x)) best = v;
        }
    return best;
}

long ts_train_log_every(const ts_train_opts *o, size_t batches_per_epoch) {
    return o->log_every > 0 ? o->log_every : round_count((double)batches_per_epoch / 20);
}
