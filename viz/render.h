// Pictures of attention and training, and what they share. This header: the
// terminal mode and width, a line wrapped to it, attention as JSON (Pharaoh lines: data/align.h), writing a
// figure to a path, and the building blocks (colour ramp, escaping). On top
// of it, one direction only: viz/heatmap.h (attention heatmaps for the
// terminal and as SVG) and viz/plot.h (the train/dev loss curve as SVG).
// Inputs are plain arrays.
//
// T = target length (rows), S = source length (columns)
// weights: (T, S) row-major doubles in [0, 1]; row j is target position j.
// target: T labels (target tokens incl. <eos>), source: S labels (source tokens
// incl. <eos>), UTF-8. Either label array may be NULL: positions are then
// labelled by their index. Labels are never trusted: invalid UTF-8 and control
// characters are replaced in every output, so a token cannot break the XML or
// JSON or send escape sequences to a terminal.
//
// Every writer returns TS_OK, TS_ERR_ARG / TS_ERR_SHAPE for bad arguments
// (nothing written), TS_ERR_IO when the stream reports a write error.
// Writers to a FILE * do not close or flush it. The *_path variants write
// through ts_write_atomic (tensor/atomic_write.h), so a failed write never
// leaves a truncated figure behind; on error they return TS_ERR_IO naming the path
// and strerror (ENOENT, ENOSPC, EFBIG...), with the temporary file removed.
#ifndef TS_RENDER_H
#define TS_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// ---- terminal mode ----------------------------------------------------------

enum ts_term_mode {
    TS_TERM_PLAIN,      // a text table of weights, for files and pipes
    TS_TERM_SHADE,      // shade characters " ░▒▓█", no colour
    TS_TERM_256,        // xterm 256-colour background cells
    TS_TERM_TRUECOLOR,  // 24-bit background cells
};

// The mode for a stream, decided from its parts (pure, for tests):
// not a tty -> PLAIN; TERM "dumb" -> PLAIN; NO_COLOR set and non-empty ->
// SHADE; COLORTERM "truecolor" or "24bit" -> TRUECOLOR; TERM containing
// "256color" -> 256; otherwise SHADE. NULL means the variable is unset.
enum ts_term_mode ts_term_mode_choose(int is_tty, const char *no_color,
                                      const char *colorterm, const char *term);

// ts_term_mode_choose for `f` with isatty(fileno(f)) and the environment.
enum ts_term_mode ts_term_mode_detect(FILE *f);

// The columns of the terminal `f` writes to, else $COLUMNS (a pipe into a
// pager of known width), else 0: unknown.
int ts_term_width(FILE *f);

// Writes `text` (one line) and a newline on out, in lines of at most
// `width` terminal columns (those of its UTF-8 characters; 0: as it is):
// each broken after the last ", " or "; " in its second half, else at the
// last space, else at the edge; the lines after the first start with
// `indent` spaces. A width that leaves fewer than 20 columns after the
// indent writes the text as it is.
void ts_term_put_wrapped(FILE *out, const char *text, int width, int indent);

// ---- JSON ------------------------------------------------------------------

// {"source": [...], "target": [...], "weights": [[...], ...], "attention": "..."}
// Strings escaped by ts_render_json_string (below),
// numbers printed with %.17g so they read back bit for bit, non-finite
// numbers as null, `attention` NULL as null. T or S may be 0.
int ts_render_attention_json(FILE *out, const double *weights, size_t T, size_t S,
                             const char *const *target, const char *const *source,
                             const char *attention);
int ts_render_attention_json_path(const char *path, const double *weights, size_t T,
                                  size_t S, const char *const *target,
                                  const char *const *source, const char *attention);

// Every head of a Transformer beside the one matrix `weights`: layers x
// heads matrices of each attention ("view"), and each layer's head mean.
typedef struct {
    const char *name;         // its key: "cross", "enc", "dec"
    const char *rows, *cols;  // what its rows and columns are: "target" or "source"
    size_t R, C;
    const double *heads;      // (layers, heads, R, C)
    const double *mean;       // (layers, R, C)
} ts_json_head_view;

typedef struct {
    size_t layers, heads;  // 0 layers: no heads (a GRU's JSON with attributions or a reading)
    const ts_json_head_view *views;
    size_t n_views;
    // Attributions (attend --explain, docs/attention.md): weights are then
    // their rows normalised as attention's.
    const char *explain;               // "grad", "ig", or NULL: none
    int ig_steps;                      // ig: the quadrature's points
    const double *raw;                 // (T, S) the attributions as computed
    const double *log_prob;            // (T) ig: log p of each output step, or NULL
    const double *baseline_log_prob;   // (T) ig: the same at the baseline, or NULL
    const char *reading;               // "shift-att" when weights are read shifted, or NULL
    const char *units;                 // a subword model's labels: "pieces", or "words" (its pieces merged);
                                       // NULL: a word model's (no key)
} ts_json_heads;

// ts_render_attention_json's object with, after "attention", "layers": L,
// "heads": H and one key per view: {"rows": "target", "cols": "source",
// "heads": [layer][head][row][col], "mean": [layer][row][col]}, numbers as
// there; then, when set, "explain": "grad", "ig_steps": N, "raw": [row][col],
// "log_prob": [row], "baseline_log_prob": [row], "reading": "shift-att" and
// "units": "pieces" or "words".
// heads NULL writes exactly ts_render_attention_json's bytes.
int ts_render_attention_json_heads(FILE *out, const double *weights, size_t T, size_t S,
                                   const char *const *target, const char *const *source,
                                   const char *attention, const ts_json_heads *heads);
int ts_render_attention_json_heads_path(const char *path, const double *weights, size_t T,
                                        size_t S, const char *const *target,
                                        const char *const *source, const char *attention,
                                        const ts_json_heads *heads);

// ---- writing a figure to a path ----------------------------------------------

// What a figure writer needs; each writer reads the fields it uses.
typedef struct {
    const double *weights;
    size_t T, S;
    const void *curves;  // the loss chart's ts_loss_curves (viz/plot.h)
    const void *more;    // small multiples' ts_heatmap_grid (viz/heatmap.h), the JSON's ts_json_heads
    const char *const *target;
    const char *const *source;
    const char *const *axes;  // the heatmap's row and column axis names (NULL: target, source)
    const char *text;  // title or attention name
} ts_figure_args;

typedef int (*ts_figure_writer)(FILE *out, const ts_figure_args *a);

// Writes path through `write` with ts_write_atomic (tensor/atomic_write.h):
// readers see the old file or the whole new one. Errors: TS_ERR_NOMEM;
// TS_ERR_IO naming the path and strerror, the temporary file removed; the
// writer's own errors.
int ts_render_to_path(const char *path, ts_figure_writer write, const ts_figure_args *a);

// ---- building blocks (used by the writers above, public for other figures) --

// The viridis colour of w (clamped to [0, 1]; NaN gives grey) as 0..255 RGB.
void ts_render_colour(double w, uint8_t rgb[3]);

// 1 when black text reads better than white on rgb (WCAG contrast).
int ts_render_dark_text_on(const uint8_t rgb[3]);

// Writes s as XML character data or attribute text: & < > " ' escaped,
// invalid UTF-8 and characters XML 1.0 forbids replaced by U+FFFD.
void ts_render_xml_text(FILE *out, const char *s);

// Writes s as a JSON string literal, quotes included: the one JSON string
// escaper. '"' and '\\' escaped; control characters and '<', '>', '&' as
// \u00XX (so the JSON can sit inside an HTML script element, as attention.jsonl
// does in report.html); invalid UTF-8 as \ufffd; other text as it is.
void ts_render_json_string(FILE *out, const char *s);

#endif
