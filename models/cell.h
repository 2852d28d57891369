// The recurrent cell of the GRU architecture's encoder and decoder: one
// table row per cell (models/cells.c, one row per ts_cell_type, like the
// attention table), each defined in its own file (models/gru.c, ...), and
// the layer written once against a row: its parameters in torch's layout
// and names, its state, one step, and the run over a masked sequence.
// encoder.c and decoder.c ask the row; neither knows which cell runs.
//
// Parameters (torch's nn.GRU / nn.LSTM for the encoder, whose names end in
// "_l0" and "_l0_reverse"; nn.GRUCell / nn.LSTMCell for the decoder):
// "<layer>.<cell name>.weight_ih<suffix>" (G, I), weight_hh (G, H), bias_ih
// (G) and bias_hh (G), G = gates H, the gates' blocks stacked in torch's
// order.
//
// A state is one tensor of `parts` blocks of B rows, (P B, H): part 0 is h,
// what attention, the bridge and the output projection read
// (ts_cell_output); further parts are the cell's own (an LSTM's memory c).
// A state of one part is h itself. Every part's rows follow the sentences
// (or hypotheses), so reordering a state reorders each part alike.
//
// Legend: S sequence length, B batch rows, I input width, H hidden, G =
// gates H, P parts.
#ifndef TS_MODELS_CELL_H
#define TS_MODELS_CELL_H

#include "models/config.h"

enum { TS_CELL_MAX_PARTS = 4 };  // a row's parts at most

// One row of the cell table.
typedef struct {
    const char *name;       // flags, checkpoints and parameter names: "gru" ("encoder.gru.weight_ih_l0")
    const char *described;  // what a model's description adds ("lstm cells"); NULL: nothing (the GRU,
                            // the one cell of the models described before cells were rows)
    int gates;              // the blocks of H rows stacked in weight_ih, weight_hh and the biases
    int parts;              // the blocks of B rows in a state (1 to TS_CELL_MAX_PARTS); part 0 is h
    ts_tensor *(*step)(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *state, ts_tensor *w_hh, ts_tensor *b_hh,
                       const double *mask);
                            // the state (P B, H) after one step from gates_x = x W_ih^T + b_ih (B, G)
                            // and state (P B, H), with w_hh (G, H), b_hh (G), on the tape; rows b
                            // with mask[b] == 0 (B, copied; NULL: none) keep every part as it was
} ts_cell_kind;

// The row of type (which must be in range).
const ts_cell_kind *ts_cell_kind_of(ts_cell_type type);

// "gru"; "?" out of range.
const char *ts_cell_name(int type);

// A layer's cell: its row and its parameters.
typedef struct {
    const ts_cell_kind *kind;
    ts_tensor *weight_ih, *weight_hh, *bias_ih, *bias_hh;  // (G, I), (G, H), (G), (G)
} ts_cell;

// Declares cell's four parameters for a cell of type in torch's order and
// names ("<layer>.<name>.weight_ih<suffix>", ...), all U(-1/sqrt(H),
// 1/sqrt(H)) as torch initialises them, into out[0..4). Returns 4.
int ts_cell_specs(ts_cell *cell, ts_cell_type type, const char *layer, const char *suffix, int I, int H,
                  ts_param_spec *out);

// H, the cell's hidden size.
int ts_cell_hidden(const ts_cell *cell);

// A (rows, H) tensor of zeros with no gradient (a state of zeros has P B rows).
ts_tensor *ts_cell_zeros(ts_ctx *ctx, int rows, int H);

// h (B, H), part 0 of state (P B, H): the state itself for one part, else a
// view of its first rows. NULL for a NULL state.
ts_tensor *ts_cell_output(ts_ctx *ctx, const ts_cell *cell, ts_tensor *state);

// The state (P B, H) whose h is h (B, H) and whose other parts are zero
// (a bridge's initial state); h itself for one part.
ts_tensor *ts_cell_state_of(ts_ctx *ctx, const ts_cell *cell, ts_tensor *h);

// One step of the row's cell with the layer's W_hh and b_hh (the row's step).
ts_tensor *ts_cell_step(ts_ctx *ctx, const ts_cell *cell, ts_tensor *gates_x, ts_tensor *state, const double *mask);

// For reorder: a copy (P n, H) of state (P B, H) whose row k of every part
// is row rows[k] of that part, in ctx's arena, with no gradient; NULL for a
// NULL state.
ts_tensor *ts_cell_rows_select(ts_ctx *ctx, const ts_cell *cell, const ts_tensor *state, const int *rows, int n);

// Runs cell over x (S*B, I), time-major, from a state of zeros, back to
// front when reverse; mask_tb (S, B) holds each row's state where it is 0
// (past a sentence's end). Returns the outputs h (S*B, H) in time order and
// *final, the last state (P B, H); NULL (and *final NULL) on failure,
// ctx->status says why.
ts_tensor *ts_cell_run(ts_ctx *ctx, const ts_cell *cell, ts_tensor *x, int S, int B, const double *mask_tb,
                       int reverse, ts_tensor **final);

#endif
