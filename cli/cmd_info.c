// tinyseq info: what a checkpoint holds, in words and decimal numbers (or as
// JSON): the model configuration, vocabulary sizes, every parameter tensor
// with its shape and count, the training state, and the whole header. The file
// is loaded and checked exactly as translate loads it, so a hostile file gets
// the loader's errors; an inference-only checkpoint (no state.* keys) simply
// has no training state.
#include "cli/cli.h"
#include "cli/common.h"

#include "infer/load.h"
#include "models/fields.h"
#include "viz/render.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tinyseq info CKPT [--json]\n"
    "\n"
    "Prints what a checkpoint holds, with every number in decimal: the model\n"
    "configuration (a float32 model's dtype, and the dtype its weights are\n"
    "stored in), the vocabulary sizes, every parameter tensor with its shape\n"
    "and number of values, the training state (epoch, step, best dev loss,\n"
    "learning rate) when the checkpoint has one, and every header entry. The file\n"
    "is checked as translate loads it.\n"
    "\n"
    "  --json   print one JSON object instead (keys: file, model (its architecture's\n"
    "           fields as the checkpoint names them, and max_len), vocabularies,\n"
    "           parameters, parameter_count, training (null without a training\n"
    "           state), optimizer_tensors, header)\n"
    "\n"
    "Exit status: 0 ok, 1 unreadable or invalid checkpoint, 2 usage error.\n";

static const char *cmd = "tinyseq info";

// ---- numbers ------------------------------------------------------------------

// The shortest decimal text that reads back as exactly v (finite v).
static void shortest(char *text, size_t cap, double v) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(text, cap, "%.*g", digits, v);
        if (strtod(text, NULL) == v) return;
    }
}

// Header values the checkpoint writes as C99 hex floats (ts_ckpt_set_double).
static int is_hex_double(const char *s) {
    if (*s == '-') s++;
    return !strncmp(s, "0x", 2) || !strcmp(s, "inf") || !strcmp(s, "nan");
}

// A decimal integer that JSON reads exactly: -?(0|[1-9][0-9]*), at most 15 digits.
static int is_json_integer(const char *s) {
    if (*s == '-') s++;
    size_t n = strspn(s, "0123456789");
    return n >= 1 && n <= 15 && s[n] == '\0' && (s[0] != '0' || n == 1);
}

// ---- what is shown --------------------------------------------------------------

// The training state, from the header's state.* and train.* keys; each field
// is optional (has_*), and has_any is 0 for an inference-only checkpoint.
typedef struct {
    int has_any, has_epoch, has_step, has_best, has_lr;
    int64_t epoch, step;
    double best_dev_loss, lr;  // best_dev_loss is +inf before any dev evaluation
    const char *optimizer;     // NULL when absent
} training_state;

static int header_has(const ts_ckpt *ck, const char *key) {
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *k, *v;
        ts_ckpt_header_at(ck, i, &k, &v);
        if (!strcmp(k, key)) return 1;
    }
    return 0;
}

// Reads the fields that are present; a present field that does not parse is
// an error (TS_ERR_FORMAT naming the key).
static int read_training_state(const ts_ckpt *ck, training_state *s) {
    memset(s, 0, sizeof *s);
    int rc = TS_OK;
    if ((s->has_epoch = header_has(ck, "state.epoch")))
        rc = ts_ckpt_get_int(ck, "state.epoch", 0, INT64_MAX, &s->epoch);
    if (!rc && (s->has_step = header_has(ck, "state.step")))
        rc = ts_ckpt_get_int(ck, "state.step", 0, INT64_MAX, &s->step);
    if (!rc && (s->has_best = header_has(ck, "state.best_dev_loss")))
        rc = ts_ckpt_get_double(ck, "state.best_dev_loss", 0, INFINITY, &s->best_dev_loss);
    if (!rc && (s->has_lr = header_has(ck, "train.lr")))
        rc = ts_ckpt_get_double(ck, "train.lr", 0, INFINITY, &s->lr);
    if (!rc && header_has(ck, "train.optimizer")) rc = ts_ckpt_get_string(ck, "train.optimizer", &s->optimizer);
    s->has_any = s->has_epoch || s->has_step || s->has_best;
    return rc;
}

static size_t parameter_count(const ts_ckpt *ck) {
    size_t total = 0;
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++)
        total += ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i)->size;
    return total;
}

// The dtype every parameter is stored in, or -1 when they differ (an edited file).
static int stored_dtype(const ts_ckpt *ck) {
    int dtype = TS_F64;
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        int d = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i)->dtype;
        if (i > 0 && d != dtype) return -1;
        dtype = d;
    }
    return dtype;
}

// "201 x 8", "8", or "scalar".
static void shape_text(char *text, size_t cap, const ts_ckpt_tensor *t) {
    if (t->ndim == 0) {
        snprintf(text, cap, "scalar");
        return;
    }
    size_t at = 0;
    for (int d = 0; d < t->ndim && at < cap; d++)
        at += (size_t)snprintf(text + at, cap - at, d ? " x %zu" : "%zu", t->shape[d]);
}

// ---- text -------------------------------------------------------------------------

static void print_text(const char *path, const ts_ckpt *ck, const ts_translator *t, const training_state *s) {
    const ts_model_config *c = &t->model->cfg;
    char number[64];
    printf("checkpoint: %s\n", path);
    char model[256];
    printf("model: %s\n", ts_model_describe(c, model, sizeof model));
    int stored = stored_dtype(ck);
    if (c->dtype != TS_F64 || stored != TS_F64)  // float64 files keep their lines
        printf("dtype: %s, its weights stored as %s%s\n", ts_dtype_name(c->dtype),
               stored < 0 ? "float32 and float64" : ts_dtype_name(stored),
               stored == c->dtype ? "" : " (converted on loading)");
    printf("vocabularies: source %zu, target %zu (4 specials included in each)%s\n", ts_vocab_size(t->src_vocab),
           ts_vocab_size(t->tgt_vocab), t->src_sw ? ": SentencePiece subword pieces, the models in the checkpoint" : "");
    if (t->max_len > 0) printf("sentences: at most %d tokens per side in training\n", t->max_len);
    else printf("sentences: no length limit in training\n");

    size_t n_tensors = ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS);
    printf("\nparameters: %zu values in %zu tensors\n", parameter_count(ck), n_tensors);
    int name_width = 4;
    for (size_t i = 0; i < n_tensors; i++) {
        int n = (int)strlen(ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i)->name);
        if (n > name_width) name_width = n;
    }
    for (size_t i = 0; i < n_tensors; i++) {
        const ts_ckpt_tensor *p = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        char shape[96];
        shape_text(shape, sizeof shape, p);
        printf("  %-*s  %-14s %10zu\n", name_width, p->name, shape, p->size);
    }

    printf("\ntraining state: ");
    if (!s->has_any) {
        printf("none (an inference-only checkpoint)\n");
    } else {
        const char *sep = "";
        if (s->has_epoch) {
            printf("epoch %lld", (long long)s->epoch);
            sep = ", ";
        }
        if (s->has_step) {
            printf("%sstep %lld", sep, (long long)s->step);
            sep = ", ";
        }
        if (s->has_best) {
            if (isfinite(s->best_dev_loss)) shortest(number, sizeof number, s->best_dev_loss);
            printf("%sbest dev loss %s", sep, isfinite(s->best_dev_loss) ? number : "none yet");
            sep = ", ";
        }
        if (s->has_lr) {
            shortest(number, sizeof number, s->lr);
            printf("%slr %s", sep, number);
        }
        if (s->optimizer) printf(" (%s)", s->optimizer);
        printf("\n");
    }
    printf("optimizer tensors: %zu\n", ts_ckpt_tensor_count(ck, TS_CKPT_OPTIM));

    printf("\nheader (doubles in decimal):\n");
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        double v;
        if (is_hex_double(value) && !ts_ckpt_get_double(ck, key, -INFINITY, INFINITY, &v)) {
            if (isfinite(v)) shortest(number, sizeof number, v);
            else snprintf(number, sizeof number, "%s", v > 0 ? "inf" : "-inf");
            value = number;
        }
        // Header text may hold any byte but NUL and newline: keep the terminal safe.
        printf("  %s = ", key);
        for (const unsigned char *b = (const unsigned char *)value; *b; b++)
            if (*b < 0x20 || *b == 0x7f) printf("\\x%02x", *b);
            else putchar(*b);
        putchar('\n');
    }
}

// ---- JSON ---------------------------------------------------------------------------

// A double as a JSON value: shortest decimal, null when not finite.
static void json_double(double v) {
    char number[64];
    if (!isfinite(v)) {
        fputs("null", stdout);
        return;
    }
    shortest(number, sizeof number, v);
    fputs(number, stdout);
}

// Writes ", " (except before the first member) and "key": .
static void json_key(int *first, const char *key) {
    printf("%s\"%s\": ", *first ? "" : ", ", key);
    *first = 0;
}

static void print_json(const char *path, const ts_ckpt *ck, const ts_translator *t, const training_state *s) {
    const ts_model_config *c = &t->model->cfg;
    fputs("{\"file\": ", stdout);
    ts_render_json_string(stdout, path);
    // The fields of the model's architecture, as checkpoints name them (models/fields.h).
    fputs(", \"model\": {", stdout);
    for (int i = 0, first = 1; i < ts_model_field_count; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        if (!ts_model_field_applies(f, c->arch)) continue;
        json_key(&first, f->key);
        int value = ts_model_field_get(c, f);
        if (f->set.names) ts_render_json_string(stdout, ts_names_name(f->set.names, value));
        else printf("%d", value);
    }
    printf(", \"max_len\": %d},\n", t->max_len);
    printf(" \"vocabularies\": {\"source\": %zu, \"target\": %zu},\n", ts_vocab_size(t->src_vocab),
           ts_vocab_size(t->tgt_vocab));
    fputs(" \"parameters\": [", stdout);
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *p = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", stdout);
        ts_render_json_string(stdout, p->name);
        fputs(", \"shape\": [", stdout);
        for (int d = 0; d < p->ndim; d++) printf(d ? ", %zu" : "%zu", p->shape[d]);
        printf("], \"count\": %zu, \"dtype\": \"%s\"}", p->size, ts_dtype_name(p->dtype));
    }
    printf("],\n \"parameter_count\": %zu,\n \"training\": ", parameter_count(ck));
    if (!s->has_any) {
        fputs("null", stdout);
    } else {
        // Each field only when stored; "first" decides the comma.
        int first = 1;
        fputs("{", stdout);
        if (s->has_epoch) json_key(&first, "epoch"), printf("%lld", (long long)s->epoch);
        if (s->has_step) json_key(&first, "step"), printf("%lld", (long long)s->step);
        if (s->has_best) json_key(&first, "best_dev_loss"), json_double(s->best_dev_loss);
        if (s->has_lr) json_key(&first, "lr"), json_double(s->lr);
        if (s->optimizer) json_key(&first, "optimizer"), ts_render_json_string(stdout, s->optimizer);
        fputs("}", stdout);
    }
    printf(",\n \"optimizer_tensors\": %zu,\n \"header\": {", ts_ckpt_tensor_count(ck, TS_CKPT_OPTIM));
    int first = 1;
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        int repeated = 0;  // a JSON object keeps one value per key: the first
        for (size_t j = 0; j < i && !repeated; j++) {
            const char *earlier, *ignored;
            ts_ckpt_header_at(ck, j, &earlier, &ignored);
            repeated = !strcmp(earlier, key);
        }
        if (repeated) continue;
        fputs(first ? "\n  " : ",\n  ", stdout);
        first = 0;
        ts_render_json_string(stdout, key);
        fputs(": ", stdout);
        double v;
        if (is_hex_double(value) && !ts_ckpt_get_double(ck, key, -INFINITY, INFINITY, &v)) json_double(v);
        else if (is_json_integer(value)) fputs(value, stdout);
        else ts_render_json_string(stdout, value);
    }
    fputs("}}\n", stdout);
}

// ---- the command ----------------------------------------------------------------------

// The one CKPT argument.
static int take_path(void *context, const char *command, const char *arg) {
    const char **path = context;
    if (*path) {
        ts_cli_error(command, 0, "one checkpoint at a time: '%s' and '%s' (see %s --help)", *path, arg, command);
        return TS_EXIT_USAGE;
    }
    *path = arg;
    return -1;
}

int ts_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int json = 0;
    const ts_flag flags[] = {TS_SWITCH("json", &json)};
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = 1, .positional = take_path,
                        .context = &path};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    if (!path) {
        ts_cli_error(cmd, 0, "which checkpoint? usage: %s CKPT [--json]", cmd);
        return TS_EXIT_USAGE;
    }

    ts_ckpt *ck = NULL;
    ts_translator t;
    if (ts_ckpt_load(path, NULL, &ck) || ts_translator_from_ckpt(ck, &t)) {
        ts_cli_error(cmd, 1, "cannot load model '%s'", path);
        ts_cli_checkpoint_hint(cmd, cmd, path, "best.ckpt");
        ts_ckpt_free(ck);
        return TS_EXIT_FAIL;
    }
    training_state state;
    if (read_training_state(ck, &state)) {
        ts_cli_error(cmd, 1, "'%s': bad training state", path);
        ts_translator_free(&t);
        ts_ckpt_free(ck);
        return TS_EXIT_FAIL;
    }
    if (json) print_json(path, ck, &t, &state);
    else print_text(path, ck, &t, &state);
    int rc = fflush(stdout) || ferror(stdout) ? TS_EXIT_FAIL : TS_EXIT_OK;
    if (rc) ts_cli_error(cmd, 0, "cannot write the output");
    ts_translator_free(&t);
    ts_ckpt_free(ck);
    return rc;
}
