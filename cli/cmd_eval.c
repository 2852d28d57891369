// tinyseq eval: a checkpoint on a TSV corpus - perplexity, BLEU (overall and
// by source length), exact match and, with gold alignments, the AER of the
// attention against the diagonal baseline.
#include "cli/cli.h"
#include "cli/common.h"

#include "data/corpus.h"
#include "data/gold.h"
#include "infer/eval_set.h"
#include "infer/evaluate.h"
#include "infer/heads.h"
#include "models/explain.h"
#include "infer/load.h"
#include "infer/translate.h"
#include "viz/heatmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: tinyseq eval --model CKPT --corpus FILE [--beam K] [--align GOLD] [--max-len N]\n"
    "                    [--skip-bad] [--show N] [--batch N]\n"
    "                    [--shift-att] [--explain grad|ig [--ig-steps N]]\n"
    "\n"
    "Evaluates a checkpoint on the sentence pairs of a TSV corpus (source<TAB>target):\n"
    "teacher-forced perplexity, corpus BLEU-4 of the decoded outputs (also by source\n"
    "length), exact match, and attention diagnostics. Scores compare words: a subword\n"
    "model's outputs are detokenised first (its length buckets count pieces, and\n"
    "--align is refused: its attention is over pieces).\n"
    "\n"
    "  --model CKPT    checkpoint written by tinyseq train (required)\n"
    "  --corpus FILE   TSV corpus (required)\n"
    "  --beam K        beam width, 1.." TS_CLI_QUOTE(TS_BEAM_MAX) " (default " TS_CLI_QUOTE(TS_BEAM_DEFAULT) "; 0: the default too; 1: greedy);\n"
    "                  a batch's sentences decode together either way\n"
    "  --length-penalty A  beam search ranks finished outputs by GNMT's log-probability /\n"
    "                 ((5 + |y|) / 6)^A, A in [0, 100] (default: log-probability / |y|;\n"
    "                 |y| counts <eos>); larger A favours longer outputs\n"
    "  --align GOLD    gold alignments in Pharaoh format (\"0-0 1-2\", source-target),\n"
    "                  one line per sentence pair of FILE: adds AER and its diagonal baseline;\n"
    "                  aer= scores the attention of the search's output, aer_forced= that of\n"
    "                  the reference force-decoded (teacher forcing), aer_forced_best= its\n"
    "                  best single head (a Transformer's per head in a table above)\n"
    "  --shift-att     with --align: also the forced attention read shifted (Chen et al.\n"
    "                  2020: the row that predicts word t+1 as word t's alignment), per head,\n"
    "                  aer_shift= and aer_shift_best=\n"
    "  --explain KIND  with --align: the reference's attributions, grad (gradient x input)\n"
    "                  or ig (integrated gradients; docs/attention.md): their AER\n"
    "                  (aer_explain=), and per head their agreement with the forced\n"
    "                  attention (shifted with --shift-att): Jensen-Shannon divergence of\n"
    "                  the rows and the share of rows with the same argmax\n"
    "  --ig-steps N    --explain ig: points of the path integral (default " TS_CLI_QUOTE(TS_IG_STEPS_DEFAULT) ")\n"
    "  --max-len N     leave out pairs with a side longer than N tokens (default:\n"
    "                  the checkpoint's training limit; 0: none); pairs longer\n"
    "                  than 1000 tokens are always left out\n"
    "  --skip-bad      skip malformed corpus lines, naming them, instead of failing\n"
    "  --show N        print the first N pairs with their outputs (default 3)\n"
    "  --batch N       sentences per batch (default 64)\n"
    "\n"
    "The last line is\n"
    "  eval: bleu=B chrf=C ppl=P exact=E pairs=N [aer=A aer_diagonal=D aer_forced=F aer_forced_best=G\n"
    "        [aer_shift=H aer_shift_best=I] [aer_explain=X]] bleu_detok=T\n"
    "after \"attention: entropy=E pad_mass=M\" for a model with attention. How to read them\n"
    "(docs/attention.md, sections 4 and 6):\n"
    "  bleu           corpus BLEU-4 as a fraction in [0, 1] (0.97 is \"97 BLEU\"); higher is better\n"
    "  chrf           chrF2 as sacreBLEU computes it, divided by 100: character n-grams, so it\n"
    "                 still ranks outputs too short for BLEU's 4-grams\n"
    "  ppl            perplexity of the reference under teacher forcing: 1 is certain,\n"
    "                 lower is better\n"
    "  exact          the share of outputs identical to their reference\n"
    "  bleu_detok     BLEU of the text as the model writes it, tokenized as sacreBLEU's defaults\n"
    "                 do (13a, cased: what Marian and fairseq report; docs/metrics.md); bleu,\n"
    "                 chrf and exact compare words, lowercased with punctuation split off\n"
    "  aer            alignment error rate of the attention's argmax against GOLD: 0 every link\n"
    "                 right, 1 none\n"
    "  aer_diagonal   the same for output word j linked to source word j S/T: the attention\n"
    "                 has learned alignment only where aer is clearly below it\n"
    "  aer_forced     aer of the attention as the model reads the reference (teacher forcing),\n"
    "                 so a wrong output word shifts nothing; aer_forced_best: its best head\n"
    "  aer_shift      aer_forced read shifted (--shift-att); aer_shift_best: its best head\n"
    "  aer_explain    aer of the attributions' argmax (--explain)\n"
    "  entropy        mean entropy of the attention rows in nats: 0 each row on one word,\n"
    "                 ln S spread evenly; falling in training means sharper attention\n"
    "  pad_mass       weight on the padding of batched decoding: 0, else the mask is broken\n"
    "  the agreement table (--explain), per head: JS divergence of attention and attribution\n"
    "                 rows (0 the same, ln 2 = 0.693 disjoint) / the share of rows with the same\n"
    "                 argmax (1 all): low / high means the head's weights explain the output\n"
    "When BLEU is 0 because some n-gram order never matches (short targets), a note on\n"
    "stderr says so.\n";

static const char *cmd = "tinyseq eval";


// "  source:    TEXT AFTER", wrapped to width (0: one line) under its text.
static void print_labelled(const char *label, const char *text, const char *after, int width) {
    size_t n = strlen(label) + strlen(text) + strlen(after) + 16;
    char *line = malloc(n);
    if (!line) {  // out of memory: the line whole
        printf("  %-11s%s%s\n", label, text, after);
        return;
    }
    snprintf(line, n, "  %-11s%s%s", label, text, after);
    ts_term_put_wrapped(stdout, line, width, 13);
    free(line);
}

// One side of pair p as the model reads it: its text as written when the
// model keeps it, else its words joined by spaces.
static void print_side(const char *label, const ts_pair *p, enum ts_side side, int width) {
    char *text = NULL;
    ts_pair_text(p, side, &text);  // NULL when out of memory: an empty line
    print_labelled(label, text ? text : "", "", width);
    free(text);
}

// The output in words (a subword model's pieces joined into words).
static void print_output(const ts_translator *t, const ts_hypothesis *h, int width) {
    char *text = NULL;
    ts_translator_text(t, h->tokens, h->len, &text);  // NULL when out of memory: an empty line
    print_labelled("output:", text ? text : "", h->ended ? "" : " (cut at the length limit)", width);
    free(text);
}

// One figure per layer and head, as a table of `width` columns at most (0:
// 80): a row per layer, a column per head, then the layer's mean; heads
// that do not fit a line go on in blocks below it ("heads 6-11 of 16").
// cell() writes the cell of layer l, head k (-1: the mean) in cell_cols,
// `mark` ('*' for the head trained with guided alignment, else ' ') just
// before its figures; a line under the table says what '*' marks.
typedef void (*head_cell_writer)(const void *tables, int l, int k, int cell_cols, char mark);

static void print_head_table(int L, int H, int cell_cols, int width, head_cell_writer cell, const void *tables,
                             const ts_translator *t) {
    enum { ROW_LABEL = 10 };  // "  layer 12"
    int per = ((width > 0 ? width : 80) - ROW_LABEL) / cell_cols;
    if (per < 1) per = 1;
    int blocks = (H + 1 + per - 1) / per;  // the heads and the mean
    per = (H + 1 + blocks - 1) / blocks;
    for (int from = 0; from <= H; from += per) {
        int to = from + per < H + 1 ? from + per : H + 1;
        if (blocks > 1 && from == H) printf("each layer's mean:\n");
        else if (blocks > 1) printf("heads %d-%d of %d%s:\n", from, (to > H ? H : to) - 1, H, to > H ? ", and the mean" : "");
        printf("%*s", ROW_LABEL, "");
        for (int k = from; k < to; k++) {
            char name[24] = "mean";
            if (k < H) snprintf(name, sizeof name, "head %d", k);
            printf("%*s", cell_cols, name);
        }
        putchar('\n');
        for (int l = 0; l < L; l++) {
            printf("  layer %-2d", l);
            for (int k = from; k < to; k++) {
                int guided = t->guided && l == t->guided_layer && k == t->guided_head;
                cell(tables, l, k < H ? k : -1, cell_cols, guided ? '*' : ' ');
            }
            putchar('\n');
        }
    }
    if (t->guided)
        printf("* the guided head, layer %d head %d (train --guided-alignment)\n", t->guided_layer, t->guided_head);
}

// An AER cell: the figure, right-aligned, its mark before it.
static void aer_cell(const void *tables, int l, int k, int cell_cols, char mark) {
    printf("%*s%c%.4f", cell_cols - 7, "", mark, ts_head_cell(tables, l, k));
}

// AER by layer and head (heads then the mean, each row a layer), and the
// best-aligned head; `title` says which reading it scores.
static void print_head_aer(const char *title, const ts_head_table *aer, double aer_diagonal, int width,
                           const ts_translator *t) {
    int L = aer->layers, best_layer, best_head;
    ts_head_table_best(aer, &best_layer, &best_head);
    printf("%s", title);
    print_head_table(L, aer->heads, 10, width, aer_cell, aer, t);
    printf("best-aligned head: layer %d head %d (aer %.4f)\n  beside the last layer's head mean %.4f and the diagonal "
           "%.4f\n", best_layer, best_head, ts_head_cell(aer, best_layer, best_head), ts_head_cell(aer, L - 1, -1),
           aer_diagonal);
}

static const char search_title[] =
    "\nAER by layer and head (argmax of each head's cross-attention against the gold\n"
    "links; lower is better; \"mean\" is the layer's head mean, the last layer's is\n"
    "aer= below, which scores the search's own weights: in float32 the two may differ\n"
    "in the last digit):\n";
static const char forced_title[] =
    "\nAER of the reference force-decoded, by layer and head (the model reads the gold\n"
    "target with teacher forcing; the argmax of each head's attention on each\n"
    "reference word against the gold links; the last layer's mean is aer_forced=\n"
    "below):\n";

static const char shift_title[] =
    "\nAER of the reference force-decoded, read shifted (shift-att: the row that\n"
    "predicts word t+1 as word t's alignment), by layer and head; the last layer's\n"
    "mean is aer_shift= below:\n";

// The agreement tables, JS divergence and same argmax, side by side in a cell.
typedef struct {
    const ts_head_table *js, *same;
} agreement_tables;

static void agreement_cell(const void *tables, int l, int k, int cell_cols, char mark) {
    const agreement_tables *t = tables;
    printf("%*s%c%.4f / %.4f", cell_cols - 16, "", mark, ts_head_cell(t->js, l, k), ts_head_cell(t->same, l, k));
}

// Per layer and head (then the layer's mean): the mean JS divergence of the
// forced attention's rows and the attributions' normalised rows, and the
// share of rows with the same argmax.
static void print_agreement(const char *method, int shift, const ts_head_table *js, const ts_head_table *same,
                            int width, const ts_translator *tr) {
    printf("\nattention beside the attributions (%s) of the reference,%s\n"
           "by layer and head: JS divergence of the rows (nats; 0 same rows, ln 2 = 0.693\n"
           "disjoint) / share of rows with the same argmax source word (1 all):\n",
           method, shift ? "\nthe attention read shifted," : "");
    agreement_tables t = {js, same};
    print_head_table(js->layers, js->heads, 18, width, agreement_cell, &t, tr);
}

// What eval's flags ask for.
typedef struct {
    const char *model_path, *corpus_path, *align_path;
    long beam, max_len, show, batch, ig_steps;
    ts_length_penalty lp;
    int skip_bad, shift, ig_given;
    int explain;  // enum ts_explain_method, -1: none
} eval_args;

// argv into *a: -1, or the exit status (--help, a usage error: said).
static int parse_args(int argc, char **argv, eval_args *a) {
    *a = (eval_args){.beam = TS_BEAM_DEFAULT, .max_len = -1, .show = 3, .batch = 64, .ig_steps = TS_IG_STEPS_DEFAULT,
                     .explain = -1};
    const ts_flag flags[] = {
        TS_STRING("model", &a->model_path),
        TS_STRING("corpus", &a->corpus_path),
        TS_STRING("align", &a->align_path),
        TS_INT("beam", &a->beam, 0, TS_BEAM_MAX),
        {.name = "length-penalty", .kind = TS_FLAG_DOUBLE, .target = &a->lp.alpha, .lo = 0, .hi = 100,
         .given = &a->lp.gnmt},
        TS_INT("max-len", &a->max_len, 0, 1000000),
        TS_INT("batch", &a->batch, 1, 1000000),
        TS_INT("show", &a->show, 0, 1000000),
        TS_SWITCH("skip-bad", &a->skip_bad),
        TS_SWITCH("shift-att", &a->shift),
        TS_CHOICE("explain", &a->explain, ts_cli_choose_explain),
        {.name = "ig-steps", .kind = TS_FLAG_INT, .target = &a->ig_steps, .lo = 1, .hi = TS_IG_STEPS_MAX,
         .given = &a->ig_given},
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0]};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed < 0 && (a->shift || a->explain >= 0) && !a->align_path) {
        ts_cli_error(cmd, 0, "%s scores alignments: give --align GOLD", a->shift ? "--shift-att" : "--explain");
        parsed = TS_EXIT_USAGE;
    }
    if (parsed < 0 && a->ig_given && a->explain != TS_EXPLAIN_IG) {
        ts_cli_error(cmd, 0, "--ig-steps goes with --explain ig");
        parsed = TS_EXIT_USAGE;
    }
    return parsed;
}

// With --align, one figure per head of the cross-attention (ts_model_cross_heads):
typedef struct {
    ts_head_table search;    // the search's output's AER, a model whose every head can be inspected
    ts_head_table forced;    // the reference force-decoded
    ts_head_table shift;     // --shift-att: the same read shifted
    ts_head_table js, same;  // --explain: JS divergence and same-argmax share beside the attributions
} head_tables;

static void head_tables_free(head_tables *h) {
    ts_head_table_free(&h->search);
    ts_head_table_free(&h->forced);
    ts_head_table_free(&h->shift);
    ts_head_table_free(&h->js);
    ts_head_table_free(&h->same);
}

// The tables a's flags want of model m in *h, and opts pointed at them
// (none without --align or a model without cross-attention heads). TS_OK or
// TS_ERR_NOMEM.
static int ask_head_tables(const eval_args *a, ts_seq2seq *m, head_tables *h, ts_eval_opts *opts) {
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    if (!a->align_path || !heads) return TS_OK;
    opts->shift_att = a->shift;
    opts->explain = a->explain + 1;  // 0 stays "none" in the options
    opts->ig_steps = (int)a->ig_steps;
    struct {
        int wanted;
        ts_head_table *table, **given;
    } tables[] = {{ts_heads_available(m), &h->search, &opts->head_aer},
                  {1, &h->forced, &opts->head_aer_forced},
                  {a->shift, &h->shift, &opts->head_aer_shift},
                  {a->explain >= 0, &h->js, &opts->head_js},
                  {a->explain >= 0, &h->same, &opts->head_same}};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (!tables[i].wanted) continue;
        int rc = ts_head_table_init(tables[i].table, layers, heads);
        if (rc) return rc;
        *tables[i].given = tables[i].table;
    }
    return TS_OK;
}

// The corpus line: its pairs, the malformed lines skipped, the pairs left out.
static void print_corpus(const char *path, const ts_eval_set *set) {
    const ts_corpus *c = set->corpus;
    printf("corpus %s: %zu pair%s", path, c->n_pairs, c->n_pairs == 1 ? "" : "s");
    char skipped[512];
    if (c->n_bad)
        printf(", %zu malformed line%s skipped: %s", c->n_bad, c->n_bad == 1 ? "" : "s",
               ts_corpus_skipped(c, skipped, sizeof skipped));
    if (set->n_rows < c->n_pairs)
        printf(", %zu with a side longer than %d tokens left out", c->n_pairs - set->n_rows, set->limit);
    putchar('\n');
}

// The model line, wrapped to width: the model as its row describes it, and the search.
static void print_model(const char *path, const ts_model_config *cfg, long beam, int width) {
    char model[256], line[4600];
    int n = snprintf(line, sizeof line, "model %s: %s; %s", path, ts_model_describe(cfg, model, sizeof model),
                     beam > 1 ? "beam search" : "greedy decoding");
    if (beam > 1 && n > 0 && (size_t)n < sizeof line) snprintf(line + n, sizeof line - (size_t)n, " (width %ld)", beam);
    ts_term_put_wrapped(stdout, line, width, 2);
}

// The first n_show pairs of the set beside their outputs.
static void print_examples(const ts_translator *t, const ts_eval_set *set, const ts_hypothesis *hyps, size_t n_show,
                           int width) {
    if (n_show) printf("\nexamples:\n");
    for (size_t k = 0; k < n_show; k++) {
        const ts_pair *p = &set->corpus->pairs[set->rows[k]];
        if (k) putchar('\n');
        print_side("source:", p, TS_SRC, width);
        print_side("reference:", p, TS_TGT, width);
        print_output(t, &hyps[k], width);
    }
}

// The figures of evaluation r: BLEU by source length, the loss, the
// attention's, notes on a BLEU of 0, the tables per head, the eval: line.
static void print_figures(const ts_translator *t, const eval_args *a, const ts_eval_result *r, const head_tables *h,
                          int width) {
    static const char *const bucket_names[TS_EVAL_BUCKETS] = {"1-5", "6-10", "11-15", "16+"};
    printf("\nBLEU by source length (tokens):\n");
    for (int i = 0; i < TS_EVAL_BUCKETS; i++) {
        if (r->bucket_pairs[i])
            printf("  %-6s %.4f  (%zu pair%s)\n", bucket_names[i], r->bucket_bleu[i], r->bucket_pairs[i],
                   r->bucket_pairs[i] == 1 ? "" : "s");
        else printf("  %-6s -       (0 pairs)\n", bucket_names[i]);
    }
    // The loss to 12 decimals too, for tools/npz_dev_loss.py to be checked against.
    char loss[160];
    snprintf(loss, sizeof loss, "loss %.4f nats per token over %zu target tokens (with <eos>); %.12f", r->loss, r->tokens,
             r->loss);
    putchar('\n');  // one line to a pipe, whatever $COLUMNS says: tools read it (tests/test_npz_dev_loss.sh)
    ts_term_put_wrapped(stdout, loss, isatty(fileno(stdout)) ? width : 0, 2);
    if (r->has_attention) printf("attention: entropy=%.4f pad_mass=%g\n", r->entropy, r->pad_mass);
    else printf("attention: none (no alignment diagnostics%s)\n", a->align_path ? "; --align ignored" : "");
    if (r->pairs && r->short_refs == r->pairs)
        fprintf(stderr, "tinyseq eval: note: BLEU-4 is 0 on this corpus whatever the outputs: none of its %zu "
                        "references has 4 words; read chrF (%.4f) instead\n", r->pairs, r->chrf);
    else if (r->bleu_zero_order)
        fprintf(stderr, "tinyseq eval: note: BLEU is 0 because no %d-gram of the outputs matches its reference "
                        "(%zu of %zu references have fewer than 4 words); chrF is %.4f\n",
                r->bleu_zero_order, r->short_refs, r->pairs, r->chrf);
    int layers, heads = ts_model_cross_heads(&t->model->cfg, &layers);
    if (r->has_head_aer) print_head_aer(search_title, &h->search, r->aer_diagonal, width, t);
    if (r->has_aer_forced && layers * heads > 1) print_head_aer(forced_title, &h->forced, r->aer_diagonal, width, t);
    if (r->has_shift && layers * heads > 1) print_head_aer(shift_title, &h->shift, r->aer_diagonal, width, t);
    if (r->has_explain) print_agreement(ts_explain_methods[a->explain].title, a->shift, &h->js, &h->same, width, t);
    printf("eval: bleu=%.4f chrf=%.4f ppl=%.3f exact=%.4f pairs=%zu", r->bleu, r->chrf, r->perplexity, r->exact,
           r->pairs);
    if (r->has_aer) printf(" aer=%.4f aer_diagonal=%.4f", r->aer, r->aer_diagonal);
    if (r->has_aer_forced) printf(" aer_forced=%.4f aer_forced_best=%.4f", r->aer_forced, r->aer_forced_best);
    if (r->has_shift) printf(" aer_shift=%.4f aer_shift_best=%.4f", r->aer_shift, r->aer_shift_best);
    if (r->has_explain) printf(" aer_explain=%.4f", r->aer_explain);
    printf(" bleu_detok=%.4f\n", r->bleu_detok);
}

int ts_cmd_eval(int argc, char **argv) {
    eval_args a;
    int parsed = parse_args(argc, argv, &a);
    if (parsed >= 0) return parsed;
    ts_session s;
    if ((parsed = ts_cli_open_session(cmd, a.model_path, a.corpus_path ? NULL : "--corpus FILE", a.lp, &a.beam, &s)) >= 0)
        return parsed;
    ts_translator *t = &s.t;
    // --align's links name words; a subword model's attention is over pieces.
    if (t->src_sw && a.align_path) {
        ts_cli_error(cmd, 0, "--align scores word alignments, and %s is a subword model whose attention is over pieces",
                     a.model_path);
        ts_session_free(&s);
        return TS_EXIT_USAGE;
    }
    ts_eval_set set;
    if (ts_eval_set_read(t, a.corpus_path, a.align_path, a.skip_bad, (int)a.max_len, &set)) {
        ts_cli_error(cmd, 0, "%s", ts_last_error());
        ts_session_free(&s);
        return TS_EXIT_FAIL;
    }
    ts_hypothesis *hyps = NULL;
    head_tables tables = {0};
    int status = TS_EXIT_FAIL;
    print_corpus(a.corpus_path, &set);
    if (set.n_rows == 0) {
        ts_cli_error(cmd, 0, "no sentence pairs left to evaluate (see --max-len)");
        goto done;
    }
    int width = ts_term_width(stdout);  // the lines and tables fit it (0: the lines whole, the tables 80)
    print_model(a.model_path, &t->model->cfg, a.beam, width);
    ts_eval_opts opts = {.beam = (int)a.beam, .batch = (int)a.batch, .gold = set.row_gold, .gold_counts = set.row_counts};
    if (ask_head_tables(&a, t->model, &tables, &opts)) {
        ts_cli_error(cmd, 0, "out of memory");
        goto done;
    }
    // Decoding steps run in scratch arenas of their own (models/search.c):
    // the session's holds a batch's teacher-forced pass, or its encoding.
    ts_eval_result r;
    if (ts_evaluate(t, &s.ctx, ts_eval_set_input(&set), set.rows, set.n_rows, &opts, &r, &hyps)) {
        ts_cli_error(cmd, 1, "evaluation failed");
        goto done;
    }
    print_examples(t, &set, hyps, (size_t)a.show < set.n_rows ? (size_t)a.show : set.n_rows, width);
    print_figures(t, &a, &r, &tables, width);
    status = TS_EXIT_OK;
    if (fflush(stdout) == EOF) {
        ts_cli_error(cmd, 0, "cannot write to standard output");
        status = TS_EXIT_FAIL;
    }
done:
    for (size_t k = 0; hyps && k < set.n_rows; k++) ts_hypothesis_free(&hyps[k]);
    free(hyps);
    head_tables_free(&tables);
    ts_eval_set_free(&set);
    ts_session_free(&s);
    return status;
}
