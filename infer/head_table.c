// A table of one figure per head and layer mean (infer/head_table.h).
#include "infer/head_table.h"

#include "tensor/status.h"

#include <stdlib.h>
#include <string.h>

int ts_head_table_init(ts_head_table *t, int layers, int heads) {
    *t = (ts_head_table){.layers = layers, .heads = heads};
    size_t cells = ts_head_cells(layers, heads);
    if (!(t->cells = calloc(cells ? cells : 1, sizeof *t->cells))) {
        memset(t, 0, sizeof *t);
        return ts_fail(TS_ERR_NOMEM, "cannot allocate a table of %d layers of %d heads", layers, heads);
    }
    return TS_OK;
}

void ts_head_table_free(ts_head_table *t) {
    free(t->cells);
    memset(t, 0, sizeof *t);
}

size_t ts_head_cells(int layers, int heads) { return (size_t)layers * (size_t)(heads + 1); }

size_t ts_head_index(int heads, int l, int k) { return (size_t)l * (size_t)(heads + 1) + (size_t)(k < 0 ? heads : k); }

double ts_head_cell(const ts_head_table *t, int l, int k) { return t->cells[ts_head_index(t->heads, l, k)]; }

void ts_head_table_best(const ts_head_table *t, int *layer, int *head) {
    *layer = *head = 0;
    for (int l = 0; l < t->layers; l++)
        for (int k = 0; k < t->heads; k++)
            if (ts_head_cell(t, l, k) < ts_head_cell(t, *layer, *head)) {
                *layer = l;
                *head = k;
            }
}
