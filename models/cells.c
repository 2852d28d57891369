// The table of recurrent cells (models/cell.h): one row per ts_cell_type,
// each defined beside its step in its own file. The rows' headers build on
// models/cell.h, so the table lives here, above them, and cell.c, which
// runs a row, below them.
#include "models/cell.h"

#include "models/gru.h"
#include "models/lstm.h"

static const ts_cell_kind *const kinds[] = {
    [TS_CELL_GRU] = &ts_gru_cell_kind,
    [TS_CELL_LSTM] = &ts_lstm_cell_kind,
};
_Static_assert(sizeof kinds / sizeof kinds[0] == TS_CELL_COUNT, "one row per cell");

const ts_cell_kind *ts_cell_kind_of(ts_cell_type type) { return kinds[type]; }
