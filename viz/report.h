// The run report: one self-contained HTML file (inline CSS, JS and SVG,
// nothing fetched) with a run's loss and BLEU curves, BLEU by source length
// and an attention explorer over the dev sentences that attention.jsonl
// follows through the epochs (greedy and beam side by side).
#ifndef TS_VIZ_REPORT_H
#define TS_VIZ_REPORT_H

#include <stddef.h>
#include <stdio.h>

// One matrix the page draws as an SVG heatmap (viz/heatmap.h), labels escaped.
typedef struct {
    const double *weights;             // (T, S) rows of distributions
    size_t T, S;
    const char *const *target, *const *source;  // (T), (S) labels
    const char *title;
} ts_report_matrix;

typedef struct {
    const char *title;                 // shown at the top (the run directory)
    const char *metrics_csv;           // (metrics_len) metrics.csv's bytes (header + rows), or NULL
    size_t metrics_len;
    const char *metrics_name;          // its file name, for messages
    const char *steps_csv;             // (steps_len) steps.csv's bytes (the training loss every few steps), or NULL
    size_t steps_len;
    const char *steps_name;
    const char *epochs_jsonl;          // (epochs_len) attention.jsonl's bytes: one JSON object a line, or NULL
    size_t epochs_len;
    const char *config_txt;            // (config_len) config.txt's bytes ("key = value" lines), or NULL
    size_t config_len;
    const char *config_name;
    const char *model;                 // the model as its architecture's row describes it (ts_model_describe of
                                       // the run's checkpoint), or NULL (none yet): the page shows it as it is
    int model_layers, model_heads;     // with model: its cross-attention's layers and heads (ts_model_cross_heads)
    const char *heads_csv;             // (heads_len) heads.csv's bytes (each evaluation's AER per head), or NULL
    size_t heads_len;
    const char *heads_name;
    const char *epochs_name;           // its file name, for messages
    const ts_report_matrix *beside;    // (n_beside) matrices drawn side by side under "Attention beside
    size_t n_beside;                   // attributions" (tinyseq report: the first dev sentence), or none
    const char *beside_note;           // a sentence under them (plain text, escaped), or NULL
} ts_report_input;

// Writes the report to path with ts_write_atomic (tensor/atomic_write.h). Checks what
// it embeds, bytes that may be hostile: metrics.csv and steps.csv must be a
// header of names and rows of numbers (an empty field is a value not
// measured), each attention.jsonl line exactly one JSON object (viz/json.h:
// strict RFC 8259, written into the page from what was parsed, never as the
// line's bytes); no file may hold a NUL byte. A bad line is TS_ERR_FORMAT
// naming file:line, and nothing is written. TS_ERR_IO names the path and
// strerror. config.txt must be "key = value" lines and comments (the
// report reads what was trained from it); heads.csv the header
// "epoch,step,layer,head,aer" and rows of numbers (head a whole number or
// "mean", aer empty when not measured).
int ts_report_write_html(const char *path, const ts_report_input *in);

// The same page written to out, which stays open (`tinyseq report -o -`):
// nothing is written unless every file checks.
int ts_report_write_html_to(FILE *out, const ts_report_input *in);

#endif
