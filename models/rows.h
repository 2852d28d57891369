// What every architecture's decoding steps and reorders share (the model
// interface, models/model.h, describes the state rules they serve): the rows
// of a state a reorder keeps, the source row each run of rows reads, and the
// token a row of logits picks. Below the rows of the model table, which use
// them, and the table itself.
#ifndef TS_MODELS_ROWS_H
#define TS_MODELS_ROWS_H

#include "autograd/graph.h"

// For reorder: a copy (n, ...) of t's rows rows[0..n), in ctx's arena, with
// no gradient; NULL for a NULL t (an optional part of a state).
ts_tensor *ts_rows_select(ts_ctx *ctx, const ts_tensor *t, const int *rows, int n);

// For reorder with group g >= 1: the source row each run of g rows of
// rows[0..n) reads, of a state whose rows read theirs in runs of per_source
// (row r reads source row r / per_source), in a new (n / g) array in ctx's
// arena; NULL (ctx failed) when g does not divide n or a run's rows decode
// different sentences.
int *ts_reorder_sources(ts_ctx *ctx, const int *rows, int n, int group, int per_source);

// The most likely token the model may emit from logits row[0..n): never
// <pad> or <sos>, which no target contains (first index wins ties).
int ts_argmax_token(const double *row, int n);

// The same for row r of logits (R, V) of either dtype, read as they are.
int ts_argmax_token_row(const ts_tensor *logits, int r);

#endif
