// Attributions (models/explain.c), for every architecture: gradient x input
// equals finite differences of the log-probability, integrated gradients
// satisfy completeness, float32 agrees with float64, rows normalise as
// attention's.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "models/explain.h"
#include "testutil.h"

static ts_arena *arena;
static ts_ctx ctx;
static void setup(void) {
    arena = ts_arena_new((size_t)64 << 20);
    ts_ctx_init(&ctx, arena);
}
static void teardown(void) { ts_arena_free(arena); }
TestSuite(explain, .init = setup, .fini = teardown);

enum { SRC_VOCAB = 11, TGT_VOCAB = 10 };

typedef struct {  // an array, not a pointer: a parameter is copied into a test process of its own
    char name[24];
    ts_model_config cfg;
} arch_case;

static arch_case archs[] = {
    {"gru bahdanau", {.src_vocab = SRC_VOCAB, .tgt_vocab = TGT_VOCAB, .emb = 5, .hidden = 6, .attn = TS_ATTN_BAHDANAU,
                      .decoder = TS_DECODER_BAHDANAU, .bidirectional = 1}},
    {"gru luong general", {.src_vocab = SRC_VOCAB, .tgt_vocab = TGT_VOCAB, .emb = 5, .hidden = 6, .attn = TS_ATTN_GENERAL,
                           .decoder = TS_DECODER_LUONG}},
    {"transformer", {.arch = TS_ARCH_TRANSFORMER, .src_vocab = SRC_VOCAB, .tgt_vocab = TGT_VOCAB, .emb = 8, .hidden = 8,
                     .d_model = 8, .heads = 2, .layers = 2, .ff = 12}},
};

// A random model of c in dtype, its values those of the float64 model of
// the same seed with spread U(-0.5, 0.5) added (so nothing sits at its
// initial 0 or 1).
static ts_seq2seq *random_model(const arch_case *c, int dtype, unsigned long seed, double spread) {
    ts_model_config cfg = c->cfg;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s: %s", c->name, ts_last_error());
    for (int i = 0; i < m->params.count; i++)
        for (size_t k = 0; k < m->params.items[i]->size; k++) m->params.items[i]->data[k] += spread * (gsl_rng_uniform(rng) - 0.5);
    gsl_rng_free(rng);
    if (dtype == TS_F64) return m;
    cfg.dtype = dtype;
    ts_seq2seq *low = ts_seq2seq_new(&cfg, NULL);
    cr_assert_not_null(low, "%s: %s", c->name, ts_last_error());
    for (int i = 0; i < m->params.count; i++)
        ts_values_convert(low->params.items[i]->raw, dtype, m->params.items[i]->data, TS_F64, m->params.items[i]->size);
    ts_seq2seq_free(m);
    return low;
}

static const int src[] = {4, 9, 5, 7, 6};
static const int out[] = {5, 8, 4, 6};
enum { S = sizeof src / sizeof src[0], LEN = sizeof out / sizeof out[0], T = LEN + 1 };

// The source table's rows of src, float64 (S, E).
static int table_rows(const ts_seq2seq *m, double *e) {
    const ts_tensor *table = m->kind->source_embedding(m);
    int E = table->shape[1];
    for (int s = 0; s < S; s++)
        for (int k = 0; k < E; k++) e[s * E + k] = ts_value(table, (size_t)src[s] * E + k);
    return E;
}

ParameterizedTestParameters(explain, gradient_times_input_equals_finite_differences_in_float64) {
    return cr_make_param_array(arch_case, archs, sizeof archs / sizeof archs[0]);
}

// a[t, s] = sum_k e_s[k] df_t/de_s[k], each derivative a central difference
// of ts_explain_log_probs (float64, h = 1e-5: truncation ~1e-10, rounding ~1e-11).
ParameterizedTest(arch_case *c, explain, gradient_times_input_equals_finite_differences_in_float64) {
    ts_seq2seq *m = random_model(c, TS_F64, 5, 1.0);
    double got[T * S], want[T * S] = {0}, e[S * 16], plus[T], minus[T];
    cr_assert_eq(ts_explain(m, &ctx, src, S, out, LEN, TS_EXPLAIN_GRAD, 0, got), TS_OK, "%s", ts_last_error());
    int E = table_rows(m, e);
    const double h = 1e-5;
    for (int s = 0; s < S; s++)
        for (int k = 0; k < E; k++) {
            double keep = e[s * E + k];
            e[s * E + k] = keep + h;
            cr_assert_eq(ts_explain_log_probs(m, &ctx, src, S, out, LEN, e, plus), TS_OK, "%s", ts_last_error());
            e[s * E + k] = keep - h;
            cr_assert_eq(ts_explain_log_probs(m, &ctx, src, S, out, LEN, e, minus), TS_OK, "%s", ts_last_error());
            e[s * E + k] = keep;
            for (int t = 0; t < T; t++) want[t * S + s] += keep * (plus[t] - minus[t]) / (2 * h);
        }
    assert_allclose(got, want, T * S, 1e-8, 1e-6);
    ts_seq2seq_free(m);
}

ParameterizedTestParameters(explain, integrated_gradients_are_complete_at_64_steps) {
    return cr_make_param_array(arch_case, archs, sizeof archs / sizeof archs[0]);
}

// sum_s a[t, s] = f_t(e) - f_t(0) (the baseline: zero source rows), within
// 1% at 64 Gauss-Legendre points; float64 and float32. The weights are
// spread by 0.1 only: a Transformer's feed-forward ReLU makes the integrand
// piecewise smooth, and a random model with large weights crosses many kinks
// along the path, across which the quadrature converges slowly (spread 1:
// 0.0945, -0.152, -0.0171 at 2, 8 and 64 steps against -0.0081); a trained
// model's completeness is checked through attend (tests/test_cli_explain.c).
ParameterizedTest(arch_case *c, explain, integrated_gradients_are_complete_at_64_steps) {
    for (int dtype = 0; dtype < TS_DTYPE_COUNT; dtype++) {
        ts_seq2seq *m = random_model(c, dtype, 7, 0.1);
        double a[T * S], input[T], baseline[T], zeros[S * 16] = {0};
        cr_assert_eq(ts_explain(m, &ctx, src, S, out, LEN, TS_EXPLAIN_IG, TS_IG_STEPS_DEFAULT, a), TS_OK, "%s",
                     ts_last_error());
        cr_assert_eq(ts_explain_log_probs(m, &ctx, src, S, out, LEN, NULL, input), TS_OK, "%s", ts_last_error());
        cr_assert_eq(ts_explain_log_probs(m, &ctx, src, S, out, LEN, zeros, baseline), TS_OK, "%s", ts_last_error());
        for (int t = 0; t < T; t++) {
            double sum = 0.0, delta = input[t] - baseline[t];
            for (int s = 0; s < S; s++) sum += a[t * S + s];
            cr_assert(fabs(sum - delta) <= 0.01 * fabs(delta) + 1e-6,
                      "%s %s: word %d: attributions sum to %.9g, log p(x) - log p(0) = %.9g", c->name,
                      ts_dtype_name(dtype), t, sum, delta);
        }
        ts_seq2seq_free(m);
    }
}

ParameterizedTestParameters(explain, float32_agrees_with_float64) {
    return cr_make_param_array(arch_case, archs, sizeof archs / sizeof archs[0]);
}

// The same model in float32: a few dozen rounded operations deep, each
// attribution within 1e-4 of its row's largest magnitude (float32's epsilon
// is 6e-8; the gradients sum products of O(1) values over the layers).
ParameterizedTest(arch_case *c, explain, float32_agrees_with_float64) {
    ts_seq2seq *m64 = random_model(c, TS_F64, 9, 1.0), *m32 = random_model(c, TS_F32, 9, 1.0);
    for (int method = 0; method < TS_EXPLAIN_COUNT; method++) {
        double a64[T * S], a32[T * S];
        cr_assert_eq(ts_explain(m64, &ctx, src, S, out, LEN, method, 16, a64), TS_OK, "%s", ts_last_error());
        cr_assert_eq(ts_explain(m32, &ctx, src, S, out, LEN, method, 16, a32), TS_OK, "%s", ts_last_error());
        for (int t = 0; t < T; t++) {
            double scale = 0.0;
            for (int s = 0; s < S; s++) scale = fmax(scale, fabs(a64[t * S + s]));
            assert_allclose(a32 + t * S, a64 + t * S, S, 1e-4 * scale, 0.0);
        }
    }
    ts_seq2seq_free(m64);
    ts_seq2seq_free(m32);
}

// Freezing the parameters for the call leaves them and their gradients as
// they were, and a second call gives the same bits.
Test(explain, leaves_the_model_untouched_and_repeats_exactly) {
    ts_seq2seq *m = random_model(&archs[0], TS_F64, 3, 1.0);
    double first[T * S], second[T * S];
    cr_assert_eq(ts_explain(m, &ctx, src, S, out, LEN, TS_EXPLAIN_IG, 8, first), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_explain(m, &ctx, src, S, out, LEN, TS_EXPLAIN_IG, 8, second), TS_OK, "%s", ts_last_error());
    cr_assert_eq(memcmp(first, second, sizeof first), 0);
    for (int i = 0; i < m->params.count; i++) {
        cr_assert(m->params.items[i]->requires_grad, "%s lost requires_grad", m->params.items[i]->name);
        for (size_t k = 0; k < m->params.items[i]->size; k++)
            cr_assert_eq(m->params.items[i]->grad[k], 0.0, "%s gained a gradient", m->params.items[i]->name);
    }
    ts_seq2seq_free(m);
}

Test(explain, rows_normalise_to_absolute_shares_summing_to_one) {
    const double raw[] = {0.5, -1.5, 0.0, 0.0, 0.0, 0.0};  // (2, 3): a row of zeros becomes uniform
    double w[6];
    ts_explain_normalize(raw, 2, 3, w);
    assert_allclose(w, (const double[]){0.25, 0.75, 0.0, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 6, 1e-15, 0.0);
}

Test(explain, refuses_bad_arguments_with_a_message) {
    ts_seq2seq *m = random_model(&archs[0], TS_F64, 3, 1.0);
    double a[T * S];
    cr_assert_eq(ts_explain(m, &ctx, src, S, out, LEN, TS_EXPLAIN_IG, 0, a), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "steps"), "%s", ts_last_error());
    cr_assert_eq(ts_explain(m, &ctx, src, 0, out, LEN, TS_EXPLAIN_GRAD, 0, a), TS_ERR_ARG);
    const int bad[] = {4, 99};
    cr_assert_eq(ts_explain(m, &ctx, bad, 2, out, LEN, TS_EXPLAIN_GRAD, 0, a), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "99"), "%s", ts_last_error());
    cr_assert_eq(ts_explain_parse("ig"), TS_EXPLAIN_IG);
    cr_assert_eq(ts_explain_parse("shap"), -1);
    ts_seq2seq_free(m);
}
