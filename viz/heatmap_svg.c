// Attention heatmaps as standalone SVG figures: one matrix, or a grid of
// small multiples. Conventions and errors as in viz/render.h; the terminal's
// heatmaps are viz/heatmap_term.c.
//
// T = target length (rows), S = source length (columns)
// weights: (T, S) row-major, row j = target position j.
#include "viz/heatmap.h"
#include "viz/label.h"

#include "tensor/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


// ---- SVG -------------------------------------------------------------------

// Layout in px. Text widths are estimated from terminal columns (0.62 em per
// column covers DejaVu Sans and Arial lower case; wide CJK counts two).
#define CELL 44.0
#define FONT 14.0
#define VALUE_FONT 12.0
#define TITLE_FONT 16.0
#define CAPTION_FONT 13.0
#define CAPTION_LINE 18.0
#define BAR_W 18.0
#define DIAG 0.70710678118654752  // cos 45 = sin 45
enum { SVG_LABEL_COLS = 32 };

static double text_px(int cols, double font) { return cols * 0.62 * font; }

static void svg_text(FILE *out, double x, double y, const char *attrs, const char *text) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    ts_render_xml_text(out, text);
    fputs("</text>\n", out);
}

// A figure's title, its lines fitted to the figure: the first line of the
// text (bold, TITLE_FONT) and the caption after it (CAPTION_FONT), each
// broken at spaces into lines of at most `room` px (a word wider than that
// keeps a line of its own). FIGURE_TITLE_LINES lines at most; the last
// takes what is left of the text.
enum { FIGURE_TITLE_LINES = 24 };
#define FIGURE_MIN_W 420.0  // a figure narrower than its title is widened to this, then the title wraps

typedef struct {
    struct {
        const char *text;  // into the title, not NUL-terminated
        int len;           // bytes
        int caption;       // CAPTION_FONT, else TITLE_FONT
    } line[FIGURE_TITLE_LINES];
    int n;
    double px;     // the widest line's width
    double height; // what the lines take above the figure's first row
} figure_title;

// Characters (not bytes) of s[0..len): the columns text_px counts.
static int chars(const char *s, int len) {
    int n = 0;
    for (int i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

// Breaks para[0..end) into lines of at most `room` px in `font` (a word
// wider than that on a line of its own), appended to t's lines (up to
// `most` in all, the last taking the rest); returns how many it made.
static int title_lines(figure_title *t, int most, const char *para, int end, double font, double room, int caption) {
    int made = 0;
    for (int at = 0; at < end && t->n < most;) {
        int cut = end;
        if (text_px(chars(para + at, end - at), font) > room && t->n + 1 < most) {
            cut = -1;
            for (int k = at + 1; k < end; k++) {
                if (para[k] != ' ') continue;
                if (cut >= 0 && text_px(chars(para + at, k - at), font) > room) break;  // the space before fitted
                cut = k;  // the first always: a word wider than room has a line of its own
            }
            if (cut < 0) cut = end;
        }
        t->line[t->n].text = para + at;
        t->line[t->n].len = cut - at;
        t->line[t->n].caption = caption;
        t->px = fmax(t->px, text_px(chars(para + at, cut - at), font));
        t->n++;
        made++;
        while (cut < end && para[cut] == ' ') cut++;
        at = cut;
    }
    return made;
}

static void title_fit(figure_title *t, const char *title, double room) {
    memset(t, 0, sizeof *t);
    t->height = 20;
    if (!title) return;
    for (const char *para = title; para && t->n < FIGURE_TITLE_LINES;
         para = strchr(para, '\n') ? strchr(para, '\n') + 1 : NULL) {
        int caption = para != title, end = (int)strcspn(para, "\n");
        double font = caption ? CAPTION_FONT : TITLE_FONT;
        // The narrowest room that takes as few lines as `room` does: lines of even length.
        figure_title trial = *t;
        int lines = title_lines(&trial, FIGURE_TITLE_LINES, para, end, font, room, caption);
        double even = room;
        for (double r = room - 8; r > room / 2; r -= 8) {
            trial = *t;
            if (title_lines(&trial, FIGURE_TITLE_LINES, para, end, font, r, caption) != lines) break;
            even = r;
        }
        if (end > 0) {
            title_lines(t, FIGURE_TITLE_LINES, para, end, font, even, caption);
        } else if (t->n < FIGURE_TITLE_LINES) {  // an empty line stays one
            t->line[t->n].text = para;
            t->line[t->n++].caption = caption;
        }
    }
    // Baselines: 30 px for the first line, 20 px apart in the title, 26 px to
    // the caption and 18 px apart in it; the figure starts 22 px below a
    // title line, 14 px below a caption line.
    double y = 30;
    for (int k = 1; k < t->n; k++) y += !t->line[k].caption ? 20 : t->line[k - 1].caption ? CAPTION_LINE : 26;
    t->height = y + (t->n && t->line[t->n - 1].caption ? 14 : 22);
}

// The SVG element of a width x height figure on white, then its title centred on top.
static void svg_open(FILE *out, double width, double height, double font, const figure_title *t) {
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Verdana, Arial, "
                 "sans-serif\" font-size=\"%.0f\">\n",
            ceil(width), ceil(height), ceil(width), ceil(height), font);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", out);
    double y = 30;
    for (int k = 0; k < t->n; k++) {
        if (k) y += !t->line[k].caption ? 20 : t->line[k - 1].caption ? CAPTION_LINE : 26;
        char text[1024];
        snprintf(text, sizeof text, "%.*s", t->line[k].len, t->line[k].text);
        svg_text(out, width / 2, y,
                 t->line[k].caption ? "text-anchor=\"middle\" font-size=\"13\" fill=\"#333333\""
                                    : "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"",
                 text);
    }
}

// The colour bar at (x, y), h px high: 0 at the bottom, ticks 0, 0.5, 1.
static void svg_colour_bar(FILE *out, double x, double y, double h) {
    fputs("<defs><linearGradient id=\"ts-viridis\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n", out);
    for (int k = 0; k <= 8; k++) {
        uint8_t rgb[3];
        ts_render_colour(k / 8.0, rgb);
        fprintf(out, "<stop offset=\"%.3f\" stop-color=\"#%02x%02x%02x\"/>\n", k / 8.0, rgb[0],
                rgb[1], rgb[2]);
    }
    fputs("</linearGradient></defs>\n", out);
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" "
                 "fill=\"url(#ts-viridis)\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n",
            x, y, BAR_W, h);
    static const char *const tick_text[3] = {"0", "0.5", "1"};
    for (int k = 0; k < 3; k++) {
        double ty = y + h * (1.0 - k * 0.5);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\"/>\n",
                x + BAR_W, ty, x + BAR_W + 4, ty);
        svg_text(out, x + BAR_W + 7, ty, "dy=\"0.35em\" font-size=\"12\"", tick_text[k]);
    }
}

int ts_render_heatmap_svg(FILE *out, const double *weights, size_t T, size_t S,
                          const char *const *target, const char *const *source,
                          const char *const axes[2], const char *title) {
    int status = ts_heatmap_check_matrix("render svg", weights, T, S);
    if (status != TS_OK) return status;
    ts_label *all = ts_labels_make(target, T, source, S, SVG_LABEL_COLS);
    if (!all) return ts_fail(TS_ERR_NOMEM, "render svg: no memory for labels");
    const ts_label *rows = all, *cols = all + T;

    double row_px = 0, col_px = 0;
    for (size_t j = 0; j < T; j++) row_px = fmax(row_px, text_px(rows[j].cols, FONT));
    for (size_t i = 0; i < S; i++) col_px = fmax(col_px, text_px(cols[i].cols, FONT));
    // Left: the "target" axis title, the row labels, a gap; wide enough that
    // rotated column labels running down-left stay inside the figure.
    double gx = 12 + 24 + row_px + 10;
    for (size_t i = 0; i < S; i++) {
        double reach = text_px(cols[i].cols, FONT) * DIAG + FONT - (i + 0.5) * CELL;
        gx = fmax(gx, 12 + reach);
    }
    gx = ceil(gx);  // whole pixels: no anti-aliased seams between cells
    double grid_w = S * CELL, grid_h = T * CELL;
    double bar_h = fmax(grid_h, 120);
    double bar_x = gx + grid_w + 24;
    double drop = col_px * DIAG + FONT * 0.5;  // depth of the rotated column labels
    // The heatmap decides the width; the title wraps to it (a small heatmap's figure is FIGURE_MIN_W wide).
    double width = bar_x + BAR_W + 8 + 32 + 12;
    figure_title head;
    title_fit(&head, title, fmax(width, FIGURE_MIN_W) - 24);
    if (title) width = fmax(width, head.px + 24);
    double gy = head.height;
    double height = fmax(gy + grid_h + 12 + drop + 34, gy + bar_h + 20);

    svg_open(out, width, height, FONT, &head);

    // Cells with their weights.
    fprintf(out, "<g font-size=\"%.0f\" text-anchor=\"middle\">\n", VALUE_FONT);
    for (size_t j = 0; j < T; j++) {
        for (size_t i = 0; i < S; i++) {
            double w = weights[j * S + i];
            uint8_t rgb[3];
            ts_render_colour(w, rgb);
            double x = gx + i * CELL, y = gy + j * CELL;
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                         "fill=\"#%02x%02x%02x\"/>",
                    x, y, CELL, CELL, rgb[0], rgb[1], rgb[2]);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\" fill=\"%s\">",
                    x + CELL / 2, y + CELL / 2,
                    ts_render_dark_text_on(rgb) ? "#000000" : "#ffffff");
            if (isnan(w)) fputs("nan", out);
            else fprintf(out, "%.2f", w);
            fputs("</text>\n", out);
        }
    }
    fputs("</g>\n", out);

    // Target words down the left, source words rotated along the bottom.
    for (size_t j = 0; j < T; j++)
        svg_text(out, gx - 8, gy + (j + 0.5) * CELL, "dy=\"0.35em\" text-anchor=\"end\"",
                 rows[j].text);
    for (size_t i = 0; i < S; i++) {
        // The anchor is the end of the text; shifting it right by ~1/3 em
        // puts the middle of the glyphs, not the baseline, under the column.
        double x = gx + (i + 0.5) * CELL + FONT * 0.35, y = gy + grid_h + 12;
        char attrs[96];
        snprintf(attrs, sizeof attrs, "text-anchor=\"end\" transform=\"rotate(-45 %.1f %.1f)\"",
                 x, y);
        svg_text(out, x, y, attrs, cols[i].text);
    }
    svg_text(out, gx + grid_w / 2, gy + grid_h + 12 + drop + 22,
             "text-anchor=\"middle\" font-style=\"italic\" fill=\"#444444\"", axes ? axes[1] : "source");
    {
        double x = 12 + 14, y = gy + grid_h / 2;
        char attrs[128];
        snprintf(attrs, sizeof attrs,
                 "text-anchor=\"middle\" font-style=\"italic\" fill=\"#444444\" "
                 "transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        svg_text(out, x, y, attrs, axes ? axes[0] : "target");
    }

    svg_colour_bar(out, bar_x, gy, bar_h);
    fputs("</svg>\n", out);
    free(all);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render svg: write error") : TS_OK;
}

static int heatmap_writer(FILE *out, const ts_figure_args *a) {
    return ts_render_heatmap_svg(out, a->weights, a->T, a->S, a->target, a->source, a->axes, a->text);
}

int ts_render_heatmap_svg_path(const char *path, const double *weights, size_t T, size_t S,
                               const char *const *target, const char *const *source,
                               const char *const axes[2], const char *title) {
    ts_figure_args a = {.weights = weights, .T = T, .S = S, .target = target, .source = source,
                        .axes = axes, .text = title};
    return ts_render_to_path(path, heatmap_writer, &a);
}

// ---- small multiples -----------------------------------------------------------

#define GRID_FONT 11.0
#define GRID_TITLE_FONT 13.0
#define GRID_GAP 14.0

int ts_render_heatmap_grid_svg(FILE *out, const ts_heatmap_grid *g) {
    int status = ts_heatmap_check_grid("render svg grid", g);
    if (status) return status;
    ts_label *all = ts_labels_make(g->target, g->R, g->source, g->C, SVG_LABEL_COLS);
    size_t n_titles = g->rows + g->cols;
    ts_label *titles = malloc(n_titles * sizeof *titles);
    if (!all || !titles) {
        free(all);
        free(titles);
        return ts_fail(TS_ERR_NOMEM, "render svg grid: no memory for labels");
    }
    for (size_t r = 0; r < g->rows; r++) ts_label_make(&titles[r], g->row_titles, r, SVG_LABEL_COLS);
    for (size_t c = 0; c < g->cols; c++) ts_label_make(&titles[g->rows + c], g->col_titles, c, SVG_LABEL_COLS);
    const ts_label *rows = all, *cols = all + g->R;
    // Cells from 16 px down to 6 px, so that a panel stays about 200 px wide.
    size_t longest = g->R > g->C ? g->R : g->C;
    double cell_px = fmax(6.0, fmin(16.0, floor(200.0 / (double)longest)));
    double panel_w = g->C * cell_px, panel_h = g->R * cell_px;
    double title_px = 0, row_px = 0, col_px = 0;
    for (size_t r = 0; r < g->rows; r++) title_px = fmax(title_px, text_px(titles[r].cols, GRID_TITLE_FONT));
    for (size_t j = 0; j < g->R; j++) row_px = fmax(row_px, text_px(rows[j].cols, GRID_FONT));
    for (size_t i = 0; i < g->C; i++) col_px = fmax(col_px, text_px(cols[i].cols, GRID_FONT));
    double gx = ceil(12 + title_px + 10 + row_px + 6);  // left edge of the first panel column
    double step_x = panel_w + GRID_GAP, step_y = panel_h + GRID_GAP;
    double grid_w = g->cols * step_x - GRID_GAP, grid_h = g->rows * step_y - GRID_GAP;
    double bar_x = gx + grid_w + 24, bar_h = fmax(grid_h, 120);
    double width = bar_x + BAR_W + 8 + 32 + 12;  // the grid's: the title wraps to it
    figure_title head;
    title_fit(&head, g->title, fmax(width, FIGURE_MIN_W) - 24);
    width = fmax(width, head.px + 24);
    double gy = ceil(head.height + GRID_TITLE_FONT);
    double height = fmax(gy + grid_h + 8 + col_px + 12, gy + bar_h + 20);

    svg_open(out, width, height, GRID_FONT, &head);
    for (size_t c = 0; c < g->cols; c++)
        svg_text(out, gx + c * step_x + panel_w / 2, gy - 8, "text-anchor=\"middle\" font-size=\"13\"",
                 titles[g->rows + c].text);
    for (size_t r = 0; r < g->rows; r++) {
        double y0 = gy + r * step_y;
        svg_text(out, 12, y0 + panel_h / 2, "dy=\"0.35em\" font-size=\"13\" font-weight=\"bold\"", titles[r].text);
        for (size_t j = 0; j < g->R; j++)
            svg_text(out, gx - 6, y0 + (j + 0.5) * cell_px, "dy=\"0.35em\" text-anchor=\"end\"", rows[j].text);
        for (size_t c = 0; c < g->cols; c++) {
            const double *w = g->panels[r * g->cols + c];  // (R, C)
            double x0 = gx + c * step_x;
            if (!w) continue;
            fputs("<g shape-rendering=\"crispEdges\">", out);
            for (size_t j = 0; j < g->R; j++)
                for (size_t i = 0; i < g->C; i++) {
                    uint8_t rgb[3];
                    ts_render_colour(w[j * g->C + i], rgb);
                    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"#%02x%02x%02x\"/>",
                            x0 + i * cell_px, y0 + j * cell_px, cell_px, cell_px, rgb[0], rgb[1], rgb[2]);
                }
            fputs("</g>\n", out);
        }
    }
    // Source words under the last grid row, read top to bottom.
    for (size_t c = 0; c < g->cols; c++)
        for (size_t i = 0; i < g->C; i++) {
            double x = gx + c * step_x + (i + 0.5) * cell_px, y = gy + grid_h + 6;
            char attrs[96];
            snprintf(attrs, sizeof attrs, "dy=\"0.35em\" transform=\"rotate(90 %.1f %.1f)\"", x, y);
            svg_text(out, x, y, attrs, cols[i].text);
        }
    svg_colour_bar(out, bar_x, gy, bar_h);
    fputs("</svg>\n", out);
    free(all);
    free(titles);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render svg grid: write error") : TS_OK;
}

static int grid_writer(FILE *out, const ts_figure_args *a) { return ts_render_heatmap_grid_svg(out, a->more); }

int ts_render_heatmap_grid_svg_path(const char *path, const ts_heatmap_grid *g) {
    ts_figure_args a = {.more = g};
    return ts_render_to_path(path, grid_writer, &a);
}
