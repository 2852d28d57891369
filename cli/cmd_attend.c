// tinyseq attend: translate one sentence and show where the decoder looked,
// as a terminal heatmap, SVG, JSON or a Pharaoh alignment line.
//
// T = output tokens + 1 (the <eos> step), S = source tokens (no <eos>: the
// encoder reads the sentence as it is). weights: (T, S), row t is output step t.
#include "cli/cli.h"

#include "infer/metrics.h"
#include "infer/load.h"
#include "infer/translate.h"
#include "viz/heatmap.h"
#include "viz/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tinyseq attend --model CKPT [--beam K] [--svg FILE] [--json FILE] [--pharaoh]\n"
    "                      [--values] [--color auto|always|never] SENTENCE\n"
    "\n"
    "Translates SENTENCE and shows its attention matrix: one row per output word\n"
    "(and <eos>), one column per source word; row t is the distribution over\n"
    "source words the decoder used while producing output word t. A word the\n"
    "model does not know is read as <unk>: it is named on standard error and\n"
    "labelled \"<unk>:word\" in every figure. SENTENCE has at most 1000 tokens.\n"
    "\n"
    "  --model CKPT     checkpoint written by tinyseq train (required)\n"
    "  --beam K         beam width, 1..1000 (default 1: greedy)\n"
    "  --length-penalty A  beam search ranks finished outputs by GNMT's log-probability /\n"
    "                 ((5 + |y|) / 6)^A, A in [0, 100] (default: log-probability / |y|;\n"
    "                 |y| counts <eos>); larger A favours longer outputs\n"
    "  --svg FILE       also write the heatmap as a standalone SVG figure\n"
    "  --json FILE      also write {source, target, weights, attention} as JSON\n"
    "  --pharaoh        print the argmax alignment as source-target pairs (\"0-0 2-1\"),\n"
    "                   one link per output word, <eos> left out\n"
    "  --values         print each weight (two decimals) in the coloured heatmap too\n"
    "  --color WHEN     auto (default: colour on a terminal, a plain table otherwise),\n"
    "                   always, or never (shades on a terminal, no colour)\n";

static const char *cmd = "tinyseq attend";

enum { ARENA_START = 64 << 20 };
#define ARENA_CAP ((size_t)4 << 30)

// Replaces ctx's arena with one twice as large. TS_OK, or the failure.
static int grow_arena(ts_ctx *ctx) {
    size_t want = ts_arena_capacity(ctx->arena) * 2;
    if (want > ARENA_CAP) return ts_fail(TS_ERR_ARENA, "the sentence needs more than %zu MiB", ARENA_CAP >> 20);
    ts_arena *bigger = ts_arena_new(want);
    if (!bigger) return TS_ERR_NOMEM;
    ts_arena_free(ctx->arena);
    ts_ctx_init(ctx, bigger);
    return TS_OK;
}

// The terminal mode for --color WHEN on stdout.
static enum ts_term_mode term_mode(const char *when) {
    if (!strcmp(when, "auto")) return ts_term_mode_detect(stdout);
    int tty = ts_term_mode_detect(stdout) != TS_TERM_PLAIN;
    if (!strcmp(when, "never")) return tty ? TS_TERM_SHADE : TS_TERM_PLAIN;
    // always: the colours the terminal claims, at least 256.
    enum ts_term_mode m = ts_term_mode_choose(1, NULL, getenv("COLORTERM"), getenv("TERM"));
    return m == TS_TERM_TRUECOLOR ? m : TS_TERM_256;
}

// What one translation produced, with its labels; everything owned.
typedef struct {
    ts_hypothesis hyp;
    char *source;          // the normalised tokens joined by spaces, split in place into src_words
    const char **src_words;  // (S) as typed, or "<unk>:word" for a word the model does not know
    char *marked;            // the "<unk>:word" labels, back to back
    const char **tgt_words;  // (T) output words, then "<eos>" (or "<cut>" at the length limit)
    int S, T;
} attention_view;

static void view_free(attention_view *v) {
    ts_hypothesis_free(&v->hyp);
    free(v->source);
    free(v->src_words);
    free(v->marked);
    free(v->tgt_words);
}

static int make_labels(attention_view *v, const ts_vocab *src_vocab, const ts_vocab *tgt_vocab) {
    v->T = v->hyp.len + 1;
    v->src_words = malloc((size_t)v->S * sizeof *v->src_words);
    v->tgt_words = malloc((size_t)v->T * sizeof *v->tgt_words);
    v->marked = malloc(strlen(v->source) + 7 * (size_t)v->S + 1);  // every word could take "<unk>:" and a NUL
    if (!v->src_words || !v->tgt_words || !v->marked) return ts_fail(TS_ERR_NOMEM, "cannot allocate labels");
    int k = 0;
    char *save = NULL, *mark = v->marked;
    for (char *w = strtok_r(v->source, " ", &save); w && k < v->S; w = strtok_r(NULL, " ", &save)) {
        v->src_words[k++] = w;
        if (ts_vocab_id(src_vocab, w) != TS_UNK || !strcmp(w, "<unk>")) continue;
        v->src_words[k - 1] = mark;  // the model reads <unk> here: the figure says so
        mark += sprintf(mark, "<unk>:%s", w) + 1;
    }
    for (; k < v->S; k++) v->src_words[k] = "";
    for (int t = 0; t < v->hyp.len; t++) {
        const char *w = ts_vocab_word(tgt_vocab, v->hyp.tokens[t]);
        v->tgt_words[t] = w ? w : "<unk>";
    }
    // The last row is the step that emitted <eos>, or the step cut off at the limit.
    v->tgt_words[v->hyp.len] = v->hyp.ended ? "<eos>" : "<cut>";
    return TS_OK;
}

static void print_words(const char *label, const char *const *words, int n) {
    printf("%s", label);
    for (int i = 0; i < n; i++) printf("%s%s", i ? " " : "", words[i]);
    putchar('\n');
}

int ts_cmd_attend(int argc, char **argv) {
    const char *model_path = NULL, *svg_path = NULL, *json_path = NULL, *sentence = NULL, *color = "auto";
    long beam = 1;
    ts_length_penalty lp = {0, 0.0};
    int pharaoh = 0, values = 0;
    ts_args args;
    ts_args_init(&args, argc, argv, cmd);
    const char *flag, *value;
    while (ts_args_next(&args, &flag, &value)) {
        if (!flag) {
            if (sentence) {
                ts_cli_error(cmd, 0, "one SENTENCE only (quote it), got also '%s'", value);
                return TS_EXIT_USAGE;
            }
            sentence = value;
        } else if (!strcmp(flag, "help")) {
            fputs(usage, stdout);
            return TS_EXIT_OK;
        } else if (!strcmp(flag, "pharaoh")) {
            pharaoh = 1;
        } else if (!strcmp(flag, "values")) {
            values = 1;
        } else if (!strcmp(flag, "model") || !strcmp(flag, "svg") || !strcmp(flag, "json") || !strcmp(flag, "color")) {
            const char **slot = flag[0] == 'm' ? &model_path : flag[0] == 's' ? &svg_path : flag[0] == 'j' ? &json_path : &color;
            if (!(*slot = ts_args_value(&args, flag))) return TS_EXIT_USAGE;
            if (slot == &color && strcmp(color, "auto") && strcmp(color, "always") && strcmp(color, "never")) {
                ts_cli_error(cmd, 0, "--color expects auto, always or never, got '%s'", color);
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(flag, "beam")) {
            if (!(value = ts_args_value(&args, flag)) || ts_parse_int(cmd, flag, value, 1, 1000, &beam))
                return TS_EXIT_USAGE;
        } else if (!strcmp(flag, "length-penalty")) {
            lp.gnmt = 1;
            if (!(value = ts_args_value(&args, flag)) || ts_parse_double(cmd, flag, value, 0, 100, &lp.alpha))
                return TS_EXIT_USAGE;
        } else {
            return ts_unknown_flag(cmd, flag);
        }
    }
    if (!model_path || !sentence) {
        ts_cli_error(cmd, 0, "%s is required (see %s --help)", model_path ? "a SENTENCE" : "--model CKPT", cmd);
        return TS_EXIT_USAGE;
    }

    ts_translator t;
    if (ts_translator_load(model_path, &t)) {
        ts_cli_error(cmd, 1, "cannot load the model");
        return TS_EXIT_FAIL;
    }
    t.length_penalty = lp;
    ts_arena *arena = ts_arena_new(ARENA_START);
    if (!arena) {
        ts_cli_error(cmd, 1, "cannot allocate");
        ts_translator_free(&t);
        return TS_EXIT_FAIL;
    }
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    attention_view v = {0};
    int rc;
    while ((rc = ts_translate_text(&t, &ctx, sentence, (int)beam, &v.hyp, &v.source, &v.S)) == TS_ERR_ARENA &&
           !grow_arena(&ctx)) {
    }
    char *unknown = rc ? NULL : ts_unknown_words(t.src_vocab, v.source);
    if (unknown)
        fprintf(stderr, "%s: unknown words, read as <unk>: %.300s%s\n", cmd, unknown, strlen(unknown) > 300 ? " ..." : "");
    free(unknown);
    if (!rc) rc = make_labels(&v, t.src_vocab, t.tgt_vocab);
    ts_arena_free(ctx.arena);
    if (rc) {
        ts_cli_error(cmd, 1, "cannot translate the sentence");
        view_free(&v);
        ts_translator_free(&t);
        return TS_EXIT_FAIL;
    }

    const ts_model_config *cfg = &t.model->cfg;
    int status = TS_EXIT_OK;
    print_words("source: ", v.src_words, v.S);
    print_words("output: ", v.tgt_words, v.hyp.len);
    if (cfg->attn == TS_ATTN_NONE) {
        printf("attention: none - this model has no attention, so there are no weights to show%s\n",
               svg_path || json_path || pharaoh ? " (no SVG, JSON or alignment written)" : "");
        goto done;
    }
    char title[96];
    snprintf(title, sizeof title, "attention: %s (%s decoder)", ts_attn_name(cfg->attn), ts_decoder_name(cfg->decoder));
    if (beam > 1) printf("%s, beam %ld\n\n", title, beam);
    else printf("%s, greedy\n\n", title);

    ts_term_opts term = {.mode = term_mode(color), .values = values};
    const double *weights = v.hyp.attention;  // (T, S)
    if (ts_render_heatmap_term(stdout, weights, (size_t)v.T, (size_t)v.S, v.tgt_words, v.src_words, &term)) {
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
            printf("\nalignment (source-target):\n");
            rc = ts_render_pharaoh(stdout, links, n_links);
        }
        free(links);
        if (rc) {
            ts_cli_error(cmd, 1, "cannot write the alignment");
            status = TS_EXIT_FAIL;
        }
    }
    if (svg_path) {
        if (ts_render_heatmap_svg_path(svg_path, weights, (size_t)v.T, (size_t)v.S, v.tgt_words, v.src_words, title)) {
            ts_cli_error(cmd, 1, "cannot write the SVG");
            status = TS_EXIT_FAIL;
        } else {
            fprintf(stderr, "%s: wrote %s\n", cmd, svg_path);
        }
    }
    if (json_path) {
        if (ts_render_attention_json_path(json_path, weights, (size_t)v.T, (size_t)v.S, v.tgt_words, v.src_words,
                                          ts_attn_name(cfg->attn))) {
            ts_cli_error(cmd, 1, "cannot write the JSON");
            status = TS_EXIT_FAIL;
        } else {
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
    return status;
}
