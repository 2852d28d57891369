// One figure per attention head of every layer, and each layer's head mean:
// eval --align's AER tables (of the search's output, of the reference
// force-decoded, read shifted), eval --explain's agreement tables, a run's
// heads.csv and its progress line. A model has ts_model_cross_heads layers
// and heads of them (one layer of one head for an attending GRU).
//
// The layout, (layers, heads + 1) with each layer's mean after its heads, is
// written only here: every such table, and every array of accumulators that
// fills one, indexes through ts_head_index.
#ifndef TS_INFER_HEAD_TABLE_H
#define TS_INFER_HEAD_TABLE_H

#include <stddef.h>

typedef struct {
    int layers, heads;
    double *cells;  // (layers, heads + 1): layer l's heads 0 .. heads - 1, then its head mean; NULL: no table
} ts_head_table;

// A zeroed table of `layers` layers of `heads` heads (and their means), owned
// by t (ts_head_table_free). TS_OK or TS_ERR_NOMEM (t zeroed).
int ts_head_table_init(ts_head_table *t, int layers, int heads);
void ts_head_table_free(ts_head_table *t);

// The cells of a table of `layers` layers of `heads` heads: heads and means.
size_t ts_head_cells(int layers, int heads);

// Where layer l's head k (k -1: the layer's head mean) is in a table of
// `heads` heads a layer.
size_t ts_head_index(int heads, int l, int k);

// Layer l's head k of t (k -1: the layer's head mean).
double ts_head_cell(const ts_head_table *t, int l, int k);

// The lowest figure of a single head of t (never a layer's mean; the first
// of equal ones, layer by layer): its layer and head in *layer and *head.
void ts_head_table_best(const ts_head_table *t, int *layer, int *head);

#endif
