// The training options table (train/options.h) and its consumers agree:
// every row's default is what ts_train_defaults gives and what its flag
// accepts, every row reaches config.txt and --config reads it back, and
// every checkpoint row is saved as the table says and checked on resume.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "models/model.h"
#include "models/search.h"
#include "train/options.h"
#include "train/trainer.h"
#include "train/state.h"
#include "testutil.h"

// A value of row r other than the one in o (for a row a run does not use).
static void change(ts_train_opts *o, const ts_train_option *r) {
    char before[32], buf[32];
    const char *was = ts_train_option_format(o, r, before);
    snprintf(buf, sizeof buf, "%s", was);
    switch (r->kind) {
    case TS_OPTION_INT:
    case TS_OPTION_SWITCH: ts_train_option_set_whole(o, r, strtol(buf, NULL, 10) ^ 1); break;
    case TS_OPTION_REAL: *(double *)ts_train_option_field(o, r) += 0.125; break;
    case TS_OPTION_TEXT: *(const char **)ts_train_option_field(o, r) = "another"; break;
    case TS_OPTION_CHOICE: {
        static const char *const names[] = {"sgd", "adam", "general", "dot", "luong", "bahdanau", "bpe", "unigram",
                                             "plateau", "linear", "nfc"};
        char now[32];
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !strcmp(ts_train_option_format(o, r, now), buf); i++)
            ts_train_option_set(o, r, "choice", names[i]);
        break;
    }
    }
    cr_assert_str_neq(ts_train_option_format(o, r, before), buf, "row %s kept its value", r->saved_as);
}

Test(options, every_default_is_the_tables_and_its_flag_accepts_it) {
    ts_train_opts o = ts_train_defaults();
    char buf[32];
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        const char *value = ts_train_option_format(&o, r, buf);
        if (r->kind == TS_OPTION_INT || r->kind == TS_OPTION_REAL) {
            double v = strtod(value, NULL);
            if (!(r->use & TS_OPTION_NOW)) cr_expect_eq(v, r->set->value, "row %zu: default %s, the table says %g", i, value, r->set->value);
            // 0 outside the range is "not given" (--steps, --max-len, --threads).
            if (r->set->flag && !(r->kind == TS_OPTION_INT && v == 0 && r->set->lo > 0))
                cr_expect(v >= r->set->lo && v <= r->set->hi, "--%s: default %s outside [%g, %g]", r->set->flag, value, r->set->lo, r->set->hi);
        } else if (r->kind == TS_OPTION_CHOICE) {
            cr_expect_str_eq(value, r->set->text, "--%s", r->set->flag);
        }
        cr_expect(!r->set->flag || !r->set->help || r->section, "--%s has a help without a section", r->set->flag);
        cr_expect(r->set->flag || r->name, "row %zu has neither a flag nor a name for messages", i);
    }
}

// Every option row with a key that applies to the run's architecture, given
// a value that is not its default in a file read with --config, comes back in
// the run's config.txt as it was given, in the table's order; the rows of the
// other architecture, also in the file, do not (issue 47: a GRU's config.txt
// said heads = 4). Run once a Transformer, once a GRU, so every row is
// checked. A row added to the table needs a line here.
static void round_trip(const char *dir, const char *arch_name, ts_model_arch arch) {
    char cmd[8192], *out = NULL;
    char held[4200];
    snprintf(held, sizeof held, "%s/held.tsv", dir);
    const struct {
        const char *key, *value;
    } given[] = {
        {"corpus", "toy"},     {"toy_pairs", "300"},  {"max_len", "30"},        {"dev", held},
        {"test", held},        {"min_count", "2"},    {"skip_bad", "1"},        {"attention", "general"},
        {"decoder", "bahdanau"}, {"bidirectional", "1"}, {"emb", "5"},          {"hidden", "7"},
        {"optimizer", "adamw"}, {"weight_decay", "0.05"}, {"lr", "0.02"},        {"clip", "2.5"},          {"tf", "1"},
        {"dropout", "0.2"},    {"label_smoothing", "0.05"}, {"batch", "6"},     {"accumulate", "2"},
        {"epochs", "2"},       {"steps", "3"},        {"lr_decay", "0.25"},     {"patience", "2"},
        {"seed", "9"},         {"keep", "1"},         {"beam", "2"},            {"log_every", "2"},
        {"eval_every", "2"},   {"warmup_steps", "2"},  {"lr_schedule", "cosine"}, {"arch", arch_name}, {"d_model", "4"},
        {"heads", "2"},        {"layers", "1"},       {"ff", "6"},               {"best", "loss"},
        {"subword", "300"},    {"subword_kind", "unigram"}, {"subword_joint", "1"}, {"normalisation", "nfc"},
        {"dtype", "float32"},  {"preset", "gru-small"}, {"cell", ts_cell_name(TS_CELL_COUNT - 1)},
        {"guided_alignment", "toy"}, {"guided_weight", "0.5"}, {"guided_layer", "0"},
        {"guided_head", arch == TS_ARCH_TRANSFORMER ? "1" : "0"},  // a recurrent model's attention is one head
    };
    size_t n_given = sizeof given / sizeof given[0];
    // The file: every key once, in the table's order; the lines config.txt
    // should have: those of the keys that apply to arch (the GRU's arch = 0,
    // its default, is written only when given as another).
    char lines[8192] = "", want[8192] = "";
    const char *last_key = "";
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->set->key || !strcmp(r->set->key, last_key)) continue;
        last_key = r->set->key;
        // A build without SentencePiece: no subwords, so only the words' normalisation (its default, not written).
        if (!ts_subword_compiled() && (!strncmp(r->set->key, "subword", 7) || !strcmp(r->set->key, "normalisation"))) continue;
        size_t k = 0;
        while (k < n_given && strcmp(given[k].key, r->set->key)) k++;
        cr_assert(k < n_given, "config.txt key '%s' has no value in this test", r->set->key);
        // A row written only when given, given its first name (the only cell while the GRU is the only
        // one), is read and left out again.
        if ((r->use & TS_OPTION_IF_GIVEN) && r->set->names && !strcmp(given[k].value, ts_names_name(r->set->names, 0)))
            continue;
        size_t len = strlen(lines);
        snprintf(lines + len, sizeof lines - len, "%s = %s\n", r->set->key, given[k].value);
        int written = ts_model_flag_applies(arch, r->set->flag) && !(!strcmp(r->set->key, "arch") && arch == TS_ARCH_GRU);
        len = strlen(want);
        if (written) snprintf(want + len, sizeof want - len, "%s = %s\n", r->set->key, given[k].value);
    }
    char name[64];
    snprintf(name, sizeof name, "given-%s.txt", arch_name);
    char *config = test_write_file(dir, name, lines, strlen(lines));
    int rc = test_runf(&out, "'%s' train --config %s --show 0 --out %s/run-%s", TS_PROGRAM, config, dir, arch_name);
    cr_assert_eq(rc, 0, "%s", out);
    // (not "warning" alone: under OPENBLAS_CORETYPE=Prescott the banner warns of the kernels, as it should)
    cr_expect(!strstr(out, "does not apply"), "the file's keys of another architecture are read without a warning:\n%s",
              out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/run-%s/config.txt", dir, arch_name);
    char *written = test_read_file(cmd, NULL);
    const char *options = strstr(written, "\ncorpus = ");
    const char *facts = strstr(written, "# facts\n");
    cr_assert(options && facts, "%s", written);
    cr_assert_eq((size_t)(facts - options - 1), strlen(want), "%s: wanted:\n%s\nwritten:\n%s", arch_name, want, written);
    cr_assert(!strncmp(options + 1, want, strlen(want)), "%s: wanted:\n%s\nwritten:\n%s", arch_name, want, written);
    free(written);
    free(config);
}

Test(options, every_config_key_round_trips_through_a_run_of_its_architecture, .timeout = 240) {
    char *dir = test_tmpdir(), *out = NULL;
    cr_assert_eq(test_runf(&out, "'%s' corpus --toy --n 20 --seed 4 > %s/held.tsv", TS_PROGRAM, dir), 0, "%s", out);
    free(out);
    round_trip(dir, "transformer", TS_ARCH_TRANSFORMER);
    round_trip(dir, "gru", TS_ARCH_GRU);
    free(dir);
}

// The gold links of write_corpus's pairs: word k is word k.
static char *write_gold(const char *dir) {
    char text[16384];
    size_t len = 0;
    for (int i = 0; i < 80; i++) {
        for (int k = 0; k < 2 + i % 4; k++) len += (size_t)sprintf(text + len, "%s%d-%d", k ? " " : "", k, k);
        text[len++] = '\n';
    }
    return test_write_file(dir, "pairs.gold", text, len);
}

// A small corpus: word-for-word pairs of 2-5 words.
static char *write_corpus(const char *dir) {
    static const char *words[] = {"red", "blue", "cat", "dog", "sees", "eats"};
    char text[16384];
    size_t len = 0;
    for (int i = 0; i < 80; i++) {
        int n = 2 + i % 4;
        for (int side = 0; side < 2; side++) {
            for (int k = 0; k < n; k++) len += (size_t)sprintf(text + len, "%s%s%s", k ? " " : "", side ? "t" : "", words[(i + k * 5) % 6]);
            text[len++] = side ? '\n' : '\t';
        }
    }
    return test_write_file(dir, "pairs.tsv", text, len);
}

// Each checkpoint row holds the option's value as the table formats it, and
// the resume check refuses a run that changes any RESUME row, naming it.
Test(options, every_checkpoint_row_is_saved_and_checked_on_resume, .timeout = 120) {
    char *dir = test_tmpdir(), *corpus = write_corpus(dir), out_dir[4200], last[4300];
    snprintf(out_dir, sizeof out_dir, "%s/run", dir);
    snprintf(last, sizeof last, "%s/last.ckpt", out_dir);
    ts_train_opts o = ts_train_defaults();
    o.data.corpus = corpus;
    o.out_dir = out_dir;
    o.model.emb = 4;
    o.model.hidden = 6;
    o.batch = 8;
    o.data.dev_pairs = 10;
    o.steps = 3;
    o.dropout = 0.1;
    o.warmup_steps = 2;  // a row only saved when given
    o.lr_schedule = TS_LR_COSINE;  // also
    o.data.skip_bad = 1;
    o.data.max_len = 40;
    o.show = 0;
    o.beam = 1;
    o.data.subword = ts_subword_compiled() ? 300 : 0;  // its rows are saved only with --subword
    o.data.subword_joint = 1;
    char *gold = write_gold(dir);
    o.guided_alignment = gold;  // its rows are saved only with guided alignment on
    o.guided_weight = 0.25;
    o.guided_layer = o.guided_head = 0;  // as the run resolves them
    o.optim = TS_OPTIM_ADAMW;  // --weight-decay's row is saved only with an optimizer that decays
    o.weight_decay = 0.02;
    o.out = o.log = NULL;
    ts_train_report report;
    cr_assert_eq(ts_train(&o, &report), TS_OK, "%s", ts_last_error());
    ts_ckpt *ck;
    cr_assert_eq(ts_train_state_load(last, &ck), TS_OK, "%s", ts_last_error());
    o.resume = last;
    char buf[32], label[64];
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->saved_as || (!o.data.subword && !strncmp(r->saved_as, "data.subword", 12))) continue;
        const char *want = ts_train_option_format(&o, r, buf), *saved;
        cr_assert_eq(ts_ckpt_get_string(ck, r->saved_as, &saved), TS_OK, "%s", ts_last_error());
        if (r->kind == TS_OPTION_REAL) {
            double value;
            cr_assert_eq(ts_ckpt_get_double(ck, r->saved_as, -INFINITY, INFINITY, &value), TS_OK);
            cr_expect_eq(value, strtod(want, NULL), "%s: saved %s, the run had %s", r->saved_as, saved, want);
        } else {
            cr_expect_str_eq(saved, want, "%s", r->saved_as);
        }
    }
    cr_assert_eq(ts_train_options_compare(ck, &o), TS_OK, "%s", ts_last_error());
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!(r->use & TS_OPTION_RESUME) || (!o.data.subword && (r->use & TS_OPTION_SUBWORD_ONLY))) continue;
        ts_train_opts other = o;
        change(&other, r);
        cr_expect_eq(ts_train_options_compare(ck, &other), TS_ERR_ARG, "%s changed and not refused", r->saved_as);
        char says[128];
        snprintf(says, sizeof says, "was trained with %s ", ts_train_option_label(r, label));
        cr_expect(strstr(ts_last_error(), says), "%s: %s", r->saved_as, ts_last_error());
    }
    ts_ckpt_free(ck);
    free(gold);
    free(corpus);
    free(dir);
}

// --weight-decay belongs to the optimizers that decay (AdamW): given to
// another it is refused naming both; config.txt and the checkpoint have it
// only with one; and resuming across optimizers names --optim, whichever
// side decays.
Test(options, weight_decay_is_adamws_alone) {
    const ts_train_option *decay = ts_train_option_by_flag("weight-decay");
    cr_assert_not_null(decay);
    int given[TS_TRAIN_OPTIONS_MAX] = {0};
    given[decay - ts_train_options] = 1;
    ts_train_opts adam = ts_train_defaults(), adamw = adam;
    adamw.optim = TS_OPTIM_ADAMW;
    cr_assert_eq(adamw.weight_decay, 0.01, "torch.optim.AdamW's default");
    cr_assert_eq(ts_train_options_refuse(&adamw, given), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_train_options_refuse(&adam, given), TS_ERR_ARG);
    cr_assert_str_eq(ts_last_error(), "--weight-decay applies to --optim adamw only; this run uses --optim adam");
    cr_assert_eq(ts_train_options_refuse(&adam, (int[TS_TRAIN_OPTIONS_MAX]){0}), TS_OK, "not given: no error");
    cr_assert(ts_train_option_applies(&adamw, decay));
    cr_assert(!ts_train_option_applies(&adam, decay));
    char *config;
    size_t size;
    FILE *f = open_memstream(&config, &size);
    ts_train_options_write_config(f, &adam);
    fclose(f);
    cr_assert(!strstr(config, "weight_decay"), "%s", config);
    free(config);
    f = open_memstream(&config, &size);
    ts_train_options_write_config(f, &adamw);
    fclose(f);
    cr_assert(strstr(config, "\noptimizer = adamw\nweight_decay = 0.01\n"), "%s", config);
    free(config);
    ts_train_opts *runs[2] = {&adam, &adamw};
    for (int saved = 0; saved < 2; saved++) {
        ts_ckpt *ck = ts_ckpt_new();
        cr_assert_not_null(ck);
        cr_assert_eq(ts_train_options_save(ck, runs[saved], 0.003), TS_OK, "%s", ts_last_error());
        cr_assert_eq(ts_ckpt_set_int(ck, "data.max_len", 0), TS_OK);  // the model's rows (infer/load.c writes them)
        cr_assert_eq(ts_ckpt_set(ck, "data.normalisation", "nfc-lowercase-punct-split"), TS_OK);
        const char *value;
        cr_assert_eq(ts_ckpt_get_string(ck, "train.weight_decay", &value) == TS_OK, saved);
        ts_clear_error();
        ts_train_opts resumed = *runs[!saved];
        resumed.resume = "x.ckpt";
        cr_assert_eq(ts_train_options_compare(ck, runs[saved]), TS_OK, "%s", ts_last_error());
        cr_assert_eq(ts_train_options_compare(ck, &resumed), TS_ERR_ARG);
        cr_assert(strstr(ts_last_error(), "was trained with --optim"), "%s", ts_last_error());
        ts_ckpt_free(ck);
    }
}

// The line "key = value\n" is in config.txt of run DIR/name.
static int config_has(const char *dir, const char *name, const char *line) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/config.txt", dir, name);
    char *text = test_read_file(path, NULL);
    int has = strstr(text, line) != NULL;
    free(text);
    return has;
}

// --arch transformer alone trains its recipe (ts_train_arch_recipe); a
// flag given on the command line or in --config wins; the GRU keeps its
// own defaults.
Test(options, the_transformer_has_its_own_defaults_and_given_flags_win, .timeout = 120) {
    char *dir = test_tmpdir(), *out = NULL;
    const char *quick = "--toy-pairs 100 --steps 1 --show 0 --beam 1";
    cr_assert_eq(test_runf(&out, "'%s' train --arch transformer %s --out %s/t", TS_PROGRAM, quick, dir), 0, "%s", out);
    free(out);
    const ts_train_preset *recipe = ts_train_arch_recipe(TS_ARCH_TRANSFORMER);
    cr_assert(recipe, "the Transformer has a recipe");
    char words[512];
    snprintf(words, sizeof words, "%s", recipe->flags);
    int checked = 0;
    char *save = NULL;
    for (char *flag = strtok_r(words, " ", &save); flag; flag = strtok_r(NULL, " ", &save), checked++) {
        const ts_train_option *r = ts_train_option_by_flag(flag + 2);
        const char *value = strtok_r(NULL, " ", &save);
        cr_assert(r && value, "the recipe's %s is a flag with a value", flag);
        char line[128];
        snprintf(line, sizeof line, "\n%s = %s\n", r->set->key, value);
        // plateau, the schedule's 0, is written only when given.
        if (strcmp(value, "plateau"))
            cr_assert(config_has(dir, "t", line), "--arch transformer without %s:%s", r->set->key, line);
    }
    cr_assert_eq(checked, 9, "the recipe's 9 flags");
    // Its heads and layers are the sizes the row gives a Transformer left at 0.
    ts_train_opts with_recipe = ts_train_defaults();
    int given[TS_TRAIN_OPTIONS_MAX] = {0};
    char out_name[TS_RUN_NAME_SIZE];
    with_recipe.model.arch = TS_ARCH_TRANSFORMER;
    cr_assert_eq(ts_train_options_finish(&with_recipe, given, out_name), TS_OK, "%s", ts_last_error());
    ts_model_config by_row = {.arch = TS_ARCH_TRANSFORMER, .hidden = 128};
    ts_model_config_default_sizes(&by_row);
    cr_assert(with_recipe.model.heads == by_row.heads && with_recipe.model.layers == by_row.layers,
              "the recipe's --heads %d --layers %d, the row's defaults %d and %d", with_recipe.model.heads,
              with_recipe.model.layers, by_row.heads, by_row.layers);
    char *config = test_write_file(dir, "given.txt", "heads = 4\n", 10);
    cr_assert_eq(test_runf(&out, "'%s' train --arch transformer --config %s --epochs 3 --hidden 32 %s --out %s/g", TS_PROGRAM,
                           config, quick, dir),
                 0, "%s", out);
    free(out);
    cr_assert(config_has(dir, "g", "\nheads = 4\n") && config_has(dir, "g", "\nepochs = 3\n") &&
              config_has(dir, "g", "\nhidden = 32\n") && config_has(dir, "g", "\nlayers = 2\n"), "given flags lost");
    cr_assert_eq(test_runf(&out, "'%s' train %s --out %s/gru", TS_PROGRAM, quick, dir), 0, "%s", out);
    free(out);
    cr_assert(config_has(dir, "gru", "\nhidden = 128\n") && config_has(dir, "gru", "\nepochs = 5\n") &&
              config_has(dir, "gru", "\npatience = 3\n") && !config_has(dir, "gru", "warmup_steps"),
              "the GRU's defaults changed");
    free(config);
    free(dir);
}

// Every preset's flags are rows it can set, each lands in the options as its
// flag would, and --arch's defaults fill only what the preset left.
Test(options, every_preset_sets_its_flags_and_leaves_the_rest_to_the_arch_defaults) {
    cr_assert_str_eq(ts_train_presets[0].name, "none");
    for (size_t p = 1; p < ts_train_presets_count; p++) {
        ts_train_opts o = ts_train_defaults();
        int given[TS_TRAIN_OPTIONS_MAX] = {0};
        const ts_train_option *row = ts_train_option_by_flag("preset");
        cr_assert_eq(ts_train_option_set(&o, row, "--preset", ts_train_presets[p].name), TS_OK, "%s", ts_last_error());
        char out_dir[TS_RUN_NAME_SIZE];
        cr_assert_eq(ts_train_options_finish(&o, given, out_dir), TS_OK, "preset %s: %s", ts_train_presets[p].name,
                     ts_last_error());
        cr_assert(ts_train_presets[p].help && *ts_train_presets[p].help, "preset %s has no help line", ts_train_presets[p].name);
        char words[512], buf[32];
        snprintf(words, sizeof words, "%s", ts_train_presets[p].flags);
        char *save = NULL;
        for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            const ts_train_option *r = ts_train_option_by_flag(w + 2);
            cr_assert(r, "preset %s: %s", ts_train_presets[p].name, w);
            const char *want = r->kind == TS_OPTION_SWITCH ? "1" : strtok_r(NULL, " ", &save);
            cr_expect_str_eq(ts_train_option_format(&o, r, buf), want, "preset %s: %s", ts_train_presets[p].name, w);
        }
    }
    // A given flag wins over the preset's; the arch's default fills what neither set.
    ts_train_opts o = ts_train_defaults();
    int given[TS_TRAIN_OPTIONS_MAX] = {0};
    const ts_train_option *epochs = ts_train_option_by_flag("epochs");
    cr_assert_eq(ts_train_option_set(&o, ts_train_option_by_flag("preset"), "--preset", "transformer-small"), TS_OK);
    cr_assert_eq(ts_train_option_set(&o, epochs, "--epochs", "3"), TS_OK);
    given[epochs - ts_train_options] = 1;
    char out_dir[TS_RUN_NAME_SIZE];
    cr_assert_eq(ts_train_options_finish(&o, given, out_dir), TS_OK, "%s", ts_last_error());
    cr_expect_eq(o.epochs, 3);
    cr_expect_eq(o.model.hidden, 256);                   // the preset's, not the Transformer default's 128
    cr_expect_eq(o.lr_schedule, TS_LR_PLATEAU);          // the preset's, not the Transformer default's cosine
    cr_expect_eq(o.model.arch, TS_ARCH_TRANSFORMER);
    cr_expect_eq(ts_train_option_set(&o, ts_train_option_by_flag("preset"), "--preset", "transformer-big"), TS_ERR_ARG);
    cr_expect(strstr(ts_last_error(), "transformer-small") && strstr(ts_last_error(), "gru-small"), "%s", ts_last_error());
}

// train --beam 0 asks for the default width, as 0 does wherever a beam is
// given (it once meant greedy only here, the default in the C API); 1 is
// greedy only; the widest is TS_BEAM_MAX.
Test(options, beam_0_is_the_default_width_as_everywhere) {
    const ts_train_option *beam = ts_train_option_by_flag("beam");
    const char *given_as[] = {"0", "1", "7"};
    long want[] = {TS_BEAM_DEFAULT, 1, 7};
    for (int i = 0; i < 3; i++) {
        ts_train_opts o = ts_train_defaults();
        int given[TS_TRAIN_OPTIONS_MAX] = {0};
        cr_assert_eq(ts_train_option_set(&o, beam, "--beam", given_as[i]), TS_OK, "%s", ts_last_error());
        given[beam - ts_train_options] = 1;
        char out_dir[TS_RUN_NAME_SIZE];
        cr_assert_eq(ts_train_options_finish(&o, given, out_dir), TS_OK, "%s", ts_last_error());
        cr_expect_eq(o.beam, want[i], "--beam %s: %ld", given_as[i], o.beam);
    }
    ts_train_opts o = ts_train_defaults();
    char too_wide[16];
    snprintf(too_wide, sizeof too_wide, "%d", TS_BEAM_MAX + 1);
    cr_expect_eq(ts_train_option_set(&o, beam, "--beam", too_wide), TS_ERR_ARG);
}

// A Transformer trains in one teacher-forced pass: --tf below 1 exits 2
// naming it before the run directory is made (its first step's loss once
// refused it after config.txt and dev-pairs.tsv were written).
Test(options, tf_below_1_on_a_transformer_is_refused_before_the_run_starts, .timeout = 60) {
    char *dir = test_tmpdir(), *out = NULL;
    cr_assert_eq(test_runf(&out, "'%s' train --arch transformer --tf 0.5 --toy-pairs 100 --steps 1 --out %s/t", TS_PROGRAM,
                           dir), 2, "%s", out);
    cr_expect(strstr(out, "--arch transformer trains in one teacher-forced pass: --tf 0.5 must be 1"), "%s", out);
    char path[4200];
    snprintf(path, sizeof path, "%s/t", dir);
    cr_expect(access(path, F_OK) != 0, "the refused run made %s", path);
    free(out);
    free(dir);
}

// A GRU's decoder follows its attention unless --decoder is given (the
// decoder field's derived default, models/fields.c): Bahdanau's additive
// attention with Bahdanau's decoder, every other with Luong's.
Test(options, the_decoder_follows_the_attention_unless_given) {
    const ts_train_option *attn = ts_train_option_by_flag("attn"), *decoder = ts_train_option_by_flag("decoder");
    struct {
        const char *attn, *decoder;
        ts_decoder_type want;
    } cases[] = {{NULL, NULL, TS_DECODER_BAHDANAU},   {"dot", NULL, TS_DECODER_LUONG},
                 {"general", NULL, TS_DECODER_LUONG}, {"bahdanau", "luong", TS_DECODER_LUONG},
                 {"dot", "bahdanau", TS_DECODER_BAHDANAU}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_train_opts o = ts_train_defaults();
        int given[TS_TRAIN_OPTIONS_MAX] = {0};
        if (cases[i].attn) {
            cr_assert_eq(ts_train_option_set(&o, attn, "--attn", cases[i].attn), TS_OK, "%s", ts_last_error());
            given[attn - ts_train_options] = 1;
        }
        if (cases[i].decoder) {
            cr_assert_eq(ts_train_option_set(&o, decoder, "--decoder", cases[i].decoder), TS_OK, "%s", ts_last_error());
            given[decoder - ts_train_options] = 1;
        }
        char out_dir[TS_RUN_NAME_SIZE];
        cr_assert_eq(ts_train_options_finish(&o, given, out_dir), TS_OK, "%s", ts_last_error());
        cr_expect_eq(o.model.decoder, cases[i].want, "--attn %s --decoder %s: decoder %d", cases[i].attn ? cases[i].attn : "-",
                     cases[i].decoder ? cases[i].decoder : "-", (int)o.model.decoder);
    }
}

// train --preset: --help lists each preset with its line, a run's config.txt
// names the preset and holds its values with the command line's winning,
// and an unknown name exits 2 naming the choices.
Test(options, train_preset_from_the_command_line, .timeout = 120) {
    char *dir = test_tmpdir(), *out = NULL;
    cr_assert_eq(test_runf(&out, "'%s' train --help", TS_PROGRAM), 0, "%s", out);
    for (size_t p = 1; p < ts_train_presets_count; p++) {
        char line[128];
        snprintf(line, sizeof line, "    %s ", ts_train_presets[p].name);
        cr_expect(strstr(out, line), "--help does not list preset %s:\n%s", ts_train_presets[p].name, out);
    }
    free(out);
    cr_assert_eq(test_runf(&out, "'%s' train --preset gru-small --toy-pairs 200 --emb 16 --steps 1 --show 0 --beam 1 --out %s/g",
                           TS_PROGRAM, dir), 0, "%s", out);
    free(out);
    cr_expect(config_has(dir, "g", "\npreset = gru-small\n") && config_has(dir, "g", "\nmax_len = 10\n") &&
              config_has(dir, "g", "\nhidden = 256\n") && config_has(dir, "g", "\nbatch = 64\n") &&
              config_has(dir, "g", "\nemb = 16\n"), "the preset's values or the given --emb lost");
    cr_assert_eq(test_runf(&out, "'%s' train --preset gru-smal --out %s/x", TS_PROGRAM, dir), 2, "%s", out);
    cr_expect(strstr(out, "gru-small"), "%s", out);
    free(out);
    free(dir);
}

// config.txt without its first two lines (they name the run's own path).
static char *config_body(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/config.txt", dir, name);
    char *text = test_read_file(path, NULL), *body = text;
    for (int line = 0; line < 2 && body; line++)
        if ((body = strchr(body, '\n'))) body++;
    cr_assert(body, "%s has no options", path);
    memmove(text, body, strlen(body) + 1);
    return text;
}

// A 0 given to a row that config.txt holds only when given (--warmup-steps,
// --subword, --lr-schedule plateau) is written when the preset or --arch's
// defaults would set another value, so --config repeats the run. It was not
// (found by tests/fuzz/fuzz_options): read back, the preset's 400 warmup
// steps and 4000 subword pieces, and the Transformer's cosine schedule, came
// back in place of the zeros given.
Test(options, config_txt_keeps_the_zeros_given_that_a_preset_would_fill, .timeout = 120) {
    char *dir = test_tmpdir(), *out = NULL;
    const char *quick = "--toy-pairs 100 --steps 1 --show 0 --beam 1 --hidden 32 --heads 2 --ff 64";
    cr_assert_eq(test_runf(&out, "'%s' train --preset transformer-small --warmup-steps 0 --subword 0 --lr-schedule plateau "
                                 "--normalisation nfc-lowercase-punct-split %s --out %s/a", TS_PROGRAM, quick, dir), 0, "%s", out);
    free(out);
    cr_expect(config_has(dir, "a", "\nwarmup_steps = 0\n") && config_has(dir, "a", "\nsubword = 0\n") &&
              config_has(dir, "a", "\nlr_schedule = plateau\n"), "a zero given is missing from config.txt");
    cr_assert_eq(test_runf(&out, "'%s' train --config %s/a/config.txt --out %s/b", TS_PROGRAM, dir, dir), 0, "%s", out);
    free(out);
    char *a = config_body(dir, "a"), *b = config_body(dir, "b");
    cr_expect_str_eq(b, a, "config.txt read back is another run");
    cr_expect_eq(test_runf(&out, "cmp %s/a/last.ckpt %s/b/last.ckpt", dir, dir), 0, "%s", out);
    free(out);
    // Without a preset, --arch transformer's defaults likewise.
    cr_assert_eq(test_runf(&out, "'%s' train --arch transformer --warmup-steps 0 %s --out %s/t", TS_PROGRAM, quick, dir), 0,
                 "%s", out);
    free(out);
    cr_expect(config_has(dir, "t", "\nwarmup_steps = 0\n"), "--warmup-steps 0 is missing from config.txt");
    free(a);
    free(b);
    free(dir);
}

// A flag of another architecture (--attn, --emb, --bidirectional, --decoder
// with --arch transformer; --heads with the GRU) is named in a warning that
// says what to do, from the command line and from a preset's architecture
// alike, and config.txt leaves it out; the rows of every architecture in an
// older config.txt are read without a warning.
Test(options, flags_of_another_architecture_are_named_in_a_warning, .timeout = 120) {
    char *dir = test_tmpdir(), *out = NULL;
    const char *quick = "--toy-pairs 100 --steps 1 --show 0 --beam 1 --d-model 8 --heads 2 --layers 1";
    const char *gru_flags[] = {"--attn dot", "--emb 16", "--bidirectional", "--decoder luong"};
    for (size_t i = 0; i < sizeof gru_flags / sizeof *gru_flags; i++) {
        cr_assert_eq(test_runf(&out, "'%s' train --arch transformer %s %s --out %s/t%zu", TS_PROGRAM, gru_flags[i], quick,
                               dir, i), 0, "%s", out);
        char want[256], flag[32], key[64];
        snprintf(flag, sizeof flag, "%.*s", (int)strcspn(gru_flags[i], " "), gru_flags[i]);
        snprintf(want, sizeof want,
                 "warning: %s does not apply to --arch transformer (only to --arch gru): ignored; use --arch gru, or "
                 "leave %s out", flag, flag);
        cr_expect(strstr(out, want), "%s: %s", want, out);
        free(out);
        snprintf(key, sizeof key, "t%zu", i);
        cr_expect(!config_has(dir, key, "\nattention =") && !config_has(dir, key, "\nemb =") &&
                  !config_has(dir, key, "\nbidirectional =") && !config_has(dir, key, "\ndecoder ="),
                  "a Transformer's config.txt lists the GRU's keys (%s)", flag);
    }
    cr_assert_eq(test_runf(&out, "'%s' train --heads 4 --toy-pairs 100 --steps 1 --show 0 --beam 1 --out %s/g", TS_PROGRAM,
                           dir), 0, "%s", out);
    cr_expect(strstr(out, "warning: --heads does not apply to --arch gru (only to --arch transformer): ignored; "
                          "add --arch transformer, or leave --heads out"), "%s", out);
    free(out);
    cr_expect(!config_has(dir, "g", "\nheads =") && config_has(dir, "g", "\nattention = bahdanau\n"),
              "a GRU's config.txt lists --heads, or lost its attention");
    // An older Transformer run's config.txt, with the GRU's keys, repeats without a warning.
    char path[4200];
    snprintf(path, sizeof path, "%s/t0/config.txt", dir);
    char *text = test_read_file(path, NULL), *older = malloc(strlen(text) + 64);
    sprintf(older, "attention = bahdanau\nemb = 64\n%s", text);
    char *config = test_write_file(dir, "older.txt", older, strlen(older));
    cr_assert_eq(test_runf(&out, "'%s' train --config %s --out %s/c", TS_PROGRAM, config, dir), 0, "%s", out);
    cr_expect(!strstr(out, "does not apply"), "%s", out);
    free(out);
    free(config);
    free(older);
    free(text);
    free(dir);
}

// A choice's help may say "{names}": usage writes its names in words, so a
// kind's new name (a row of its table) reaches --help with no line changed.
Test(options, a_help_saying_names_lists_every_name_of_its_choice) {
    char words[256];
    cr_assert_str_eq(ts_names_list(&ts_decoder_names, words, sizeof words), "bahdanau or luong");
    cr_assert_str_eq(ts_names_list(&ts_attn_names, words, sizeof words),
                     "none, dot, scaled-dot, general, concat or bahdanau");
    const ts_names one = {.what = "thing", .count = 1, .name = ts_decoder_name};
    cr_assert_str_eq(ts_names_list(&one, words, sizeof words), "bahdanau");
    ts_train_opts defaults = ts_train_defaults();
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->set->help || !strstr(r->set->help, "{names}")) continue;
        cr_assert_not_null(r->set->names, "--%s's help says {names} but it names no choice", r->set->flag);
        char *help = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&help, &len);
        ts_train_option_help(f, r, &defaults, "\n");
        fclose(f);
        cr_assert_null(strchr(help, '{'), "--%s: %s", r->set->flag, help);
        for (int v = 0; v < r->set->names->count; v++)
            cr_assert_not_null(strstr(help, ts_names_name(r->set->names, v)), "--%s: %s", r->set->flag, help);
        free(help);
    }
}
