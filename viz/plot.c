// The loss curve: train and dev loss per epoch as a standalone SVG chart.
//
// E = epochs; train, dev: (E) losses, epoch e + 1 at index e.
#include "viz/plot.h"

#include "tensor/status.h"

#include <math.h>
#include <stdio.h>

// Plot area inside a fixed 640 x 400 figure.
#define FIG_W 640.0
#define FIG_H 400.0
#define PLOT_L 72.0
#define PLOT_R 620.0
#define PLOT_T 44.0
#define PLOT_B 344.0

static const char *const train_colour = "#1f77b4", *const dev_colour = "#ff7f0e";

// The 1-2-5 step nearest above range / target_ticks.
static double nice_step(double range, int target_ticks) {
    double raw = range / target_ticks;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
}

typedef struct {
    double lo, hi, step;
} axis;

static double to_x(const axis *x, double v) {
    return PLOT_L + (v - x->lo) / (x->hi - x->lo) * (PLOT_R - PLOT_L);
}

static double to_y(const axis *y, double v) {
    return PLOT_B - (v - y->lo) / (y->hi - y->lo) * (PLOT_B - PLOT_T);
}

// One series as polylines broken at non-finite values, plus a dot per point
// (so a single epoch, or one between two NaNs, still shows).
static void series(FILE *out, const double *loss, size_t epochs, const axis *x,
                   const axis *y, const char *colour) {
    int open = 0;
    for (size_t e = 0; e < epochs; e++) {
        if (!isfinite(loss[e])) {
            if (open) fputs("\"/>\n", out);
            open = 0;
            continue;
        }
        if (!open)
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                    colour);
        fprintf(out, open ? " %.2f,%.2f" : "%.2f,%.2f", to_x(x, (double)(e + 1)),
                to_y(y, loss[e]));
        open = 1;
    }
    if (open) fputs("\"/>\n", out);
    for (size_t e = 0; e < epochs; e++)
        if (isfinite(loss[e]))
            fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n",
                    to_x(x, (double)(e + 1)), to_y(y, loss[e]), colour);
}

int ts_render_loss_svg(FILE *out, const double *train, const double *dev, size_t epochs,
                       const char *title) {
    if (!train && epochs > 0) return ts_fail(TS_ERR_ARG, "render loss: train is NULL");
    // y range over every finite value of both series.
    double lo = INFINITY, hi = -INFINITY;
    for (size_t e = 0; e < epochs; e++) {
        if (isfinite(train[e])) lo = fmin(lo, train[e]), hi = fmax(hi, train[e]);
        if (dev && isfinite(dev[e])) lo = fmin(lo, dev[e]), hi = fmax(hi, dev[e]);
    }
    int empty = !(lo <= hi);
    if (empty) lo = 0, hi = 1;
    if (hi - lo < 1e-12 * fmax(1.0, fabs(hi))) {  // one value: give it room
        double pad = fabs(hi) > 0 ? 0.1 * fabs(hi) : 1.0;
        lo -= pad;
        hi += pad;
    }
    axis y = {.step = nice_step(hi - lo, 5)};
    y.lo = floor(lo / y.step) * y.step;
    y.hi = ceil(hi / y.step) * y.step;
    int y_decimals = y.step >= 1 ? 0 : (int)ceil(-log10(y.step) - 1e-9);

    // x over epochs 1..E with a margin, so end points do not sit on the axis;
    // a single epoch sits in the middle.
    double x_pad = epochs > 1 ? fmax(0.5, 0.04 * (double)(epochs - 1)) : 0.5;
    axis x = {.lo = 1 - x_pad, .hi = (epochs > 1 ? (double)epochs : 1) + x_pad};
    x.step = fmax(1.0, round(nice_step(x.hi - x.lo, 8)));

    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Verdana, Arial, "
                 "sans-serif\" font-size=\"13\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            FIG_W, FIG_H, FIG_W, FIG_H);
    if (title) {
        fprintf(out, "<text x=\"%.1f\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" "
                     "font-weight=\"bold\">", (PLOT_L + PLOT_R) / 2);
        ts_render_xml_text(out, title);
        fputs("</text>\n", out);
    }

    // Grid lines and tick labels, then the axes on top.
    long y_ticks = lround((y.hi - y.lo) / y.step);
    for (long k = 0; k <= y_ticks; k++) {
        double v = y.lo + k * y.step;  // not a running sum: no drift
        double py = to_y(&y, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#e5e5e5\"/>\n"
                     "<text x=\"%.1f\" y=\"%.2f\" dy=\"0.35em\" text-anchor=\"end\">%.*f</text>\n",
                PLOT_L, py, PLOT_R, py, PLOT_L - 6, py, y_decimals, fabs(v) < y.step * 1e-9 ? 0.0 : v);
    }
    double last_tick = epochs > 1 ? (double)epochs : 1;  // no tick past the data
    for (double v = x.step; v <= last_tick + 1e-9; v += x.step) {  // small integers: exact
        double px = to_x(&x, v);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#444444\"/>\n"
                     "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
                px, PLOT_B, px, PLOT_B + 5, px, PLOT_B + 20, v);
    }
    fprintf(out, "<polyline fill=\"none\" stroke=\"#444444\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
            PLOT_L, PLOT_T, PLOT_L, PLOT_B, PLOT_R, PLOT_B);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n",
            (PLOT_L + PLOT_R) / 2, PLOT_B + 44);
    fprintf(out, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 20 %.1f)\">loss</text>\n",
            (PLOT_T + PLOT_B) / 2, (PLOT_T + PLOT_B) / 2);

    if (empty) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#888888\">"
                     "no finite loss values</text>\n",
                (PLOT_L + PLOT_R) / 2, (PLOT_T + PLOT_B) / 2);
    } else {
        series(out, train, epochs, &x, &y, train_colour);
        if (dev) series(out, dev, epochs, &x, &y, dev_colour);
    }

    // Legend in the top right corner of the plot.
    int entries = dev ? 2 : 1;
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"84\" height=\"%d\" fill=\"#ffffff\" "
                 "fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n",
            PLOT_R - 94, PLOT_T + 8, 8 + 20 * entries);
    for (int k = 0; k < entries; k++) {
        double ly = PLOT_T + 22 + 20 * k;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\">%s</text>\n",
                PLOT_R - 86, ly, PLOT_R - 62, ly, k ? dev_colour : train_colour, PLOT_R - 54, ly,
                k ? "dev" : "train");
    }
    fputs("</svg>\n", out);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render loss: write error") : TS_OK;
}

static int loss_writer(FILE *out, const ts_figure_args *a) {
    return ts_render_loss_svg(out, a->train, a->dev, a->epochs, a->text);
}

int ts_render_loss_svg_path(const char *path, const double *train, const double *dev,
                            size_t epochs, const char *title) {
    ts_figure_args a = {.train = train, .dev = dev, .epochs = epochs, .text = title};
    return ts_render_to_path(path, loss_writer, &a);
}
