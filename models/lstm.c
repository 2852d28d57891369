// The LSTM's row of the cell table (models/lstm.h). Forward only: each step
// records ts_lstm_cell on the tape, whose backward is in autograd/ops_lstm.c.
#include "models/lstm.h"

#include "autograd/ops.h"

const ts_cell_kind ts_lstm_cell_kind = {
    .name = "lstm",
    .described = "lstm cells",
    .gates = 4,  // [i f g o]
    .parts = 2,  // [h; c]
    .step = ts_lstm_cell,
};
