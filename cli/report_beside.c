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
    ts_word_attention_free(&b->words[0]);
    ts_word_attention_free(&b->words[1]);
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
    // A subword model's pieces merged into words, as the page's explorer and attend --words show them.
    ts_heads none = {0};
    b->in_words = !rc && s->t.src_sw && s->t.tgt_sw;
    int T = one->hyp.len + 1, S = one->S;
    if (b->in_words) rc = ts_attention_words(&s->t, one->hyp.attention, T, S, &one->labels, &none, &b->words[0]);
    if (b->in_words && !rc) rc = ts_attention_words(&s->t, b->attribution.raw, T, S, &one->labels, &none, &b->words[1]);
    if (b->in_words && !rc) rc = ts_attribution_replace(&b->attribution, b->words[1].weights, b->words[1].T, b->words[1].S);
    if (rc) {
        report_beside_free(b);
        return rc == TS_ERR_ARG ? 0 : -1;  // a model without attention has nothing to set beside
    }
    static const char *const titles[2] = {"attention (greedy, best.ckpt)", "gradient x input, |a| / row sum"};
    const double *weights[2] = {b->in_words ? b->words[0].weights : one->hyp.attention, b->attribution.weights};
    for (int k = 0; k < 2; k++)
        b->matrices[k] = b->in_words ? (ts_report_matrix){weights[k], (size_t)b->words[k].T, (size_t)b->words[k].S,
                                                          b->words[k].target, b->words[k].source, titles[k]}
                                     : (ts_report_matrix){weights[k], (size_t)T, (size_t)S, one->labels.target,
                                                          one->labels.source, titles[k]};
    return 2;
}
