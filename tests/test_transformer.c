// The Transformer (models/transformer.c) against PyTorch's nn.Transformer on
// fixtures (tools/make_transformer_fixtures.py), a whole-model gradient check,
// padding invariance, positions and configuration checks.
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "models/transformer.h"
#include "tensor/tokens.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new((size_t)64 << 20);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(transformer, .init = setup, .fini = teardown);

typedef struct {
    ts_seq2seq *model;
    ts_batch_view batch;
    double smoothing;
} fixture_model;

static ts_model_config transformer_config(int src_vocab, int tgt_vocab, int d, int heads, int layers, int ff) {
    return (ts_model_config){.arch = TS_ARCH_TRANSFORMER, .src_vocab = src_vocab, .tgt_vocab = tgt_vocab, .emb = d,
                             .hidden = d, .d_model = d, .heads = heads, .layers = layers, .ff = ff};
}

// The model of fixture f in `dtype` with its parameters, and its batch
// (pointing into f).
static fixture_model load_fixture_model(const fixture *f, int dtype) {
    const fixture_record *c = fixture_get(f, "config");
    ts_model_config cfg = transformer_config(c->ints[0], c->ints[1], c->ints[2], c->ints[3], c->ints[4], c->ints[5]);
    cfg.dtype = dtype;
    ts_seq2seq *m = ts_seq2seq_new(&cfg, NULL);
    cr_assert_not_null(m, "%s", ts_last_error());
    int in_fixture = 0;
    for (int i = 0; i < f->count; i++) in_fixture += !f->records[i].is_ints && strchr(f->records[i].name, '.') &&
                                                     strncmp(f->records[i].name, "grad.", 5);
    cr_assert_eq(m->params.count, in_fixture, "the model has %d parameters, PyTorch's state_dict %d", m->params.count,
                 in_fixture);
    for (int i = 0; i < m->params.count; i++) {
        ts_tensor *p = m->params.items[i];
        const fixture_record *r = fixture_get(f, p->name);  // fails the test when a name is not PyTorch's
        cr_assert_eq(r->n, p->size, "%s: %zu values, PyTorch has %zu", p->name, p->size, r->n);
        ts_values_convert(p->raw, p->dtype, r->values, TS_F64, p->size);  // a float32 fixture's values: exact
    }
    const fixture_record *len = fixture_get(f, "src_len");
    int B = (int)len->n;
    fixture_model fm = {m,
                        {.B = B,
                         .S = (int)fixture_get(f, "src")->n / B,
                         .T = (int)fixture_get(f, "tgt_in")->n / B,
                         .src = fixture_get(f, "src")->ints,
                         .src_len = len->ints,
                         .tgt_in = fixture_get(f, "tgt_in")->ints,
                         .tgt_out = fixture_get(f, "tgt_out")->ints},
                        fixture_get(f, "label_smoothing")->values[0]};
    return fm;
}

static void check_against_pytorch(const char *file) {
    fixture f = fixture_load(file);
    fixture_model fm = load_fixture_model(&f, TS_F64);
    ts_regularizer reg = {0.0, fm.smoothing};
    int tokens = 0;
    ts_tensor *loss = ts_seq2seq_loss(fm.model, &ctx, &fm.batch, 1.0, NULL, &reg, &tokens);
    cr_assert_not_null(loss, "%s", ts_last_error());
    assert_allclose(loss->data, fixture_get(&f, "loss")->values, 1, 1e-10, 1e-10);
    cr_assert_eq(ts_backward(&ctx, loss), TS_OK, "%s", ts_last_error());
    for (int i = 0; i < fm.model->params.count; i++) {
        ts_tensor *p = fm.model->params.items[i];
        char name[96];
        snprintf(name, sizeof name, "grad.%s", p->name);
        assert_allclose(p->grad, fixture_get(&f, name)->values, p->size, 1e-10, 1e-10);
    }
    ts_seq2seq_free(fm.model);
    fixture_free(&f);
}

Test(transformer, loss_and_every_gradient_match_pytorch_on_a_padded_batch) {
    check_against_pytorch("transformer_2layer.txt");
}

Test(transformer, three_heads_and_label_smoothing_match_pytorch) { check_against_pytorch("transformer_3head_smoothed.txt"); }

// A float32 Transformer against torch in float32 (transformer_2layer.txt's
// draws rounded to float32): the loss to 1e-5 relative, each gradient to
// 1e-5 of its tensor's largest. Both sides round differently (torch sums in
// float32; tinyseq's layer norm statistics, softmax denominators and loss
// are double): the fixture's header measures torch float32 against torch
// float64 at 4e-8 (loss) and 2e-6 (gradients); a wrong formula is O(1).
Test(transformer, float32_loss_and_gradients_match_pytorch_in_float32) {
    const char *file = "transformer_2layer_f32.txt";
    fixture_require(file, "tools/make_transformer_fixtures.py");
    fixture f = fixture_load(file);
    fixture_model fm = load_fixture_model(&f, TS_F32);
    ts_tensor *loss = ts_seq2seq_loss(fm.model, &ctx, &fm.batch, 1.0, NULL, &(ts_regularizer){0.0, fm.smoothing}, NULL);
    cr_assert_not_null(loss, "%s", ts_last_error());
    cr_assert_eq(loss->dtype, TS_F32);
    double value = ts_value(loss, 0), want = fixture_get(&f, "loss")->values[0], worst = 0;
    cr_assert(fabs(value - want) <= 1e-5 * fabs(want), "loss %.9g, torch %.9g", value, want);
    cr_assert_eq(ts_backward(&ctx, loss), TS_OK, "%s", ts_last_error());
    for (int i = 0; i < fm.model->params.count; i++) {
        ts_tensor *p = fm.model->params.items[i];
        char name[96];
        snprintf(name, sizeof name, "grad.%s", p->name);
        const fixture_record *r = fixture_get(&f, name);
        cr_assert_eq(r->n, p->size, "%s", name);
        worst = fmax(worst, assert_close_at_scale(name, p->grad_raw, p->dtype, r->values, p->size, 1e-5));
    }
    cr_log_info("%s: loss %.2g relative from torch's, gradients at most %.2g of their tensor's largest", file,
                fabs(value - want) / fabs(want), worst);
    ts_seq2seq_free(fm.model);
    fixture_free(&f);
}

// ---- a small random model and a padded batch, time-major ----
enum { B = 3, S = 4, T = 4 };
static const int src[S * B] = {4, 5, 6, 7, 8, 9, 5, 0, 6, 6, 0, 0};  // lengths 4, 2, 3
static const int src_len[B] = {4, 2, 3};
static const int tgt_in[T * B] = {1, 1, 1, 5, 6, 4, 7, 0, 5, 4, 0, 0};
static const int tgt_out[T * B] = {5, 6, 4, 7, 2, 5, 4, 0, 2, 2, 0, 0};

static ts_seq2seq *random_model(int d, int heads, int layers, int ff, unsigned long seed) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_model_config cfg = transformer_config(10, 9, d, heads, layers, ff);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    // Biases and norms away from their 0 / 1 start, so that their gradients mean something.
    for (int i = 0; i < m->params.count; i++)
        for (size_t k = 0; k < m->params.items[i]->size; k++) m->params.items[i]->data[k] += 0.3 * gsl_rng_uniform(rng) - 0.15;
    gsl_rng_free(rng);
    return m;
}

static ts_batch_view small_batch(void) {
    return (ts_batch_view){.B = B, .S = S, .T = T, .src = src, .src_len = src_len, .tgt_in = tgt_in, .tgt_out = tgt_out};
}

typedef struct {
    ts_seq2seq *model;
    ts_batch_view batch;
} loss_case;
static ts_tensor *model_loss(ts_ctx *c, void *user) {
    loss_case *lc = user;
    ts_regularizer reg = {0.0, 0.1};
    return ts_seq2seq_loss(lc->model, c, &lc->batch, 1.0, NULL, &reg, NULL);
}

// Every parameter of m passes a finite-difference check of loss (8 values a tensor).
static void assert_gradcheck_passes(ts_seq2seq *m, ts_tensor *(*loss)(ts_ctx *, void *), void *user) {
    gsl_rng *pick = gsl_rng_alloc(gsl_rng_mt19937);
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    opts.max_per_tensor = 8;
    opts.rng = pick;
    ts_gradcheck_result *res = calloc((size_t)m->params.count, sizeof *res);
    cr_assert_eq(ts_gradcheck(&ctx, loss, user, m->params.items, m->params.count, &opts, res), TS_OK, "%s",
                 ts_last_error());
    for (int i = 0; i < m->params.count; i++)
        cr_assert(res[i].passed, "d/d %s wrong at %zu: analytic %.12g, numeric %.12g", res[i].name, res[i].worst_index,
                  res[i].worst_analytic, res[i].worst_numeric);
    free(res);
    gsl_rng_free(pick);
}

Test(transformer, whole_model_gradcheck_with_padding) {
    ts_seq2seq *m = random_model(6, 2, 2, 5, 11);
    loss_case lc = {m, small_batch()};
    assert_gradcheck_passes(m, model_loss, &lc);
    ts_seq2seq_free(m);
}

// With dropout (on the embeddings, residual branches, feed-forward hidden
// layer and attention weights), the same masks at every evaluation.
typedef struct {
    ts_seq2seq *model;
    ts_batch_view batch;
    gsl_rng *rng;
} dropout_case;
static ts_tensor *model_loss_with_dropout(ts_ctx *c, void *user) {
    dropout_case *dc = user;
    gsl_rng_set(dc->rng, 29);
    ts_regularizer reg = {0.25, 0.1};
    return ts_seq2seq_loss(dc->model, c, &dc->batch, 1.0, dc->rng, &reg, NULL);
}

Test(transformer, whole_model_gradcheck_with_dropout_on_the_attention_weights_too) {
    ts_seq2seq *m = random_model(6, 2, 2, 5, 12);
    dropout_case dc = {m, small_batch(), gsl_rng_alloc(gsl_rng_mt19937)};
    assert_gradcheck_passes(m, model_loss_with_dropout, &dc);
    // Every attention of the pass drops its weights, as torch.nn.MultiheadAttention
    // does in training: 2 layers x (encoder self, decoder self, cross).
    ts_ctx_reset(&ctx);
    cr_assert_not_null(model_loss_with_dropout(&ctx, &dc), "%s", ts_last_error());
    int attentions = 0, with_dropout = 0;
    for (const ts_tensor *n = ctx.tape; n; n = n->tape_prev)
        if (n->op == TS_OP_MHA) attentions++, with_dropout += n->iarg[2];
    cr_assert_eq(attentions, 6);
    cr_assert_eq(with_dropout, 6, "%d of 6 attentions drop their weights", with_dropout);
    gsl_rng_free(dc.rng);
    ts_seq2seq_free(m);
}

// The same sentences with two more pad positions on each side, and each
// sentence alone: the decoder's outputs of the real positions agree.
static ts_tensor *decode_batch(const ts_transformer *m, const ts_batch_view *bv, const int *tokens_bt) {
    ts_transformer_memory mem;
    cr_assert_eq(ts_transformer_encode(m, &ctx, bv, 0.0, NULL, &mem, NULL), TS_OK, "%s", ts_last_error());
    ts_tensor *y = ts_transformer_decode(m, &ctx, &mem, tokens_bt, bv->T, 0.0, NULL, NULL);
    cr_assert_not_null(y, "%s", ts_last_error());
    return y;
}

Test(transformer, padding_changes_nothing_and_each_sentence_gets_what_it_gets_alone) {
    ts_seq2seq *model = random_model(4, 2, 2, 6, 5);
    const ts_transformer *m = model->layers;
    int D = 4, S2 = S + 2, T2 = T + 2;
    int src2[S2 * B], tokens[B * T], tokens2[B * T2];  // batch-major tokens
    memset(src2, 0, sizeof src2);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++) src2[s * B + b] = src[s * B + b];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T2; t++) {
            if (t < T) tokens[b * T + t] = tgt_in[t * B + b];
            tokens2[b * T2 + t] = t < T ? tgt_in[t * B + b] : 0;
        }
    ts_set_grad_enabled(&ctx, 0);
    ts_batch_view bv = small_batch(), padded = bv;
    padded.S = S2;
    padded.T = T2;
    padded.src = src2;
    ts_tensor *y = decode_batch(m, &bv, tokens), *y2 = decode_batch(m, &padded, tokens2);
    for (int b = 0; b < B; b++) {
        int n = 0;  // real target positions of sentence b
        while (n < T && tgt_out[n * B + b] != 0) n++;
        for (int t = 0; t < n; t++)
            assert_allclose(y2->data + ((size_t)b * T2 + t) * D, y->data + ((size_t)b * T + t) * D, D, 1e-13, 1e-12);
        // alone: a batch of one, its own length
        int len = src_len[b], alone_src[S], alone_tokens[T];
        for (int s = 0; s < len; s++) alone_src[s] = src[s * B + b];
        for (int t = 0; t < n; t++) alone_tokens[t] = tokens[b * T + t];
        ts_batch_view one = {.B = 1, .S = len, .T = n, .src = alone_src, .src_len = &len};
        ts_tensor *y1 = decode_batch(m, &one, alone_tokens);
        assert_allclose(y1->data, y->data + (size_t)b * T * D, (size_t)n * D, 1e-13, 1e-12);
    }
    ts_seq2seq_free(model);
}

// The embeddings start at N(0, 1/sqrt(D)) (Vaswani et al., fairseq), so that
// after the sqrt(D) scale they are about N(0, 1) like the positions; torch's
// N(0, 1) drowned them and trained the toy corpus far slower (docs/models.md).
Test(transformer, embeddings_start_at_the_size_of_the_positions) {
    enum { D = 64, V = 400 };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_model_config cfg = transformer_config(V, V, D, 4, 1, 4 * D);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    const ts_transformer *tr = m->layers;
    const ts_tensor *embeddings[] = {tr->src_embedding, tr->tgt_embedding};
    for (int e = 0; e < 2; e++) {
        const ts_tensor *w = embeddings[e];
        double sum2 = 0;
        for (int k = 0; k < D; k++) cr_assert_eq(w->data[TS_PAD * D + k], 0.0, "%s: the <pad> row stays zero", w->name);
        for (size_t k = D; k < w->size; k++) sum2 += w->data[k] * w->data[k];
        double std = sqrt(sum2 / (double)(w->size - D));
        // (V - 1) D = 25,536 draws: the sample std is within 1% of 1/8 at 3 sigma.
        cr_assert(fabs(std * sqrt((double)D) - 1.0) < 0.03, "%s: std %g, want 1/sqrt(%d)", w->name, std, D);
    }
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
}

Test(transformer, positions_are_vaswanis_sinusoids_from_zero) {
    double pe[3 * 6];
    ts_transformer_positions(pe, 0, 3, 6);
    double want_row0[6] = {0, 1, 0, 1, 0, 1};
    assert_allclose(pe, want_row0, 6, 0, 0);
    cr_assert(fabs(pe[6 + 0] - sin(1.0)) < 1e-15 && fabs(pe[6 + 1] - cos(1.0)) < 1e-15);
    cr_assert(fabs(pe[12 + 2] - sin(2.0 / pow(10000.0, 2.0 / 6))) < 1e-15);
    cr_assert(fabs(pe[12 + 5] - cos(2.0 / pow(10000.0, 4.0 / 6))) < 1e-15);
    double later[6];  // a window further on is the same table
    ts_transformer_positions(later, 2, 1, 6);
    assert_allclose(later, pe + 12, 6, 0, 0);
}

Test(transformer, sentences_past_any_table_length_are_encoded_and_decoded) {
    ts_seq2seq *model = random_model(4, 1, 1, 4, 3);
    const ts_transformer *m = model->layers;
    enum { LONG = 700 };  // torch_ref.py's table stops at 512
    int *ids = malloc(LONG * sizeof *ids), len = LONG;
    for (int s = 0; s < LONG; s++) ids[s] = 4 + s % 6;
    ts_batch_view bv = {.B = 1, .S = LONG, .T = 1, .src = ids, .src_len = &len};
    ts_transformer_memory mem;
    ts_set_grad_enabled(&ctx, 0);
    cr_assert_eq(ts_transformer_encode(m, &ctx, &bv, 0.0, NULL, &mem, NULL), TS_OK, "%s", ts_last_error());
    for (size_t i = 0; i < mem.memory->size; i++) cr_assert(isfinite(mem.memory->data[i]));
    // Decoding past position 512 too: the step's position is computed from
    // its index (the ASan build would catch a read past a table).
    ts_transformer_source source;
    cr_assert_eq(ts_transformer_prepare(m, &ctx, &bv, &source), TS_OK, "%s", ts_last_error());
    ts_transformer_state *st = ts_transformer_start(&ctx, &source);
    ts_arena *steps[2] = {ts_arena_new((size_t)8 << 20), ts_arena_new((size_t)8 << 20)};
    ts_arena *caller = ctx.arena;
    enum { STEPS = LONG / 2 + 300 };
    int *tokens = malloc(STEPS * sizeof *tokens);
    ts_tensor *logits = NULL;
    for (int t = 0; t < STEPS; t++) {  // the search's two alternating arenas
        tokens[t] = t ? 4 + t % 5 : TS_SOS;
        ts_arena_reset(steps[t % 2]);
        ctx.arena = steps[t % 2];
        logits = ts_transformer_step(m, &ctx, st, &tokens[t], &st, NULL, NULL);
        cr_assert_not_null(logits, "step %d: %s", t, ts_last_error());
    }
    ctx.arena = caller;
    cr_assert_eq(st->t, STEPS);
    ts_tensor *y = ts_transformer_decode(m, &ctx, &mem, tokens, STEPS, 0.0, NULL, NULL);  // all 650 at once
    cr_assert_not_null(y, "%s", ts_last_error());
    ts_tensor *full = ts_linear(&ctx, ts_slice_rows(&ctx, y, STEPS - 1, 1), m->out.weight, 0, m->out.bias, NULL);
    cr_assert_not_null(full, "%s", ts_last_error());
    assert_allclose(logits->data, full->data, (size_t)m->cfg.tgt_vocab, 1e-12, 1e-12);
    free(tokens);
    ts_arena_free(steps[0]);
    ts_arena_free(steps[1]);
    free(ids);
    ts_seq2seq_free(model);
}

Test(transformer, config_check_names_the_bad_field) {
    ts_model_config ok = transformer_config(10, 9, 8, 2, 2, 16);
    cr_assert_eq(ts_model_config_check(&ok), TS_OK);
    ts_model_config bad = ok;
    bad.heads = 3;
    cr_assert_eq(ts_model_config_check(&bad), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "heads 3 do not divide d_model 8"), "%s", ts_last_error());
    bad = ok;
    bad.layers = 0;
    cr_assert_eq(ts_model_config_check(&bad), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "layers 0"), "%s", ts_last_error());
    cr_assert_null(ts_seq2seq_new(&bad, NULL));
}

Test(transformer, layout_lists_the_state_dict_keys) {
    ts_model_config cfg = transformer_config(10, 9, 8, 2, 12, 16);
    ts_param_shape *layout = malloc(TS_SEQ2SEQ_MAX_PARAMS * sizeof *layout);
    int n;
    cr_assert_eq(ts_seq2seq_layout(&cfg, layout, &n), TS_OK);
    cr_assert_eq(n, 8 + 30 * 12);
    int found = 0;
    for (int i = 0; i < n; i++)
        found += !strcmp(layout[i].name, "transformer.decoder.layers.11.multihead_attn.out_proj.weight");
    cr_assert_eq(found, 1, "the longest key must fit a tensor name");
    free(layout);
}

// ---- incremental decoding: each step's logits are the full decoder's ----

// logits (B*T, Vt) of the whole teacher-forced prefix, recomputed at once.
static ts_tensor *full_logits(const ts_transformer *m, const ts_batch_view *bv, const int *tokens_bt) {
    ts_tensor *y = decode_batch(m, bv, tokens_bt);
    return ts_linear(&ctx, y, m->out.weight, 0, m->out.bias, NULL);
}

// The small batch's full logits in *full, and the state before its first
// position (grad mode off).
static ts_transformer_state *begin_decoding(const ts_transformer *m, ts_transformer_source *source, ts_tensor **full) {
    int tokens[B * T];  // batch-major
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) tokens[b * T + t] = tgt_in[t * B + b];
    ts_set_grad_enabled(&ctx, 0);
    ts_batch_view bv = small_batch();
    *full = full_logits(m, &bv, tokens);
    cr_assert_eq(ts_transformer_prepare(m, &ctx, &bv, source), TS_OK, "%s", ts_last_error());
    return ts_transformer_start(&ctx, source);
}

Test(transformer, incremental_steps_equal_recomputing_the_prefix) {
    ts_seq2seq *model = random_model(6, 3, 2, 5, 21);
    const ts_transformer *m = model->layers;
    int V = m->cfg.tgt_vocab;
    ts_transformer_source source;
    ts_tensor *full;
    ts_transformer_state *st = begin_decoding(m, &source, &full);
    for (int t = 0; t < T; t++) {
        int column[B];
        for (int b = 0; b < B; b++) column[b] = tgt_in[t * B + b];
        ts_tensor *weights;
        ts_tensor *logits = ts_transformer_step(m, &ctx, st, column, &st, &weights, NULL);
        cr_assert_not_null(logits, "%s", ts_last_error());
        for (int b = 0; b < B; b++) {
            assert_allclose(logits->data + (size_t)b * V, full->data + ((size_t)b * T + t) * V, V, 1e-12, 1e-12);
            double sum = 0;
            for (int s = 0; s < S; s++) {
                if (s >= src_len[b]) cr_assert(weights->data[b * S + s] == 0.0, "padding got weight");
                sum += weights->data[b * S + s];
            }
            cr_assert(fabs(sum - 1) < 1e-12);
        }
        cr_assert_eq(st->t, t + 1);
    }
    ts_seq2seq_free(model);
}

Test(transformer, reordered_rows_decode_as_their_sentences) {
    ts_seq2seq *model = random_model(4, 2, 2, 6, 8);
    const ts_transformer *m = model->layers;
    int V = m->cfg.tgt_vocab;
    ts_transformer_source source;
    ts_tensor *full;
    ts_transformer_state *st = begin_decoding(m, &source, &full);
    ts_tensor *logits = ts_transformer_step(m, &ctx, st, tgt_in, &st, NULL, NULL);  // position 0 of all three
    cr_assert_not_null(logits, "%s", ts_last_error());
    // Sentence 1 leaves; 2 and 0 go on, in that order (whole: the source rows follow).
    const int keep[2] = {2, 0};
    st = ts_transformer_reorder(m, &ctx, st, keep, 2, 1);
    cr_assert_not_null(st, "%s", ts_last_error());
    for (int t = 1; t < 3; t++) {
        int column[2] = {tgt_in[t * B + 2], tgt_in[t * B + 0]};
        logits = ts_transformer_step(m, &ctx, st, column, &st, NULL, NULL);
        cr_assert_not_null(logits, "%s", ts_last_error());
        for (int k = 0; k < 2; k++)
            assert_allclose(logits->data + (size_t)k * V, full->data + ((size_t)keep[k] * T + t) * V, V, 1e-12, 1e-12);
    }
    // Keeping the source needs every row.
    cr_assert_null(ts_transformer_reorder(m, &ctx, st, keep, 1, 0));
    cr_assert(strstr(ts_last_error(), "reorder"), "%s", ts_last_error());
    ts_seq2seq_free(model);
}

// ---- through the program: train --arch transformer, resume, info, translate, eval ----

Test(transformer, the_program_trains_resumes_exactly_and_translates, .timeout = 240) {
    char *dir = test_tmpdir(), *out = NULL;
    // plateau: a schedule without a horizon (the default cosine's is --steps), so 5 steps resumed to 12 are 12
    const char *flags = "--arch transformer --d-model 8 --heads 2 --layers 1 --ff 12 --toy-pairs 300 --batch 16 "
                        "--dropout 0.1 --warmup-steps 4 --lr-schedule plateau --show 0 --beam 2";
    cr_assert_eq(test_runf(&out, "'%s' train %s --steps 12 --out %s/straight", TS_PROGRAM, flags, dir), 0, "%s", out);
    cr_assert(strstr(out, "model: transformer, d_model 8, 2 heads, 1 layers per stack, feed-forward 12"), "%s", out);
    free(out);
    cr_assert_eq(test_runf(&out, "'%s' train %s --steps 5 --out %s/parts", TS_PROGRAM, flags, dir), 0, "%s", out);
    free(out);
    cr_assert_eq(test_runf(&out, "'%s' train %s --steps 12 --out %s/parts --resume %s/parts/last.ckpt", TS_PROGRAM, flags,
                           dir, dir),
                 0, "%s", out);
    free(out);
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/straight/last.ckpt", dir);
    snprintf(b, sizeof b, "%s/parts/last.ckpt", dir);
    cr_assert(test_same_bytes(a, b), "the resumed Transformer differs from the straight run");
    cr_assert_eq(test_runf(&out, "'%s' info %s", TS_PROGRAM, a), 0, "%s", out);
    cr_assert(strstr(out, "model: transformer, d_model 8") && strstr(out, "transformer.decoder.norm.weight"), "%s", out);
    free(out);
    for (int beam = 1; beam <= 3; beam += 2) {
        cr_assert_eq(test_runf(&out, "'%s' translate --beam %d --model %s 'the dog sees a cat .'", TS_PROGRAM, beam, a), 0,
                     "%s", out);
        cr_assert(strlen(out) > 0, "beam %d printed nothing", beam);
        free(out);
    }
    // A resumed run must ask for the same architecture.
    cr_assert_neq(test_runf(&out, "'%s' train %s --heads 4 --steps 14 --out %s/parts --resume %s/parts/last.ckpt",
                            TS_PROGRAM, flags, dir, dir),
                  0, "%s", out);
    cr_assert(strstr(out, "; this run asks for --heads 4 (resuming must keep the model's flags)"), "%s", out);
    free(out);
    cr_assert_neq(test_runf(&out, "'%s' train --arch transformer --heads 3 --hidden 256 --toy-pairs 100 --out %s/bad",
                            TS_PROGRAM, dir),
                  0, "%s", out);
    cr_assert(strstr(out, "--heads 3 does not divide the model width 256"), "%s", out);
    free(out);
    free(dir);
}
