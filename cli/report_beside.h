// tinyseq report's "Attention beside attributions" (cli/report_beside.c).
#ifndef TS_CLI_REPORT_BESIDE_H
#define TS_CLI_REPORT_BESIDE_H

#include "infer/attention_doc.h"
#include "infer/session.h"
#include "viz/report.h"

typedef struct {
    ts_session session;            // kept: the output's labels are its vocabulary's words
    ts_attention_doc doc;          // the first dev sentence translated greedily, explained
    ts_report_matrix matrices[2];  // the attention, the attributions
} report_beside;

// The two matrices of run dir's first dev sentence in b->matrices: their
// count (2), 0 when there is nothing to show (no best.ckpt or dev pairs
// yet, a model without attention), -1 when computing them failed (the
// library's message set). Free with report_beside_free.
int report_beside_make(const char *dir, report_beside *b);
void report_beside_free(report_beside *b);

#endif
