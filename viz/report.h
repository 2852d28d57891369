// The run report: one self-contained HTML file (inline CSS, JS and SVG,
// nothing fetched) with a run's loss and BLEU curves, BLEU by source length
// and an attention explorer over the dev sentences that attention.jsonl
// follows through the epochs (greedy and beam side by side).
#ifndef TS_VIZ_REPORT_H
#define TS_VIZ_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    const char *title;                 // shown at the top (the run directory)
    const char *metrics_csv;           // metrics.csv's text (header + rows), or NULL
    const char *metrics_name;          // its file name, for messages
    const char *steps_csv;             // steps.csv's text (the training loss every few steps), or NULL
    const char *steps_name;
    const char *const *epochs;         // (n_epochs) lines of attention.jsonl, each one JSON object
    size_t n_epochs;
    const char *epochs_name;           // its file name, for messages
} ts_report_input;

// Writes the report to path with ts_write_atomic (tensor/atomic_write.h). Checks what
// it embeds: metrics.csv and steps.csv must be a header of names and rows of
// numbers (an empty field is a value not measured), each
// attention.jsonl line one object with no '<' (our writer escapes it) and
// valid UTF-8; a bad line is TS_ERR_FORMAT naming file:line. TS_ERR_IO names
// the path and strerror.
int ts_report_write_html(const char *path, const ts_report_input *in);

// The same page written to out, which stays open (`tinyseq report -o -`).
int ts_report_write_html_to(FILE *out, const ts_report_input *in);

#endif
