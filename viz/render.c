// Shared pieces of the renderers (colour ramp, escaping, terminal mode
// detection and width, a line wrapped to it, writing to a path) and the
// JSON writer. The
// heatmaps live in heatmap_term.c and heatmap_svg.c, the loss curve in plot.c; all build on this
// file, never the other way round.
//
// T = target length (rows), S = source length (columns); weights (T, S).
#include "viz/render.h"

#include "tensor/atomic_write.h"
#include "tensor/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <unistr.h>
#include <uniwidth.h>

// ---- colour ----------------------------------------------------------------

// viridis at 0, 1/8, ..., 1 (matplotlib's map, sampled as R's viridis(9)):
// perceptually uniform and readable in greyscale and by colour-blind readers.
static const uint8_t viridis[9][3] = {
    {0x44, 0x01, 0x54}, {0x47, 0x2d, 0x7b}, {0x3b, 0x52, 0x8b},
    {0x2c, 0x72, 0x8e}, {0x21, 0x90, 0x8c}, {0x27, 0xad, 0x81},
    {0x5d, 0xc8, 0x63}, {0xaa, 0xdc, 0x32}, {0xfd, 0xe7, 0x25},
};

void ts_render_colour(double w, uint8_t rgb[3]) {
    if (isnan(w)) {
        rgb[0] = rgb[1] = rgb[2] = 0xc8;
        return;
    }
    if (w < 0.0) w = 0.0;
    if (w > 1.0) w = 1.0;
    double x = w * 8.0;
    int k = (int)x;
    if (k > 7) k = 7;
    double f = x - k;
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)lround(viridis[k][c] + f * (viridis[k + 1][c] - viridis[k][c]));
}

static double linear_channel(uint8_t v) {
    double c = v / 255.0;
    return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

int ts_render_dark_text_on(const uint8_t rgb[3]) {
    double lum = 0.2126 * linear_channel(rgb[0]) + 0.7152 * linear_channel(rgb[1]) +
                 0.0722 * linear_channel(rgb[2]);
    // Contrast with black (lum + 0.05) / 0.05 beats contrast with white
    // 1.05 / (lum + 0.05) exactly when lum > ~0.179.
    return (lum + 0.05) * (lum + 0.05) > 1.05 * 0.05;
}

// ---- escaping --------------------------------------------------------------

static void put_fffd(FILE *out) { fputs("\xef\xbf\xbd", out); }

void ts_render_xml_text(FILE *out, const char *s) {
    const uint8_t *p = (const uint8_t *)s;
    size_t left = strlen(s);
    while (left > 0) {
        ucs4_t uc;
        int len = u8_mbtouc(&uc, p, left);
        int bad = (uc == 0xfffd && !(len == 3 && p[0] == 0xef)) ||  // invalid UTF-8
                  (uc < 0x20 && uc != '\t' && uc != '\n' && uc != '\r') ||
                  uc == 0xfffe || uc == 0xffff;
        if (bad) put_fffd(out);
        else if (uc == '&') fputs("&amp;", out);
        else if (uc == '<') fputs("&lt;", out);
        else if (uc == '>') fputs("&gt;", out);
        else if (uc == '"') fputs("&quot;", out);
        else if (uc == '\'') fputs("&apos;", out);
        else fwrite(p, 1, (size_t)len, out);
        p += len;
        left -= (size_t)len;
    }
}

void ts_render_json_string(FILE *out, const char *s) {
    const uint8_t *p = (const uint8_t *)s;
    size_t left = strlen(s);
    fputc('"', out);
    while (left > 0) {
        ucs4_t uc;
        int len = u8_mbtouc(&uc, p, left);
        if (uc == 0xfffd && !(len == 3 && p[0] == 0xef)) fputs("\\ufffd", out);
        else if (uc == '"') fputs("\\\"", out);
        else if (uc == '\\') fputs("\\\\", out);
        else if (uc < 0x20 || uc == '<' || uc == '>' || uc == '&') fprintf(out, "\\u%04x", (unsigned)uc);
        else fwrite(p, 1, (size_t)len, out);
        p += len;
        left -= (size_t)len;
    }
    fputc('"', out);
}

// ---- terminal mode ---------------------------------------------------------

enum ts_term_mode ts_term_mode_choose(int is_tty, const char *no_color,
                                      const char *colorterm, const char *term) {
    if (!is_tty) return TS_TERM_PLAIN;
    if (term && strcmp(term, "dumb") == 0) return TS_TERM_PLAIN;
    if (no_color && no_color[0] != '\0') return TS_TERM_SHADE;  // no-color.org
    if (colorterm && (strcmp(colorterm, "truecolor") == 0 || strcmp(colorterm, "24bit") == 0))
        return TS_TERM_TRUECOLOR;
    if (term && strstr(term, "256color")) return TS_TERM_256;
    return TS_TERM_SHADE;
}

enum ts_term_mode ts_term_mode_detect(FILE *f) {
    return ts_term_mode_choose(isatty(fileno(f)), getenv("NO_COLOR"), getenv("COLORTERM"),
                               getenv("TERM"));
}

int ts_term_width(FILE *f) {
    struct winsize ws;
    if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    long n = columns ? strtol(columns, NULL, 10) : 0;
    return n > 0 && n < 10000 ? (int)n : 0;
}

void ts_term_put_wrapped(FILE *out, const char *text, int width, int indent) {
    const uint8_t *line = (const uint8_t *)text;
    if (width - indent < 20) width = 0;
    for (int room = width; width; room = width - indent) {
        // Walk to the first character past the edge, noting where to break.
        const uint8_t *p = line, *space = NULL, *comma = NULL;
        size_t left = strlen((const char *)line);
        int cols = 0;
        while (left > 0) {
            ucs4_t uc;
            int len = u8_mbtouc(&uc, p, left), w = uc_width(uc, "UTF-8");
            if (uc == ' ' && p > line) {
                space = p;
                if ((p[-1] == ',' || p[-1] == ';') && 2 * cols >= room) comma = p;
            }
            if (cols + (w > 0 ? w : 0) > room) break;
            cols += w > 0 ? w : 0;
            p += len;
            left -= (size_t)len;
        }
        if (left == 0) break;  // the rest fits
        const uint8_t *cut = comma ? comma : space ? space : p;  // p > line: room holds a character
        fwrite(line, 1, (size_t)(cut - line), out);
        fprintf(out, "\n%*s", indent, "");
        for (line = cut; *line == ' ';) line++;
    }
    fputs((const char *)line, out);
    fputc('\n', out);
}

// ---- JSON ------------------------------------------------------------------

static void json_labels(FILE *out, const char *const *labels, size_t n) {
    fputc('[', out);
    for (size_t k = 0; k < n; k++) {
        if (k > 0) fputs(", ", out);
        if (labels) {
            ts_render_json_string(out, labels[k]);
        } else {
            fprintf(out, "\"%zu\"", k);
        }
    }
    fputc(']', out);
}

// One JSON number (JSON has no NaN or Infinity: null).
static void json_number(FILE *out, double w) {
    if (isfinite(w)) fprintf(out, "%.17g", w);
    else fputs("null", out);
}

// Matrix (R, C) as [[...], ...]; rows after the first start on a new line at `indent`.
static void json_vector(FILE *out, const double *w, size_t C) {
    fputc('[', out);
    for (size_t i = 0; i < C; i++) {
        if (i > 0) fputs(", ", out);
        json_number(out, w[i]);
    }
    fputc(']', out);
}

static void json_matrix(FILE *out, const double *w, size_t R, size_t C, const char *indent) {
    fputc('[', out);
    for (size_t j = 0; j < R; j++) {
        if (j > 0) fprintf(out, ",\n%s", indent);
        json_vector(out, w + j * C, C);
    }
    fputc(']', out);
}

// n matrices (R, C) back to back as [m0, m1, ...].
static void json_matrices(FILE *out, const double *w, size_t n, size_t R, size_t C) {
    fputc('[', out);
    for (size_t k = 0; k < n; k++) {
        fputs(k ? ",\n   " : "", out);
        json_matrix(out, w + k * R * C, R, C, "    ");
    }
    fputc(']', out);
}

int ts_render_attention_json_heads(FILE *out, const double *weights, size_t T, size_t S,
                                   const char *const *target, const char *const *source,
                                   const char *attention, const ts_json_heads *heads) {
    if (!weights && T > 0 && S > 0) return ts_fail(TS_ERR_ARG, "render json: weights is NULL");
    for (size_t v = 0; heads && v < heads->n_views; v++) {
        const ts_json_head_view *view = &heads->views[v];
        if (view->R > 0 && view->C > 0 && (!view->heads || !view->mean))
            return ts_fail(TS_ERR_ARG, "render json: view %zu has no weights", v);
    }
    fputs("{\"source\": ", out);
    json_labels(out, source, S);
    fputs(",\n \"target\": ", out);
    json_labels(out, target, T);
    fputs(",\n \"weights\": ", out);
    json_matrix(out, weights, T, S, "  ");
    fputs(",\n \"attention\": ", out);
    if (attention) ts_render_json_string(out, attention);
    else fputs("null", out);
    if (heads && heads->layers) {
        fprintf(out, ",\n \"layers\": %zu, \"heads\": %zu", heads->layers, heads->heads);
        for (size_t v = 0; v < heads->n_views; v++) {
            const ts_json_head_view *view = &heads->views[v];
            size_t cells = view->R * view->C;
            fputs(",\n ", out);
            ts_render_json_string(out, view->name);
            fputs(": {\"rows\": ", out);
            ts_render_json_string(out, view->rows);
            fputs(", \"cols\": ", out);
            ts_render_json_string(out, view->cols);
            fputs(",\n  \"heads\": [", out);
            for (size_t l = 0; l < heads->layers; l++) {
                fputs(l ? ",\n  " : "", out);
                json_matrices(out, view->heads + l * heads->heads * cells, heads->heads, view->R, view->C);
            }
            fputs("],\n  \"mean\": ", out);
            json_matrices(out, view->mean, heads->layers, view->R, view->C);
            fputc('}', out);
        }
    }
    if (heads && heads->explain) {
        fputs(",\n \"explain\": ", out);
        ts_render_json_string(out, heads->explain);
        if (heads->ig_steps) fprintf(out, ", \"ig_steps\": %d", heads->ig_steps);
        fputs(",\n \"raw\": ", out);
        json_matrix(out, heads->raw, T, S, "  ");
        if (heads->log_prob) {
            fputs(",\n \"log_prob\": ", out);
            json_vector(out, heads->log_prob, T);
        }
        if (heads->baseline_log_prob) {
            fputs(",\n \"baseline_log_prob\": ", out);
            json_vector(out, heads->baseline_log_prob, T);
        }
    }
    if (heads && heads->reading) {
        fputs(",\n \"reading\": ", out);
        ts_render_json_string(out, heads->reading);
    }
    if (heads && heads->units) {
        fputs(",\n \"units\": ", out);
        ts_render_json_string(out, heads->units);
    }
    fputs("}\n", out);
    return ferror(out) ? ts_fail(TS_ERR_IO, "render json: write error") : TS_OK;
}

int ts_render_attention_json(FILE *out, const double *weights, size_t T, size_t S,
                             const char *const *target, const char *const *source,
                             const char *attention) {
    return ts_render_attention_json_heads(out, weights, T, S, target, source, attention, NULL);
}

// ---- writing to a path -----------------------------------------------------

struct figure {
    ts_figure_writer write;
    const ts_figure_args *args;
};

static int fill_figure(void *ctx, FILE *out) {
    const struct figure *fig = ctx;
    return fig->write(out, fig->args);
}

int ts_render_to_path(const char *path, ts_figure_writer write, const ts_figure_args *a) {
    struct figure fig = {write, a};
    return ts_write_atomic(path, fill_figure, &fig, NULL);
}

static int json_writer(FILE *out, const ts_figure_args *a) {
    return ts_render_attention_json_heads(out, a->weights, a->T, a->S, a->target, a->source,
                                          a->text, a->more);
}

int ts_render_attention_json_path(const char *path, const double *weights, size_t T,
                                  size_t S, const char *const *target,
                                  const char *const *source, const char *attention) {
    return ts_render_attention_json_heads_path(path, weights, T, S, target, source, attention, NULL);
}

int ts_render_attention_json_heads_path(const char *path, const double *weights, size_t T,
                                        size_t S, const char *const *target,
                                        const char *const *source, const char *attention,
                                        const ts_json_heads *heads) {
    ts_figure_args a = {.weights = weights, .T = T, .S = S, .target = target, .source = source,
                        .text = attention, .more = heads};
    return ts_render_to_path(path, json_writer, &a);
}
