// tinyseq attend: translate one sentence and show where the decoder looked,
// as a terminal heatmap, SVG, JSON or a Pharaoh alignment line.
//
// T = output tokens + 1 (the <eos> step), S = source tokens (no <eos>: the
// encoder reads the sentence as it is). weights: (T, S), row t is output step t.
#include "cli/cli.h"
#include "cli/common.h"

#include "infer/metrics.h"
#include "infer/load.h"
#include "infer/translate.h"
#include "viz/heatmap.h"
#include "viz/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: tinyseq attend --model CKPT [--beam K] [--svg FILE] [--json FILE] [--force] [--pharaoh]\n"
    "                      [--values] [--color auto|always|never] [SENTENCE]\n"
    "\n"
    "Translates SENTENCE (else the one line of standard input; at a terminal it\n"
    "asks for it) and shows its attention matrix: one row per output word\n"
    "(and <eos>), one column per source word; row t is the distribution over\n"
    "source words the decoder used while producing output word t. A word the\n"
    "model does not know is read as <unk>: it is named on standard error and\n"
    "labelled \"<unk>:word\" in every figure. SENTENCE has at most 1000 tokens.\n"
    "\n"
    "  --model CKPT     checkpoint written by tinyseq train (required)\n"
    "  --beam K         beam width, 1..1000 (default " TS_CLI_QUOTE(TS_BEAM_DEFAULT) "; 1: greedy)\n"
    "  --length-penalty A  beam search ranks finished outputs by GNMT's log-probability /\n"
    "                 ((5 + |y|) / 6)^A, A in [0, 100] (default: log-probability / |y|;\n"
    "                 |y| counts <eos>); larger A favours longer outputs\n"
    "  --svg FILE       also write the heatmap as a standalone SVG figure\n"
    "  --json FILE      also write {source, target, weights, attention} as JSON\n"
    "                   (FILE -: standard output, and the rest goes to standard error)\n"
    "  --force          replace an existing --svg or --json FILE (otherwise an error)\n"
    "  --pharaoh        print the argmax alignment as source-target pairs (\"0-0 2-1\"),\n"
    "                   one link per output word, <eos> left out\n"
    "  --values         print each weight (.14) in the coloured heatmap too\n"
    "  --color WHEN     auto (default: colour on a terminal, a plain table otherwise),\n"
    "                   always, or never (shades on a terminal, no colour)\n";

static const char *cmd = "tinyseq attend";

// --color WHEN: auto, always or never.
static int choose_color(const char *command, const char *flag, const char *value, void *target) {
    if (strcmp(value, "auto") && strcmp(value, "always") && strcmp(value, "never")) {
        ts_cli_error(command, 0, "--%s expects auto, always or never, got '%s'", flag, value);
        return TS_EXIT_USAGE;
    }
    *(const char **)target = value;
    return -1;
}

// The SENTENCE arguments (one is right; more were meant as one, unquoted).
typedef struct {
    const char **items;  // (argc)
    int n;
} sentence_list;

static int take_sentence(void *context, const char *command, const char *arg) {
    (void)command;
    sentence_list *list = context;
    list->items[list->n++] = arg;
    return -1;
}

// The SENTENCE from standard input when none is given: one line (a prompt
// at a terminal); from a pipe or file, the one line that is not blank.
// -1 with *sentence malloc'd, else the exit status after a message.
static int read_sentence(char **sentence) {
    int tty = isatty(STDIN_FILENO);
    if (tty) fprintf(stderr, "%s: type a sentence and press Enter: ", cmd);
    size_t len = 0;
    char *text = tty ? NULL : ts_cli_read_stream(stdin, (size_t)1 << 24, &len);
    if (tty) {
        size_t cap = 0;
        ssize_t got = getline(&text, &cap, stdin);
        if (got < 0) {
            free(text);
            text = NULL;
        }
    }
    if (!text) {
        ts_cli_error(cmd, 0, ferror(stdin) ? "cannot read standard input" : "no SENTENCE: give one, or a line on standard input");
        return ferror(stdin) ? TS_EXIT_FAIL : TS_EXIT_USAGE;
    }
    // The first line that is not blank; any other is an error (translate takes many).
    char *line = NULL, *next = text;
    int lines = 0;
    for (char *at = strtok_r(text, "\r\n", &next); at; at = strtok_r(NULL, "\r\n", &next)) {
        if (strspn(at, " \t") == strlen(at)) continue;
        if (!line) line = at;
        lines++;
    }
    if (lines != 1) {
        if (lines) ts_cli_error(cmd, 0, "standard input holds %d sentences; attend reads one (tinyseq translate reads many)", lines);
        else ts_cli_error(cmd, 0, "no SENTENCE: give one, or a line on standard input");
        free(text);
        return TS_EXIT_USAGE;
    }
    memmove(text, line, strlen(line) + 1);
    *sentence = text;
    return -1;
}

// The terminal mode for --color WHEN on out.
static enum ts_term_mode term_mode(const char *when, FILE *out) {
    if (!strcmp(when, "auto")) return ts_term_mode_detect(out);
    int tty = ts_term_mode_detect(out) != TS_TERM_PLAIN;
    if (!strcmp(when, "never")) return tty ? TS_TERM_SHADE : TS_TERM_PLAIN;
    // always: the colours the terminal claims, at least 256.
    enum ts_term_mode m = ts_term_mode_choose(1, NULL, getenv("COLORTERM"), getenv("TERM"));
    return m == TS_TERM_TRUECOLOR ? m : TS_TERM_256;
}

// What one translation produced, with its labels; everything owned.
typedef struct {
    ts_hypothesis hyp;
    char *source;                 // the normalised tokens joined by spaces
    ts_attention_labels labels;   // source (S) and target (T) words
    int S, T;
} attention_view;

static void view_free(attention_view *v) {
    ts_hypothesis_free(&v->hyp);
    free(v->source);
    ts_attention_labels_free(&v->labels);
}

static void print_words(FILE *out, const char *label, const char *const *words, int n) {
    fputs(label, out);
    for (int i = 0; i < n; i++) fprintf(out, "%s%s", i ? " " : "", words[i]);
    fputc('\n', out);
}

int ts_cmd_attend(int argc, char **argv) {
    const char *model_path = NULL, *svg_path = NULL, *json_path = NULL, *color = "auto";
    long beam = TS_BEAM_DEFAULT;
    ts_length_penalty lp = {0, 0.0};
    int pharaoh = 0, values = 0, force = 0;
    sentence_list list = {malloc((size_t)argc * sizeof(char *)), 0};
    if (!list.items) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    const ts_flag flags[] = {
        TS_STRING("model", &model_path),
        TS_INT("beam", &beam, 1, 1000),
        {.name = "length-penalty", .kind = TS_FLAG_DOUBLE, .target = &lp.alpha, .lo = 0, .hi = 100, .given = &lp.gnmt},
        TS_STRING("svg", &svg_path),
        TS_STRING("json", &json_path),
        TS_SWITCH("pharaoh", &pharaoh),
        TS_SWITCH("values", &values),
        TS_CHOICE("color", &color, choose_color),
        TS_SWITCH("force", &force),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0],
                        .positional = take_sentence, .context = &list};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed < 0 && list.n > 1) parsed = ts_cli_quote_hint(cmd, "attend reads one SENTENCE", list.items, list.n);
    if (parsed < 0 && svg_path && json_path && !strcmp(svg_path, "-") && !strcmp(json_path, "-")) {
        ts_cli_error(cmd, 0, "--svg - and --json - cannot share standard output; name a file for one");
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0 && svg_path) parsed = ts_cli_check_output(cmd, "the SVG", svg_path, force, 1);
    if (parsed < 0 && json_path) parsed = ts_cli_check_output(cmd, "the JSON", json_path, force, 1);
    char *typed = NULL;  // the sentence read from stdin when no argument gives it
    if (parsed < 0 && list.n == 0 && model_path) parsed = read_sentence(&typed);
    const char *sentence = list.n ? list.items[0] : typed;
    ts_translator t;
    if (parsed < 0) parsed = ts_cli_load_model(cmd, model_path, NULL, lp, beam, &t);
    free(list.items);
    if (parsed >= 0) {
        free(typed);
        return parsed;
    }
    ts_arena *arena = ts_arena_new(TS_CLI_ARENA_START);
    if (!arena) {
        ts_cli_error(cmd, 1, "cannot allocate");
        ts_translator_free(&t);
        free(typed);
        return TS_EXIT_FAIL;
    }
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    attention_view v = {0};
    int rc;
    while ((rc = ts_translate_text(&t, &ctx, sentence, (int)beam, &v.hyp, &v.source, &v.S)) == TS_ERR_ARENA &&
           !ts_cli_grow_arena(&ctx, "the sentence")) {
    }
    char *unknown = rc ? NULL : ts_unknown_words(t.src_vocab, v.source);
    if (unknown)
        fprintf(stderr, "%s: unknown words, read as <unk>: %.300s%s\n", cmd, unknown, strlen(unknown) > 300 ? " ..." : "");
    free(unknown);
    if (!rc) rc = ts_attention_labels_make(&t, v.source, v.S, &v.hyp, &v.labels);
    v.T = v.hyp.len + 1;
    ts_arena_free(ctx.arena);
    if (rc) {
        ts_cli_error(cmd, 1, "cannot translate the sentence");
        view_free(&v);
        ts_translator_free(&t);
        free(typed);
        return TS_EXIT_FAIL;
    }

    const ts_model_config *cfg = &t.model->cfg;
    int status = TS_EXIT_OK;
    // With --svg - or --json - standard output holds that document alone;
    // what is shown for people goes to standard error instead.
    FILE *shown = (svg_path && !strcmp(svg_path, "-")) || (json_path && !strcmp(json_path, "-")) ? stderr : stdout;
    print_words(shown, "source: ", v.labels.source, v.S);
    print_words(shown, "output: ", v.labels.target, v.hyp.len);
    if (!ts_model_attends(cfg)) {
        fprintf(shown, "attention: none - this model has no attention, so there are no weights to show%s\n",
               svg_path || json_path || pharaoh ? " (no SVG, JSON or alignment written)" : "");
        goto done;
    }
    // The title names the search too: beam and greedy outputs differ.
    char title[128], search[32] = "greedy";
    if (beam > 1) snprintf(search, sizeof search, "beam %ld", beam);
    snprintf(title, sizeof title, "attention: %s (%s decoder), %s", ts_attn_name(cfg->attn), ts_decoder_name(cfg->decoder),
             search);
    fprintf(shown, "%s\n\n", title);

    ts_term_opts term = {.mode = term_mode(color, shown), .values = values};
    const double *weights = v.hyp.attention;  // (T, S)
    if (ts_render_heatmap_term(shown, weights, (size_t)v.T, (size_t)v.S, v.labels.target, v.labels.source, &term)) {
        ts_cli_error(cmd, 1, "cannot write the heatmap");
        status = TS_EXIT_FAIL;
        goto done;
    }
    if (pharaoh) {
        // One link per output word; the <eos> row has no gold counterpart.
        ts_link *links = malloc((size_t)v.T * sizeof *links);
        size_t n_links = 0;
        rc = links ? ts_align_argmax(weights, (size_t)v.hyp.len, (size_t)v.S, 0, links, &n_links)
                   : ts_fail(TS_ERR_NOMEM, "out of memory");
        if (!rc) {
            fprintf(shown, "\nalignment (source-target):\n");
            rc = ts_pharaoh_write(shown, links, n_links);
        }
        free(links);
        if (rc) {
            ts_cli_error(cmd, 1, "cannot write the alignment");
            status = TS_EXIT_FAIL;
        }
    }
    if (svg_path) {
        if (!strcmp(svg_path, "-") ? ts_render_heatmap_svg(stdout, weights, (size_t)v.T, (size_t)v.S, v.labels.target,
                                                           v.labels.source, title)
                                   : ts_render_heatmap_svg_path(svg_path, weights, (size_t)v.T, (size_t)v.S, v.labels.target,
                                                                v.labels.source, title)) {
            ts_cli_error(cmd, 1, "cannot write the SVG");
            status = TS_EXIT_FAIL;
        } else if (strcmp(svg_path, "-")) {
            fprintf(stderr, "%s: wrote %s\n", cmd, svg_path);
        }
    }
    if (json_path) {
        if (!strcmp(json_path, "-") ? ts_render_attention_json(stdout, weights, (size_t)v.T, (size_t)v.S, v.labels.target,
                                                               v.labels.source, ts_attn_name(cfg->attn))
                                    : ts_render_attention_json_path(json_path, weights, (size_t)v.T, (size_t)v.S,
                                                                    v.labels.target, v.labels.source, ts_attn_name(cfg->attn))) {
            ts_cli_error(cmd, 1, "cannot write the JSON");
            status = TS_EXIT_FAIL;
        } else if (strcmp(json_path, "-")) {
            fprintf(stderr, "%s: wrote %s\n", cmd, json_path);
        }
    }
done:
    if (fflush(stdout) == EOF && status == TS_EXIT_OK) {
        ts_cli_error(cmd, 0, "cannot write to standard output");
        status = TS_EXIT_FAIL;
    }
    view_free(&v);
    ts_translator_free(&t);
    free(typed);
    return status;
}
