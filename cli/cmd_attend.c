// tinyseq attend: translate one sentence and show where the decoder looked,
// as a terminal heatmap, SVG, JSON or a Pharaoh alignment line. The
// document shown is built in infer/ (infer/attention_doc.h; the C API
// writes the same JSON from it): this file reads the flags and renders it.
//
// T = output tokens + 1 (the <eos> step), S = source tokens (no <eos>: the
// encoder reads the sentence as it is). weights: (T, S), row t is output step t.
// A Transformer has more to show (infer/heads.h): L layers x H heads of
// cross-attention and of the encoder's (S, S) and decoder's (T, T)
// self-attention; --layer, --head, --self and --heads choose among them.
#include "cli/cli.h"
#include "cli/attend.h"
#include "cli/common.h"

#include "infer/alignment.h"
#include "infer/attention_doc.h"
#include "viz/heatmap.h"
#include "viz/render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: tinyseq attend --model CKPT [--beam K] [--svg FILE] [--json FILE] [--force] [--pharaoh]\n"
    "                      [--values] [--words] [--color auto|always|never]\n"
    "                      [--layer L] [--head H] [--self enc|dec [--rollout]] [--heads]\n"
    "                      [--explain grad|ig [--ig-steps N]] [--shift-att] [SENTENCE]\n"
    "\n"
    "Translates SENTENCE (else the one line of standard input; at a terminal it\n"
    "asks for it) and shows its attention matrix: one row per output word\n"
    "(and <eos>), one column per source word; row t is the distribution over\n"
    "source words the decoder used while producing output word t. A word the\n"
    "model does not know is read as <unk>: it is named on standard error and\n"
    "labelled \"<unk>:word\" in every figure. SENTENCE has at most 1000 tokens.\n"
    "A subword model (tinyseq train --subword) shows its pieces (\"▁\" starts a word).\n"
    "\n"
    "  --model CKPT     checkpoint written by tinyseq train (required)\n"
    "  --beam K         beam width, 1.." TS_CLI_QUOTE(TS_BEAM_MAX) " (default " TS_CLI_QUOTE(TS_BEAM_DEFAULT) "; 0: the default too; 1: greedy)\n"
    "  --length-penalty A  beam search ranks finished outputs by GNMT's log-probability /\n"
    "                 ((5 + |y|) / 6)^A, A in [0, 100] (default: log-probability / |y|;\n"
    "                 |y| counts <eos>); larger A favours longer outputs\n"
    "  --svg FILE       also write the heatmap as a standalone SVG figure\n"
    "  --json FILE      also write {source, target, weights, attention} as JSON\n"
    "                   (FILE -: standard output, and the rest goes to standard error);\n"
    "                   a Transformer's adds layers, heads and every view: \"cross\",\n"
    "                   \"enc\", \"dec\", each {rows, cols, heads [layer][head][row][col],\n"
    "                   mean [layer][row][col]} (docs/attention.md); weights stays the\n"
    "                   last layer's cross-attention head mean whatever is shown\n"
    "  --force          replace an existing --svg or --json FILE (otherwise an error)\n"
    "  --pharaoh        print the argmax alignment as source-target pairs (\"0-0 2-1\"),\n"
    "                   one link per output word, <eos> left out\n"
    "  --values         print each weight (.14) in the coloured heatmap too\n"
    "  --words          a subword model's pieces merged into words in every output\n"
    "                   and view (a Transformer's every layer and head too): a word's\n"
    "                   columns summed, its rows averaged (rows still sum to 1); for\n"
    "                   self-attention both axes; a word model's are words already\n"
    "  --color WHEN     auto (default: colour on a terminal, a plain table otherwise),\n"
    "                   always, or never (shades on a terminal, no colour)\n"
    "  --explain KIND   instead of attention, attributions: how much each source word\n"
    "                   moved each output word's log-probability, grad (gradient x\n"
    "                   input on the source embeddings) or ig (integrated gradients\n"
    "                   from zero embeddings); each row's absolute values over their\n"
    "                   sum, drawn, aligned (--pharaoh) and written (--json: \"weights\";\n"
    "                   the signed values under \"raw\") as attention is (docs/attention.md)\n"
    "  --ig-steps N     --explain ig: points of the path integral, 1.." TS_CLI_QUOTE(TS_IG_STEPS_MAX) " (default " TS_CLI_QUOTE(TS_IG_STEPS_DEFAULT) ")\n"
    "  --shift-att      read the cross-attention shifted (Chen et al. 2020): the row that\n"
    "                   predicts output word t+1 (its decoder input is word t) as word\n"
    "                   t's alignment: rows are the output words (the last one's is\n"
    "                   the <eos> step's row; the first row is dropped)\n"
    "\n"
    "A Transformer shows the mean of its last layer's cross-attention heads\n"
    "unless told otherwise (and says which matrix it shows):\n"
    "  --layer L        that layer's heads (0 = the first; default the last)\n"
    "  --head H         that head (0 = the first) instead of the heads' mean\n"
    "  --self enc|dec   encoder self-attention (source x source) or the decoder's\n"
    "                   (output step x decoder input <sos> y_1 ..; causal) instead\n"
    "  --rollout        with --self: attention rollout (Abnar & Zuidema 2020) through\n"
    "                   the layers up to --layer (default all): the product of each\n"
    "                   layer's 0.5 (head mean + I), the last layer first\n"
    "  --heads          every layer x head and each layer's mean as small multiples,\n"
    "                   as many a line as the terminal's width (or $COLUMNS) fits,\n"
    "                   with a line of the colour scale (--svg draws them as one grid)\n";

static const char *cmd = TS_ATTEND_CMD;

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
        len = got < 0 ? 0 : (size_t)got;
    }
    const char *nul = text ? memchr(text, '\0', len) : NULL;  // strtok would stop there: what follows would go unread
    if (nul) {
        long number = 1;
        for (const char *p = text; p < nul; p++) number += *p == '\n';
        ts_cli_error(cmd, 0, "standard input: line %ld: a NUL byte", number);
        free(text);
        return TS_EXIT_FAIL;
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

// "source: the cat ...", wrapped to width (0: one line), the words made safe.
static void print_words(FILE *out, const char *label, const char *const *words, int n, int width) {
    ts_term_wrap(out, label, -1, words, (size_t)n, " ", width);
}

// A line of text (a first '\n' leaves a blank line before it), wrapped to width.
__attribute__((format(printf, 3, 4))) static void print_wrapped(FILE *out, int width, const char *format, ...) {
    char text[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (text[0] == '\n') fputc('\n', out);
    ts_term_put_wrapped(out, text + (text[0] == '\n'), width, 2);
}

// The Pharaoh line wrapped to width at a terminal (its pairs whole).
static int print_links(FILE *out, const ts_link *links, size_t n, int width) {
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f) return ts_fail(TS_ERR_NOMEM, "out of memory");
    int rc = ts_pharaoh_write(f, links, n);
    if (fclose(f) && !rc) rc = ts_fail(TS_ERR_NOMEM, "out of memory");
    if (!rc && len && line[len - 1] == '\n') line[len - 1] = '\0';
    if (!rc) ts_term_put_wrapped(out, line, width, 0);
    free(line);
    return rc;
}

// -1 when --explain, --ig-steps, --shift-att and --rollout go together with
// the head choice, else the usage status after a message naming the flags.
static int check_readings(const head_choice *c, int explain, int ig_steps_given, int shift) {
    const char *clash = NULL;
    if (explain >= 0 && (c->self_given || c->grid || c->layer_given || c->head_given))
        clash = "--explain draws attributions, which have no layers or heads: give it without --self, --heads, "
                "--layer and --head";
    else if (ig_steps_given && explain != TS_EXPLAIN_IG) clash = "--ig-steps goes with --explain ig";
    else if (shift && (explain >= 0 || c->self_given))
        clash = "--shift-att reads the cross-attention shifted; it cannot go with --explain or --self";
    else if (c->rollout && !c->self_given) clash = "--rollout follows self-attention through the layers: give --self enc|dec";
    else if (c->rollout && (c->head_given || c->grid))
        clash = "--rollout averages each layer's heads: give it without --head and --heads";
    if (!clash) return -1;
    ts_cli_error(cmd, 0, "%s", clash);
    return TS_EXIT_USAGE;
}

// What attend was asked: its flags and the sentence.
typedef struct {
    const char *model_path, *svg_path, *json_path, *color;
    long beam, ig_steps;
    ts_length_penalty lp;
    int pharaoh, values, force, words, shift;
    int explain, ig_steps_given;  // --explain: enum ts_explain_method, -1 none
    head_choice choice;
    const char *sentence;  // an argument, or typed
    char *typed;           // the sentence read from stdin when no argument gives it (owned)
} attend_args;

// Reads the flags and the sentence into *a. -1, else the exit status after a message.
static int parse_args(int argc, char **argv, attend_args *a) {
    sentence_list list = {malloc((size_t)argc * sizeof(char *)), 0};
    if (!list.items) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    head_choice *choice = &a->choice;
    const ts_flag flags[] = {
        TS_STRING("model", &a->model_path),
        TS_INT("beam", &a->beam, 0, TS_BEAM_MAX),
        {.name = "length-penalty", .kind = TS_FLAG_DOUBLE, .target = &a->lp.alpha, .lo = 0, .hi = 100, .given = &a->lp.gnmt},
        TS_STRING("svg", &a->svg_path),
        TS_STRING("json", &a->json_path),
        TS_SWITCH("pharaoh", &a->pharaoh),
        TS_SWITCH("values", &a->values),
        TS_SWITCH("words", &a->words),
        TS_CHOICE("color", &a->color, choose_color),
        TS_SWITCH("force", &a->force),
        {.name = "layer", .kind = TS_FLAG_INT, .target = &choice->layer, .lo = -1e6, .hi = 1e6, .given = &choice->layer_given},
        {.name = "head", .kind = TS_FLAG_INT, .target = &choice->head, .lo = -1e6, .hi = 1e6, .given = &choice->head_given},
        {.name = "self", .kind = TS_FLAG_CHOICE, .target = &choice->view, .choose = attend_choose_self, .given = &choice->self_given},
        TS_SWITCH("heads", &choice->grid),
        TS_SWITCH("rollout", &choice->rollout),
        TS_CHOICE("explain", &a->explain, ts_cli_choose_explain),
        {.name = "ig-steps", .kind = TS_FLAG_INT, .target = &a->ig_steps, .lo = 1, .hi = TS_IG_STEPS_MAX, .given = &a->ig_steps_given},
        TS_SWITCH("shift-att", &a->shift),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0],
                        .positional = take_sentence, .context = &list};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed < 0 && !a->model_path && ts_cli_model_hint(cmd, list.items, list.n)) parsed = TS_EXIT_USAGE;
    if (parsed < 0 && list.n > 1) parsed = ts_cli_quote_hint(cmd, "attend reads one SENTENCE", list.items, list.n);
    const char *clash = NULL;
    if (a->svg_path && a->json_path && !strcmp(a->svg_path, "-") && !strcmp(a->json_path, "-"))
        clash = "--svg - and --json - cannot share standard output; name a file for one";
    else if (choice->grid && (choice->layer_given || choice->head_given))
        clash = "--heads draws every layer and head; give it without --layer and --head";
    else if (a->pharaoh && choice->self_given)
        clash = "--pharaoh aligns output words to source words (cross-attention); it cannot go with --self";
    if (parsed < 0 && clash) {
        ts_cli_error(cmd, 0, "%s", clash);
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0) parsed = check_readings(choice, a->explain, a->ig_steps_given, a->shift);
    if (parsed < 0 && a->svg_path) parsed = ts_cli_check_output(cmd, "the SVG", a->svg_path, a->force, 1);
    if (parsed < 0 && a->json_path) parsed = ts_cli_check_output(cmd, "the JSON", a->json_path, a->force, 1);
    if (parsed < 0 && list.n == 0 && a->model_path) parsed = read_sentence(&a->typed);
    a->sentence = list.n ? list.items[0] : a->typed;
    free(list.items);
    return parsed;
}

// Opens a's model into *s (a->beam becomes the width it asks for) and
// checks the choice of matrices against it. -1 (s open), else the exit
// status after a message (s closed).
static int open_model(attend_args *a, ts_session *s) {
    int status = ts_cli_open_session(cmd, a->model_path, NULL, a->lp, &a->beam, s);
    if (status >= 0) return status;
    status = attend_check_choice(&a->choice, s->t.model, a->model_path);
    if (status < 0 && a->choice.rollout && a->words && s->t.src_sw) {
        ts_cli_error(cmd, 0, "--rollout multiplies the pieces' matrices; merged into words they no longer "
                             "compose: give it without --words");
        status = TS_EXIT_USAGE;
    }
    if (status >= 0) ts_session_free(s);
    return status;
}

// What is drawn: the matrix (or --heads' grid) and its heading.
typedef struct {
    shown_matrix m;
    int eos_row;         // the last row is the <eos> step's (the Pharaoh line leaves it out)
    char title[256];
    grid_panels grid;    // --heads
    double *rollout;     // --rollout: (L, R, R)
} attend_figure;

// Chooses what to draw from d as a asks: the attributions, a Transformer's
// chosen matrix, or the search's weights; then its heading. The exit status after a message, or -1.
static int pick_figure(const attend_args *a, const ts_session *s, const ts_attention_doc *d, attend_figure *f) {
    const head_choice *c = &a->choice;
    f->m = (shown_matrix){d->weights, d->T, d->S, d->sentence.labels.target, d->sentence.labels.source, {"target", "source"}};
    if (c->rollout) {
        size_t cells = (size_t)ts_heads_rows(&d->heads, c->view) * ts_heads_cols(&d->heads, c->view);
        f->rollout = malloc((size_t)d->heads.layers * cells * sizeof *f->rollout);
        if (!f->rollout || ts_heads_rollout(&d->heads, c->view, f->rollout)) {
            ts_cli_error(cmd, 1, "cannot roll the attention out");
            return TS_EXIT_FAIL;
        }
    }
    // The heading names the search too: beam and greedy outputs differ.
    char search[32] = "greedy", *title = f->title;
    size_t size = sizeof f->title;
    if (a->beam > 1) snprintf(search, sizeof search, "beam %ld", a->beam);
    if (d->explain >= 0) {
        f->m.weights = d->attribution.weights;
        int n = snprintf(title, size, "attribution: %s", ts_explain_methods[d->explain].title);
        if (d->explain == TS_EXPLAIN_IG) n += snprintf(title + n, size - (size_t)n, " (%d steps from zero embeddings)", d->attribution.steps);
        snprintf(title + n, size - (size_t)n, " of each output word's log-probability, |a| / row sum, %s", search);
    } else if (d->heads.layers) {
        f->m = attend_pick_matrix(&d->heads, c, d, f->rollout);
        attend_describe_choice(title, size, &d->heads, c, search);
    } else {
        char what[160];
        snprintf(title, size, "attention: %s, %s", ts_model_attention_title(&s->t.model->cfg, what, sizeof what), search);
    }
    // A subword model's figures say what their labels are: its pieces, or words (--words).
    if (d->subword)
        snprintf(title + strlen(title), size - strlen(title), "%s",
                 d->in_words ? ", in words (subword pieces merged)" : ", over subword pieces");
    f->eos_row = !c->self_given;
    if (d->shift) {
        // Row t + 1 predicts word t + 1 from decoder input word t: read as word t's; <eos>'s row goes.
        f->m.weights += f->m.cols;
        f->m.rows -= 1;
        f->eos_row = 0;
        snprintf(title + strlen(title), size - strlen(title), ", shift-att");
    }
    return -1;
}

// The heading, the heatmap (or --heads' grid) and, for integrated
// gradients, how complete the rows are. The exit status after a message, or -1.
static int show_figure(FILE *shown, int width, const attend_args *a, const ts_attention_doc *d, attend_figure *f) {
    for (const char *line = f->title; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char one[sizeof f->title];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(line, "\n"), line);
        ts_term_put_wrapped(shown, one, width, 2);
    }
    fputc('\n', shown);
    ts_term_opts term = {.mode = term_mode(a->color, shown), .values = a->values, .width = width};
    const shown_matrix *m = &f->m;
    int status;
    if (a->choice.grid && (status = attend_make_grid(&f->grid, &d->heads, &a->choice, d, f->title, d->shift))) return status;
    if (a->choice.grid ? ts_render_heatmap_grid_term(shown, &f->grid.g, &term)
                       : ts_render_heatmap_term(shown, m->weights, (size_t)m->rows, (size_t)m->cols, m->row_words,
                                                m->col_words, &term)) {
        ts_cli_error(cmd, 1, "cannot write the heatmap");
        return TS_EXIT_FAIL;
    }
    int gap_row;  // integrated gradients: how far the rows are from completeness (captum's convergence delta)
    double gap = d->explain >= 0 ? ts_attribution_completeness_gap(&d->attribution, &gap_row) : -1.0;
    if (gap >= 0)
        print_wrapped(shown, width, "\ncompleteness: each row sums to log p - log p(zero embeddings) within %.2g nats (the "
                                    "most off: \"%s\", whose change is %.4g nats); a larger --ig-steps narrows it",
                      gap, d->sentence.labels.target[gap_row],
                      d->attribution.log_prob[gap_row] - d->attribution.baseline_log_prob[gap_row]);
    return -1;
}

// --pharaoh: one link per output word (the <eos> row has no gold counterpart).
static int show_alignment(FILE *shown, int width, const ts_attention_doc *d, const attend_figure *f) {
    ts_link *links = malloc((size_t)d->T * sizeof *links);
    size_t n_links = 0;
    int rc = links ? ts_align_argmax(f->m.weights, (size_t)(f->m.rows - f->eos_row), (size_t)f->m.cols, 0, links, &n_links)
                   : ts_fail(TS_ERR_NOMEM, "out of memory");
    if (!rc) {
        fprintf(shown, "\nalignment (source-target):\n");
        rc = width ? print_links(shown, links, n_links, width) : ts_pharaoh_write(shown, links, n_links);
    }
    free(links);
    if (!rc) return TS_EXIT_OK;
    ts_cli_error(cmd, 1, "cannot write the alignment");
    return TS_EXIT_FAIL;
}

// --svg FILE (- : standard output): the matrix shown, or --heads' grid.
static int write_svg(const char *path, const attend_args *a, const attend_figure *f) {
    const shown_matrix *m = &f->m;
    int to_stdout = !strcmp(path, "-");
    if (a->choice.grid ? (to_stdout ? ts_render_heatmap_grid_svg(stdout, &f->grid.g)
                                    : ts_render_heatmap_grid_svg_path(path, &f->grid.g))
        : to_stdout ? ts_render_heatmap_svg(stdout, m->weights, (size_t)m->rows, (size_t)m->cols, m->row_words,
                                            m->col_words, m->axes, f->title)
                    : ts_render_heatmap_svg_path(path, m->weights, (size_t)m->rows, (size_t)m->cols, m->row_words,
                                                 m->col_words, m->axes, f->title)) {
        ts_cli_error(cmd, 1, "cannot write the SVG");
        return TS_EXIT_FAIL;
    }
    if (!to_stdout) fprintf(stderr, "%s: wrote %s\n", cmd, path);
    return TS_EXIT_OK;
}

// --json FILE (- : standard output): the document as the C API writes it.
static int write_json(const char *path, const ts_attention_doc *d) {
    ts_attention_json j;
    ts_attention_doc_json(d, &j);
    int to_stdout = !strcmp(path, "-");
    if (to_stdout ? ts_render_attention_json_heads(stdout, j.weights, j.T, j.S, j.target, j.source, j.attention, j.more)
                  : ts_render_attention_json_heads_path(path, j.weights, j.T, j.S, j.target, j.source, j.attention,
                                                        j.more)) {
        ts_cli_error(cmd, 1, "cannot write the JSON");
        return TS_EXIT_FAIL;
    }
    if (!to_stdout) fprintf(stderr, "%s: wrote %s\n", cmd, path);
    return TS_EXIT_OK;
}

// Everything a asks of d: the words, the figure, the alignment, the SVG and the JSON.
static int render(const attend_args *a, const ts_session *s, const ts_attention_doc *d) {
    // With --svg - or --json - standard output holds that document alone;
    // what is shown for people goes to standard error instead.
    FILE *shown = (a->svg_path && !strcmp(a->svg_path, "-")) || (a->json_path && !strcmp(a->json_path, "-")) ? stderr : stdout;
    int width = ts_term_width(shown);  // 0: not known (a pipe); the lines of text stay whole, the heatmap fits 80
    print_words(shown, "source: ", d->sentence.labels.source, d->S, width);
    print_words(shown, "output: ", d->sentence.labels.target, d->T - 1, width);
    if (!d->weights && d->explain < 0) {
        print_wrapped(shown, width, "attention: none - this model has no attention, so there are no weights to show%s",
                      a->svg_path || a->json_path || a->pharaoh ? " (no SVG, JSON or alignment written)" : "");
        return TS_EXIT_OK;
    }
    attend_figure f = {0};
    int status = pick_figure(a, s, d, &f);
    if (status < 0) status = show_figure(shown, width, a, d, &f);
    if (status < 0) {
        status = a->pharaoh ? show_alignment(shown, width, d, &f) : TS_EXIT_OK;
        if (a->svg_path && write_svg(a->svg_path, a, &f)) status = TS_EXIT_FAIL;
        if (a->json_path && write_json(a->json_path, d)) status = TS_EXIT_FAIL;
    }
    attend_grid_free(&f.grid);
    free(f.rollout);
    return status;
}

int ts_cmd_attend(int argc, char **argv) {
    attend_args a = {.beam = TS_BEAM_DEFAULT, .ig_steps = TS_IG_STEPS_DEFAULT, .color = "auto", .explain = -1,
                     .choice = {.view = TS_VIEW_CROSS}};
    ts_session s;
    int status = parse_args(argc, argv, &a);
    if (status < 0) status = open_model(&a, &s);
    if (status >= 0) {
        free(a.typed);
        return status;
    }
    ts_attention_doc d;
    ts_attention_doc_opts o = {.beam = (int)a.beam, .words = a.words, .explain = a.explain, .ig_steps = (int)a.ig_steps,
                               .shift = a.shift};
    if (ts_attention_doc_build(&s, a.sentence, &o, &d)) {
        ts_cli_error(cmd, 1, a.explain >= 0 ? "cannot translate the sentence and explain it" : "cannot translate the sentence");
        status = TS_EXIT_FAIL;
    } else {
        char *unknown = ts_unknown_words(s.t.src_vocab, d.sentence.source);
        if (unknown)
            fprintf(stderr, "%s: unknown words, read as <unk>: %.300s%s\n", cmd, unknown, strlen(unknown) > 300 ? " ..." : "");
        free(unknown);
        status = render(&a, &s, &d);
        ts_attention_doc_free(&d);
    }
    if (fflush(stdout) == EOF && status == TS_EXIT_OK) {
        ts_cli_error(cmd, 0, "cannot write to standard output");
        status = TS_EXIT_FAIL;
    }
    ts_session_free(&s);
    free(a.typed);
    return status;
}
