// The train/dev loss curve as a standalone SVG chart. Errors as in
// viz/render.h.
#ifndef TS_PLOT_H
#define TS_PLOT_H

#include "viz/render.h"

// ---- loss curve ------------------------------------------------------------

// The training loss as a curve over optimizer steps, and the dev loss
// measured at some of those steps, as points.
typedef struct {
    const double *train_step, *train_loss;  // (n_train)
    size_t n_train;
    const double *dev_step, *dev_loss;      // (n_dev)
    size_t n_dev;
} ts_loss_curves;

// An SVG line chart with axes "step" and "loss": the training curve, the dev
// points joined by a dashed line, round tick labels (1-2-5 steps), a legend
// and `title` (NULL for none). Points with a non-finite value are skipped
// (the line breaks there); one point is drawn as a dot; no finite value at
// all gives empty axes saying so. Arrays may be NULL when their count is 0.
int ts_render_loss_svg(FILE *out, const ts_loss_curves *c, const char *title);
int ts_render_loss_svg_path(const char *path, const ts_loss_curves *c, const char *title);

#endif
