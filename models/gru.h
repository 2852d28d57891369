// The GRU: PyTorch's nn.GRU cell (docs/models.md), gates r, z, n; its row
// of the cell table (models/cell.h). The cell itself, forward and backward,
// is the fused op ts_gru_cell in autograd/ops_gru.c; its state is h alone.
#ifndef TS_MODELS_GRU_H
#define TS_MODELS_GRU_H

#include "models/cell.h"

// The cell table's row for the GRU (models/cells.c).
extern const ts_cell_kind ts_gru_cell_kind;

#endif
