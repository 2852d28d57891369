// The Transformer through the commands that take any model, run as programs
// on a small model trained for a few steps: export names every parameter by
// torch_ref.py's state_dict key and import reproduces eval to the byte,
// config.txt repeats the run to the byte, average of a checkpoint with
// itself is that checkpoint, report and eval --align run. (train, --resume,
// info, translate: test_transformer.c; MPI: test_mpi.c; gradcheck:
// test_cli_gradcheck.c.)
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "interop/npz.h"
#include "tensor/status.h"
#include "testutil.h"

static char *dir;

static void setup(void) { dir = test_tmpdir(); }

static void teardown(void) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_transformer, .init = setup, .fini = teardown);

// float64: the export is checked for '<f8' arrays and evaluated to the byte
#define MODEL "--arch transformer --dtype float64 --d-model 8 --heads 2 --layers 2 --ff 12 --warmup-steps 4"

// Trains run `name` (MODEL, dropout, 12 steps, a checkpoint each epoch kept).
static void train(const char *name, const char *flags) {
    char *out;
    int rc = test_runf(&out, "%s train " MODEL " --toy-pairs 300 --batch 16 --dropout 0.1 --steps 24 --keep 2 "
                             "--show 0 --beam 2 %s --out %s/%s",
                       TS_PROGRAM, flags, dir, name);
    cr_assert_eq(rc, 0, "train %s exited %d:\n%s", name, rc, out);
    free(out);
}

// The output of a command that must succeed.
static char *must(const char *what, char *out, int rc) {
    cr_assert_eq(rc, 0, "%s exited %d:\n%s", what, rc, out);
    return out;
}

// eval's whole output for checkpoint `ckpt` on run a's dev pairs, the
// checkpoint's name left out where it is quoted.
static char *eval(const char *ckpt) {
    char *out;
    int rc = test_runf(&out, "%s eval --model %s --corpus %s/a/dev-pairs.tsv --show 2 --beam 2", TS_PROGRAM, ckpt, dir);
    must("eval", out, rc);
    for (char *at; (at = strstr(out, ckpt));) memmove(at, at + strlen(ckpt), strlen(at + strlen(ckpt)) + 1);
    return out;
}

static ts_ckpt *load_ckpt(const char *path) {
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
    return ck;
}

// 1 when the parameter sections of a and b hold the same names, dtypes, shapes and bytes.
static int same_params(const char *a_path, const char *b_path) {
    ts_ckpt *a = load_ckpt(a_path), *b = load_ckpt(b_path);
    size_t n = ts_ckpt_tensor_count(a, TS_CKPT_PARAMS);
    int same = n == ts_ckpt_tensor_count(b, TS_CKPT_PARAMS);
    for (size_t i = 0; i < n && same; i++) {
        const ts_ckpt_tensor *x = ts_ckpt_tensor_at(a, TS_CKPT_PARAMS, i);
        const ts_ckpt_tensor *y = ts_ckpt_find_tensor(b, TS_CKPT_PARAMS, x->name);
        same = y && x->dtype == y->dtype && x->ndim == y->ndim && x->size == y->size &&
               !memcmp(x->shape, y->shape, sizeof x->shape) && !memcmp(x->raw, y->raw, x->size * ts_dtype_size(x->dtype));
    }
    ts_ckpt_free(a);
    ts_ckpt_free(b);
    return same;
}

// ../shared/bench/torch_ref.py --arch transformer's state_dict keys, written
// out as torch.nn.Transformer names them, for 2 layers per stack.
static const char *const encoder_layer_keys[] = {
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
    "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
static const char *const decoder_layer_keys[] = {
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
    "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
    "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"};
static const char *const model_keys[] = {
    "encoder.embedding.weight", "decoder.embedding.weight", "transformer.encoder.norm.weight",
    "transformer.encoder.norm.bias", "transformer.decoder.norm.weight", "transformer.decoder.norm.bias",
    "decoder.out.weight", "decoder.out.bias"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void expect_key(const ts_npz *z, const char *key, int *found) {
    const ts_npz_array *a = ts_npz_find(z, key);
    cr_assert_not_null(a, "the export has no '%s'", key);
    cr_assert_eq(a->dtype, TS_NPZ_F8, "%s", key);
    (*found)++;
}

Test(cli_transformer, export_names_torchs_state_dict_keys_and_import_evaluates_to_the_byte) {
    train("a", "");
    char *out, last[1100], best[1100], npz[1100], back[1100];
    snprintf(last, sizeof last, "%s/a/last.ckpt", dir);
    snprintf(best, sizeof best, "%s/a/epoch-1.ckpt", dir);
    snprintf(npz, sizeof npz, "%s/a.npz", dir);
    snprintf(back, sizeof back, "%s/back.ckpt", dir);
    free(must("export", out, test_runf(&out, "%s export %s %s", TS_PROGRAM, last, npz)));

    ts_npz *z;
    cr_assert_eq(ts_npz_load(npz, NULL, &z), TS_OK, "%s", ts_last_error());
    int found = 0, tinyseq = 0;
    char key[160];
    for (size_t i = 0; i < COUNT(model_keys); i++) expect_key(z, model_keys[i], &found);
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < COUNT(encoder_layer_keys); i++)
            expect_key(z, (snprintf(key, sizeof key, "transformer.encoder.layers.%d.%s", l, encoder_layer_keys[i]), key),
                       &found);
        for (size_t i = 0; i < COUNT(decoder_layer_keys); i++)
            expect_key(z, (snprintf(key, sizeof key, "transformer.decoder.layers.%d.%s", l, decoder_layer_keys[i]), key),
                       &found);
    }
    for (size_t i = 0; i < ts_npz_count(z); i++) tinyseq += !strncmp(ts_npz_at(z, i)->name, "tinyseq.", 8);
    cr_assert_eq((int)ts_npz_count(z) - tinyseq, found, "%zu arrays besides tinyseq.*: %d are state_dict keys",
                 ts_npz_count(z) - (size_t)tinyseq, found);
    cr_assert_eq(found, 8 + 30 * 2);
    size_t want_in_proj[2] = {24, 8};  // (3 d_model, d_model), torch's packed q, k, v
    const ts_npz_array *in_proj = ts_npz_find(z, "transformer.decoder.layers.1.multihead_attn.in_proj_weight");
    cr_assert(in_proj->ndim == 2 && !memcmp(in_proj->shape, want_in_proj, sizeof want_in_proj));
    ts_npz_free(z);

    // Into another epoch's checkpoint: the weights and eval's every line are last.ckpt's.
    free(must("import", out, test_runf(&out, "%s import %s --like %s -o %s", TS_PROGRAM, npz, best, back)));
    cr_assert(same_params(back, last), "the imported weights differ from the exported ones");
    char *want = eval(last), *got = eval(back), *other = eval(best);
    cr_assert(strstr(want, "nats per token") && strstr(want, "eval: bleu="), "%s", want);
    cr_assert_str_eq(got, want, "eval of the imported checkpoint differs");
    cr_assert_str_neq(other, want, "the epoch-1 model must evaluate differently, or the test shows nothing");
    free(want), free(got), free(other);
}

Test(cli_transformer, config_txt_repeats_the_run_to_the_byte, .timeout = 60) {
    train("a", "");
    char *out, a[1100], b[1100];
    int rc = test_runf(&out, "%s train --config %s/a/config.txt --out %s/b", TS_PROGRAM, dir, dir);
    free(must("train --config", out, rc));
    snprintf(a, sizeof a, "%s/a/config.txt", dir);
    char *text = test_read_file(a, NULL);
    cr_assert(strstr(text, "arch = transformer\n") && strstr(text, "layers = 2\n") && strstr(text, "ff = 12\n") &&
                  strstr(text, "warmup_steps = 4\n"),
              "%s", text);
    free(text);
    snprintf(a, sizeof a, "%s/a/last.ckpt", dir);
    snprintf(b, sizeof b, "%s/b/last.ckpt", dir);
    cr_assert(test_same_bytes(a, b), "the Transformer run repeated from config.txt differs");
}

Test(cli_transformer, average_of_a_checkpoint_with_itself_is_it_and_of_two_evaluates, .timeout = 60) {
    train("a", "");
    char *out, last[1100], first[1100], self[1100], two[1100];
    snprintf(last, sizeof last, "%s/a/last.ckpt", dir);
    snprintf(first, sizeof first, "%s/a/epoch-1.ckpt", dir);
    snprintf(self, sizeof self, "%s/self.ckpt", dir);
    snprintf(two, sizeof two, "%s/two.ckpt", dir);
    free(must("average", out, test_runf(&out, "%s average %s %s -o %s", TS_PROGRAM, last, last, self)));
    cr_assert(same_params(self, last), "(x + x) / 2 must be x to the bit");
    free(must("average", out, test_runf(&out, "%s average %s %s -o %s", TS_PROGRAM, first, last, two)));
    cr_assert(!same_params(two, last));
    char *scores = eval(two);
    cr_assert(strstr(scores, "eval: bleu="), "%s", scores);
    free(scores);
}

Test(cli_transformer, report_and_eval_align_run_on_a_transformer, .timeout = 60) {
    train("a", "");
    char *out;
    int rc = test_runf(&out, "%s report %s/a -o %s/report.html", TS_PROGRAM, dir, dir);
    free(must("report", out, rc));
    char path[1100];
    snprintf(path, sizeof path, "%s/report.html", dir);
    size_t len;
    char *html = test_read_file(path, &len);
    cr_assert(len > 1000 && strstr(html, "</html>"), "report.html of %zu bytes", len);
    free(html);
    // The per-epoch figure names what it draws: the Transformer's cross-attention head mean, not a GRU's attention.
    snprintf(path, sizeof path, "%s/a/attention-1.svg", dir);
    char *svg = test_read_file(path, NULL), *text = test_svg_text(svg);  // the title wraps to the heatmap
    cr_assert(strstr(text, "attention: transformer cross-attention, layer 1 (the last of 2), mean of 2 heads, epoch 1") &&
                  !strstr(svg, "bahdanau"), "%.600s", svg);
    free(text);
    free(svg);
    rc = test_runf(&out, "cd %s && %s corpus --toy --n 40 --seed 9 --align gold.txt > toy.tsv", dir, TS_PROGRAM);
    free(must("corpus --toy --align", out, rc));
    rc = test_runf(&out, "%s eval --model %s/a/last.ckpt --corpus %s/toy.tsv --align %s/gold.txt --show 0", TS_PROGRAM,
                   dir, dir, dir);
    must("eval --align", out, rc);
    cr_assert(strstr(out, " aer=") && strstr(out, "pairs=40"), "%s", out);
    free(out);
}

// heads.csv holds each evaluation's AER of every layer x head and each
// layer's mean, as `tinyseq eval --align --beam 1` scores the same model on
// the same dev pairs, and the run's output names the same best head.
Test(cli_transformer, heads_csv_scores_every_head_as_eval_align_does, .timeout = 60) {
    char *out, *train_out, path[1100];
    int rc = test_runf(&train_out, "%s train " MODEL " --toy-pairs 300 --batch 16 --steps 24 --show 0 --beam 1 --out %s/a",
                       TS_PROGRAM, dir);
    must("train", train_out, rc);
    // The toy corpus the run drew (seed 1), its gold links joined to each pair, then the dev pairs' links.
    rc = test_runf(&out, "cd %s && %s corpus --toy --n 300 --seed 1 --align toy.align > toy.tsv && paste toy.tsv toy.align > "
                         "joined.tsv && awk -F'\t' 'NR == FNR { gold[$1 FS $2] = $3; next } { print gold[$1 FS $2] }' joined.tsv "
                         "a/dev-pairs.tsv > dev.align",
                   dir, TS_PROGRAM);
    free(must("the dev pairs' gold links", out, rc));
    rc = test_runf(&out, "%s eval --model %s/a/last.ckpt --corpus %s/a/dev-pairs.tsv --align %s/dev.align --beam 1 --show 0",
                   TS_PROGRAM, dir, dir, dir);
    must("eval --align", out, rc);
    snprintf(path, sizeof path, "%s/a/heads.csv", dir);
    char *csv = test_read_file(path, NULL);
    cr_assert(!strncmp(csv, "epoch,step,layer,head,aer\n", 26), "%s", csv);
    // Two evaluations (epoch 1 at step 17, the end at step 24) of 2 layers x (2 heads + the mean).
    int rows = 0, last = 0;
    for (const char *p = strchr(csv, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        char epoch[32], head[16];
        long step;
        int layer;
        double aer;
        cr_assert_eq(sscanf(p, "%31[^,],%ld,%d,%15[^,],%lf", epoch, &step, &layer, head, &aer), 5, "row %d: %.40s", rows, p);
        cr_assert(step == (rows < 6 ? 17 : 24), "row %d: step %ld", rows, step);
        cr_assert_eq(layer, rows % 6 / 3);
        cr_assert_str_eq(head, rows % 3 == 2 ? "mean" : rows % 3 == 1 ? "1" : "0");
        if (step == 24) {  // eval's table row "  layer L  a0  a1  mean", to its 4 decimals
            char name[16];
            snprintf(name, sizeof name, "  layer %-2d", layer);
            const char *row = strstr(out, name);
            cr_assert(row, "%s", out);
            double want[3];
            cr_assert_eq(sscanf(row + strlen(name), "%lf %lf %lf", &want[0], &want[1], &want[2]), 3, "%s", row);
            cr_assert(fabs(aer - want[rows % 3]) <= 5.1e-5, "layer %d head %s: heads.csv %.6f, eval %.4f", layer, head, aer,
                      want[rows % 3]);
            last++;
        }
        rows++;
    }
    cr_assert_eq(rows, 12);
    cr_assert_eq(last, 6);
    // The best head as eval names it, in the run's line for the last evaluation.
    const char *best = strstr(out, "best-aligned head: layer ");
    cr_assert(best, "%s", out);
    int layer, head;
    cr_assert_eq(sscanf(best, "best-aligned head: layer %d head %d", &layer, &head), 2);
    char says[64];
    snprintf(says, sizeof says, "heads: best-aligned layer %d head %d,", layer, head);
    const char *line = strrchr(train_out, '\n');
    while (line > train_out && strncmp(line + 1, "  heads:", 8)) line--;  // the last heads line
    cr_assert(line > train_out && !strncmp(line + 3, says, strlen(says)), "eval: %s\ntrain: %s", best, train_out);
    free(csv);
    free(out);
    free(train_out);
}

// 0 is no size: before, --layers 0 (and --heads, --d-model, --ff 0) fell back
// to the default and trained 2 layers.
Test(cli_transformer, sizes_that_make_no_transformer_are_refused_naming_the_flags) {
    static const struct {
        const char *flags, *message;
    } cases[] = {
        {"--heads 3 --d-model 256", "--heads 3 does not divide the model width 256 (--d-model, else --hidden)"},
        {"--heads 3 --hidden 256", "--heads 3 does not divide the model width 256"},
        {"--layers 0", "--layers must be between 1 and 16, got 0"},
        {"--layers 17", "--layers must be between 1 and 16, got 17"},
        {"--heads 0", "--heads must be between 1 and"},
        {"--d-model 0", "--d-model must be between 1 and"},
        {"--ff 0", "--ff must be between 1 and"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = test_runf(&out, "%s train --arch transformer %s --toy-pairs 100 --out %s/bad", TS_PROGRAM,
                           cases[i].flags, dir);
        cr_assert_eq(rc, 2, "%s: exit %d\n%s", cases[i].flags, rc, out);
        cr_assert(strstr(out, cases[i].message), "%s: %s", cases[i].flags, out);
        free(out);
    }
}
