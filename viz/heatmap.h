// Attention heatmaps: in the terminal (plain table, shade characters, 256 or
// 24-bit colour) and as a standalone SVG figure. Conventions and errors as in
// viz/render.h.
#ifndef TS_HEATMAP_H
#define TS_HEATMAP_H

#include "viz/render.h"

typedef struct {
    enum ts_term_mode mode;
    int values;  // also print each weight with two decimals (PLAIN always does)
} ts_term_opts;

// Writes the heatmap, one line per target token. PLAIN is a table with the
// source words as column headers. The other modes draw cells three columns
// wide (".14" with values; four for a shade and a value) under the source
// words, set as a staircase so long words need no wider cells: each word
// starts over its column, with a "│" down to it. Widths are counted in
// terminal columns (UTF-8 aware); row labels longer than 24 columns are cut
// with "…". opts NULL means PLAIN. Needs T, S >= 1.
int ts_render_heatmap_term(FILE *out, const double *weights, size_t T, size_t S,
                           const char *const *target, const char *const *source,
                           const ts_term_opts *opts);

// ---- SVG heatmap -----------------------------------------------------------

// A standalone SVG figure: target words down the left, source words along the
// bottom rotated -45 degrees, each cell coloured on a viridis ramp over the
// fixed scale [0, 1] (so figures compare) with its weight written in it in
// black or white, whichever contrasts more; a colour bar with ticks 0, 0.5, 1;
// `title` on top (NULL for none; its lines after the first, split at '\n',
// are a caption in smaller type). NaN cells are grey. Needs T, S >= 1.
int ts_render_heatmap_svg(FILE *out, const double *weights, size_t T, size_t S,
                          const char *const *target, const char *const *source,
                          const char *title);
int ts_render_heatmap_svg_path(const char *path, const double *weights, size_t T, size_t S,
                               const char *const *target, const char *const *source,
                               const char *title);

#endif
