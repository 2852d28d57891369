// Attention heatmaps: in the terminal (plain table, shade characters, 256 or
// 24-bit colour: viz/heatmap_term.c) and as a standalone SVG figure
// (viz/heatmap_svg.c). Conventions and errors as in viz/render.h.
#ifndef TS_HEATMAP_H
#define TS_HEATMAP_H

#include "viz/render.h"

typedef struct {
    enum ts_term_mode mode;
    int values;  // also print each weight with two decimals (PLAIN always does)
    int width;   // the terminal's columns that the heatmaps fit (0: 80)
} ts_term_opts;

// Writes the heatmap, one line per target token, fitting opts->width. PLAIN
// is a table with the source words as column headers. The other modes draw
// cells three columns wide (four with values: " .14", or a shade and ".14")
// under the source words, set as a staircase so long words need no wider
// cells: each word starts over its column, with a "│" down to it, at most 6
// lines high. Widths are counted in terminal columns (UTF-8 aware). When the
// columns do not fit the width they are split into blocks ("columns 14-25 of
// 25") of even size, each with the row labels. Row labels are cut with "…"
// to a sixth of the width (6 to 24 columns), column words to what the
// staircase and the width leave them; a line "cut labels: bec… = because"
// then gives each cut label in full. Colour and shades end with the line of
// the scale that the grid prints. opts NULL means PLAIN at 80 columns.
// Needs T, S >= 1.
int ts_render_heatmap_term(FILE *out, const double *weights, size_t T, size_t S,
                           const char *const *target, const char *const *source,
                           const ts_term_opts *opts);

// Writes `lead`, then items[0..n) separated by `sep`, as lines of at most
// `width` terminal columns (0 or less: one line): a line breaks between
// items only (ending with sep's part before its first space: ", " -> ","),
// and the lines after the first start at `indent` (-1: lead's width; the
// margin when that is over half the width). Each item is made safe as a
// label (control characters and invalid UTF-8 as '?') and cut with "…" to
// the room a line has. Then a newline. TS_OK, or TS_ERR_IO.
int ts_term_wrap(FILE *out, const char *lead, int indent, const char *const *items, size_t n, const char *sep,
                 int width);


// ---- SVG heatmap -----------------------------------------------------------

// A standalone SVG figure: target words down the left, source words along the
// bottom rotated -45 degrees, each cell coloured on a viridis ramp over the
// fixed scale [0, 1] (so figures compare) with its weight written in it in
// black or white, whichever contrasts more; a colour bar with ticks 0, 0.5, 1;
// `title` on top (NULL for none; its lines after the first, split at '\n',
// are a caption in smaller type), wrapped at spaces to the figure's width,
// which the heatmap decides (at least 420 px), in lines of even length.
// NaN cells are grey. Needs T, S >= 1.
// `axes` names the rows' and the columns' axis ({"target", "source"} when
// NULL; a self-attention figure names its own, e.g. "decoder input").
int ts_render_heatmap_svg(FILE *out, const double *weights, size_t T, size_t S,
                          const char *const *target, const char *const *source,
                          const char *const axes[2], const char *title);
int ts_render_heatmap_svg_path(const char *path, const double *weights, size_t T, size_t S,
                               const char *const *target, const char *const *source,
                               const char *const axes[2], const char *title);

// ---- small multiples ---------------------------------------------------------

// A grid of heatmaps that share one scale: e.g. one grid row per layer and
// one grid column per head (and their mean), each panel an (R, C) matrix
// with the same row and column labels.
typedef struct {
    const double *const *panels;     // (rows * cols) row-major over the grid, each (R, C); NULL: an empty slot
    size_t rows, cols;               // the grid's shape
    size_t R, C;                     // each panel's
    const char *const *row_titles;   // (rows) e.g. "layer 0", or NULL
    const char *const *col_titles;   // (cols) e.g. "head 0" ... "mean", or NULL
    const char *const *target;       // (R) labels down the left of each grid row (NULL: indices)
    const char *const *source;       // (C) labels under the last grid row (NULL: indices)
    const char *title;               // on top, or NULL; lines after the first are a caption
} ts_heatmap_grid;

// The grid in the terminal, fitting opts->width: each grid row's panels side
// by side, as many a line as fit (at least one; the rest on the next lines;
// panels wider than the width in parts of their columns, "columns 1-30 of
// 60", each part the whole grid),
// two columns a cell (shade characters or colour as opts->mode; PLAIN, for
// files and pipes, writes each weight as one digit, round(9 w), '.' for 0),
// the source words over the first grid row's panels (staggered over 3
// lines, each word cut to 5 columns), the panel titles above them, the row labels
// left of the first panel (labels cut to a sixth of the width, 6 to 24
// columns), then a line with the scale of the cells. Needs rows, cols, R, C >= 1.
int ts_render_heatmap_grid_term(FILE *out, const ts_heatmap_grid *g, const ts_term_opts *opts);

// The grid as a standalone SVG figure: panels of small cells on the viridis
// scale [0, 1] (no values written), grid row titles on the left, column
// titles on top, target labels left of each grid row, source labels under
// the last, a colour bar; the title wrapped as ts_render_heatmap_svg's.
// Needs rows, cols, R, C >= 1.
int ts_render_heatmap_grid_svg(FILE *out, const ts_heatmap_grid *g);
int ts_render_heatmap_grid_svg_path(const char *path, const ts_heatmap_grid *g);

#endif
