// tinyseq attend: translate one sentence and show where the decoder looked,
// as a terminal heatmap, SVG, JSON or a Pharaoh alignment line.
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
#include "infer/explain.h"
#include "infer/heads.h"
#include "infer/load.h"
#include "infer/translate.h"
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

static void view_free(attention_view *v) {
    ts_attended_free(&v->sentence);
    free(v->inputs);
    free(v->merged_weights);
    for (int i = 0; i < v->n_merged; i++) free(v->merged[i]);
    free(v->merged);
}

// --words: the search's weights (v->T, v->S) over pieces merged into
// v->merged_weights over words, and a Transformer's heads (every view, layer
// and head) in place (ts_attention_words); the labels, the decoder's inputs,
// T and S become the words'.
static int merge_words(attention_view *v, const ts_translator *t, ts_heads *heads) {
    ts_word_attention w;
    int rc = ts_attention_words(t, v->sentence.hyp.attention, v->T, v->S, &v->sentence.labels, heads, &w);
    if (rc) return rc;
    memcpy(v->sentence.labels.target, w.target, (size_t)w.T * sizeof *w.target);
    memcpy(v->sentence.labels.source, w.source, (size_t)w.S * sizeof *w.source);
    v->T = w.T;
    v->S = w.S;
    for (int k = 1; k < v->T; k++) v->inputs[k] = v->sentence.labels.target[k - 1];  // <sos>, then the output words
    v->merged_weights = w.weights;  // the view owns these now
    v->merged = w.words;
    v->n_merged = w.n_words;
    free(w.target);
    free(w.source);
    return TS_OK;
}

// --words: the attributions over v's pieces (still labelled by them) merged
// into words by the rule merge_words applies to attention.
static int merge_attribution(ts_attribution *a, const attention_view *v, const ts_translator *t) {
    ts_heads none = {0};
    ts_word_attention w;
    int rc = ts_attention_words(t, a->raw, a->T, a->S, &v->sentence.labels, &none, &w);
    if (!rc) rc = ts_attribution_replace(a, w.weights, w.T, w.S);
    ts_word_attention_free(&w);  // zeroed on failure
    return rc;
}

// v's shape and the decoder's inputs, from its sentence.
static int make_inputs(attention_view *v) {
    v->S = v->sentence.S;
    v->T = v->sentence.hyp.len + 1;
    if (!(v->inputs = malloc((size_t)v->T * sizeof *v->inputs))) return ts_fail(TS_ERR_NOMEM, "cannot allocate labels");
    v->inputs[0] = "<sos>";
    for (int k = 1; k < v->T; k++) v->inputs[k] = v->sentence.labels.target[k - 1];
    return TS_OK;
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

int ts_cmd_attend(int argc, char **argv) {
    const char *model_path = NULL, *svg_path = NULL, *json_path = NULL, *color = "auto";
    long beam = TS_BEAM_DEFAULT;
    ts_length_penalty lp = {0, 0.0};
    int pharaoh = 0, values = 0, force = 0, words = 0, shift = 0;
    int explain = -1, ig_steps_given = 0;  // --explain: enum ts_explain_method
    long ig_steps = TS_IG_STEPS_DEFAULT;
    head_choice choice = {.view = TS_VIEW_CROSS};
    sentence_list list = {malloc((size_t)argc * sizeof(char *)), 0};
    if (!list.items) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    const ts_flag flags[] = {
        TS_STRING("model", &model_path),
        TS_INT("beam", &beam, 0, TS_BEAM_MAX),
        {.name = "length-penalty", .kind = TS_FLAG_DOUBLE, .target = &lp.alpha, .lo = 0, .hi = 100, .given = &lp.gnmt},
        TS_STRING("svg", &svg_path),
        TS_STRING("json", &json_path),
        TS_SWITCH("pharaoh", &pharaoh),
        TS_SWITCH("values", &values),
        TS_SWITCH("words", &words),
        TS_CHOICE("color", &color, choose_color),
        TS_SWITCH("force", &force),
        {.name = "layer", .kind = TS_FLAG_INT, .target = &choice.layer, .lo = -1e6, .hi = 1e6, .given = &choice.layer_given},
        {.name = "head", .kind = TS_FLAG_INT, .target = &choice.head, .lo = -1e6, .hi = 1e6, .given = &choice.head_given},
        {.name = "self", .kind = TS_FLAG_CHOICE, .target = &choice.view, .choose = attend_choose_self, .given = &choice.self_given},
        TS_SWITCH("heads", &choice.grid),
        TS_SWITCH("rollout", &choice.rollout),
        TS_CHOICE("explain", &explain, ts_cli_choose_explain),
        {.name = "ig-steps", .kind = TS_FLAG_INT, .target = &ig_steps, .lo = 1, .hi = TS_IG_STEPS_MAX, .given = &ig_steps_given},
        TS_SWITCH("shift-att", &shift),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0],
                        .positional = take_sentence, .context = &list};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed < 0 && !model_path && ts_cli_model_hint(cmd, list.items, list.n)) parsed = TS_EXIT_USAGE;
    if (parsed < 0 && list.n > 1) parsed = ts_cli_quote_hint(cmd, "attend reads one SENTENCE", list.items, list.n);
    if (parsed < 0 && svg_path && json_path && !strcmp(svg_path, "-") && !strcmp(json_path, "-")) {
        ts_cli_error(cmd, 0, "--svg - and --json - cannot share standard output; name a file for one");
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0 && choice.grid && (choice.layer_given || choice.head_given)) {
        ts_cli_error(cmd, 0, "--heads draws every layer and head; give it without --layer and --head");
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0 && pharaoh && choice.self_given) {
        ts_cli_error(cmd, 0, "--pharaoh aligns output words to source words (cross-attention); it cannot go with --self");
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0) parsed = check_readings(&choice, explain, ig_steps_given, shift);
    if (parsed < 0 && svg_path) parsed = ts_cli_check_output(cmd, "the SVG", svg_path, force, 1);
    if (parsed < 0 && json_path) parsed = ts_cli_check_output(cmd, "the JSON", json_path, force, 1);
    char *typed = NULL;  // the sentence read from stdin when no argument gives it
    if (parsed < 0 && list.n == 0 && model_path) parsed = read_sentence(&typed);
    const char *sentence = list.n ? list.items[0] : typed;
    ts_session s;
    if (parsed < 0) parsed = ts_cli_open_session(cmd, model_path, NULL, lp, &beam, &s);
    if (parsed < 0) {
        parsed = attend_check_choice(&choice, s.t.model, model_path);
        if (parsed < 0 && choice.rollout && words && s.t.src_sw) {
            ts_cli_error(cmd, 0, "--rollout multiplies the pieces' matrices; merged into words they no longer "
                                 "compose: give it without --words");
            parsed = TS_EXIT_USAGE;
        }
        if (parsed >= 0) ts_session_free(&s);
    }
    free(list.items);
    if (parsed >= 0) {
        free(typed);
        return parsed;
    }
    attention_view v = {0};
    int rc = ts_session_attend(&s, sentence, (int)beam, &v.sentence);
    char *unknown = rc ? NULL : ts_unknown_words(s.t.src_vocab, v.sentence.source);
    if (unknown)
        fprintf(stderr, "%s: unknown words, read as <unk>: %.300s%s\n", cmd, unknown, strlen(unknown) > 300 ? " ..." : "");
    free(unknown);
    if (!rc) rc = make_inputs(&v);
    ts_heads heads = {0};
    grid_panels grid = {0};
    ts_attribution attribution = {0};
    double *rollout = NULL;  // --rollout: (L, R, R)
    if (!rc && explain < 0 && ts_heads_available(s.t.model))
        rc = ts_heads_of_translation(&s.t, &s.ctx, v.sentence.labels.source, v.S, &v.sentence.hyp, &heads);
    if (!rc && explain >= 0)
        rc = ts_attribution_of_translation(&s.t, &s.ctx, v.sentence.labels.source, v.S, &v.sentence.hyp, explain,
                                           (int)ig_steps, &attribution);
    if (rc) {
        ts_cli_error(cmd, 1, explain >= 0 ? "cannot translate the sentence and explain it" : "cannot translate the sentence");
        ts_attribution_free(&attribution);
        ts_heads_free(&heads);
        view_free(&v);
        ts_session_free(&s);
        free(typed);
        return TS_EXIT_FAIL;
    }

    const ts_model_config *cfg = &s.t.model->cfg;
    int status = TS_EXIT_OK;
    // With --svg - or --json - standard output holds that document alone;
    // what is shown for people goes to standard error instead.
    FILE *shown = (svg_path && !strcmp(svg_path, "-")) || (json_path && !strcmp(json_path, "-")) ? stderr : stdout;
    // --words: every matrix there is to show merged into words (the attributions first, by the pieces' labels).
    if (words && s.t.src_sw && explain >= 0 && merge_attribution(&attribution, &v, &s.t)) {
        ts_cli_error(cmd, 1, "cannot merge the pieces into words");
        status = TS_EXIT_FAIL;
        goto done;
    }
    if (words && s.t.src_sw && ts_model_attends(cfg) && merge_words(&v, &s.t, &heads)) {
        ts_cli_error(cmd, 1, "cannot merge the pieces into words");
        status = TS_EXIT_FAIL;
        goto done;
    }
    int width = ts_term_width(shown);  // 0: not known (a pipe); the lines of text stay whole, the heatmap fits 80
    print_words(shown, "source: ", v.sentence.labels.source, v.S, width);
    print_words(shown, "output: ", v.sentence.labels.target, v.T - 1, width);
    if (!ts_model_attends(cfg) && explain < 0) {
        print_wrapped(shown, width, "attention: none - this model has no attention, so there are no weights to show%s",
                      svg_path || json_path || pharaoh ? " (no SVG, JSON or alignment written)" : "");
        goto done;
    }
    // The title names the search too: beam and greedy outputs differ.
    char title[256], search[32] = "greedy";
    if (beam > 1) snprintf(search, sizeof search, "beam %ld", beam);
    const double *search_weights = v.merged_weights ? v.merged_weights : v.sentence.hyp.attention;  // (T, S)
    shown_matrix m = {search_weights, v.T, v.S, v.sentence.labels.target, v.sentence.labels.source, {"target", "source"}};  // the search's
    if (choice.rollout) {
        size_t cells = (size_t)ts_heads_rows(&heads, choice.view) * ts_heads_cols(&heads, choice.view);
        rollout = malloc((size_t)heads.layers * cells * sizeof *rollout);
        if (!rollout || ts_heads_rollout(&heads, choice.view, rollout)) {
            ts_cli_error(cmd, 1, "cannot roll the attention out");
            status = TS_EXIT_FAIL;
            goto done;
        }
    }
    if (explain >= 0) {
        m.weights = attribution.weights;
        int n = snprintf(title, sizeof title, "attribution: %s", ts_explain_methods[explain].title);
        if (explain == TS_EXPLAIN_IG) n += snprintf(title + n, sizeof title - (size_t)n, " (%d steps from zero embeddings)", attribution.steps);
        snprintf(title + n, sizeof title - (size_t)n, " of each output word's log-probability, |a| / row sum, %s", search);
    } else if (heads.layers) {
        m = attend_pick_matrix(&heads, &choice, &v, rollout);
        attend_describe_choice(title, sizeof title, &heads, &choice, search);
    } else {
        char what[160];
        snprintf(title, sizeof title, "attention: %s, %s", ts_model_attention_title(cfg, what, sizeof what), search);
    }
    // A subword model's figures say what their labels are: its pieces, or words (--words).
    if (s.t.src_sw)
        snprintf(title + strlen(title), sizeof title - strlen(title), "%s",
                 words ? ", in words (subword pieces merged)" : ", over subword pieces");
    int eos_row = !choice.self_given;  // the last row is the <eos> step's
    if (shift) {
        // Row t + 1 predicts word t + 1 from decoder input word t: read as word t's; <eos>'s row goes.
        m.weights += m.cols;
        m.rows -= 1;
        eos_row = 0;
        snprintf(title + strlen(title), sizeof title - strlen(title), ", shift-att");
    }
    for (const char *line = title; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char one[sizeof title];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(line, "\n"), line);
        ts_term_put_wrapped(shown, one, width, 2);
    }
    fputc('\n', shown);

    ts_term_opts term = {.mode = term_mode(color, shown), .values = values, .width = width};
    const double *weights = m.weights;  // (m.rows, m.cols)
    if (choice.grid && (status = attend_make_grid(&grid, &heads, &choice, &v, title, shift))) goto done;
    if (choice.grid ? ts_render_heatmap_grid_term(shown, &grid.g, &term)
                    : ts_render_heatmap_term(shown, weights, (size_t)m.rows, (size_t)m.cols, m.row_words, m.col_words,
                                             &term)) {
        ts_cli_error(cmd, 1, "cannot write the heatmap");
        status = TS_EXIT_FAIL;
        goto done;
    }
    int gap_row;  // integrated gradients: how far the rows are from completeness (captum's convergence delta)
    double gap = explain >= 0 ? ts_attribution_completeness_gap(&attribution, &gap_row) : -1.0;
    if (gap >= 0)
        print_wrapped(shown, width, "\ncompleteness: each row sums to log p - log p(zero embeddings) within %.2g nats (the "
                                    "most off: \"%s\", whose change is %.4g nats); a larger --ig-steps narrows it",
                gap, v.sentence.labels.target[gap_row], attribution.log_prob[gap_row] - attribution.baseline_log_prob[gap_row]);
    if (pharaoh) {
        // One link per output word; the <eos> row has no gold counterpart.
        ts_link *links = malloc((size_t)v.T * sizeof *links);
        size_t n_links = 0;
        rc = links ? ts_align_argmax(weights, (size_t)(m.rows - eos_row), (size_t)m.cols, 0, links, &n_links)
                   : ts_fail(TS_ERR_NOMEM, "out of memory");
        if (!rc) {
            fprintf(shown, "\nalignment (source-target):\n");
            rc = width ? print_links(shown, links, n_links, width) : ts_pharaoh_write(shown, links, n_links);
        }
        free(links);
        if (rc) {
            ts_cli_error(cmd, 1, "cannot write the alignment");
            status = TS_EXIT_FAIL;
        }
    }
    if (svg_path) {
        int to_stdout = !strcmp(svg_path, "-");
        if (choice.grid ? (to_stdout ? ts_render_heatmap_grid_svg(stdout, &grid.g)
                                     : ts_render_heatmap_grid_svg_path(svg_path, &grid.g))
            : to_stdout ? ts_render_heatmap_svg(stdout, weights, (size_t)m.rows, (size_t)m.cols, m.row_words, m.col_words,
                                                m.axes, title)
                        : ts_render_heatmap_svg_path(svg_path, weights, (size_t)m.rows, (size_t)m.cols, m.row_words,
                                                     m.col_words, m.axes, title)) {
            ts_cli_error(cmd, 1, "cannot write the SVG");
            status = TS_EXIT_FAIL;
        } else if (strcmp(svg_path, "-")) {
            fprintf(stderr, "%s: wrote %s\n", cmd, svg_path);
        }
    }
    if (json_path) {
        // weights: the search's own (the last layer's cross-attention mean for a Transformer),
        // the attributions' normalised rows with --explain; shifted with --shift-att.
        ts_json_head_view views[TS_VIEW_COUNT];
        ts_json_heads all = {0};
        if (heads.layers) all = ts_heads_json(&heads, views);
        const char *name = ts_heads_available(s.t.model) ? ts_arch_name(cfg->arch) : ts_attn_name(cfg->attn);
        const double *json_weights = explain >= 0 ? attribution.weights : search_weights + (shift ? v.S : 0);
        size_t rows = (size_t)(v.T - shift);
        if (explain >= 0) {
            all.explain = ts_explain_methods[explain].name;
            all.ig_steps = attribution.steps;
            all.raw = attribution.raw;
            all.log_prob = attribution.log_prob;
            all.baseline_log_prob = attribution.baseline_log_prob;
        }
        if (shift) all.reading = "shift-att";
        if (s.t.src_sw) all.units = words ? "words" : "pieces";
        const ts_json_heads *more = all.layers || all.explain || all.reading || all.units ? &all : NULL;
        if (!strcmp(json_path, "-") ? ts_render_attention_json_heads(stdout, json_weights, rows, (size_t)v.S,
                                                                     v.sentence.labels.target, v.sentence.labels.source, name, more)
                                    : ts_render_attention_json_heads_path(json_path, json_weights, rows, (size_t)v.S,
                                                                          v.sentence.labels.target, v.sentence.labels.source, name, more)) {
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
    attend_grid_free(&grid);
    free(rollout);
    ts_attribution_free(&attribution);
    ts_heads_free(&heads);
    view_free(&v);
    ts_session_free(&s);
    free(typed);
    return status;
}
