// The train/dev loss curve as a standalone SVG chart. Errors as in
// viz/render.h.
#ifndef TS_PLOT_H
#define TS_PLOT_H

#include "viz/render.h"

// ---- loss curve ------------------------------------------------------------

// An SVG line chart of loss per epoch (epochs numbered from 1): `train` and
// optionally `dev` (NULL for none), each `epochs` long, with axes "epoch" and
// "loss", tick labels, a legend and `title` (NULL for none). Non-finite
// values are skipped (the line breaks there); one epoch is drawn as a dot;
// no finite value at all gives empty axes saying so.
int ts_render_loss_svg(FILE *out, const double *train, const double *dev, size_t epochs,
                       const char *title);
int ts_render_loss_svg_path(const char *path, const double *train, const double *dev,
                            size_t epochs, const char *title);

#endif
