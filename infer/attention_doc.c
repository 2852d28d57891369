// One sentence's attention document (infer/attention_doc.h).
#include "infer/attention_doc.h"

#include <stdlib.h>
#include <string.h>

void ts_attention_doc_free(ts_attention_doc *d) {
    ts_attended_free(&d->sentence);
    free(d->inputs);
    ts_heads_free(&d->heads);
    ts_attribution_free(&d->attribution);
    ts_word_attention_free(&d->merged);
    memset(d, 0, sizeof *d);
}

// The decoder's inputs from the labels: <sos>, then the output units before the last step's.
static void label_inputs(ts_attention_doc *d) {
    d->inputs[0] = "<sos>";
    for (int k = 1; k < d->T; k++) d->inputs[k] = d->sentence.labels.target[k - 1];
}

// The attributions, then the search's weights and every head, merged from
// pieces into words (ts_attention_words, each by the pieces' labels); the
// labels, T and S become the words'.
static int merge_words(ts_attention_doc *d, const ts_translator *t) {
    ts_heads none = {0};
    ts_word_attention w = {0};
    int rc = TS_OK;
    if (d->explain >= 0) {
        rc = ts_attention_words(t, d->attribution.raw, d->T, d->S, &d->sentence.labels, &none, &w);
        if (!rc) rc = ts_attribution_replace(&d->attribution, w.weights, w.T, w.S);
    }
    if (!rc && d->weights) {
        ts_word_attention_free(&w);
        rc = ts_attention_words(t, d->weights, d->T, d->S, &d->sentence.labels, &d->heads, &w);
    }
    if (rc) {
        ts_word_attention_free(&w);
        return ts_fail(rc, "cannot merge the pieces into words: %s", ts_last_error());
    }
    memcpy(d->sentence.labels.target, w.target, (size_t)w.T * sizeof *w.target);
    memcpy(d->sentence.labels.source, w.source, (size_t)w.S * sizeof *w.source);
    d->T = w.T;
    d->S = w.S;
    if (d->weights) d->weights = w.weights;
    d->merged = w;  // the labels point into its words now
    d->in_words = 1;
    label_inputs(d);
    return TS_OK;
}

int ts_attention_doc_build(ts_session *s, const char *text, const ts_attention_doc_opts *o, ts_attention_doc *d) {
    memset(d, 0, sizeof *d);
    const ts_translator *t = &s->t;
    d->explain = o->explain;
    d->shift = o->shift;
    d->subword = t->src_sw != NULL;
    d->attention = ts_model_attention_name(&t->model->cfg);
    int rc = ts_session_attend(s, text, o->beam, &d->sentence);
    if (!rc) {
        d->S = d->sentence.S;
        d->T = d->sentence.hyp.len + 1;
        d->weights = ts_model_attends(&t->model->cfg) ? d->sentence.hyp.attention : NULL;
        if (!(d->inputs = malloc((size_t)d->T * sizeof *d->inputs))) rc = ts_fail(TS_ERR_NOMEM, "cannot allocate labels");
    }
    if (!rc) label_inputs(d);
    const char *const *source = d->sentence.labels.source;
    if (!rc && o->explain < 0 && ts_heads_available(t->model))
        rc = ts_heads_of_translation(t, ts_session_ctx(s), source, d->S, &d->sentence.hyp, &d->heads);
    if (!rc && o->explain >= 0)
        rc = ts_attribution_of_translation(t, ts_session_ctx(s), source, d->S, &d->sentence.hyp, o->explain, o->ig_steps,
                                           &d->attribution);
    if (!rc && o->words && d->subword) rc = merge_words(d, t);
    if (rc) ts_attention_doc_free(d);
    return rc;
}

void ts_attention_doc_json(const ts_attention_doc *d, ts_attention_json *j) {
    memset(j, 0, sizeof *j);
    if (d->heads.layers) j->all = ts_heads_json(&d->heads, j->views);
    if (d->explain >= 0) {
        j->all.explain = ts_explain_methods[d->explain].name;
        j->all.ig_steps = d->attribution.steps;
        j->all.raw = d->attribution.raw;
        j->all.log_prob = d->attribution.log_prob;
        j->all.baseline_log_prob = d->attribution.baseline_log_prob;
        j->weights = d->attribution.weights;
    } else if (d->weights) {
        j->weights = d->weights + (d->shift ? d->S : 0);  // shift-att: from row 1
    }
    if (d->shift) j->all.reading = "shift-att";
    if (d->subword) j->all.units = d->in_words ? "words" : "pieces";
    j->T = (size_t)(d->T - d->shift);
    j->S = (size_t)d->S;
    j->target = d->sentence.labels.target;
    j->source = d->sentence.labels.source;
    j->attention = d->attention;
    if (j->all.layers || j->all.explain || j->all.reading || j->all.units) j->more = &j->all;
}
