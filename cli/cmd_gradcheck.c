// tinyseq gradcheck: the whole model's gradients against central finite
// differences, for any attention x decoder x cell of the GRU architecture or
// for the Transformer,
// on a tiny padded batch.
#include "cli/cli.h"

#include "models/fields.h"
#include "models/gradcheck.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tinyseq gradcheck [--arch gru|transformer] [--attn NAME|all] [--decoder bahdanau|luong|all]\n"
    "                         [--bidirectional] [--cell NAME] [--tf RATIO] [--seed N] [--rtol X] [--atol X]\n"
    "\n"
    "Checks d loss / d parameter for every parameter of a tiny model (vocabularies\n"
    "of 7 and 8 words, embedding 3, hidden 4, the architecture's defaults for the\n"
    "rest: a Transformer's d_model 4, 2 heads, 2 layers per stack, feed-forward 16)\n"
    "on a padded batch of three sentences of\n"
    "unequal lengths (source padding masked in every attention that reads the\n"
    "source, the causal mask on the Transformer decoder's self-attention), against\n"
    "central finite differences in double precision.\n"
    "A value passes when |analytic - numeric| <= atol + rtol * |numeric|.\n"
    "\n"
    "  --arch NAME       gru (default) or transformer\n"
    "  --attn NAME       GRU: none, dot, scaled-dot, general, concat, bahdanau, or all (default all)\n"
    "  --decoder NAME    GRU: bahdanau, luong, or all (default all)\n"
    "  --bidirectional   GRU: use a bidirectional encoder\n"
    "  --cell NAME       GRU: the recurrent cell, as train --cell names it (default gru)\n"
    "  --tf RATIO        teacher-forcing ratio in [0, 1] (default 1; the Transformer: 1 only)\n"
    "  --seed N          initialisation seed (default 1)\n"
    "  --rtol X          relative tolerance (default 1e-6)\n"
    "  --atol X          absolute tolerance (default 1e-8)\n"
    "\n"
    "Prints one row per parameter tensor and ends with\n"
    "  gradcheck: N passed, M failed, max relative error X\n"
    "Exit status 0 only when M is 0.\n";

// --attn NAME and --decoder NAME narrow the range checked to one type; "all"
// (the default) leaves it as it is.
typedef struct {
    int from, to;
    int is_attn;
} type_range;

static int choose_range(const char *command, const char *flag, const char *value, void *target) {
    type_range *r = target;
    if (!strcmp(value, "all")) return -1;
    int parsed;
    if (r->is_attn) {
        ts_attn_type type;
        parsed = ts_attn_parse(value, &type) == TS_OK ? (int)type : -1;
    } else {
        ts_decoder_type type;
        parsed = ts_decoder_parse(value, &type) == TS_OK ? (int)type : -1;
    }
    if (parsed < 0) {
        ts_cli_error(command, 1, "--%s", flag);
        return TS_EXIT_USAGE;
    }
    r->from = r->to = parsed;
    return -1;
}

static int choose_cell(const char *command, const char *flag, const char *value, void *target) {
    int cell;
    if (ts_names_parse(&ts_cell_names, value, &cell) == TS_OK) return *(ts_cell_type *)target = (ts_cell_type)cell, -1;
    ts_cli_error(command, 1, "--%s", flag);
    return TS_EXIT_USAGE;
}

static int choose_arch(const char *command, const char *flag, const char *value, void *target) {
    if (ts_arch_parse(value, target) == TS_OK) return -1;
    ts_cli_error(command, 1, "--%s", flag);
    return TS_EXIT_USAGE;
}

int ts_cmd_gradcheck(int argc, char **argv) {
    const char *cmd = "tinyseq gradcheck";
    type_range attn = {0, TS_ATTN_COUNT - 1, 1}, dec = {0, TS_DECODER_COUNT - 1, 0};
    ts_model_arch arch;
    ts_arch_parse(ts_model_fields[TS_FIELD_ARCH].set.text, &arch);  // --arch's default, its field row's (as train's)
    int bi = 0, gru_only[4] = {0};  // --attn, --decoder, --bidirectional, --cell given
    ts_cell_type cell = TS_CELL_GRU;
    long seed = 1;
    double tf = 1.0;
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    const ts_flag flags[] = {
        TS_CHOICE("arch", &arch, choose_arch),
        {"attn", TS_FLAG_CHOICE, &attn, 0, 0, choose_range, &gru_only[0]},
        {"decoder", TS_FLAG_CHOICE, &dec, 0, 0, choose_range, &gru_only[1]},
        {"bidirectional", TS_FLAG_SWITCH, &bi, 0, 0, NULL, &gru_only[2]},
        {"cell", TS_FLAG_CHOICE, &cell, 0, 0, choose_cell, &gru_only[3]},
        TS_INT("seed", &seed, 0, 2147483647L),
        TS_DOUBLE("tf", &tf, 0, 1),
        TS_DOUBLE("rtol", &opts.rtol, 1e-15, 1),
        TS_DOUBLE("atol", &opts.atol, 1e-15, 1),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0]};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    const char *given[4] = {gru_only[0] ? "attn" : NULL, gru_only[1] ? "decoder" : NULL,
                            gru_only[2] ? "bidirectional" : NULL, gru_only[3] ? "cell" : NULL};
    if (ts_model_check_flags(arch, given, 4, tf)) {
        ts_cli_error(cmd, 0, "%s", ts_last_error());
        return TS_EXIT_USAGE;
    }
    // An architecture without attention types or decoders checks one model: the loops below run once.
    if (!ts_model_flag_applies(arch, "attn")) attn.to = attn.from;
    if (!ts_model_flag_applies(arch, "decoder")) dec.to = dec.from;

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_arena *arena = ts_arena_new(16 << 20);
    if (!rng || !arena) {
        ts_cli_error(cmd, 1, "cannot allocate");
        gsl_rng_free(rng);
        ts_arena_free(arena);
        return TS_EXIT_FAIL;
    }
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    int passed = 0, failed = 0, status = TS_EXIT_OK;
    double worst = 0.0;
    int width = 36;  // the longest parameter name's, at least
    ts_param_shape layout[TS_SEQ2SEQ_MAX_PARAMS];
    int n_layout = 0;
    ts_model_config first = ts_gradcheck_config(arch, (ts_attn_type)attn.from, (ts_decoder_type)dec.from, 1, cell);
    if (!ts_seq2seq_layout(&first, layout, &n_layout))
        for (int i = 0; i < n_layout; i++)
            if ((int)strlen(layout[i].name) + 4 > width) width = (int)strlen(layout[i].name) + 4;
    printf("%-*s %-10s %8s  %s\n", width, "parameter", "shape", "values", "max rel err");
    for (int a = attn.from; a <= attn.to && status == TS_EXIT_OK; a++)
        for (int d = dec.from; d <= dec.to && status == TS_EXIT_OK; d++) {
            ts_model_config cfg = ts_gradcheck_config(arch, (ts_attn_type)a, (ts_decoder_type)d, bi, cell);
            gsl_rng_set(rng, (unsigned long)seed);
            ts_seq2seq *model = ts_seq2seq_new(&cfg, rng);
            if (!model) {
                ts_cli_error(cmd, 1, "cannot build the model");
                status = TS_EXIT_FAIL;
                break;
            }
            int n = model->params.count;
            ts_gradcheck_result *results = calloc((size_t)n, sizeof *results);
            if (!results || ts_seq2seq_gradcheck(model, &ctx, tf, rng, &opts, results) != TS_OK) {
                char described[160];
                ts_cli_error(cmd, 1, "%s", ts_model_describe(&cfg, described, sizeof described));
                free(results);
                ts_seq2seq_free(model);
                status = TS_EXIT_FAIL;
                break;
            }
            char model_text[256];
            printf("# %s, tf %g\n", ts_model_describe(&cfg, model_text, sizeof model_text), tf);
            for (int i = 0; i < n; i++) {
                char shape[48];
                ts_shape_str(model->params.items[i], shape, sizeof shape);
                ts_gradcheck_result *r = &results[i];
                printf("%-*s %-10s %8zu  %.2e%s\n", width, r->name, shape, r->checked, r->max_rel_err,
                       r->passed ? "" : "  FAILED");
                if (!r->passed)
                    printf("    worst at %zu: analytic %.12g, numeric %.12g\n", r->worst_index, r->worst_analytic,
                           r->worst_numeric);
                if (r->passed) passed++;
                else failed++;
                if (r->max_rel_err > worst || isnan(r->max_rel_err)) worst = r->max_rel_err;
            }
            free(results);
            ts_seq2seq_free(model);
        }
    if (status == TS_EXIT_OK) {
        printf("gradcheck: %d passed, %d failed, max relative error %.2e (atol %g, rtol %g)\n", passed, failed, worst,
               opts.atol, opts.rtol);
        if (failed) status = TS_EXIT_FAIL;
    }
    ts_arena_free(arena);
    gsl_rng_free(rng);
    return status;
}
