// Guided alignment (train/guided.c): the loss term's gradients against
// finite differences in both architectures, float32 against float64, the
// gold rows it reads (words and subword pieces), and the training runs: a
// weight of 0 is today's run to the bit, a guided run resumes exactly and
// says so in config.txt and its checkpoint, and bad gold files and flags
// fail before --out is touched.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "ckpt/ckpt.h"
#include "models/gradcheck.h"
#include "train/guided.h"
#include "train/trainer.h"
#include "train/state.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new((size_t)16 << 20);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(guided, .init = setup, .fini = teardown);

// ---- the loss term -------------------------------------------------------------------

// Two sentences, time-major: sources of 5 and 3 tokens, targets of 3 and 2 words (+ <eos>).
enum { GB = 2, GS = 5, GT = 4 };
static const int g_src[GS * GB] = {4, 5, 6, 6, 5, 4, 4, TS_PAD, 6, TS_PAD};
static const int g_src_len[GB] = {5, 3};
static const int g_tin[GT * GB] = {TS_SOS, TS_SOS, 5, 7, 7, 6, 4, TS_PAD};
static const int g_tout[GT * GB] = {5, 7, 7, 6, 4, TS_EOS, TS_EOS, TS_PAD};

// The gold (B, T, S): rows with one link, two links (each 1/2) and none.
static void fill_gold(double *gold) {
    memset(gold, 0, sizeof(double) * GB * GT * GS);
    double *g0 = gold, *g1 = gold + GT * GS;
    g0[0 * GS + 1] = 1.0;
    g0[1 * GS + 0] = 0.5, g0[1 * GS + 4] = 0.5;
    g0[2 * GS + 3] = 1.0;  // row 3 (<eos>) has none
    g1[0 * GS + 2] = 1.0;  // row 1 has none
}

typedef struct {
    ts_seq2seq *model;
    int layer, head;
    double gold[GB * GT * GS];
} guided_case;

// The guided term alone (weight 1, per target token), as the trainer adds it.
static ts_tensor *guided_term(ts_ctx *c, void *user) {
    guided_case *g = user;
    ts_batch_view bv = {.B = GB, .S = GS, .T = GT, .src = g_src, .src_len = g_src_len, .tgt_in = g_tin, .tgt_out = g_tout};
    ts_attention_tap tap = {.layer = g->layer, .head = g->head};
    int n_tokens = 0;
    if (!ts_seq2seq_loss_tapped(g->model, c, &bv, 1.0, NULL, NULL, &tap, &n_tokens)) return NULL;
    return ts_guided_loss(c, tap.chosen, g->gold, 1.0 / n_tokens);
}

static ts_seq2seq *model_of(ts_model_arch arch, ts_attn_type attn, ts_cell_type cell, int dtype, unsigned long seed) {
    ts_model_config cfg = ts_gradcheck_config(arch, attn, TS_DECODER_BAHDANAU, 1, cell);
    cfg.dtype = dtype;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    gsl_rng_free(rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    return m;
}

// d term / d every parameter against central differences, float64, 1e-6 relative.
static void gradcheck_term(ts_model_arch arch, ts_attn_type attn, ts_cell_type cell, int layer, int head) {
    guided_case g = {model_of(arch, attn, cell, TS_F64, 3), layer, head, {0}};
    fill_gold(g.gold);
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    ts_gradcheck_result results[TS_SEQ2SEQ_MAX_PARAMS];
    cr_assert_eq(ts_gradcheck(&ctx, guided_term, &g, g.model->params.items, g.model->params.count, &opts, results), TS_OK,
                 "%s", ts_last_error());
    int nonzero = 0;
    for (int i = 0; i < g.model->params.count; i++) {
        cr_assert(results[i].passed, "%s: %s[%zu] analytic %.10g numeric %.10g", ts_arch_name(arch), results[i].name,
                  results[i].worst_index, results[i].worst_analytic, results[i].worst_numeric);
        nonzero += results[i].worst_numeric != 0.0;
    }
    cr_assert(nonzero > 3, "the term reaches the parameters below the attention (%d tensors)", nonzero);
    ts_seq2seq_free(g.model);
}

// Every cell of the GRU architecture (the term reaches the cell's weights through the attention's query).
Test(guided, loss_term_gradients_match_finite_differences_gru) {
    for (int c = 0; c < TS_CELL_COUNT; c++) {
        gradcheck_term(TS_ARCH_GRU, TS_ATTN_BAHDANAU, (ts_cell_type)c, 0, 0);
        gradcheck_term(TS_ARCH_GRU, TS_ATTN_GENERAL, (ts_cell_type)c, 0, 0);
    }
}

Test(guided, loss_term_gradients_match_finite_differences_transformer) {
    gradcheck_term(TS_ARCH_TRANSFORMER, TS_ATTN_NONE, TS_CELL_GRU, 0, 1);  // the default layer of 2: the penultimate
    gradcheck_term(TS_ARCH_TRANSFORMER, TS_ATTN_NONE, TS_CELL_GRU, 1, 0);
}

// float32 and float64 models of the same (float32) weights: the term agrees
// to 1e-5 relative and every gradient to 2e-5 of its tensor's largest, the
// project's float32 bounds (tests/test_models.c): float32 rounds each stored
// value to 6e-8, the log's and the attention's products and sums grow that
// to ~1e-7 on the term and ~1e-6 on the gradients (measured below). A
// tensor whose true gradient is 0 (the encoder's last bias, which shifts
// every key of a row alike: softmax ignores it) gets rounding noise
// instead, held to 2e-7 of the largest gradient of the model (a few
// float32 roundings of it).
static void float32_agrees(ts_model_arch arch, int layer, int head) {
    guided_case g[2] = {{model_of(arch, TS_ATTN_BAHDANAU, TS_CELL_GRU, TS_F32, 5), layer, head, {0}},
                        {model_of(arch, TS_ATTN_BAHDANAU, TS_CELL_GRU, TS_F64, 5), layer, head, {0}}};
    ts_seq2seq *m32 = g[0].model, *m64 = g[1].model;
    for (int i = 0; i < m32->params.count; i++)
        ts_values_convert(m64->params.items[i]->raw, TS_F64, m32->params.items[i]->raw, TS_F32, m32->params.items[i]->size);
    double term[2];
    for (int k = 0; k < 2; k++) {
        fill_gold(g[k].gold);
        ts_ctx_reset(&ctx);
        ts_params_zero_grad(&g[k].model->params);
        ts_tensor *t = guided_term(&ctx, &g[k]);
        cr_assert_not_null(t, "%s", ts_last_error());
        cr_assert_eq(ts_backward(&ctx, t), TS_OK, "%s", ts_last_error());
        term[k] = ts_value(t, 0);
    }
    cr_assert(fabs(term[0] - term[1]) <= 1e-5 * fabs(term[1]), "term: float32 %.9g, float64 %.12g", term[0], term[1]);
    double worst = 0, largest = 0;
    for (int i = 0; i < m64->params.count; i++)
        for (size_t j = 0; j < m64->params.items[i]->size; j++) largest = fmax(largest, fabs(m64->params.items[i]->grad[j]));
    for (int i = 0; i < m32->params.count; i++) {
        const ts_tensor *p64 = m64->params.items[i], *p32 = m32->params.items[i];
        double scale = 1e-2 * largest;
        for (size_t j = 0; j < p64->size; j++) scale = fmax(scale, fabs(p64->grad[j]));
        for (size_t j = 0; j < p64->size; j++) {
            double err = fabs(p32->grad_f32[j] - p64->grad[j]);
            cr_assert(err <= 2e-5 * scale, "%s[%zu]: float32 %.9g, float64 %.12g", p64->name, j, p32->grad_f32[j], p64->grad[j]);
            if (scale > 0) worst = fmax(worst, err / scale);
        }
    }
    cr_log_info("%s: term %.3g relative, gradients %.3g of their tensor's largest", ts_arch_name(arch),
                fabs(term[0] - term[1]) / fabs(term[1]), worst);
    ts_seq2seq_free(m32);
    ts_seq2seq_free(m64);
}

Test(guided, float32_term_and_gradients_agree_with_float64_gru) { float32_agrees(TS_ARCH_GRU, 0, 0); }
Test(guided, float32_term_and_gradients_agree_with_float64_transformer) { float32_agrees(TS_ARCH_TRANSFORMER, 0, 1); }

// The identity: the term is -(1/N) sum_{b, t, s} G log(A + eps) of the
// head's weights as the tap reads them, summed here by hand; an attention
// row that puts all its weight on its one gold link costs -log(1 + eps).
Test(guided, the_term_is_the_cross_entropy_of_the_gold_rows) {
    guided_case g = {model_of(TS_ARCH_TRANSFORMER, TS_ATTN_NONE, TS_CELL_GRU, TS_F64, 7), 1, 1, {0}};
    fill_gold(g.gold);
    ts_tensor *t = guided_term(&ctx, &g);
    cr_assert_not_null(t, "%s", ts_last_error());
    ts_ctx_reset(&ctx);
    ts_batch_view bv = {.B = GB, .S = GS, .T = GT, .src = g_src, .src_len = g_src_len, .tgt_in = g_tin, .tgt_out = g_tout};
    ts_attention_tap tap = {.layer = 1, .head = 1, .every = 1};
    int n_tokens;
    cr_assert_not_null(ts_seq2seq_loss_tapped(g.model, &ctx, &bv, 1.0, NULL, NULL, &tap, &n_tokens));
    double want = 0;
    for (int i = 0; i < GB * GT * GS; i++) want -= g.gold[i] * log(tap.chosen->data[i] + TS_GUIDED_EPS);
    want /= n_tokens;
    cr_assert_eq(n_tokens, 7);
    double got;
    ts_ctx_reset(&ctx);
    got = ts_value(guided_term(&ctx, &g), 0);
    cr_assert(fabs(got - want) <= 1e-14 * fabs(want), "term %.17g, by hand %.17g", got, want);
    // A perfect row: one-hot weights on its link.
    double w[GS] = {0, 1, 0, 0, 0}, gold[GS] = {0, 1, 0, 0, 0};
    ts_ctx_reset(&ctx);
    ts_tensor *weights = ts_constant(&ctx, 3, (int[]){1, 1, GS}, w);
    cr_assert(fabs(ts_value(ts_guided_loss(&ctx, weights, gold, 1.0), 0) + log1p(TS_GUIDED_EPS)) < 1e-15);
    ts_seq2seq_free(g.model);
}

// ---- the gold rows -------------------------------------------------------------------

Test(guided, gold_rows_are_the_links_normalised_and_pieces_map_to_their_words) {
    ts_corpus *words = ts_corpus_new();
    // "the black cat" -> "le chat noir": 0-0 1-2 2-1, and "les" of a second pair unaligned, "." to two words.
    cr_assert_eq(ts_corpus_add(words, "the black cat", "le chat noir", (ts_link[]){{0, 0}, {1, 2}, {2, 1}}, 3), TS_OK);
    cr_assert_eq(ts_corpus_add(words, "likes cats now", "aime les chats .", (ts_link[]){{0, 0}, {1, 2}, {2, 3}, {1, 3}}, 4),
                 TS_OK);
    size_t rows[2] = {1, 0};  // in the batch's order, not the corpus's
    enum { B = 2, S = 4, T = 5 };
    double gold[B * T * S];
    long linked;
    cr_assert_eq(ts_guided_gold(words, words, rows, B, S, T, gold, &linked), TS_OK);
    cr_assert_eq(linked, 3 + 3, "every word row with a link: 3 of the 4 words, then 3 of 3");
    const double *b0 = gold, *b1 = gold + T * S;
    double want0[T * S] = {1, 0, 0, 0, /* les */ 0, 0, 0, 0, 0, 1, 0, 0, 0, 0.5, 0.5, 0, /* <eos> */ 0};
    double want1[T * S] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0};
    assert_allclose(b0, want0, T * S, 0, 0);
    assert_allclose(b1, want1, T * S, 0, 0);
    // The same pairs in pieces: "▁bl ack" is one word, "▁ch at s" another.
    ts_corpus *pieces = ts_corpus_new();
    cr_assert_eq(ts_corpus_add(pieces, "▁the ▁bl ack ▁cat", "▁le ▁chat ▁no ir", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(pieces, "▁likes ▁ca ts ▁now", "▁aime ▁les ▁ch at s ▁.", NULL, 0), TS_OK);
    enum { PS = 4, PT = 7 };
    double pg[B * PT * PS];
    size_t order[2] = {0, 1};
    cr_assert_eq(ts_guided_gold(words, pieces, order, B, PS, PT, pg, &linked), TS_OK);
    // Pair 0: le -> the; chat -> cat; no, ir -> bl, ack (each 1/2).
    double p0[PT * PS] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0.5, 0.5, 0, 0, 0.5, 0.5, 0};
    // Pair 1: aime -> likes; les: none; ch at s -> ca ts (1/2 each); "." -> ca ts, now (1/3 each).
    double p1[PT * PS] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    assert_allclose(pg, p0, PT * PS, 1e-15, 0);
    assert_allclose(pg + PT * PS, p1, PT * PS, 1e-15, 0);
    cr_assert_eq(linked, 4 + 5);
    ts_corpus_free(words);
    ts_corpus_free(pieces);
}

// ---- training runs -------------------------------------------------------------------

static char *join(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

// A tiny corpus whose targets are their sources word for word, reversed,
// and its gold file: source word i is target word n - 1 - i.
static void write_tiny(const char *dir, char **corpus, char **gold) {
    static const char *src_words[] = {"red", "blue", "cat", "dog", "sees", "eats", "big", "small"};
    static const char *tgt_words[] = {"rouge", "bleu", "chat", "chien", "voit", "mange", "grand", "petit"};
    size_t cap = 1 << 16, len = 0, glen = 0;
    char *text = malloc(cap), *links = malloc(cap);
    unsigned state = 11;
    for (int i = 0; i < 100; i++) {
        int n = 2 + (int)((state = state * 1103515245u + 12345u) >> 16) % 5, words[6];
        for (int k = 0; k < n; k++) words[k] = (int)((state = state * 1103515245u + 12345u) >> 16) % 8;
        for (int k = 0; k < n; k++) len += (size_t)sprintf(text + len, "%s%s", k ? " " : "", src_words[words[k]]);
        text[len++] = '\t';
        for (int k = n - 1; k >= 0; k--) len += (size_t)sprintf(text + len, "%s%s", k < n - 1 ? " " : "", tgt_words[words[k]]);
        text[len++] = '\n';
        for (int k = 0; k < n; k++) glen += (size_t)sprintf(links + glen, "%s%d-%d", k ? " " : "", k, n - 1 - k);
        links[glen++] = '\n';
    }
    *corpus = test_write_file(dir, "tiny.tsv", text, len);
    *gold = test_write_file(dir, "tiny.gold", links, glen);
    free(text);
    free(links);
}

static ts_train_opts tiny_opts(const char *corpus, const char *out_dir) {
    ts_train_opts o = ts_train_defaults();
    o.data.corpus = corpus;
    o.out_dir = out_dir;
    o.model.emb = 8;
    o.model.hidden = 12;
    o.batch = 8;
    o.data.dev_pairs = 10;
    o.lr = 0.01;
    o.show = 0;
    o.beam = 1;
    o.out = fopen("/dev/null", "w");
    o.log = NULL;
    return o;
}

static int same_file(const char *dir_a, const char *dir_b, const char *name) {
    char *a = join(dir_a, name), *b = join(dir_b, name);
    int same = test_same_bytes(a, b);
    free(a);
    free(b);
    return same;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// The files of both runs in one --out (config.txt names it), checkpoints
// and config.txt compared byte for byte (metrics.csv has times).
Test(guided, a_weight_of_0_is_the_unguided_run_to_the_bit) {
    char *dir = test_tmpdir(), *corpus, *gold, *a = join(dir, "a"), *kept = join(dir, "kept");
    write_tiny(dir, &corpus, &gold);
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.epochs = 2;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    cr_assert_eq(mkdir(kept, 0755), 0);
    static const char *const files[] = {"last.ckpt", "best.ckpt", "config.txt"};
    for (int f = 0; f < 3; f++) {
        char *from = join(a, files[f]), *to = join(kept, files[f]);
        cr_assert_eq(rename(from, to), 0);
        free(from);
        free(to);
    }
    o.force = 1;
    o.guided_alignment = gold;
    o.guided_weight = 0;
    o.guided_layer = 0;  // given or not, a weight of 0 writes nothing of it
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    for (int f = 0; f < 3; f++) cr_assert(same_file(a, kept, files[f]), "%s differs", files[f]);
    char *config = join(a, "config.txt"), *text = test_read_file(config, NULL);
    cr_assert(!strstr(text, "guided"), "%s", text);
    free(text);
    free(config);
    fclose(o.out);
}

// train --steps 9 with guided alignment; --resume --steps 30 == --steps 30,
// and what the run wrote says it was guided.
Test(guided, a_guided_run_resumes_exactly_and_records_its_options, .timeout = 120) {
    char *dir = test_tmpdir(), *corpus, *gold, *a = join(dir, "a"), *b = join(dir, "b"), *s = join(dir, "s"),
         *plain = join(dir, "p");
    write_tiny(dir, &corpus, &gold);
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.guided_alignment = gold;
    o.guided_weight = 0.5;
    o.dropout = 0.2;
    o.steps = 9;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    char *last_a = join(a, "last.ckpt");
    o.out_dir = b;
    o.resume = last_a;
    o.steps = 30;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    o.out_dir = s;
    o.resume = NULL;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    cr_assert(same_file(b, s, "last.ckpt"), "resumed and straight runs differ");
    char *config = join(s, "config.txt"), *text = test_read_file(config, NULL), line[512];
    snprintf(line, sizeof line, "guided_alignment = %s\nguided_weight = 0.5\nguided_layer = 0\nguided_head = 0\n", gold);
    cr_assert(strstr(text, line), "%s", text);
    ts_ckpt *ck;
    char *last_s = join(s, "last.ckpt");
    cr_assert_eq(ts_train_state_load(last_s, &ck), TS_OK, "%s", ts_last_error());
    const char *saved;
    double weight;
    cr_assert_eq(ts_ckpt_get_string(ck, "train.guided_alignment", &saved), TS_OK);
    cr_assert_str_eq(saved, gold);
    cr_assert_eq(ts_ckpt_get_double(ck, "train.guided_weight", 0, 1000, &weight), TS_OK);
    cr_assert_eq(weight, 0.5);
    ts_ckpt_free(ck);
    // The term acts: the unguided run of the same seed ends elsewhere.
    o.out_dir = plain;
    o.guided_alignment = NULL;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    cr_assert(!same_file(plain, s, "last.ckpt"));
    // Resuming must keep the guided flags.
    o.out_dir = b;
    o.resume = last_a;
    o.force = 1;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "was trained with --guided-alignment"), "%s", ts_last_error());
    o.guided_alignment = gold;
    o.guided_weight = 0.25;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "--guided-weight 0.5; this run asks for 0.25"), "%s", ts_last_error());
    free(text);
    free(config);
    free(last_s);
    free(last_a);
    fclose(o.out);
}

// Each refused with TS_ERR_ARG (the CLI's exit 2) naming the file and line
// or the flag, before --out exists.
Test(guided, bad_gold_files_and_flags_fail_before_out_is_made) {
    char *dir = test_tmpdir(), *corpus, *gold;
    write_tiny(dir, &corpus, &gold);
    size_t len;
    char *good = test_read_file(gold, &len);
    char *second = strchr(good, '\n') + 1, *third = strchr(second, '\n') + 1;
    char *short_gold = test_write_file(dir, "short.gold", good, (size_t)(third - good));
    char *long_text = malloc(len + 5);
    memcpy(long_text, good, len);
    memcpy(long_text + len, "0-0\n", 4);
    char *long_gold = test_write_file(dir, "long.gold", long_text, len + 4);
    char *outside_text = strdup(good);
    outside_text[0] = '9';  // line 1: "9-..." past the source
    char *outside = test_write_file(dir, "outside.gold", outside_text, len);
    char *garbage_text = strdup(good);
    memcpy(second, "x-y", 3);
    memcpy(garbage_text, good, len);
    char *garbage = test_write_file(dir, "garbage.gold", garbage_text, len);
    struct {
        const char *gold;
        ts_attn_type attn;
        ts_model_arch arch;
        long layer, head;
        int toy;
        const char *says;
    } cases[] = {
        {short_gold, TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 0, "short.gold:3: missing"},
        {long_gold, TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 0, "long.gold:101: one line past the last pair"},
        {outside, TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 0, "outside.gold:1: link 9-"},
        {garbage, TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 0, "garbage.gold:2:"},
        {gold, TS_ATTN_NONE, TS_ARCH_GRU, -1, -1, 0, "and this model has none (no attention"},
        {gold, TS_ATTN_BAHDANAU, TS_ARCH_GRU, 1, -1, 0, "--guided-layer 1: the model has 1 layer"},
        {gold, TS_ATTN_BAHDANAU, TS_ARCH_TRANSFORMER, -1, 4, 0, "--guided-head 4: the model's cross-attention has 2 heads"},
        {"toy", TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 0, "--guided-alignment toy names the toy corpus"},
        {gold, TS_ATTN_BAHDANAU, TS_ARCH_GRU, -1, -1, 1, "the toy corpus (no --corpus) has its own gold links"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%zu", i);
        char *out = join(dir, name);
        ts_train_opts o = tiny_opts(cases[i].toy ? NULL : corpus, out);
        o.data.toy_pairs = 100;
        o.model.attn = cases[i].attn;
        o.model.arch = cases[i].arch;
        o.guided_alignment = cases[i].gold;
        o.guided_layer = cases[i].layer;
        o.guided_head = cases[i].head;
        ts_train_report r;
        cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG, "case %zu: %s", i, ts_last_error());
        cr_assert(strstr(ts_last_error(), cases[i].says), "case %zu: '%s' lacks '%s'", i, ts_last_error(), cases[i].says);
        cr_assert(!exists(out), "case %zu made %s", i, out);
        fclose(o.out);
        free(out);
    }
    // The CLI: exit 2, the message on stderr, no --out.
    char *out_dir = join(dir, "cli"), *output;
    int rc = test_runf(&output, "%s train --corpus '%s' --guided-alignment '%s' --epochs 1 --out '%s'", TS_PROGRAM, corpus,
                       short_gold, out_dir);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, output);
    cr_assert(strstr(output, "--guided-alignment") && strstr(output, "short.gold:3: missing"), "%s", output);
    cr_assert(!exists(out_dir));
    free(output);
    free(out_dir);
    free(good);
    free(long_text);
    free(outside_text);
    free(garbage_text);
}

// train's banner names the guided head, and warns where guided alignment is
// known to cost BLEU (a unidirectional GRU's memory: docs/attention.md
// section 7), not where it is not.
Test(guided, the_banner_names_the_head_and_warns_for_a_unidirectional_gru, .timeout = 120) {
    char *dir = test_tmpdir(), *corpus, *gold;
    write_tiny(dir, &corpus, &gold);
    static const struct { ts_model_arch arch; int bidirectional, warns; } cases[] = {
        {TS_ARCH_GRU, 0, 1}, {TS_ARCH_GRU, 1, 0}, {TS_ARCH_TRANSFORMER, 0, 0}};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "run%d", i);
        char *out = join(dir, name), *text = NULL;
        size_t len = 0;
        ts_train_opts o = tiny_opts(corpus, out);
        fclose(o.out);
        o.out = open_memstream(&text, &len);
        o.model.arch = cases[i].arch;
        o.model.bidirectional = cases[i].bidirectional;
        if (cases[i].arch == TS_ARCH_TRANSFORMER) o.model.d_model = 8, o.model.heads = 2, o.model.layers = 2, o.model.ff = 16;
        o.guided_alignment = gold;
        o.steps = 1;
        ts_train_report r;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "case %d: %s", i, ts_last_error());
        fclose(o.out);
        cr_assert(strstr(text, "guided alignment: "), "case %d: %s", i, text);
        cr_assert(strstr(text, "weight 0.1, cross-attention layer 0 head 0\n"), "case %d: %s", i, text);
        cr_assert_eq(strstr(text, "warning: the unidirectional encoder") != NULL, cases[i].warns, "case %d: %s", i, text);
        free(text);
        free(out);
    }
}
