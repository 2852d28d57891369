// attend --explain, --shift-att, --rollout and eval --explain / --shift-att
// run as programs on small trained models of both architectures:
// integrated gradients are complete on a trained model, the JSON's rows are
// the raw values normalised, eval prints every figure, and flags that do not
// go together are refused. (The attribution maths: test_explain.c.)
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *dir;

static void setup(void) { dir = test_tmpdir(); }

static void teardown(void) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_explain, .init = setup, .fini = teardown);

#define SENTENCE "the small cat does not sleep under the table ."

typedef struct {  // arrays, not pointers: a parameter is copied into a test process of its own
    char name[16];
    char flags[128];
    int ig_steps;  // the points at which completeness holds within 1%
} arch_case;

// The Transformer's feed-forward ReLU makes the path's gradient jump where a
// unit switches, and the quadrature converges as 1/N across such jumps:
// 256 points (docs/attention.md has the measured errors at 64).
static arch_case archs[] = {
    {"gru", "--emb 16 --hidden 24 --epochs 3", 64},
    {"transformer", "--arch transformer --d-model 16 --heads 2 --layers 2 --ff 32 --epochs 3", 256},
};

// A float64 model of c trained briefly on 600 toy pairs; its best.ckpt path.
static char *trained(const arch_case *c) {
    char *out;
    int rc = test_runf(&out, "%s train %s --dtype float64 --toy-pairs 600 --dev 50 --batch 32 --show 0 --beam 1 "
                             "--out %s/%s",
                       TS_PROGRAM, c->flags, dir, c->name);
    cr_assert_eq(rc, 0, "train %s exited %d:\n%s", c->name, rc, out);
    free(out);
    char *ckpt = malloc(strlen(dir) + 64);
    sprintf(ckpt, "%s/%s/best.ckpt", dir, c->name);
    return ckpt;
}

// The numbers of the JSON array that follows `"key": ` in text, flattened,
// into out (at most cap); their count.
static int json_numbers(const char *text, const char *key, double *out, int cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *at = strstr(text, pattern);
    cr_assert_not_null(at, "no %s in the JSON", key);
    at += strlen(pattern);
    int depth = 0, n = 0;
    do {
        if (*at == '[') depth++, at++;
        else if (*at == ']') depth--, at++;
        else if (strchr(", \n", *at)) at++;
        else {
            char *end;
            double v = strtod(at, &end);
            cr_assert(end > at, "not a number in %s: %.20s", key, at);
            cr_assert_lt(n, cap);
            out[n++] = v;
            at = end;
        }
    } while (depth > 0 && *at);
    return n;
}

ParameterizedTestParameters(cli_explain, integrated_gradients_of_a_trained_model_are_complete_within_1_percent) {
    return cr_make_param_array(arch_case, archs, sizeof archs / sizeof archs[0]);
}

// The test: each output word's attributions sum to its
// log-probability minus the baseline's within 1% (the GRU at 64 steps, the
// Transformer at 256; 1e-4 nats where that is more); and the JSON's weights are each row's |raw| over its sum.
ParameterizedTest(arch_case *c, cli_explain, integrated_gradients_of_a_trained_model_are_complete_within_1_percent,
                  .timeout = 240) {
    char *ckpt = trained(c), *out, json[4200];
    snprintf(json, sizeof json, "%s/ig.json", dir);
    int rc = test_runf(&out, "%s attend --model %s --explain ig --ig-steps %d --json %s \"" SENTENCE "\"", TS_PROGRAM, ckpt,
                       c->ig_steps, json);
    cr_assert_eq(rc, 0, "attend exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "attribution: integrated gradients ("), "%s", out);
    const char *said = strstr(out, "completeness: each row sums to log p - log p(zero embeddings) within ");
    cr_assert(said, "%s", out);
    double printed_gap = strtod(said + strlen("completeness: each row sums to log p - log p(zero embeddings) within "), NULL);
    free(out);
    char *text = test_read_file(json, NULL);
    static double raw[4096], weights[4096], log_prob[64], baseline[64];
    int cells = json_numbers(text, "raw", raw, 4096), T = json_numbers(text, "log_prob", log_prob, 64);
    cr_assert_eq(json_numbers(text, "baseline_log_prob", baseline, 64), T);
    cr_assert_eq(json_numbers(text, "weights", weights, 4096), cells);
    cr_assert(T > 1 && cells % T == 0, "%d cells, %d rows", cells, T);
    int S = cells / T;
    double gap = 0.0;
    for (int t = 0; t < T; t++) {
        double sum = 0.0, abs_sum = 0.0, delta = log_prob[t] - baseline[t];
        for (int s = 0; s < S; s++) sum += raw[t * S + s], abs_sum += fabs(raw[t * S + s]);
        // 1e-4 nats for a word whose log-probability the source barely moves (a short-trained model's)
        cr_assert(fabs(sum - delta) <= fmax(0.01 * fabs(delta), 1e-4), "%s row %d: attributions sum to %.9g, log p - log p(0) = %.9g",
                  c->name, t, sum, delta);
        for (int s = 0; s < S; s++)
            cr_assert(fabs(weights[t * S + s] - fabs(raw[t * S + s]) / abs_sum) < 1e-12, "%s row %d col %d", c->name, t, s);
        gap = fmax(gap, fabs(sum - delta));
    }
    // attend's completeness line is the largest of those gaps, to its 2 printed digits
    cr_assert(fabs(printed_gap - gap) <= 0.05 * gap, "%s: attend printed a gap of %g nats, the JSON's is %g", c->name, printed_gap, gap);
    free(text);
    free(ckpt);
}

ParameterizedTestParameters(cli_explain, attend_and_eval_print_every_reading) {
    return cr_make_param_array(arch_case, archs, sizeof archs / sizeof archs[0]);
}

ParameterizedTest(arch_case *c, cli_explain, attend_and_eval_print_every_reading, .timeout = 240) {
    char *ckpt = trained(c), *out;
    int rc = test_runf(&out, "%s attend --model %s --explain grad --pharaoh \"" SENTENCE "\"", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "attend exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "attribution: gradient x input"), "%s", out);
    cr_assert(strstr(out, "alignment (source-target):"), "%s", out);
    free(out);
    rc = test_runf(&out, "%s attend --model %s --shift-att --pharaoh \"" SENTENCE "\"", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "attend --shift-att exited %d:\n%s", rc, out);
    cr_assert(strstr(out, ", shift-att"), "%s", out);
    cr_assert_null(strstr(out, "<eos>"), "the shifted reading has no <eos> row:\n%s", out);
    free(out);
    // The run report sets the first dev sentence's attention beside its attributions.
    rc = test_runf(&out, "%s report %s/%s", TS_PROGRAM, dir, c->name);  // a file: the page is over test_run's 1 MiB
    cr_assert_eq(rc, 0, "report exited %d:\n%s", rc, out);
    free(out);
    char page[4200];
    snprintf(page, sizeof page, "%s/%s/report.html", dir, c->name);
    out = test_read_file(page, NULL);
    const char *beside = strstr(out, "<h2>Attention beside attributions</h2>");
    cr_assert_not_null(beside, "no attributions in the report");
    cr_assert(strstr(beside, ">attention (greedy, best.ckpt)<") && strstr(beside, ">gradient x input, |a| / row sum<"),
              "the report's two figures");
    free(out);
    rc = test_runf(&out, "%s corpus --toy --n 20 --seed 5 --align %s/gold.align > %s/pairs.tsv", TS_PROGRAM, dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = test_runf(&out, "%s eval --model %s --corpus %s/pairs.tsv --align %s/gold.align --show 0 --shift-att "
                         "--explain ig --ig-steps 8",
                   TS_PROGRAM, ckpt, dir, dir);
    cr_assert_eq(rc, 0, "eval exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "attention beside the attributions (integrated gradients)"), "%s", out);
    const char *line = strstr(out, "eval: ");
    cr_assert(line && strstr(line, " aer_shift=") && strstr(line, " aer_shift_best=") && strstr(line, " aer_explain="),
              "%s", out);
    free(out);
    free(ckpt);
}

Test(cli_explain, rollout_of_a_transformer_and_flags_that_do_not_go_together, .timeout = 240) {
    char *ckpt = trained(&archs[1]), *out;
    int rc = test_runf(&out, "%s attend --model %s --self enc --rollout \"" SENTENCE "\"", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "attend --rollout exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "encoder self-attention, layer 1 (the last of 2), rollout of layers 0..1"), "%s", out);
    free(out);
    static const char *const refused[][2] = {
        {"attend --explain grad --heads", "--explain draws attributions"},
        {"attend --explain grad --self enc", "--explain draws attributions"},
        {"attend --explain grad --ig-steps 8", "--ig-steps goes with --explain ig"},
        {"attend --explain shap", "--explain expects grad"},
        {"attend --rollout", "--rollout follows self-attention"},
        {"attend --self dec --rollout --head 0", "--rollout averages"},
        {"attend --shift-att --explain ig", "--shift-att reads"},
        {"attend --explain ig --ig-steps 0", "--ig-steps"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        rc = test_runf(&out, "%s %s --model %s \"" SENTENCE "\"", TS_PROGRAM, refused[k][0], ckpt);
        cr_assert_eq(rc, 2, "%s exited %d:\n%s", refused[k][0], rc, out);
        cr_assert(strstr(out, refused[k][1]), "%s:\n%s", refused[k][0], out);
        free(out);
    }
    rc = test_runf(&out, "%s eval --model %s --corpus %s/%s/dev-pairs.tsv --explain grad", TS_PROGRAM, ckpt, dir,
                   archs[1].name);
    cr_assert_eq(rc, 2, "eval --explain without --align exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "--align GOLD"), "%s", out);
    free(out);
    free(ckpt);
}

// attend --explain --words on a subword model without attention: the
// attributions merged into words are labelled by the words too (they were
// once labelled by the pieces, and the JSON's rows read past the merged
// matrix), each row a distribution over the sentence's words.
Test(cli_explain, words_on_a_subword_model_without_attention_label_the_merged_attributions, .timeout = 240) {
    char *out;
    int rc = test_runf(&out, "%s train --attn none --subword 300 --toy-pairs 300 --epochs 1 --emb 8 --hidden 8 --show 0 "
                             "--beam 0 --threads 1 --out %s/none",
                       TS_PROGRAM, dir);
    if (rc && strstr(out, "SentencePiece")) cr_skip_test("a build without SentencePiece");
    cr_assert_eq(rc, 0, "train exited %d:\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s attend --model %s/none/best.ckpt --explain grad --words --json - \"" SENTENCE "\" 2>/dev/null",
                   TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "attend exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "\"source\": [\"the\", \"small\", \"cat\", \"does\", \"not\", \"sleep\", \"under\", \"the\", "
                          "\"table\", \".\"]"),
              "the columns are the sentence's words:\n%.600s", out);
    cr_assert_null(strstr(out, "\xe2\x96\x81"), "a piece's mark among the labels:\n%.600s", out);
    static double weights[4096];
    int cells = json_numbers(out, "weights", weights, 4096), S = 10;
    const char *target = strstr(out, "\"target\": [");
    cr_assert(target && cells % S == 0, "%d cells", cells);
    int T = 1;  // the labels of the rows, one more than the separators between them
    for (const char *at = target; *at != ']'; at++) {
        if (*at == '\\') at++;
        else if (!strncmp(at, "\", \"", 4)) T++;
    }
    cr_assert_eq(cells, T * S, "%d rows of labels over %d cells", T, cells);
    for (int t = 0; t < T; t++) {
        double sum = 0.0;
        for (int s = 0; s < S; s++) sum += weights[t * S + s];
        cr_assert(fabs(sum - 1.0) < 1e-9, "row %d sums to %.17g", t, sum);
    }
    free(out);
}
