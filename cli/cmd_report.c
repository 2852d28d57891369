// tinyseq report: a run directory as one self-contained HTML page.
#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report_beside.h"

#include "tensor/status.h"
#include "viz/report.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: tinyseq report RUN_DIR [-o FILE] [--force]\n"
    "\n"
    "Writes one self-contained HTML file (inline CSS, JavaScript and SVG; it\n"
    "fetches nothing) from what tinyseq train wrote into RUN_DIR: what was\n"
    "trained (the model as its checkpoint describes it, config.txt's options)\n"
    "and which epoch best.ckpt holds and why (metrics.csv),\n"
    "the training loss and learning rate over the steps (steps.csv) with the\n"
    "dev loss, BLEU, chrF and exact match of each evaluation (metrics.csv), dev\n"
    "BLEU by source length, and an attention explorer: pick one of the first 24\n"
    "dev sentences, step through the evaluations, compare the greedy and beam-5\n"
    "outputs' attention (a subword run's in words or pieces), a Transformer's\n"
    "every head, hover a cell for its words and weight (attention.jsonl); a\n"
    "Transformer's AER per head at each evaluation, the guided head marked\n"
    "(heads.csv).\n"
    "\n"
    "  -o, --out FILE  where to write (default RUN_DIR/report.html; -: standard output)\n"
    "  --force         replace FILE, RUN_DIR/report.html included, if it exists\n"
    "                  (otherwise that is an error)\n"
    "\n"
    "Exit status: 0 ok, 1 not a run directory, a damaged file or a failed\n"
    "write, 2 usage error.\n";

static const char *cmd = "tinyseq report";

static int take_dir(void *context, const char *command, const char *arg) {
    const char **dir = context;
    if (*dir) {
        ts_cli_error(command, 0, "unexpected argument '%s' (see %s --help)", arg, command);
        return TS_EXIT_USAGE;
    }
    *dir = arg;
    return -1;
}

// The whole of dir/name (NUL-terminated) in *text, or NULL when the file
// does not exist; -1 after a message when it cannot be read.
static int read_all(const char *dir, const char *name, char **text, size_t *len) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        ts_cli_error(cmd, 0, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    char *buf = ts_cli_read_stream(f, (size_t)1 << 30, len);
    fclose(f);
    if (!buf) {
        ts_cli_error(cmd, 0, "cannot read '%s': %s", path, errno == EFBIG ? "over 1 GiB" : strerror(errno));
        return -1;
    }
    *text = buf;
    return 0;
}

// The run's model as its architecture's row describes it (ts_model_describe)
// in buf, and its cross-attention's layers and heads: best.ckpt's, else
// last.ckpt's; NULL before either is written.
static const char *describe_model(const char *dir, char *buf, size_t n, int *layers, int *heads) {
    static const char *const names[] = {"best.ckpt", "last.ckpt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        ts_session s;
        if (stat(path, &st) != 0 || ts_session_open(&s, path)) continue;
        ts_model_describe(&s.t.model->cfg, buf, n);
        *heads = ts_model_cross_heads(&s.t.model->cfg, layers);
        ts_session_free(&s);
        return buf;
    }
    return NULL;
}

int ts_cmd_report(int argc, char **argv) {
    const char *dir = NULL, *out_path = NULL;
    int force = 0;
    const ts_flag flags[] = {TS_STRING("-o", &out_path), TS_STRING("out", &out_path), TS_SWITCH("force", &force)};
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = 3, .positional = take_dir,
                        .context = &dir};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    if (!dir) {
        ts_cli_error(cmd, 0, "RUN_DIR is required (see %s --help)", cmd);
        return TS_EXIT_USAGE;
    }
    char config[4200], default_out[4200];
    snprintf(config, sizeof config, "%s/config.txt", dir);
    struct stat st;
    if (stat(config, &st) != 0) {
        ts_cli_error(cmd, 0, "'%s' is not a tinyseq run directory (no config.txt)", dir);
        // A file of a run (its best.ckpt): the page is its directory's.
        char copy[4200];
        snprintf(copy, sizeof copy, "%s", dir);
        const char *parent = dirname(copy);
        snprintf(config, sizeof config, "%s/config.txt", parent);
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) && stat(config, &st) == 0)
            fprintf(stderr, "%s: '%s' is a file of the run in '%s': did you mean %s %s?\n", cmd, dir, parent, cmd, parent);
        return TS_EXIT_FAIL;
    }
    snprintf(default_out, sizeof default_out, "%s/report.html", dir);
    if (!out_path) out_path = default_out;  // the run's own page: replaced with --force, as any file
    if ((parsed = ts_cli_check_output(cmd, "the report", out_path, force, 1)) >= 0) return parsed;
    int to_stdout = !strcmp(out_path, "-");
    char *metrics, *steps = NULL, *jsonl = NULL, *options = NULL, *heads = NULL;
    size_t metrics_len, steps_len, jsonl_len, options_len, heads_len = 0;
    if (read_all(dir, "metrics.csv", &metrics, &metrics_len)) return TS_EXIT_FAIL;
    if (read_all(dir, "steps.csv", &steps, &steps_len) || read_all(dir, "attention.jsonl", &jsonl, &jsonl_len) ||
        read_all(dir, "config.txt", &options, &options_len) || read_all(dir, "heads.csv", &heads, &heads_len)) {
        free(metrics);
        free(steps);
        free(jsonl);
        free(options);
        return TS_EXIT_FAIL;
    }
    size_t n_lines = 0;  // evaluations: lines of attention.jsonl, a last one without its newline included
    for (size_t i = 0; i < jsonl_len; i++) n_lines += jsonl[i] == '\n' || i + 1 == jsonl_len;
    char metrics_name[4200], steps_name[4200], jsonl_name[4200], options_name[4200], heads_name[4200];
    snprintf(options_name, sizeof options_name, "%s/config.txt", dir);
    snprintf(heads_name, sizeof heads_name, "%s/heads.csv", dir);
    snprintf(metrics_name, sizeof metrics_name, "%s/metrics.csv", dir);
    snprintf(steps_name, sizeof steps_name, "%s/steps.csv", dir);
    snprintf(jsonl_name, sizeof jsonl_name, "%s/attention.jsonl", dir);
    ts_report_input in = {.title = dir, .metrics_csv = metrics, .metrics_len = metrics_len, .metrics_name = metrics_name,
                          .steps_csv = steps, .steps_len = steps_len, .steps_name = steps_name,
                          .epochs_jsonl = jsonl, .epochs_len = jsonl_len, .epochs_name = jsonl_name,
                          .config_txt = options, .config_len = options_len, .config_name = options_name,
                          .heads_csv = heads, .heads_len = heads_len, .heads_name = heads_name};
    char model[256];
    in.model = describe_model(dir, model, sizeof model, &in.model_layers, &in.model_heads);
    report_beside beside;
    int n_beside = report_beside_make(dir, &beside);
    if (n_beside < 0) fprintf(stderr, "%s: note: no attributions beside the attention: %s\n", cmd, ts_last_error());
    if (n_beside > 0) {
        in.beside = beside.matrices;
        in.n_beside = (size_t)n_beside;
        in.beside_note = beside.doc.in_words
                             ? "The first dev sentence, translated greedily by best.ckpt: where the decoder looked "
                               "(left) and how much each source word moved each output word's log-probability "
                               "(right; docs/attention.md, section 6), in words: a word's pieces merged as attend "
                               "--words merges them (columns summed, rows averaged)."
                             : "The first dev sentence, translated greedily by best.ckpt: where the decoder looked "
                               "(left) and how much each source word moved each output word's log-probability "
                               "(right; docs/attention.md, section 6).";
    }
    int status = TS_EXIT_OK;
    if (to_stdout ? ts_report_write_html_to(stdout, &in) || fflush(stdout) == EOF
                  : ts_report_write_html(out_path, &in)) {
        ts_cli_error(cmd, to_stdout ? 0 : 1, "cannot write the report");
        status = TS_EXIT_FAIL;
    } else {  // the summary goes where the page does not
        fprintf(to_stdout ? stderr : stdout, "report: %s (%zu evaluation%s with attention, %s)\n",
                to_stdout ? "standard output" : out_path, n_lines, n_lines == 1 ? "" : "s",
                metrics ? "with metrics" : "no metrics.csv yet");
    }
    if (n_beside > 0) report_beside_free(&beside);
    free(metrics);
    free(steps);
    free(jsonl);
    free(options);
    free(heads);
    return status;
}
