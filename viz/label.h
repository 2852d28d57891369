// A word made safe to show in a figure: invalid UTF-8 and control
// characters become '?', and it is cut to a number of terminal columns with
// "…" (viz/heatmap.c's row and column labels, grid titles).
#ifndef TS_VIZ_LABEL_H
#define TS_VIZ_LABEL_H

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

#endif
