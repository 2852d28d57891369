// tinyseq report's "Attention beside attributions": the run's best.ckpt
// translates its first dev sentence greedily, and the page draws the
// attention the search recorded (a Transformer's: its last layer's
// cross-attention head mean) next to the output's gradient x input
// attributions (infer/explain.h), on the same [0, 1] scale; a subword
// model's in words, its pieces merged as attend --words merges them.
#include "cli/report_beside.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_beside_free(report_beside *b) {
    ts_attention_doc_free(&b->doc);
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
    // Attend's document with explain grad keeps the search's weights beside the attributions;
    // a subword model's pieces merged into words, as the page's explorer and attend --words show them.
    const ts_attention_doc_opts opts = {.beam = 1, .words = 1, .explain = TS_EXPLAIN_GRAD, .ig_steps = 0, .shift = 0};
    int rc = ts_model_attends(&b->session.t.model->cfg) ? ts_attention_doc_build(&b->session, sentence, &opts, &b->doc)
                                                        : TS_ERR_ARG;  // no attention: nothing to set beside
    free(sentence);
    if (rc) {
        report_beside_free(b);
        return rc == TS_ERR_ARG ? 0 : -1;  // a sentence the search refuses: nothing to show
    }
    const ts_attention_doc *d = &b->doc;
    static const char *const titles[2] = {"attention (greedy, best.ckpt)", "gradient x input, |a| / row sum"};
    const double *weights[2] = {d->weights, d->attribution.weights};
    for (int k = 0; k < 2; k++)
        b->matrices[k] = (ts_report_matrix){weights[k], (size_t)d->T, (size_t)d->S, d->sentence.labels.target,
                                            d->sentence.labels.source, titles[k]};
    return 2;
}
