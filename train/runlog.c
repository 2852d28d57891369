// The run log (train/runlog.h): the rows and lines a run appends as it goes,
// what a continued run keeps of them, and the figures drawn from them.
#include "train/runlog.h"

#include "models/search.h"  // TS_BEAM_DEFAULT: the beam attention.jsonl records
#include "tensor/atomic_write.h"
#include "viz/heatmap.h"
#include "viz/plot.h"
#include "viz/render.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- what a continued run keeps ----------------------------------------------------

// Whether a continued run keeps line `number` (from 1) of metrics.csv,
// steps.csv, heads.csv (the header, and rows whose field `step_field` is at
// most `step`) or attention.jsonl (step_field -1: {"epoch":E,"step":S,...
// with S at most `step`; a line from before steps were recorded: E at most
// `epoch`). A line of another shape (a second header, a JSON line in a CSV
// file) is none of the run's: dropped.
static int line_kept(const char *line, long number, int step_field, long epoch, long step) {
    if (step_field >= 0 && number == 1 && line[0] >= 'a' && line[0] <= 'z') return 1;  // the CSV header
    const char *p = line;
    if (step_field < 0) {
        if (line[0] != '{') return 0;
        const char *key = strstr(line, "\"step\":");
        if (!key && strncmp(line, "{\"epoch\":", 9)) return 0;
        p = key ? key + 7 : line + 9;
        step = key ? step : epoch;
    } else {
        for (int k = 0; k < step_field && p; k++)
            if ((p = strchr(p, ','))) p++;
        if (!p) return 0;
    }
    char *end;
    double at = strtod(p, &end);
    return end != p && (*end == ',' || *end == '\n' || !*end) && at >= 0 && at <= step;
}

// A continued run's metrics.csv, steps.csv and attention.jsonl keep the
// header and the lines up to the checkpoint's step; later ones are the
// previous run's future.
struct kept_lines {
    FILE *in;
    const char *path;
    int step_field;
    long epoch, step;
};

static int fill_kept_lines(void *ctx, FILE *out) {
    struct kept_lines *k = ctx;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = TS_OK;
    for (long number = 1; !rc && (got = getline(&line, &cap, k->in)) > 0; number++) {
        if (memchr(line, '\0', (size_t)got))  // kept as a string, the line would lose what follows
            rc = ts_fail(TS_ERR_FORMAT, "%s:%ld: a NUL byte", k->path, number);
        else if (line_kept(line, number, k->step_field, k->epoch, k->step))
            fwrite(line, 1, (size_t)got, out);
    }
    free(line);
    return rc ? rc : ferror(k->in) ? ts_fail(TS_ERR_IO, "cannot read '%s'", k->path) : TS_OK;
}

static int trim_file(const char *dir, const char *name, int step_field, long epoch, long step) {
    char path[4096];
    int rc = ts_path_join(path, sizeof path, dir, name);
    if (rc) return rc;
    struct kept_lines k = {fopen(path, "r"), path, step_field, epoch, step};
    if (!k.in) return errno == ENOENT ? TS_OK : ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    rc = ts_write_atomic(path, fill_kept_lines, &k, NULL);
    fclose(k.in);
    return rc;
}

int ts_runlog_trim(const char *dir, long epoch, long step) {
    int rc = trim_file(dir, "metrics.csv", 1, epoch, step);
    if (!rc) rc = trim_file(dir, "steps.csv", 0, epoch, step);
    if (!rc) rc = trim_file(dir, "heads.csv", 1, epoch, step);
    if (!rc) rc = trim_file(dir, "attention.jsonl", -1, epoch, step);
    return rc;
}

// ---- the rows ---------------------------------------------------------------------

const char *ts_run_point_epoch(char buf[32], const ts_run_point *at) {
    if (at->epoch == floor(at->epoch)) snprintf(buf, 32, "%.0f", at->epoch);
    else snprintf(buf, 32, "%.3f", at->epoch);
    return buf;
}

// buf = x with 6 decimals, or "" when it is not finite (an empty CSV field:
// a value not measured, as `tinyseq report` and pandas read it).
static const char *loss_field(char buf[32], double x) {
    if (isfinite(x)) snprintf(buf, 32, "%.6f", x);
    else buf[0] = '\0';
    return buf;
}

// Opens dir/name to append a line, writing `header` first when it is new.
static int open_csv(const char *dir, const char *name, const char *header, FILE **csv, char path[4096]) {
    int rc = ts_path_join(path, 4096, dir, name);
    if (rc) return rc;
    if (!(*csv = fopen(path, "a"))) return ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (ftell(*csv) == 0) fputs(header, *csv);
    return TS_OK;
}

static int close_csv(FILE *csv, const char *path) {
    if (fclose(csv) != 0) return ts_fail(TS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return TS_OK;
}

int ts_runlog_append_metrics(const char *dir, const ts_metrics_row *r) {
    char path[4096], epoch[32], train[32], dev[32];
    FILE *csv;
    int rc = open_csv(dir, "metrics.csv",
                      "epoch,step,train_loss,dev_loss,dev_ppl,dev_bleu,dev_chrf,dev_exact,lr,tokens_per_s,elapsed_s\n", &csv,
                      path);
    if (rc) return rc;
    fprintf(csv, "%s,%ld,%s,%s,%.4f,%.6f,%.6f,%.6f,%.6g,%.1f,%.2f\n", ts_run_point_epoch(epoch, &r->at), r->at.step,
            loss_field(train, r->train_loss), loss_field(dev, r->dev->loss), r->dev->perplexity, r->dev->bleu, r->dev->chrf, r->dev->exact, r->lr,
            r->tokens_per_s, r->elapsed);
    return close_csv(csv, path);
}

int ts_runlog_append_steps(const char *dir, const ts_steps_row *r) {
    char path[4096], epoch[32], train[32];
    FILE *csv;
    int rc = open_csv(dir, "steps.csv", "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n", &csv, path);
    if (rc) return rc;
    fprintf(csv, "%ld,%s,%s,%.6g,%.1f,%.2f\n", r->at.step, ts_run_point_epoch(epoch, &r->at),
            loss_field(train, r->train_loss), r->lr,
            r->tokens_per_s, r->elapsed);
    return close_csv(csv, path);
}

int ts_runlog_append_heads(const char *dir, const ts_run_point *at, const ts_head_table *head_aer) {
    char path[4096], epoch[32];
    FILE *csv;
    int rc = open_csv(dir, "heads.csv", "epoch,step,layer,head,aer\n", &csv, path);
    if (rc) return rc;
    for (int l = 0; l < head_aer->layers; l++)
        for (int k = 0; k <= head_aer->heads; k++) {
            int head = k < head_aer->heads ? k : -1;  // the layer's mean last
            fprintf(csv, "%s,%ld,%d,", ts_run_point_epoch(epoch, at), at->step, l);
            if (head >= 0) fprintf(csv, "%d", head);
            else fputs("mean", csv);
            fprintf(csv, ",%.6f\n", ts_head_cell(head_aer, l, head));
        }
    return close_csv(csv, path);
}

// ---- the attention figure and attention.jsonl -------------------------------------

// The hypothesis was decoded in a batch: its rows are h->S wide (the batch's
// longest source), of which the first n are this sentence's words. A
// subword model's pieces are merged into words (ts_attention_words, as
// attend --words draws them), the reference detokenised.
int ts_runlog_write_attention(const char *dir, const ts_run_point *at, const ts_model_config *cfg,
                              const ts_translator *trained, const ts_pair *pair, const ts_hypothesis *h) {
    if (!ts_model_attends(cfg) || !h->attention) return TS_OK;
    size_t T = (size_t)h->len + 1, n = (size_t)pair->src_len, S = (size_t)h->S;
    if (n > S) return ts_fail(TS_ERR_SHAPE, "figure: %zu source words, attention rows of %zu", n, S);
    const char **target = malloc(T * sizeof *target);
    double *weights = malloc(T * n * sizeof *weights);  // (T, n) without the batch's padding
    char *source = NULL, *reference = NULL;              // a subword model's: the pieces joined, the reference's words
    ts_attention_labels labels = {0};
    ts_word_attention words = {0};
    ts_heads no_heads = {0};
    int pieces = trained->src_sw && trained->tgt_sw, rc = TS_OK;
    if (!target || !weights) rc = ts_fail(TS_ERR_NOMEM, "figure labels");
    for (size_t j = 0; !rc && j < T; j++) memcpy(weights + j * n, h->attention + j * S, n * sizeof *weights);
    for (size_t j = 0; !rc && j < T; j++) {
        const char *w = j < (size_t)h->len ? ts_vocab_word(trained->tgt_vocab, h->tokens[j]) : h->ended ? "<eos>" : "<cut>";
        target[j] = w ? w : "<unk>";
    }
    const double *drawn = weights;  // (rows, cols)
    size_t rows = T, cols = n;
    const char *const *row_words = target, *const *col_words = (const char *const *)pair->src;
    if (!rc && pieces) {
        size_t len = 1;
        for (size_t i = 0; i < n; i++) len += strlen(pair->src[i]) + 1;
        if (!(source = malloc(len))) rc = ts_fail(TS_ERR_NOMEM, "figure labels");
        for (size_t i = 0, at_byte = 0; !rc && i < n; i++)
            at_byte += (size_t)sprintf(source + at_byte, i ? " %s" : "%s", pair->src[i]);
        if (!rc && n == 0) *source = '\0';
        if (!rc) rc = ts_attention_labels_make(trained, source, (int)n, h, &labels);
        if (!rc) rc = ts_attention_words(trained, weights, (int)T, (int)n, &labels, &no_heads, &words);
        if (!rc) rc = ts_subword_detokenize(trained->tgt_sw, (const char *const *)pair->tgt, (size_t)pair->tgt_len, &reference);
        if (!rc) {
            drawn = words.weights;
            rows = (size_t)words.T;
            cols = (size_t)words.S;
            row_words = words.target;
            col_words = words.source;
        }
    }
    char name[64], path[4096], title[1024], epoch[32], what[160];
    if (at->epoch_end) snprintf(name, sizeof name, "attention-%s.svg", ts_run_point_epoch(epoch, at));
    else snprintf(name, sizeof name, "attention-step-%ld.svg", at->step);
    // The reference under the title, so that a wrong output looks wrong.
    int used = snprintf(title, sizeof title, "attention: %s, epoch %s, step %ld, greedy%s\nreference:",
                        ts_model_attention_title(cfg, what, sizeof what), ts_run_point_epoch(epoch, at), at->step,
                        pieces ? ", in words (subword pieces merged)" : "");
    if (reference) snprintf(title + used, sizeof title - (size_t)used, " %s", reference);
    for (int k = 0; !reference && k < pair->tgt_len && used < (int)sizeof title; k++)
        used += snprintf(title + used, sizeof title - (size_t)used, " %s", pair->tgt[k]);
    if (!rc) rc = ts_path_join(path, sizeof path, dir, name);
    if (!rc) rc = ts_render_heatmap_svg_path(path, drawn, rows, cols, row_words, col_words, NULL, title);
    ts_word_attention_free(&words);
    ts_attention_labels_free(&labels);
    free(reference);
    free(source);
    free(target);
    free(weights);
    return rc;
}

static void json_words(FILE *f, char *const *words, size_t n) {
    fputc('[', f);
    for (size_t k = 0; k < n; k++) {
        if (k) fputc(',', f);
        ts_render_json_string(f, words[k]);
    }
    fputc(']', f);
}

// {"output": [...], "weights": [[...], ...]}: rows are the output words and
// <eos> (or the cut), columns the S source words of the pair; no rows when
// the model does not attend (its hypotheses hold zeros, not weights).
static void json_hypothesis(FILE *f, const ts_vocab *tgt_vocab, const ts_hypothesis *h, size_t S, int attends) {
    fputs("{\"output\":[", f);
    for (int k = 0; k < h->len; k++) {
        if (k) fputc(',', f);
        ts_render_json_string(f, ts_vocab_word(tgt_vocab, h->tokens[k]));
    }
    fprintf(f, "],\"ended\":%d,\"weights\":[", h->ended);
    for (int r = 0; attends && h->attention && r <= h->len; r++) {
        fputs(r ? ",[" : "[", f);
        for (size_t c = 0; c < S; c++) fprintf(f, c ? ",%.4g" : "%.4g", h->attention[(size_t)r * (size_t)h->S + c]);
        fputc(']', f);
    }
    fputs("]}", f);
}

// "heads":{"layers":L,"heads":H,"cross":..,"enc":..,"dec":..}: each view
// [layer][head][row][col], head H the layer's mean; 3 digits (a figure's worth).
static void json_heads(FILE *f, const ts_heads *h) {
    fprintf(f, ",\"heads\":{\"layers\":%d,\"heads\":%d", h->layers, h->heads);
    for (int v = 0; v < TS_VIEW_COUNT; v++) {
        int R = ts_heads_rows(h, v), C = ts_heads_cols(h, v);
        fprintf(f, ",\"%s\":[", ts_head_views[v].name);
        for (int l = 0; l < h->layers; l++) {
            fputs(l ? ",[" : "[", f);
            for (int k = 0; k <= h->heads; k++) {
                const double *w = ts_heads_matrix(h, v, l, k < h->heads ? k : -1);  // (R, C)
                fputs(k ? ",[" : "[", f);
                for (int r = 0; r < R; r++) {
                    fputs(r ? ",[" : "[", f);
                    for (int c = 0; c < C; c++) fprintf(f, c ? ",%.3g" : "%.3g", w[(size_t)r * C + c]);
                    fputc(']', f);
                }
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

int ts_runlog_append_report(const char *dir, const ts_run_point *at, const ts_eval_result *dev,
                            const ts_vocab *tgt_vocab, int attends, const ts_report_sentence *sentences, size_t n) {
    char path[4096], epoch[32];
    int rc = ts_path_join(path, sizeof path, dir, "attention.jsonl");
    if (rc) return rc;
    FILE *f = fopen(path, "a");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    fprintf(f, "{\"epoch\":%s,\"step\":%ld,\"beam\":%d,\"bleu_by_length\":[", ts_run_point_epoch(epoch, at), at->step,
            TS_BEAM_DEFAULT);
    for (int b = 0; b < TS_EVAL_BUCKETS; b++)
        fprintf(f, b ? ",[%.6g,%zu]" : "[%.6g,%zu]", dev->bucket_bleu[b], dev->bucket_pairs[b]);
    fputs("],\"sentences\":[", f);
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = sentences[i].pair;
        fputs(i ? ",{\"source\":" : "{\"source\":", f);
        json_words(f, p->src, (size_t)p->src_len);
        fputs(",\"reference\":", f);
        json_words(f, p->tgt, (size_t)p->tgt_len);
        fputs(",\"greedy\":", f);
        json_hypothesis(f, tgt_vocab, sentences[i].greedy, (size_t)p->src_len, attends);
        fputs(",\"beam\":", f);
        json_hypothesis(f, tgt_vocab, sentences[i].beam, (size_t)p->src_len, attends);
        if (sentences[i].heads) json_heads(f, sentences[i].heads);
        fputc('}', f);
    }
    fputs("]}\n", f);
    if (fclose(f) != 0) return ts_fail(TS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return TS_OK;
}

// ---- read back: the clock and the loss curves ------------------------------------

// Fields x_field and y_field of every row of dir/name (a CSV file with a
// header) into malloc'd arrays; a missing file is no rows. Rows whose fields
// are not numbers are skipped: the figure shows what can be read.
static int read_csv_columns(const char *dir, const char *name, int x_field, int y_field, double **x, double **y,
                            size_t *n) {
    char path[4096];
    *x = *y = NULL;
    *n = 0;
    int rc = ts_path_join(path, sizeof path, dir, name);
    if (rc) return rc;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? TS_OK : ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, room = 0;
    ssize_t got;
    for (long row = 0; !rc && (got = getline(&line, &cap, f)) > 0; row++) {
        if (row == 0 || memchr(line, '\0', (size_t)got)) continue;  // the header; a row with a NUL is not numbers
        double value[2];
        int fields[2] = {x_field, y_field}, ok = 1;
        for (int k = 0; k < 2 && ok; k++) {
            const char *p = line;
            for (int skip = 0; skip < fields[k] && p; skip++)
                if ((p = strchr(p, ','))) p++;
            char *end;
            value[k] = p ? strtod(p, &end) : NAN;
            ok = p && end != p && isfinite(value[k]);
        }
        if (!ok) continue;
        if (*n == room) {
            room = room ? 2 * room : 64;
            double *bigger_x = realloc(*x, room * sizeof **x), *bigger_y = bigger_x ? realloc(*y, room * sizeof **y) : NULL;
            if (bigger_x) *x = bigger_x;
            if (!bigger_y) {
                rc = ts_fail(TS_ERR_NOMEM, "no memory for the rows of '%s'", path);
                break;
            }
            *y = bigger_y;
        }
        (*x)[*n] = value[0];
        (*y)[(*n)++] = value[1];
    }
    free(line);
    fclose(f);
    return rc;
}

int ts_runlog_elapsed(const char *dir, double *seconds) {
    static const struct { const char *name; int column; } files[] = {{"steps.csv", 5}, {"metrics.csv", 10}};
    *seconds = 0;
    int rc = TS_OK;
    // The later of the two: an epoch's steps.csv row is written before its
    // evaluation, its metrics.csv row after it.
    for (size_t i = 0; !rc && i < 2; i++) {
        double *step, *elapsed;
        size_t n;
        rc = read_csv_columns(dir, files[i].name, 0, files[i].column, &step, &elapsed, &n);
        if (!rc && n > 0 && elapsed[n - 1] > *seconds) *seconds = elapsed[n - 1];
        free(step);
        free(elapsed);
    }
    return rc;
}

int ts_runlog_write_loss(const char *dir) {
    ts_loss_curves c = {0};
    double *train_step = NULL, *train_loss = NULL, *dev_step = NULL, *dev_loss = NULL;
    int rc = read_csv_columns(dir, "steps.csv", 0, 2, &train_step, &train_loss, &c.n_train);
    if (!rc) rc = read_csv_columns(dir, "metrics.csv", 1, 3, &dev_step, &dev_loss, &c.n_dev);
    char path[4096];
    if (!rc) rc = ts_path_join(path, sizeof path, dir, "loss.svg");
    c.train_step = train_step, c.train_loss = train_loss, c.dev_step = dev_step, c.dev_loss = dev_loss;
    if (!rc) rc = ts_render_loss_svg_path(path, &c, "loss");
    free(train_step);
    free(train_loss);
    free(dev_step);
    free(dev_loss);
    return rc;
}
