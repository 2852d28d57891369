// An architecture is its row (issue 45 point 2): a third one, defined and
// registered by this file alone, is trained, translated with, attended,
// evaluated and shown by the program's own commands (cli/, in this process),
// which find it through the model table (models/architectures.c) by the name
// its row gives. No other file of the project knows the name "stub".
//
// The stub: the previous target word's embedding attends (dot scores) over
// the source words' embeddings, and the output layer reads [e(y_{t-1}); the
// context]. No recurrence: what decoding carries is the memory and each
// row's source mask.
//
// Legend: B rows, S source length, T target length, E embedding, V target
// vocabulary.
#include <criterion/criterion.h>

#include "autograd/ops.h"
#include "cli/cli.h"
#include "models/model.h"
#include "tensor/tokens.h"
#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    ts_tensor *src_embedding;          // (Vs, E)
    ts_tensor *tgt_embedding;          // (V, E)
    ts_tensor *out_weight, *out_bias;  // (V, 2E), (V)
} stub_layers;

// The memory and the state alike: nothing else changes from step to step.
typedef struct {
    int S, per_source;   // decoding row r reads memory row r / per_source
    ts_tensor *memory;   // (B, S, E): the source embeddings, batch-major
    const double *mask;  // (rows, S): 1 for each decoding row's real source positions
} stub_source;

static int stub_specs(void *layers, const ts_model_config *c, ts_param_spec *out) {
    stub_layers *s = layers;
    double bound = 1.0 / sqrt(2.0 * c->emb);
    int n = ts_param_spec_set(out, &s->src_embedding, TS_INIT_EMBEDDING, 2, c->src_vocab, c->emb, "src_embedding.weight");
    n += ts_param_spec_set(out + n, &s->tgt_embedding, TS_INIT_EMBEDDING, 2, c->tgt_vocab, c->emb, "tgt_embedding.weight");
    n += ts_param_spec_set(out + n, &s->out_weight, bound, 2, c->tgt_vocab, 2 * c->emb, "out.weight");
    n += ts_param_spec_set(out + n, &s->out_bias, bound, 1, c->tgt_vocab, 0, "out.bias");
    return n;
}

static void *arena_full(ts_ctx *ctx) {
    ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    return NULL;
}

static stub_source *stub_source_of(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv) {
    const stub_layers *s = m->layers;
    int B = bv->B, S = bv->S, E = m->cfg.emb;
    stub_source *src = ctx->status ? NULL : ts_arena_alloc(ctx->arena, sizeof *src);
    double *mask = src ? ts_arena_alloc(ctx->arena, (size_t)B * S * sizeof(double)) : NULL;  // (B, S)
    if (!mask) return ctx->status ? NULL : arena_full(ctx);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < S; t++) mask[(size_t)b * S + t] = t < bv->src_len[b];
    ts_tensor *rows = bv->src_embedded ? bv->src_embedded
                                       : ts_gather_rows(ctx, s->src_embedding, bv->src, S * B, TS_PAD);  // (S*B, E)
    *src = (stub_source){.S = S, .per_source = 1, .mask = mask,
                         .memory = ts_swap01(ctx, ts_reshape(ctx, rows, 3, (int[]){S, B, E}))};
    return ctx->status ? NULL : src;
}

// Logits (rows, V) for the previous words' embeddings `query` (rows, E);
// the attention weights (rows, S) in *weights when asked.
static ts_tensor *stub_logits(const ts_seq2seq *m, ts_ctx *ctx, const stub_source *src, ts_tensor *query,
                              ts_tensor **weights) {
    const stub_layers *s = m->layers;
    ts_tensor *w = ts_softmax(ctx, ts_attn_dot(ctx, query, src->memory), src->mask);  // (rows, S)
    if (weights) *weights = w;
    ts_tensor *context = ts_attn_context(ctx, w, src->memory);  // (rows, E)
    ts_tensor *from_query = ts_linear(ctx, query, s->out_weight, 0, s->out_bias, NULL);
    return ts_linear(ctx, context, s->out_weight, m->cfg.emb, NULL, from_query);
}

static ts_tensor *stub_loss(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                            const ts_regularizer *reg, ts_attention_tap *tap) {
    (void)tf, (void)rng;  // one teacher-forced pass; no dropout
    const stub_layers *s = m->layers;
    int B = bv->B, T = bv->T;
    stub_source *src = stub_source_of(m, ctx, bv);
    ts_tensor **steps = src ? ts_arena_alloc(ctx->arena, 2 * (size_t)T * sizeof *steps) : NULL;  // T logits, T weights
    if (!steps) return ctx->status ? NULL : arena_full(ctx);
    for (int t = 0; t < T; t++)
        steps[t] = stub_logits(m, ctx, src, ts_gather_rows(ctx, s->tgt_embedding, bv->tgt_in + (size_t)t * B, B, TS_PAD),
                               &steps[T + t]);
    if (tap) {  // one layer of one head: (T, B, S) -> (B, T, S)
        ts_tensor *by_step = ts_reshape(ctx, ts_stack_rows(ctx, steps + T, T), 3, (int[]){T, B, src->S});
        ts_tensor *by_sentence = ts_swap01(ctx, by_step);
        if (tap->layer == 0) tap->chosen = by_sentence;
        if (tap->every) tap->every_layer[0] = by_sentence;
    }
    return ts_cross_entropy(ctx, ts_stack_rows(ctx, steps, T), bv->tgt_out, TS_PAD, reg->label_smoothing);
}

static int stub_cross_heads(const ts_model_config *cfg, int *layers) {
    (void)cfg;
    return *layers = 1;
}

static void *stub_encode(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv) { return stub_source_of(m, ctx, bv); }

static void *stub_start(const ts_seq2seq *m, ts_ctx *ctx, void *memory, int B, int max_len) {
    (void)m, (void)ctx, (void)B, (void)max_len;
    return memory;
}

static ts_tensor *stub_step(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *tokens, int B, void **next,
                            ts_tensor **weights) {
    const stub_layers *s = m->layers;
    *next = (void *)state;  // the next step reads the same source, which no step changes
    return stub_logits(m, ctx, state, ts_gather_rows(ctx, s->tgt_embedding, tokens, B, -1), weights);
}

static void *stub_reorder(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *rows, int n, int group) {
    (void)m;
    const stub_source *before = state;
    int S = before->S;
    stub_source *after = ctx->status ? NULL : ts_arena_alloc(ctx->arena, sizeof *after);
    double *mask = after ? ts_arena_alloc(ctx->arena, (size_t)n * S * sizeof(double)) : NULL;  // (n, S)
    if (!mask) return ctx->status ? NULL : arena_full(ctx);
    for (int k = 0; k < n; k++) memcpy(mask + (size_t)k * S, before->mask + (size_t)rows[k] * S, (size_t)S * sizeof(double));
    *after = (stub_source){.S = S, .per_source = before->per_source, .memory = before->memory, .mask = mask};
    if (group) {  // sentences leave, or a beam widens: one memory row per run of `group` rows
        int *sources = ts_reorder_sources(ctx, rows, n, group, before->per_source);
        if (!sources) return NULL;
        after->per_source = group;
        after->memory = ts_rows_select(ctx, before->memory, sources, n / group);
    }
    return ctx->status ? NULL : after;
}

static size_t stub_step_bytes(const ts_model_config *c, int B, int S) {
    return (size_t)B * (4 * (size_t)S + 4 * (size_t)c->tgt_vocab + 8 * (size_t)c->emb) * sizeof(double) + ((size_t)1 << 20);
}

static ts_tensor *stub_source_embedding(const ts_seq2seq *m) { return ((const stub_layers *)m->layers)->src_embedding; }

static void stub_describe(const ts_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, "stub: the target word's embedding attends over the source's, embedding %d", c->emb);
}

static void stub_attention_title(const ts_model_config *c, char *buf, size_t n) {
    (void)c;
    snprintf(buf, n, "stub dot attention");
}

static const ts_model_kind stub_kind = {
    .name = "stub",
    .layers_size = sizeof(stub_layers),
    .specs = stub_specs,
    .loss = stub_loss,
    .cross_heads = stub_cross_heads,
    .encode = stub_encode,
    .start = stub_start,
    .step = stub_step,
    .reorder = stub_reorder,
    .step_bytes = stub_step_bytes,
    .source_embedding = stub_source_embedding,
    .describe = stub_describe,
    .attention_title = stub_attention_title,
    .teacher_forced = 1,
};

// Runs `tinyseq <argv...>` (NULL-terminated) in this process through its
// command's function, its stdout into the file out; returns its exit code.
static int run(int (*command)(int, char **), const char *out, ...) {
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *a; (a = va_arg(ap, const char *)) && argc < 31;) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fd >= 0, "cannot redirect stdout to %s", out);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    int rc = command(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    return rc;
}

static char *path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    cr_assert(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

// Column `column` (1-based) of metrics.csv's row for epoch E (row E).
static double metric(const char *csv, int epoch, int column) {
    char *text = test_read_file(csv, NULL), *line = text;
    cr_assert(text, "no %s", csv);
    for (int row = 0; row < epoch && line; row++) line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL;
    cr_assert(line && *line, "%s has no epoch %d", csv, epoch);
    for (int c = 1; c < column; c++) line = strchr(line, ',') + 1;
    double v = strtod(line, NULL);
    free(text);
    return v;
}

Test(architecture_row, a_registered_row_trains_translates_attends_evaluates_and_shows_info, .timeout = 300) {
    ts_model_arch arch;
    cr_assert_eq(ts_model_register(&stub_kind, &arch), TS_OK, "%s", ts_last_error());
    cr_assert_eq(arch, TS_ARCH_COUNT, "the first row after the table's");
    cr_assert_str_eq(ts_arch_name(arch), "stub");
    cr_assert_neq(ts_model_register(&stub_kind, &arch), TS_OK, "a name is registered once");

    char *dir = test_tmpdir(), *run_dir = path(dir, "run"), *out = path(dir, "out.txt");
    cr_assert_eq(run(ts_cmd_train, out, "train", "--arch", "stub", "--toy-pairs", "400", "--epochs", "3", "--hidden", "16",
                     "--threads", "1", "--show", "0", "--beam", "3", "--out", run_dir, NULL),
                 0, "train: %s", ts_last_error());
    char *config = test_read_file(path(run_dir, "config.txt"), NULL);
    cr_assert(config && strstr(config, "\narch = stub\n"), "config.txt names the architecture:\n%s", config);
    // The row's teacher_forced refuses teacher forcing below 1, as the Transformer's does.
    cr_assert_neq(run(ts_cmd_train, out, "train", "--arch", "stub", "--toy-pairs", "400", "--epochs", "1", "--tf", "0.5",
                      "--out", path(dir, "refused"), NULL),
                  0, "--tf 0.5 on a teacher-forced row");
    cr_assert(strstr(ts_last_error(), "teacher-forced pass"), "%s", ts_last_error());
    char *csv = path(run_dir, "metrics.csv");
    double first = metric(csv, 1, 4), last = metric(csv, 3, 4);  // dev_loss
    cr_assert_lt(last, first, "the dev loss fell: %g to %g", first, last);

    char *ckpt = path(run_dir, "best.ckpt");
    cr_assert_eq(run(ts_cmd_info, out, "info", ckpt, NULL), 0);
    char *text = test_read_file(out, NULL);
    cr_assert(strstr(text, "stub: the target word's embedding attends over the source's, embedding"), "info:\n%s", text);
    free(text);

    for (const char *beam = "1"; beam; beam = strcmp(beam, "1") ? NULL : "4") {
        cr_assert_eq(run(ts_cmd_translate, out, "translate", "--model", ckpt, "--beam", beam, "the cat sees the dog", NULL), 0,
                     "translate --beam %s", beam);
        text = test_read_file(out, NULL);
        cr_assert(text && strlen(text) > 1 && text[strlen(text) - 1] == '\n', "translate --beam %s: '%s'", beam, text);
        free(text);
    }

    char *json = path(dir, "attend.json");
    cr_assert_eq(run(ts_cmd_attend, out, "attend", "--model", ckpt, "--json", json, "the cat sees the dog", NULL), 0);
    text = test_read_file(json, NULL);
    cr_assert(text && strstr(text, "\"weights\""), "attend's JSON has the weights:\n%s", text);
    cr_assert(strstr(text, "\"attention\": \"stub\""), "what attends is named by the row:\n%s", text);
    free(text);

    cr_assert_eq(run(ts_cmd_eval, out, "eval", "--model", ckpt, "--corpus", path(run_dir, "dev-pairs.tsv"), "--beam", "2", NULL),
                 0);
    text = test_read_file(out, NULL);
    cr_assert(text && strstr(text, "bleu"), "eval:\n%s", text);
    free(text);
    free(config);
    free(dir);
}
