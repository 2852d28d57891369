// Guided alignment (Garg et al. 2019, "Jointly Learning to Align and
// Translate with Transformer Models"; Marian's --guided-alignment, OpenNMT-py's
// --lambda_align): the training loss gains
//
//     W * ( -sum_{b, t, s} G[b, t, s] log(A[b, t, s] + eps) ) / N
//
// where A (B, T, S) is one cross-attention head's weights in the batch's
// teacher-forced pass (the GRU's attention; a Transformer's head
// --guided-head of layer --guided-layer, by default head 0 of the
// penultimate layer as Garg et al.), G the gold links of each target unit
// normalised over its row (a row without links is all 0: skipped), N the
// batch's target tokens (the cross-entropy's divisor, as Marian's "ce" cost
// divides by the batch's words) and eps = TS_GUIDED_EPS (Marian's 1e-6: a
// weight of 0 on a gold link costs log(1e6) = 13.8, not infinity). It is
// composed from existing ops (add, log, mul, sum, scale), so its backward is
// theirs. docs/attention.md has the measurements behind the defaults.
//
// Subword pieces: a link (i, j) between words links every piece of target
// word j to every piece of source word i, each row then normalised.
//
// Legend: B batch, T target units + 1 (<eos>), S source units.
#ifndef TS_TRAIN_GUIDED_H
#define TS_TRAIN_GUIDED_H

#include "data/corpus.h"
#include "train/options.h"

#define TS_GUIDED_EPS 1e-6
// --guided-alignment's value naming the toy corpus's own gold links.
#define TS_GUIDED_TOY "toy"

// Completes o's guided-alignment options before anything is read or
// written: off (guided_alignment NULL) with a weight of 0; else the layer and
// head defaults (-1) resolved for o->model and every value checked. TS_OK,
// or TS_ERR_ARG naming the flag: a model without attention (--attn none), a
// layer or head the model does not have, "toy" with --corpus.
int ts_guided_resolve(ts_train_opts *o);

// The gold distribution (B, T, S) of a batch's sentences rows[0..B) of
// `units` (the corpus the model reads) into gold: row t of sentence b, the
// step that predicts its target unit t, holds 1/k on each of the k source
// units linked to it in `aligned` (the same rows with gold links: `units`
// itself, or its words when `units` holds subword pieces), 0 elsewhere (the
// <eos> row, unlinked units and padding). *rows_linked (may be NULL) gets
// the rows with a link. TS_OK or TS_ERR_NOMEM.
int ts_guided_gold(const ts_corpus *aligned, const ts_corpus *units, const size_t *rows, int B, int S, int T,
                    double *gold, long *rows_linked);

// A guided run's closing line on out: the command that measures the
// alignment it taught (eval --align's aer_forced=, the supervised head
// reading the reference: for a model of several heads, its cell of the
// force-decoded table), on a held-out toy set for "toy", else on the
// user's held-out pairs and links. Nothing for an unguided run.
void ts_guided_print_measure(FILE *out, const ts_train_opts *o, const ts_model_config *cfg);

// The loss term of weights (B, T, S) (each row a softmax) against gold
// (B, T, S): -scale * sum gold * log(weights + TS_GUIDED_EPS), a scalar (1)
// on the tape. NULL on failure (ctx->status).
ts_tensor *ts_guided_loss(ts_ctx *ctx, ts_tensor *weights, const double *gold, double scale);

#endif
