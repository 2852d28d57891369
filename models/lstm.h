// The LSTM: PyTorch's nn.LSTM cell (docs/models.md), gates i, f, g, o; its
// row of the cell table (models/cell.h). Its state has two parts, h and the
// memory c, (2B, H) = [h; c]; the cell itself, forward and backward, is the
// fused op ts_lstm_cell in autograd/ops_lstm.c.
#ifndef TS_MODELS_LSTM_H
#define TS_MODELS_LSTM_H

#include "models/cell.h"

// The cell table's row for the LSTM (models/cells.c).
extern const ts_cell_kind ts_lstm_cell_kind;

#endif
