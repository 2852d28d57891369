// tinyseq report's "Attention beside attributions": the run's best.ckpt
// translates its first dev sentence greedily, and the page draws the
// attention the search recorded (a Transformer's: its last layer's
// cross-attention head mean) next to the output's gradient x input
// attributions (infer/explain.h), on the same [0, 1] scale.
#include "cli/report_beside.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_beside_free(report_beside *b) {
    ts_attribution_free(&b->attribution);
    ts_attended_free(&b->sentence);
    ts_session_free(&b->session);
    memset(b, 0, sizeof *b);
}

// The source side of dir/dev-pairs.tsv's first line (malloc'd), or NULL.
static char *first_dev_source(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/dev-pairs.tsv", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, f);
    fclose(f);
    if (got <= 0 || !strchr(line, '\t')) {
        free(line);
        return NULL;
    }
    *strchr(line, '\t') = '\0';
    return line;
}

int report_beside_make(const char *dir, report_beside *b) {
    memset(b, 0, sizeof *b);
    char path[4200];
    snprintf(path, sizeof path, "%s/best.ckpt", dir);
    char *sentence = first_dev_source(dir);
    if (!sentence || ts_session_open(&b->session, path)) {
        free(sentence);
        return 0;  // nothing to show: a run that has not evaluated yet, or no dev split
    }
    ts_session *s = &b->session;
    const ts_attended *one = &b->sentence;
    int rc = ts_model_attends(&s->t.model->cfg) ? TS_OK : TS_ERR_ARG;
    if (!rc) rc = ts_session_attend(s, sentence, 1, &b->sentence);
    if (!rc)
        rc = ts_attribution_of_translation(&s->t, &s->ctx, one->labels.source, one->S, &one->hyp, TS_EXPLAIN_GRAD, 0,
                                           &b->attribution);
    free(sentence);
    if (rc) {
        report_beside_free(b);
        return rc == TS_ERR_ARG ? 0 : -1;  // a model without attention has nothing to set beside
    }
    size_t T = (size_t)one->hyp.len + 1, S = (size_t)one->S;
    b->matrices[0] = (ts_report_matrix){one->hyp.attention, T, S, one->labels.target, one->labels.source,
                                        "attention (greedy, best.ckpt)"};
    b->matrices[1] = (ts_report_matrix){b->attribution.weights, T, S, one->labels.target, one->labels.source,
                                        "gradient x input, |a| / row sum"};
    return 2;
}
