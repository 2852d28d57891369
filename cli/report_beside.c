// tinyseq report's "Attention beside attributions": the run's best.ckpt
// translates its first dev sentence greedily, and the page draws the
// attention the search recorded (a Transformer's: its last layer's
// cross-attention head mean) next to the output's gradient x input
// attributions (infer/explain.h), on the same [0, 1] scale.
#include "cli/common.h"
#include "cli/report_beside.h"

#include "infer/explain.h"
#include "infer/translate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_beside_free(report_beside *b) {
    ts_attribution_free(&b->attribution);
    ts_attention_labels_free(&b->labels);
    ts_hypothesis_free(&b->hyp);
    free(b->source);
    if (b->loaded) ts_translator_free(&b->t);
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
    if (!sentence || ts_translator_map(path, &b->t)) {
        free(sentence);
        return 0;  // nothing to show: a run that has not evaluated yet, or no dev split
    }
    b->loaded = 1;
    ts_translator *t = &b->t;
    int rc = ts_model_attends(&t->model->cfg) ? TS_OK : TS_ERR_ARG;
    ts_arena *arena = rc ? NULL : ts_arena_new(TS_CLI_ARENA_START);
    if (!rc && !arena) rc = TS_ERR_NOMEM;
    ts_ctx ctx;
    if (arena) ts_ctx_init(&ctx, arena);
    while (!rc && (rc = ts_translate_text(t, &ctx, sentence, 1, &b->hyp, &b->source, &b->S)) == TS_ERR_ARENA &&
           !ts_ctx_grow(&ctx, "the dev sentence")) {
    }
    if (!rc) rc = ts_attention_labels_make(t, b->source, b->S, &b->hyp, &b->labels);
    while (!rc && (rc = ts_attribution_of_translation(t, &ctx, b->labels.source, b->S, &b->hyp, TS_EXPLAIN_GRAD, 0,
                                                      &b->attribution)) == TS_ERR_ARENA &&
           !ts_ctx_grow(&ctx, "the attributions")) {
    }
    if (arena) ts_arena_free(ctx.arena);
    free(sentence);
    if (rc) {
        report_beside_free(b);
        return rc == TS_ERR_ARG ? 0 : -1;  // a model without attention has nothing to set beside
    }
    size_t T = (size_t)b->hyp.len + 1, S = (size_t)b->S;
    b->matrices[0] = (ts_report_matrix){b->hyp.attention, T, S, b->labels.target, b->labels.source,
                                        "attention (greedy, best.ckpt)"};
    b->matrices[1] = (ts_report_matrix){b->attribution.weights, T, S, b->labels.target, b->labels.source,
                                        "gradient x input, |a| / row sum"};
    return 2;
}
