// The GRU's row of the cell table (models/gru.h). Forward only: each step
// records ts_gru_cell on the tape, whose backward is in autograd/ops_gru.c.
#include "models/gru.h"

#include "autograd/ops.h"

const ts_cell_kind ts_gru_cell_kind = {
    .name = "gru",
    .gates = 3,  // [r z n]
    .parts = 1,  // h
    .step = ts_gru_cell,
};
