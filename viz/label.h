// What the terminal and the SVG heatmaps (viz/heatmap_term.c,
// viz/heatmap_svg.c) share below both: a word made safe to show in a figure
// (invalid UTF-8 and control characters become '?', and it is cut to a
// number of terminal columns with "…": row and column labels, grid titles),
// and the checks of the matrix or grid they are given.
#ifndef TS_VIZ_LABEL_H
#define TS_VIZ_LABEL_H

#include "viz/heatmap.h"

#include <stddef.h>

typedef struct {
    char text[192];
    int cols;  // display width in terminal columns
} ts_label;

// labels[k] (labels NULL: the number k) made safe and cut to max_cols columns.
void ts_label_make(ts_label *l, const char *const *labels, size_t k, int max_cols);

// Row labels target[0..T), then column labels source[0..S) (either NULL:
// numbers), in one malloc'd allocation; NULL when out of memory.
ts_label *ts_labels_make(const char *const *target, size_t T, const char *const *source, size_t S, int max_cols);

// TS_OK when weights (T, S) can be drawn, else TS_ERR_SHAPE (empty, or too
// large to label) or TS_ERR_ARG (NULL), the message starting with `who`.
int ts_heatmap_check_matrix(const char *who, const double *weights, size_t T, size_t S);

// TS_OK when grid g can be drawn, else TS_ERR_ARG (no panels) or
// TS_ERR_SHAPE (empty, or too many panels or cells), the message starting with `who`.
int ts_heatmap_check_grid(const char *who, const ts_heatmap_grid *g);

#endif
