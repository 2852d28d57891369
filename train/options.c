// The training options table (train/options.h): a row per field of
// ts_train_opts, with --best's names and the named recipes of --preset. The
// walks over it that its consumers share: a row's value read, set and
// formatted, the defaults (options_value.c); the options given completed and
// checked, config.txt's lines (options_finish.c); the checkpoint's rows and
// their resume check (options_ckpt.c).
#include "train/options.h"

#include "data/toy.h"
#include "models/fields.h"
#include "models/search.h"  // TS_BEAM_DEFAULT

#include <stddef.h>
#include <string.h>

static const char *best_name(int by) { return by >= 0 && by < TS_BEST_COUNT ? (const char *[]){"bleu", "loss"}[by] : NULL; }
const ts_names ts_best_names = {.what = "criterion", .count = TS_BEST_COUNT, .name = best_name};

const char *ts_best_name(ts_best_by by) { return best_name((int)by); }

int ts_best_parse(const char *text, ts_best_by *by) {
    int v, rc = ts_names_parse(&ts_best_names, text, &v);
    if (!rc) *by = (ts_best_by)v;
    return rc;
}

// A row's field: its place, its size and its kind.
#define FIELD(f) .offset = offsetof(ts_train_opts, f), .size = sizeof(((ts_train_opts *)0)->f)
#define SET(...) .set = &(const ts_setting){__VA_ARGS__}
#define INT(f) .kind = TS_OPTION_INT, FIELD(f)
#define REAL(f) .kind = TS_OPTION_REAL, FIELD(f)
#define TEXT(f) .kind = TS_OPTION_TEXT, FIELD(f)
#define SWITCH(f) .kind = TS_OPTION_SWITCH, FIELD(f)
#define CHOICE(f) .kind = TS_OPTION_CHOICE, FIELD(f)
// A field of the model: its setting is its row's (models/config.c).
#define MODEL(f, F, k) .set = &ts_model_fields[TS_FIELD_##F].set, .kind = TS_OPTION_##k, FIELD(model.f)
#define SAME TS_OPTION_SAME_RANKS
#define RESUME TS_OPTION_RESUME

// The order is config.txt's and the checkpoint's (their bytes follow it);
// the usage lists each section's rows in this order.
const ts_train_option ts_train_options[] = {
    // data
    {SET(.flag = "corpus", .key = "corpus", .meta = "FILE",
         .help = "tab-separated pairs: source<TAB>target[<TAB>ignored]"),
     .saved_as = "data.corpus", TEXT(data.corpus), .absent = "toy", .use = SAME, .section = "data"},
    {SET(.flag = "toy-pairs", .key = "toy_pairs", .lo = 10, .hi = 10000000, .value = TS_TOY_PAIRS, .meta = "N",
         .help = "size of the toy corpus (default {})"),
     .saved_as = "data.toy_pairs", INT(data.toy_pairs), .use = SAME | RESUME | TS_OPTION_TOY_ONLY, .section = "data"},
    {SET(.lo = 0, .hi = 0, .value = TS_TOY_SEED),
     .name = "toy seed", .saved_as = "data.toy_seed", INT(data.toy_seed), .use = SAME | RESUME},
    {SET(.flag = "max-len", .key = "max_len", .lo = 1, .hi = 100000, .value = 0, .meta = "N",
         .help = "keep pairs with at most N tokens per side (default: no limit)"),
     .saved_as = "data.max_len", INT(data.max_len), .use = SAME | RESUME | TS_OPTION_IN_MODEL, .section = "data"},
    {SET(.flag = "dev", .key = "dev", .lo = 1, .hi = 10000000, .value = 0, .meta = "N|FILE",
         .help = "dev pairs held out (default: 500 or a tenth of the corpus, whichever is\n"
                 "fewer), or a TSV file to use as the dev set (then nothing is held out)"),
     .saved_as = "data.dev_pairs", INT(data.dev_pairs), .use = SAME | RESUME | TS_OPTION_IF_GIVEN, .section = "data"},
    {SET(.flag = "dev", .key = "dev"),
     .saved_as = "data.dev_file", TEXT(data.dev_file), .use = SAME | RESUME | TS_OPTION_OLDER},
    {SET(.flag = "test", .key = "test", .meta = "FILE",
         .help = "a TSV file the final model is evaluated on (a \"test:\" line at the end)"),
     TEXT(data.test_file), .use = SAME, .section = "data"},
    {SET(.flag = "min-count", .key = "min_count", .lo = 1, .hi = 1000000, .value = 1, .meta = "N",
         .help = "vocabulary: words seen at least N times (default {})"),
     .saved_as = "data.min_count", INT(data.min_count), .use = SAME | RESUME, .section = "data"},
    {SET(.flag = "skip-bad", .key = "skip_bad",
         .help = "skip malformed corpus lines (named by number) instead of stopping"),
     .saved_as = "data.skip_bad", SWITCH(data.skip_bad), .use = SAME | RESUME, .section = "data"},
    // A subword run's files have its rows (a word-level run's keep their bytes).
    {SET(.flag = "subword", .key = "subword", .lo = 0, .hi = TS_SUBWORD_MAX_VOCAB, .value = 0, .meta = "N",
         .help = "train on subword pieces: SentencePiece models of at most N pieces each\n"
                 "(300 or more), learned on the training pairs and stored in the checkpoint;\n"
                 "no word is then unknown (default 0: words; docs/data.md)"),
     .saved_as = "data.subword", INT(data.subword), .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN,
     .section = "data"},
    {SET(.flag = "subword-kind", .key = "subword_kind", .text = "bpe", .names = &ts_subword_kind_names, .meta = "NAME",
         .help = "--subword: bpe or unigram (default {})"),
     .saved_as = "data.subword_kind", CHOICE(data.subword_kind), .use = SAME | RESUME | TS_OPTION_SUBWORD_ONLY,
     .section = "data"},
    {SET(.flag = "subword-joint", .key = "subword_joint",
         .help = "--subword: one model for both sides (default: one per side)"),
     .saved_as = "data.subword_joint", SWITCH(data.subword_joint), .use = SAME | RESUME | TS_OPTION_SUBWORD_ONLY,
     .section = "data"},
    // The checkpoint has it with the model (infer/load.c), config.txt only when not the default.
    {SET(.flag = "normalisation", .key = "normalisation", .text = "nfc-lowercase-punct-split",
         .names = &ts_normalisation_names, .meta = "NAME",
         .help = "how text is read: nfc-lowercase-punct-split (lowercased, . ! ? , ; : split\n"
                 "off: the words a word vocabulary needs) or nfc (the text as written, case\n"
                 "and punctuation kept: --subword models, which then write cased text)\n"
                 "(default {}; docs/data.md)"),
     .saved_as = "data.normalisation", CHOICE(data.normalisation),
     .use = SAME | RESUME | TS_OPTION_IN_MODEL | TS_OPTION_IF_GIVEN, .section = "data"},
    // model
    // The architecture and the Transformer's sizes: config.txt has them only when given (a GRU run's file
    // stays as it was); the checkpoint has them with the model.
    // A preset fills the rows not given (ts_train_options_finish); config.txt names it only when given.
    {SET(.flag = "preset", .key = "preset", .text = "none", .names = &ts_train_preset_names, .meta = "NAME",
         .help = "a named recipe: its flags, below, fill in what the command line and\n"
                 "--config do not give (flags given win)"),
     CHOICE(preset), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(arch, ARCH, CHOICE), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(d_model, D_MODEL, INT), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(heads, HEADS, INT), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(layers, LAYERS, INT), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(ff, FF, INT), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(attn, ATTN, CHOICE), .use = SAME, .section = "model"},
    {MODEL(decoder, DECODER, CHOICE), .use = SAME, .section = "model"},
    {MODEL(bidirectional, BIDIRECTIONAL, SWITCH), .use = SAME, .section = "model"},
    // config.txt has the cell only when it is not the GRU: a GRU run's file stays as it was.
    {MODEL(cell, CELL, CHOICE), .use = SAME | TS_OPTION_IF_GIVEN, .section = "model"},
    {MODEL(dtype, DTYPE, CHOICE), .use = SAME, .section = "model"},
    // A Transformer stores --emb with its model but never reads it (its embeddings are d_model wide).
    {MODEL(emb, EMB, INT), .use = SAME, .section = "model"},
    {MODEL(hidden, HIDDEN, INT), .use = SAME, .section = "model"},
    // training
    {SET(.flag = "optim", .key = "optimizer", .text = "adam", .names = &ts_optim_names, .meta = "NAME",
         .help = "adam, sgd with momentum 0.9, or adamw: Adam with decoupled weight decay\n"
                 "(--weight-decay), as torch.optim.AdamW (default {})"),
     .saved_as = "train.optimizer", CHOICE(optim), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "weight-decay", .key = "weight_decay", .lo = 0, .hi = 100, .value = TS_OPTIM_WEIGHT_DECAY, .meta = "X",
         .help = "--optim adamw: each step first multiplies the weights by 1 - lr X\n"
                 "(default {}, torch's; other optimizers refuse it)"),
     .saved_as = "train.weight_decay", REAL(weight_decay), .use = SAME | RESUME | TS_OPTION_DECAY_ONLY,
     .section = "training"},
    {SET(.lo = 0, .hi = 0, .value = 0),
     .saved_as = "train.lr", .name = "learning rate now", REAL(lr), .use = TS_OPTION_NOW},
    {SET(.flag = "lr", .key = "lr", .lo = 1e-12, .hi = 100, .value = 3e-3, .meta = "X",
         .help = "learning rate (default {})"),
     .saved_as = "train.lr_initial", REAL(lr), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "clip", .key = "clip", .lo = 0, .hi = 1e12, .value = 5, .meta = "X",
         .help = "clip the global gradient norm at X (default {}; 0: off)"),
     .saved_as = "train.clip", REAL(clip), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "tf", .key = "tf", .lo = 0, .hi = 1, .value = 1, .meta = "RATIO",
         .help = "teacher-forcing ratio in [0, 1] (default {})"),
     .saved_as = "train.tf", REAL(tf), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "dropout", .key = "dropout", .lo = 0, .hi = 0.99, .value = 0, .meta = "P",
         .help = "dropout on embeddings, encoder outputs and the pre-output layer,\nin [0, 0.99] (default {}; docs/models.md)"),
     .saved_as = "train.dropout", REAL(dropout), .use = SAME | RESUME | TS_OPTION_OLDER, .section = "training"},
    {SET(.flag = "label-smoothing", .key = "label_smoothing", .lo = 0, .hi = 0.99, .value = 0.1, .meta = "E",
         .help = "PyTorch's label smoothing in [0, 0.99] (default {}); the reported\n"
                 "losses and perplexity stay plain cross-entropy"),
     .saved_as = "train.label_smoothing", REAL(label_smoothing), .use = SAME | RESUME | TS_OPTION_OLDER,
     .section = "training"},
    // Guided alignment: off unless given with a weight above 0 (train/guided.h).
    {SET(.flag = "guided-alignment", .key = "guided_alignment", .meta = "GOLD",
         .help = "guided alignment: also train one attention head towards the gold links of\n"
                 "GOLD, a Pharaoh file (\"0-0 1-2\", source-target) with one line per pair\n"
                 "of --corpus, or `toy`: the toy corpus's own links (docs/attention.md)"),
     .saved_as = "train.guided_alignment", TEXT(guided_alignment), .use = SAME | RESUME | TS_OPTION_GUIDED_ONLY,
     .section = "training"},
    {SET(.flag = "guided-weight", .key = "guided_weight", .lo = 0, .hi = 1000, .value = TS_GUIDED_WEIGHT, .meta = "W",
         .help = "the weight of --guided-alignment's loss (default {}; 0: off)"),
     .saved_as = "train.guided_weight", REAL(guided_weight), .use = SAME | RESUME | TS_OPTION_GUIDED_ONLY, .section = "training"},
    {SET(.flag = "guided-layer", .key = "guided_layer", .lo = -1, .hi = TS_MODEL_MAX_LAYERS - 1, .value = -1, .meta = "L",
         .help = "transformer: the guided head's decoder layer (default {}: the penultimate)"),
     .saved_as = "train.guided_layer", INT(guided_layer), .use = SAME | RESUME | TS_OPTION_GUIDED_ONLY,
     .section = "training"},
    {SET(.flag = "guided-head", .key = "guided_head", .lo = -1, .hi = TS_MODEL_MAX_HIDDEN - 1, .value = -1, .meta = "K",
         .help = "transformer: the head of that layer that is guided (default {}: head 0)"),
     .saved_as = "train.guided_head", INT(guided_head), .use = SAME | RESUME | TS_OPTION_GUIDED_ONLY, .section = "training"},
    {SET(.flag = "batch", .key = "batch", .lo = 1, .hi = 100000, .value = 32, .meta = "N",
         .help = "sentences per batch (default {}); under mpirun the batch of all the\n"
                 "ranks together: the same flags train the same model on any number"),
     .saved_as = "train.batch", INT(batch), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "accumulate", .key = "accumulate", .lo = 1, .hi = 100000, .value = 1, .meta = "K",
         .help = "run each batch as K parts one after another, summing their gradients,\n"
                 "then one update: the same update with about 1/K of the activation\n"
                 "memory, so a batch K times larger than fits (default {})"),
     INT(accumulate), .use = SAME, .section = "training"},
    {SET(.flag = "epochs", .key = "epochs", .lo = 1, .hi = TS_MAX_EPOCHS, .value = 5, .meta = "N",
         .help = "epochs (default {})"),
     INT(epochs), .use = SAME, .section = "training"},
    {SET(.flag = "steps", .key = "steps", .lo = 1, .hi = 1000000000, .value = 0, .meta = "N",
         .help = "stop after N optimizer steps in all, counting those before --resume"),
     INT(steps), .use = SAME, .section = "training"},
    {SET(.flag = "lr-decay", .key = "lr_decay", .lo = 1e-6, .hi = 1, .value = 0.5, .meta = "X",
         .help = "multiply the learning rate by X when dev loss does not improve (default {})"),
     .saved_as = "train.lr_decay", REAL(lr_decay), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "warmup-steps", .key = "warmup_steps", .lo = 0, .hi = 1000000000, .value = 0, .meta = "N",
         .help = "raise the learning rate linearly over the first N steps: step k uses\n"
                 "lr min(1, k / N), as Transformers need (default {}: none)"),
     .saved_as = "train.warmup_steps", INT(warmup_steps), .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN,
     .section = "training"},
    {SET(.flag = "lr-schedule", .key = "lr_schedule", .text = "plateau", .names = &ts_lr_schedule_names, .meta = "NAME",
         .help = "the learning rate after the warmup: plateau (only --lr-decay), inverse-sqrt\n"
                 "(sqrt(N / k), N the warmup's steps), cosine or linear (down to 0 at the\n"
                 "last step of --epochs or --steps) (default {}; --lr-decay applies to all)"),
     .saved_as = "train.lr_schedule", CHOICE(lr_schedule), .use = SAME | RESUME | TS_OPTION_OLDER | TS_OPTION_IF_GIVEN,
     .section = "training"},
    {SET(.flag = "patience", .key = "patience", .lo = 1, .hi = 100000, .value = 3, .meta = "N",
         .help = "stop after N epochs without a better dev loss (default {})"),
     .saved_as = "train.patience", INT(patience), .use = SAME | RESUME, .section = "training"},
    {SET(.flag = "seed", .key = "seed", .lo = 0, .hi = 2147483647L, .value = 1, .meta = "N",
         .help = "initialisation, split, shuffling and teacher forcing (default {})"),
     .saved_as = "train.seed", INT(seed), .use = SAME | RESUME, .section = "training"},
    // --threads changes no result: each machine may want its own.
    {SET(.flag = "threads", .lo = 1, .hi = TS_MAX_THREADS, .value = 0, .meta = "N",
         .help = "BLAS threads, 1 to 64 (default: OPENBLAS_NUM_THREADS, else one per 42 M\n"
                 "of parameters x --batch, 2 to the cores; under mpirun, the machine's\n"
                 "cores are first shared among its ranks)"),
     INT(threads), .section = "training"},
    // output
    {SET(.flag = "out", .meta = "DIR",
         .help = "where everything is written (default runs/<date-time>, or with --resume\n"
                 "the checkpoint's own directory); it holds one run: a new run into a\n"
                 "directory holding one is refused without --force"),
     TEXT(out_dir), .use = SAME, .section = "output"},
    {SET(.flag = "resume", .meta = "CKPT",
         .help = "continue a run exactly from its last.ckpt (same data and flags); into\n"
                 "the checkpoint's own directory, metrics.csv continues where it stopped"),
     TEXT(resume), .use = SAME, .section = "output"},
    {SET(.flag = "force", .help = "start over in an --out holding a run: deletes that run's checkpoints,\n"
                                  "metrics.csv, config.txt and figures (nothing else)"),
     SWITCH(force), .use = SAME, .section = "output"},
    {SET(.flag = "show", .lo = 0, .hi = 1000, .value = 4, .meta = "N",
         .help = "dev examples printed at the end (default {})"),
     INT(show), .use = SAME, .section = "output"},
    {SET(.flag = "best", .key = "best", .text = "bleu", .names = &ts_best_names, .meta = "WHAT",
         .help = "what chooses best.ckpt among the dev evaluations: bleu (dev BLEU of\n"
                 "greedy search; ties by dev loss) or loss (dev loss) (default {}); the\n"
                 "learning rate and early stopping follow the epochs' dev loss either way"),
     CHOICE(best), .use = SAME, .section = "output"},
    {SET(.flag = "keep", .key = "keep", .lo = 0, .hi = 1000, .value = 0, .meta = "N",
         .help = "also keep the last N epochs' models as DIR/epoch-<E>.ckpt (for\ntinyseq average; default {}: none)"),
     INT(keep), .use = SAME, .section = "output"},
    {SET(.flag = "beam", .key = "beam", .lo = 0, .hi = TS_BEAM_MAX, .value = TS_BEAM_DEFAULT, .meta = "K",
         .help = "the final dev (and --test) evaluation also decodes with beam K,\n"
                 "as tinyseq eval --beam K would (default {}; 0: the default too;\n"
                 "1: greedy only)"),
     INT(beam), .use = SAME, .section = "output"},
    // --log-every and --eval-every change what the run directory records, never
    // what is computed: a continued run may change them (no checkpoint row).
    {SET(.flag = "log-every", .key = "log_every", .lo = 1, .hi = 1000000000, .value = 0, .meta = "N",
         .help = "the training loss into DIR/steps.csv every N steps (default: about 20\n"
                 "rows an epoch, a round N), at each epoch's end and where the run stops"),
     INT(log_every), .use = SAME, .section = "output"},
    {SET(.flag = "eval-every", .key = "eval_every", .lo = 1, .hi = 1000000000, .value = 0, .meta = "N",
         .help = "also evaluate dev every N steps inside an epoch, recorded and offered\n"
                 "to best.ckpt like the epochs' evaluations (default: at each epoch's\n"
                 "end only; the learning rate and early stopping follow the epochs' alone)"),
     INT(eval_every), .use = SAME, .section = "output"},
    {SET(.lo = 0, .hi = 0, .value = 3),
     .name = "warm-up steps", INT(warmup), .use = SAME},
};
const size_t ts_train_options_count = sizeof ts_train_options / sizeof ts_train_options[0];
_Static_assert(sizeof ts_train_options / sizeof ts_train_options[0] < TS_TRAIN_OPTIONS_MAX, "raise TS_TRAIN_OPTIONS_MAX");

#undef FIELD
#undef SET
#undef MODEL
#undef INT
#undef REAL
#undef TEXT
#undef SWITCH
#undef CHOICE
#undef SAME
#undef RESUME


// The named recipes of --preset, each a measured run's flags (Marian's
// --task): docs/models.md has their figures. Row 0 is "no preset".
const ts_train_preset ts_train_presets[] = {
    {"none", NULL, ""},
    {"transformer-small",
     "the Tatoeba recipe: Transformer d 256, 4 heads, 2 layers, BPE 4000 a side of the\n"
     "text as written (cased output), at most 10 words, 10 epochs (its BLEU: README)",
     "--max-len 10 --arch transformer --hidden 256 --heads 4 --layers 2 --ff 1024 --dropout 0.1 "
     "--warmup-steps 400 --lr 0.001 --batch 64 --epochs 10 --lr-schedule plateau --lr-decay 0.5 "
     "--patience 3 --subword 4000 --normalisation nfc"},
    {"gru-small",
     "the GRU on real data: Bahdanau attention, emb and hidden 256, words,\n"
     "sentences of at most 10 tokens, 10 epochs (Tatoeba dev BLEU 0.26-0.27)",
     "--max-len 10 --emb 256 --hidden 256 --batch 64 --epochs 10"},
};
const size_t ts_train_presets_count = sizeof ts_train_presets / sizeof ts_train_presets[0];

// The training recipe an architecture runs unless told otherwise (--arch
// NAME alone): its flags fill the rows that neither the command line,
// --config nor the preset set. A row per architecture that has one, by the
// architecture's name; one without (the GRU) trains the table's defaults.
const ts_train_preset ts_train_arch_recipes[] = {
    // The toy recipe of docs/models.md (d_model follows --hidden, the
    // feed-forward width 4 d_model). Its heads and layers are the row's own
    // defaults (models/transformer.c), named so that config.txt records them;
    // tests/test_options.c checks that the two agree. --lr-decay 1: cosine alone, a plateau's
    // halving on top decayed too far; 20 epochs: 12 left seed 3 at 96.6%.
    {"transformer", "the Transformer's toy recipe (docs/models.md)",
     "--hidden 128 --heads 2 --layers 2 --lr 0.003 --warmup-steps 300 --lr-schedule cosine --lr-decay 1 "
     "--epochs 20 --patience 20"},
};
const size_t ts_train_arch_recipes_count = sizeof ts_train_arch_recipes / sizeof ts_train_arch_recipes[0];

const ts_train_preset *ts_train_arch_recipe(ts_model_arch arch) {
    for (size_t i = 0; i < ts_train_arch_recipes_count; i++)
        if (!strcmp(ts_train_arch_recipes[i].name, ts_arch_name(arch))) return &ts_train_arch_recipes[i];
    return NULL;
}

static const char *preset_name(int i) { return ts_train_presets[i].name; }
const ts_names ts_train_preset_names = {.what = "preset", .count = sizeof ts_train_presets / sizeof ts_train_presets[0],
                                        .name = preset_name};
