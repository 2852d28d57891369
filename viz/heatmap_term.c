// Attention heatmaps in the terminal: a plain table, shade characters, 256
// or 24-bit colour; one matrix, or a grid of small multiples. Conventions and
// errors as in viz/render.h; the SVG figures are viz/heatmap_svg.c.
//
// T = target length (rows), S = source length (columns)
// weights: (T, S) row-major, row j = target position j.
#include "viz/heatmap.h"
#include "viz/label.h"

#include "tensor/status.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


// ---- terminal --------------------------------------------------------------

enum {
    TERM_LABEL_COLS = 24,  // the widest label
    TERM_LINE_COLS = 80,   // the width when the caller knows none
    TERM_WORD_LINES = 6,   // the most lines the source words climb over a heatmap
    GRID_WORD_LINES = 3,
    GRID_WORD_COLS = 2 * GRID_WORD_LINES - 1
};

static void spaces(FILE *out, int n) {
    for (; n > 0; n--) fputc(' ', out);
}

static int line_width(const ts_term_opts *opts) { return opts && opts->width > 0 ? opts->width : TERM_LINE_COLS; }

// Row labels are cut shorter on a narrow terminal: a sixth of it, 6 to 24 columns.
static int row_label_cols(int width) {
    return width / 6 < 6 ? 6 : width / 6 > TERM_LABEL_COLS ? TERM_LABEL_COLS : width / 6;
}

// " ░▒▓█" by the nearest quarter: < 0.125 blank, >= 0.875 full block.
static const char *shade(double w) {
    static const char *const levels[5] = {" ", "\xe2\x96\x91", "\xe2\x96\x92",
                                          "\xe2\x96\x93", "\xe2\x96\x88"};
    if (isnan(w)) return "?";
    long k = lround(floor(w * 4.0 + 0.5));
    return levels[k < 0 ? 0 : k > 4 ? 4 : k];
}

// Nearest entry of xterm's 6x6x6 colour cube (indices 16..231).
static int cube_index(const uint8_t rgb[3]) {
    int idx = 16;
    const int scale[3] = {36, 6, 1};
    for (int c = 0; c < 3; c++) {
        int v = rgb[c], level = v < 48 ? 0 : v < 115 ? 1 : (v - 35) / 40;
        idx += scale[c] * level;
    }
    return idx;
}

// A weight in three columns: ".14", "1.0" (0.995 and up), "  ?" for NaN.
static void short_value(FILE *out, double w) {
    if (isnan(w)) fputs("  ?", out);
    else if (w >= 0.995) fputs("1.0", out);
    else fprintf(out, ".%02ld", lround(w * 100 < 0 ? 0 : w * 100));
}

// One cell cw columns wide; with values, the weight in its last three
// (after a shade in SHADE, after a space in colour, so that neighbours'
// values stay apart).
static void cell(FILE *out, double w, enum ts_term_mode mode, int values, int cw) {
    if (mode == TS_TERM_SHADE) {
        if (values) {
            spaces(out, cw - 4);
            fputs(shade(w), out);
            short_value(out, w);
        } else {
            for (int k = 0; k < cw; k++) fputs(shade(w), out);
        }
        return;
    }
    uint8_t rgb[3];
    ts_render_colour(w, rgb);
    int dark = ts_render_dark_text_on(rgb);
    if (mode == TS_TERM_TRUECOLOR) {
        fprintf(out, "\x1b[48;2;%d;%d;%dm", rgb[0], rgb[1], rgb[2]);
        if (values) fputs(dark ? "\x1b[38;2;0;0;0m" : "\x1b[38;2;255;255;255m", out);
    } else {
        fprintf(out, "\x1b[48;5;%dm", cube_index(rgb));
        if (values) fputs(dark ? "\x1b[38;5;16m" : "\x1b[38;5;231m", out);
    }
    spaces(out, cw - (values ? 3 : 0));
    if (values) short_value(out, w);
}

// One grid cell two columns wide: a shade or a colour, or in PLAIN a digit round(9 w).
static void grid_cell(FILE *out, double w, enum ts_term_mode mode) {
    if (mode != TS_TERM_PLAIN) {
        cell(out, w, mode, 0, 2);
        return;
    }
    long digit = isnan(w) ? -1 : lround(fmin(9.0, fmax(0.0, 9.0 * w)));
    if (digit < 0) fputs(" ?", out);
    else if (digit == 0) fputs(" .", out);
    else fprintf(out, " %ld", digit);
}

// The scale of the cells in one line: "scale: 0 ▕  ▏.25 ..", or the grid's
// digits' rule in PLAIN.
static void scale_line(FILE *out, enum ts_term_mode mode) {
    if (mode == TS_TERM_PLAIN) {
        fputs("scale: weight w as the digit round(9 w), '.' for 0\n", out);
        return;
    }
    fputs("scale:", out);
    static const double stops[] = {0, 0.25, 0.5, 0.75, 1};
    static const char *const names[] = {"0", ".25", ".5", ".75", "1"};
    for (int k = 0; k < 5; k++) {
        fprintf(out, " %s ", names[k]);
        grid_cell(out, stops[k], mode);
        if (mode != TS_TERM_SHADE) fputs("\x1b[0m", out);
    }
    fputc('\n', out);
}

int ts_term_wrap(FILE *out, const char *lead, int indent, const char *const *items, size_t n, const char *sep,
                 int width) {
    ts_label first;
    ts_label_make(&first, &lead, 0, INT_MAX);
    if (indent < 0) indent = first.cols;
    if (width > 0 && indent > width / 2) indent = 0;  // a long lead: the next lines start at the margin
    // A line that breaks after an item ends with the separator's first part (", " -> ",").
    int at = first.cols, sep_cols = (int)strlen(sep), end_cols = (int)strcspn(sep, " ");
    // The lead's last spaces wait for the first item: a lead alone on its line ends without them.
    size_t shown = strlen(first.text);
    while (shown && first.text[shown - 1] == ' ') shown--;
    int trailing = (int)(strlen(first.text) - shown);
    fwrite(first.text, 1, shown, out);
    for (size_t k = 0; k < n; k++) {
        ts_label word;
        int gap = k ? sep_cols : 0, end = k + 1 < n ? end_cols : 0, line = width > 0 ? width - indent - end : INT_MAX;
        ts_label_make(&word, items, k, line < 2 ? 2 : line);
        if (width > 0 && at + gap + word.cols + end > width && at > indent) {  // on the next line
            fprintf(out, "%.*s\n", k ? end_cols : 0, sep);
            spaces(out, indent);
            at = indent;
            gap = trailing = 0;
        }
        spaces(out, trailing);  // the lead's, once
        trailing = 0;
        if (gap) fputs(sep, out);
        at += gap;
        if (width > 0 && at + word.cols + end > width)  // wider than a line of its own: cut to what is left
            ts_label_make(&word, items, k, width - at - end < 2 ? 2 : width - at - end);
        fputs(word.text, out);
        at += word.cols;
    }
    fputc('\n', out);
    return ferror(out) ? ts_fail(TS_ERR_IO, "terminal text: write error") : TS_OK;
}

// Whether any label of shown (rows[0..T), then cols[0..S)) is cut.
static int any_cut(const ts_label *shown, const char *const *target, size_t T, const char *const *source, size_t S) {
    for (size_t k = 0; k < T + S; k++) {
        ts_label full;
        ts_label_make(&full, k < T ? target : source, k < T ? k : k - T, INT_MAX);
        if (strcmp(full.text, shown[k].text)) return 1;
    }
    return 0;
}

// The labels shown cut (rows[0..T), then cols[0..S)), each once, in full:
// "cut labels: bec… = because, tir… = tired", wrapped to width (a line may
// break after a "=", so that a long word still has a line of its own).
typedef struct {
    char text[sizeof ((ts_label *)0)->text + 4];  // a label and the " =" or "," after it
} legend_part;

static int cut_legend(FILE *out, const ts_label *shown, const char *const *target, size_t T,
                      const char *const *source, size_t S, int width) {
    legend_part *parts = malloc(2 * (T + S) * sizeof *parts);  // "bec… =", "because," for each label cut
    const char **items = malloc(2 * (T + S) * sizeof *items);
    if (!parts || !items) {
        free(parts);
        free(items);
        return ts_fail(TS_ERR_NOMEM, "render heatmap: no memory for the legend");
    }
    size_t n = 0;
    for (size_t k = 0; k < T + S; k++) {
        ts_label full;
        ts_label_make(&full, k < T ? target : source, k < T ? k : k - T, INT_MAX);
        if (!strcmp(full.text, shown[k].text)) continue;
        snprintf(parts[n].text, sizeof parts[n].text, "%s =", shown[k].text);
        memcpy(parts[n + 1].text, full.text, sizeof full.text);
        int seen = 0;
        for (size_t m = 0; m < n && !seen; m += 2) seen = !strcmp(parts[m].text, parts[n].text) && !strcmp(parts[m + 1].text, full.text);
        if (seen) continue;
        if (n) strcat(parts[n - 1].text, ",");
        items[n] = parts[n].text;
        items[n + 1] = parts[n + 1].text;
        n += 2;
    }
    int rc = n ? ts_term_wrap(out, "cut labels: ", 2, items, n, " ", width) : TS_OK;
    free(parts);
    free(items);
    return rc;
}

// "columns 14-25 of 25" over a block when the columns take several.
static void block_heading(FILE *out, size_t from, size_t to, size_t S) {
    if (from == 0 && to == S) return;
    if (from) fputc('\n', out);
    fprintf(out, "columns %zu-%zu of %zu\n", from + 1, to, S);
}

// PLAIN: a table with the source words as column headers, as many columns a
// block as fit the width (at least one).
static void plain_table(FILE *out, const double *weights, size_t T, size_t S, const ts_label *rows,
                        ts_label *cols, const char *const *source, int row_cols, int width) {
    for (size_t from = 0, to; from < S; from = to) {
        int at = row_cols;
        for (to = from; to < S; to++) {
            int room = width - at - 2;  // two spaces before each column
            if (to > from && (cols[to].cols > 4 ? cols[to].cols : 4) > room) break;
            if (cols[to].cols > room) ts_label_make(&cols[to], source, to, room < 4 ? 4 : room);
            at += 2 + (cols[to].cols > 4 ? cols[to].cols : 4);
        }
        block_heading(out, from, to, S);
        spaces(out, row_cols);
        for (size_t i = from; i < to; i++) {
            int cw = cols[i].cols > 4 ? cols[i].cols : 4;
            spaces(out, 2 + cw - cols[i].cols);
            fputs(cols[i].text, out);
        }
        fputc('\n', out);
        for (size_t j = 0; j < T; j++) {
            fputs(rows[j].text, out);
            spaces(out, row_cols - rows[j].cols);
            for (size_t i = from; i < to; i++) {
                int cw = cols[i].cols > 4 ? cols[i].cols : 4;
                fprintf(out, "  %*.2f", cw, weights[j * S + i]);
            }
            fputc('\n', out);
        }
    }
}

// Plans the source words over columns [from, to) as a staircase: each word
// starts above the middle of its column (`first + (i - from) * cw`) and
// runs right, with a "│" down to its column; a word sits above every word
// its text (and one space) would cover, so nothing overlaps, and short
// words share the bottom line. A word is cut (cols[i], made anew from
// source) to end inside `width` and to keep the staircase within
// TERM_WORD_LINES lines. depth[i - from]: its line above the cells' first.
// Returns how many words were cut.
static int plan_words(ts_label *cols, const char *const *source, size_t from, size_t to, int first, int cw, int width,
                      int *depth) {
    int cuts = 0;
    for (size_t i = to; i-- > from;) {
        int room = width - (first + (int)(i - from) * cw);
        ts_label_make(&cols[i], source, i, room < 2 ? 2 : room < TERM_LABEL_COLS ? room : TERM_LABEL_COLS);
        int d = 0;
        for (size_t j = i + 1; j < to && (long)(j - i) * cw <= cols[i].cols; j++) {
            if (depth[j - from] + 1 >= TERM_WORD_LINES) {  // no higher: the word ends before column j
                ts_label_make(&cols[i], source, i, (int)(j - i) * cw - 1);
                break;
            }
            if (depth[j - from] + 1 > d) d = depth[j - from] + 1;
        }
        depth[i - from] = d;
        ts_label whole;
        ts_label_make(&whole, source, i, TERM_LABEL_COLS);
        cuts += strcmp(whole.text, cols[i].text) != 0;
    }
    return cuts;
}

// The staircase plan_words planned, from its top line down.
static void column_words(FILE *out, const ts_label *cols, const int *depth, size_t from, size_t to, int first, int cw) {
    int top = 0;
    for (size_t i = from; i < to; i++) top = depth[i - from] > top ? depth[i - from] : top;
    for (int line = top; line >= 0; line--) {
        int at = 0;  // terminal columns written on this line
        for (size_t i = from; i < to; i++) {
            int x = first + (int)(i - from) * cw;
            if (depth[i - from] < line || x < at) continue;
            spaces(out, x - at);
            if (depth[i - from] == line) {
                fputs(cols[i].text, out);
                at = x + cols[i].cols;
            } else {
                fputs("\xe2\x94\x82", out);  // │
                at = x + 1;
            }
        }
        fputc('\n', out);
    }
}

int ts_render_heatmap_term(FILE *out, const double *weights, size_t T, size_t S,
                           const char *const *target, const char *const *source,
                           const ts_term_opts *opts) {
    int status = ts_heatmap_check_matrix("render heatmap", weights, T, S);
    if (status != TS_OK) return status;
    enum ts_term_mode mode = opts ? opts->mode : TS_TERM_PLAIN;
    int values = opts ? opts->values : 0, width = line_width(opts);
    if (mode < TS_TERM_PLAIN || mode > TS_TERM_TRUECOLOR)
        return ts_fail(TS_ERR_ARG, "render heatmap: unknown terminal mode %d", (int)mode);
    ts_label *all = malloc((T + S) * sizeof *all);
    if (!all) return ts_fail(TS_ERR_NOMEM, "render heatmap: no memory for labels");
    ts_label *rows = all, *cols = all + T;
    int row_cols = 0;
    for (size_t j = 0; j < T; j++) {
        ts_label_make(&rows[j], target, j, row_label_cols(width));
        if (rows[j].cols > row_cols) row_cols = rows[j].cols;
    }
    for (size_t i = 0; i < S; i++) ts_label_make(&cols[i], source, i, TERM_LABEL_COLS);

    if (mode == TS_TERM_PLAIN) {
        plain_table(out, weights, T, S, rows, cols, source, row_cols, width);
    } else {
        // Three columns a cell, four with values (" .14", or a shade and ".14"); as many columns a
        // block as fit, the blocks as even as can be.
        int narrow = values ? 4 : 3, room = width - row_cols - 1;
        size_t fit = (size_t)(room / narrow > 1 ? room / narrow : 1);
        size_t blocks = (S + fit - 1) / fit, per = (S + blocks - 1) / blocks;
        int *depth = malloc(per * sizeof *depth);  // (per) the staircase of one block
        if (!depth) status = ts_fail(TS_ERR_NOMEM, "render heatmap: no memory for the column labels");
        // Cells up to twice as wide where the width leaves room and that cuts fewer words.
        int cw = narrow, widest = room / (int)per < 2 * narrow ? room / (int)per : 2 * narrow, fewest = INT_MAX;
        for (int w = narrow; !status && w <= widest && fewest; w++) {
            int cuts = 0;
            for (size_t from = 0; from < S; from += per)
                cuts += plan_words(cols, source, from, from + per < S ? from + per : S, row_cols + 1 + w / 2, w, width, depth);
            if (cuts < fewest) fewest = cuts, cw = w;
        }
        for (size_t from = 0; !status && from < S; from += per) {
            size_t to = from + per < S ? from + per : S;
            block_heading(out, from, to, S);
            plan_words(cols, source, from, to, row_cols + 1 + cw / 2, cw, width, depth);
            column_words(out, cols, depth, from, to, row_cols + 1 + cw / 2, cw);
            for (size_t j = 0; j < T; j++) {
                fputs(rows[j].text, out);
                spaces(out, row_cols - rows[j].cols + 1);
                for (size_t i = from; i < to; i++) cell(out, weights[j * S + i], mode, values, cw);
                // Reset before the newline so no colour bleeds into the next line.
                fputs(mode == TS_TERM_SHADE ? "\n" : "\x1b[0m\n", out);
            }
        }
        free(depth);
    }
    // Under the cells: the cut labels in full, then the scale.
    if (!status && (mode != TS_TERM_PLAIN || any_cut(all, target, T, source, S))) fputc('\n', out);
    if (!status) status = cut_legend(out, all, target, T, source, S, width);
    if (!status && mode != TS_TERM_PLAIN) scale_line(out, mode);
    free(all);
    if (status) return status;
    return ferror(out) ? ts_fail(TS_ERR_IO, "render heatmap: write error") : TS_OK;
}
// ---- small multiples -----------------------------------------------------------

// The source words over a line of panels with cells 2 columns wide, where
// a staircase would climb one line a word: staggered over GRID_WORD_LINES
// lines, each panel's column i on line i % GRID_WORD_LINES from the first
// column of its cell (xs[k] for column k of the line, labelled
// source[from + k % C]), each word cut to GRID_WORD_COLS, to end before the
// next word of its line and inside `width`.
static void staggered_words(FILE *out, const char *const *source, size_t from, size_t C, const int *xs, size_t n,
                            int width) {
    for (size_t line = 0; line < GRID_WORD_LINES && line < C; line++) {
        int at = 0;
        size_t k = 0;
        while (k < n && (k % C) % GRID_WORD_LINES != line) k++;
        while (k < n) {
            size_t next = k + 1;
            while (next < n && (next % C) % GRID_WORD_LINES != line) next++;
            int room = next < n ? xs[next] - xs[k] - 1 : width - xs[k];
            ts_label word;
            ts_label_make(&word, source, from + k % C, room < GRID_WORD_COLS ? (room < 1 ? 1 : room) : GRID_WORD_COLS);
            spaces(out, xs[k] - at);
            fputs(word.text, out);
            at = xs[k] + word.cols;
            k = next;
        }
        fputc('\n', out);
    }
}

// The grid's panels' columns [from, to) (of C), fitting `width`: each grid
// row's panels side by side, as many a line as fit.
static void grid_term_part(FILE *out, const ts_heatmap_grid *g, enum ts_term_mode mode, int width, size_t from,
                           size_t to, const ts_label *rows, const ts_label *titles, int row_cols, int *xs) {
    size_t C = to - from;
    // A panel is as wide as its cells or its title ("head 1"), whichever is
    // wider, so a short output does not cut the titles.
    int panel_cols = (int)(2 * C);
    for (size_t c = 0; c < g->cols; c++)
        if (titles[g->rows + c].cols > panel_cols) panel_cols = titles[g->rows + c].cols;
    // As many panels a line as fit the width (at least one): a grid row too
    // wide goes on over several lines of panels.
    size_t per_line = (size_t)((width - row_cols) / (2 + panel_cols));
    if (per_line < 1) per_line = 1;
    if (per_line > g->cols) per_line = g->cols;
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t first = 0; first < g->cols; first += per_line) {
            size_t last = first + per_line < g->cols ? first + per_line : g->cols;
            if (r || first) fputc('\n', out);
            // The source words over this line's panels, then the grid row's
            // title and each panel's title.
            size_t n = 0;
            for (size_t c = first; c < last; c++)
                for (size_t i = 0; i < C; i++) xs[n++] = row_cols + 2 + (int)(c - first) * (2 + panel_cols) + 2 * (int)i;
            if (r == 0) staggered_words(out, g->source, from, C, xs, n, width);
            fputs(first ? "" : titles[r].text, out);
            spaces(out, row_cols - (first ? 0 : titles[r].cols));
            for (size_t c = first; c < last; c++) {
                const ts_label *t = &titles[g->rows + c];
                spaces(out, 2);
                fputs(t->text, out);
                spaces(out, panel_cols - t->cols);
            }
            fputc('\n', out);
            for (size_t j = 0; j < g->R; j++) {
                fputs(rows[j].text, out);
                spaces(out, row_cols - rows[j].cols);
                for (size_t c = first; c < last; c++) {
                    const double *w = g->panels[r * g->cols + c];  // (R, C)
                    spaces(out, 2);
                    for (size_t i = from; i < to; i++) {
                        if (w) grid_cell(out, w[j * g->C + i], mode);
                        else spaces(out, 2);
                    }
                    if (mode != TS_TERM_PLAIN && mode != TS_TERM_SHADE) fputs("\x1b[0m", out);
                    if (c + 1 < last) spaces(out, panel_cols - (int)(2 * C));
                }
                fputc('\n', out);
            }
        }
    }
}

int ts_render_heatmap_grid_term(FILE *out, const ts_heatmap_grid *g, const ts_term_opts *opts) {
    int status = ts_heatmap_check_grid("render heatmap grid", g);
    if (status) return status;
    enum ts_term_mode mode = opts ? opts->mode : TS_TERM_PLAIN;
    int width = line_width(opts);
    if (mode < TS_TERM_PLAIN || mode > TS_TERM_TRUECOLOR)
        return ts_fail(TS_ERR_ARG, "render heatmap grid: unknown terminal mode %d", (int)mode);
    int label_cols = row_label_cols(width);
    ts_label *all = ts_labels_make(g->target, g->R, NULL, 0, label_cols);
    size_t n_titles = g->rows + g->cols;
    ts_label *titles = malloc(n_titles * sizeof *titles);  // grid row titles, then column titles
    int *xs = malloc(g->cols * g->C * sizeof *xs);      // where the source columns start over a line of panels
    if (!all || !titles || !xs) {
        free(all);
        free(titles);
        free(xs);
        return ts_fail(TS_ERR_NOMEM, "render heatmap grid: no memory for labels");
    }
    for (size_t r = 0; r < g->rows; r++) ts_label_make(&titles[r], g->row_titles, r, label_cols);
    for (size_t c = 0; c < g->cols; c++) ts_label_make(&titles[g->rows + c], g->col_titles, c, label_cols);
    int row_cols = 0;
    for (size_t j = 0; j < g->R; j++) row_cols = all[j].cols > row_cols ? all[j].cols : row_cols;
    for (size_t r = 0; r < g->rows; r++) row_cols = titles[r].cols > row_cols ? titles[r].cols : row_cols;
    // Panels wider than the width are drawn in parts of their columns, as
    // even as can be ("columns 1-30 of 60"), each part the whole grid.
    size_t fit = (size_t)((width - row_cols - 2) / 2 > 1 ? (width - row_cols - 2) / 2 : 1);
    size_t parts = (g->C + fit - 1) / fit, per = (g->C + parts - 1) / parts;
    for (size_t from = 0; from < g->C; from += per) {
        size_t to = from + per < g->C ? from + per : g->C;
        if (from) fputc('\n', out);
        if (parts > 1) fprintf(out, "columns %zu-%zu of %zu\n", from + 1, to, g->C);
        grid_term_part(out, g, mode, width, from, to, all, titles, row_cols, xs);
    }
    fputc('\n', out);
    scale_line(out, mode);
    free(all);
    free(titles);
    free(xs);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render heatmap grid: write error") : TS_OK;
}
