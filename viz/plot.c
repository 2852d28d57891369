// The loss curve: the training loss over the steps and the dev loss at the
// steps it was measured, as a standalone SVG chart.
//
// N = training points, M = dev points; each series is (step, loss) pairs.
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

// The decimals a tick label needs at this step (0.5 -> 1, 0.25 never occurs).
static int decimals(const axis *a) { return a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9); }

// An axis over [lo, hi] with ticks at round values (multiples of a 1-2-5
// step) and its ends on ticks.
static axis round_axis(double lo, double hi, int target_ticks) {
    if (hi - lo < 1e-12 * fmax(1.0, fabs(hi))) {  // one value: give it room
        double pad = fabs(hi) > 0 ? 0.1 * fabs(hi) : 1.0;
        lo -= pad;
        hi += pad;
    }
    axis a = {.step = nice_step(hi - lo, target_ticks)};
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    return a;
}

static double to_x(const axis *x, double v) { return PLOT_L + (v - x->lo) / (x->hi - x->lo) * (PLOT_R - PLOT_L); }
static double to_y(const axis *y, double v) { return PLOT_B - (v - y->lo) / (y->hi - y->lo) * (PLOT_B - PLOT_T); }

static int finite_point(const double *x, const double *y, size_t k) { return isfinite(x[k]) && isfinite(y[k]); }

// One series as polylines broken at non-finite points (dashed when `dash`),
// plus a dot per point when `dots` or when a point stands alone.
static void series(FILE *out, const double *xs, const double *ys, size_t n, const axis *x, const axis *y,
                   const char *colour, int dots, int dash) {
    int open = 0;
    for (size_t k = 0; k < n; k++) {
        if (!finite_point(xs, ys, k)) {
            if (open) fputs("\"/>\n", out);
            open = 0;
            continue;
        }
        if (!open)
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
                    dash ? " stroke-dasharray=\"5 4\"" : "");
        fprintf(out, open ? " %.2f,%.2f" : "%.2f,%.2f", to_x(x, xs[k]), to_y(y, ys[k]));
        open = 1;
    }
    if (open) fputs("\"/>\n", out);
    for (size_t k = 0; k < n; k++) {
        int alone = (k == 0 || !finite_point(xs, ys, k - 1)) && (k + 1 == n || !finite_point(xs, ys, k + 1));
        if (finite_point(xs, ys, k) && (dots || alone))
            fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%d\" fill=\"%s\"/>\n", to_x(x, xs[k]), to_y(y, ys[k]),
                    dots ? 4 : 3, colour);
    }
}

// Widens [*lo, *hi] to the finite values of a series.
static void extent(const double *xs, const double *ys, size_t n, double *xhi, double *lo, double *hi) {
    for (size_t k = 0; k < n; k++)
        if (finite_point(xs, ys, k)) {
            *lo = fmin(*lo, ys[k]);
            *hi = fmax(*hi, ys[k]);
            *xhi = fmax(*xhi, xs[k]);
        }
}

int ts_render_loss_svg(FILE *out, const ts_loss_curves *c, const char *title) {
    if ((!c->train_step || !c->train_loss) && c->n_train > 0) return ts_fail(TS_ERR_ARG, "render loss: train is NULL");
    if ((!c->dev_step || !c->dev_loss) && c->n_dev > 0) return ts_fail(TS_ERR_ARG, "render loss: dev is NULL");
    double lo = INFINITY, hi = -INFINITY, last_step = 0;
    extent(c->train_step, c->train_loss, c->n_train, &last_step, &lo, &hi);
    extent(c->dev_step, c->dev_loss, c->n_dev, &last_step, &lo, &hi);
    int empty = !(lo <= hi);
    if (empty) lo = 0, hi = 1;
    axis y = round_axis(lo, hi, 5), x = round_axis(0, last_step > 0 ? last_step : 1, 6);
    x.lo = 0;

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

    // Grid lines and tick labels (k * step, not a running sum: no drift),
    // then the axes on top.
    for (long k = 0, n = lround((y.hi - y.lo) / y.step); k <= n; k++) {
        double v = y.lo + k * y.step, py = to_y(&y, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#e5e5e5\"/>\n"
                     "<text x=\"%.1f\" y=\"%.2f\" dy=\"0.35em\" text-anchor=\"end\">%.*f</text>\n",
                PLOT_L, py, PLOT_R, py, PLOT_L - 6, py, decimals(&y), fabs(v) < y.step * 1e-9 ? 0.0 : v);
    }
    for (long k = 0, n = lround((x.hi - x.lo) / x.step); k <= n; k++) {
        double v = x.lo + k * x.step, px = to_x(&x, v);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#444444\"/>\n"
                     "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
                px, PLOT_B, px, PLOT_B + 5, px, PLOT_B + 20, decimals(&x), v);
    }
    fprintf(out, "<polyline fill=\"none\" stroke=\"#444444\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
            PLOT_L, PLOT_T, PLOT_L, PLOT_B, PLOT_R, PLOT_B);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", (PLOT_L + PLOT_R) / 2, PLOT_B + 44);
    fprintf(out, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 20 %.1f)\">loss</text>\n",
            (PLOT_T + PLOT_B) / 2, (PLOT_T + PLOT_B) / 2);

    if (empty) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#888888\">"
                     "no finite loss values</text>\n",
                (PLOT_L + PLOT_R) / 2, (PLOT_T + PLOT_B) / 2);
    } else {
        series(out, c->train_step, c->train_loss, c->n_train, &x, &y, train_colour, 0, 0);
        series(out, c->dev_step, c->dev_loss, c->n_dev, &x, &y, dev_colour, 1, 1);
    }

    // Legend in the top right corner of the plot.
    static const char *const names[2] = {"training", "dev"};
    int entries = c->n_dev ? 2 : 1;
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"104\" height=\"%d\" fill=\"#ffffff\" "
                 "fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n",
            PLOT_R - 114, PLOT_T + 8, 8 + 20 * entries);
    for (int k = 0; k < entries; k++) {
        double ly = PLOT_T + 22 + 20 * k;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"2\"%s/>\n<text x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\">%s</text>\n",
                PLOT_R - 106, ly, PLOT_R - 82, ly, k ? dev_colour : train_colour,
                k ? " stroke-dasharray=\"5 4\"" : "", PLOT_R - 74, ly, names[k]);
    }
    fputs("</svg>\n", out);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render loss: write error") : TS_OK;
}

static int loss_writer(FILE *out, const ts_figure_args *a) { return ts_render_loss_svg(out, a->curves, a->text); }

int ts_render_loss_svg_path(const char *path, const ts_loss_curves *c, const char *title) {
    ts_figure_args a = {.curves = c, .text = title};
    return ts_render_to_path(path, loss_writer, &a);
}
