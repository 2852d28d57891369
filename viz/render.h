// Pictures of attention and training: attention heatmaps for the terminal and
// as standalone SVG, attention as JSON, alignments as Pharaoh lines, and the
// train/dev loss curve as SVG. Inputs are plain arrays.
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
// "<path>.tmp" and rename it over `path`, so a failed write never leaves a
// truncated figure behind; on error they return TS_ERR_IO naming the path
// and strerror (ENOENT, ENOSPC, EFBIG...), with the temporary file removed.
#ifndef TS_RENDER_H
#define TS_RENDER_H

#include "data/align.h"  // ts_link

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// ---- terminal heatmap ------------------------------------------------------

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

typedef struct {
    enum ts_term_mode mode;
    int values;  // also print each weight with two decimals (PLAIN always does)
} ts_term_opts;

// Writes the heatmap, one line per target token. PLAIN is a table with the
// source words as column headers. The other modes draw cells under column
// numbers and end with a numbered legend of the source words ("0 le  1 chat"),
// which stays readable when words are long or wide. Widths are counted in
// terminal columns (UTF-8 aware); row labels longer than 24 columns are cut
// with "…". opts NULL means PLAIN. Needs T, S >= 1.
int ts_render_heatmap_term(FILE *out, const double *weights, size_t T, size_t S,
                           const char *const *target, const char *const *source,
                           const ts_term_opts *opts);

// ---- SVG heatmap -----------------------------------------------------------

// A standalone SVG figure: target words down the left, source words along the
// bottom rotated -45 degrees, each cell coloured on a viridis ramp over the
// fixed scale [0, 1] (so figures compare) with its weight written in it in
// black or white, whichever contrasts more; a colour bar with ticks 0, 0.5, 1;
// `title` on top (NULL for none). NaN cells are grey. Needs T, S >= 1.
int ts_render_heatmap_svg(FILE *out, const double *weights, size_t T, size_t S,
                          const char *const *target, const char *const *source,
                          const char *title);
int ts_render_heatmap_svg_path(const char *path, const double *weights, size_t T, size_t S,
                               const char *const *target, const char *const *source,
                               const char *title);

// ---- JSON and Pharaoh ------------------------------------------------------

// {"source": [...], "target": [...], "weights": [[...], ...], "attention": "..."}
// Strings JSON-escaped (control characters as \u00XX, UTF-8 passed through),
// numbers printed with %.17g so they read back bit for bit, non-finite
// numbers as null, `attention` NULL as null. T or S may be 0.
int ts_render_attention_json(FILE *out, const double *weights, size_t T, size_t S,
                             const char *const *target, const char *const *source,
                             const char *attention);
int ts_render_attention_json_path(const char *path, const double *weights, size_t T,
                                  size_t S, const char *const *target,
                                  const char *const *source, const char *attention);

// One Pharaoh line: "i-j" links separated by spaces, then '\n' (an empty line
// for no links). Feed it ts_align_argmax's output.
int ts_render_pharaoh(FILE *out, const ts_link *links, size_t n_links);

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

// ---- building blocks (used by the writers above, public for other figures) --

// The viridis colour of w (clamped to [0, 1]; NaN gives grey) as 0..255 RGB.
void ts_render_colour(double w, uint8_t rgb[3]);

// 1 when black text reads better than white on rgb (WCAG contrast).
int ts_render_dark_text_on(const uint8_t rgb[3]);

// Writes s as XML character data or attribute text: & < > " ' escaped,
// invalid UTF-8 and characters XML 1.0 forbids replaced by U+FFFD.
void ts_render_xml_text(FILE *out, const char *s);

// Writes s as a JSON string literal, quotes included.
void ts_render_json_string(FILE *out, const char *s);

#endif
