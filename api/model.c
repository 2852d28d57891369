// The C API's model: load, translate, attend, info and eval (api/tinyseq.h),
// each a thin wrapper over infer/ with the CLI's choices (batched greedy
// decoding, the attention document attend renders), results as text.
#include "api/tinyseq.h"

#include "api/json.h"
#include "data/gold.h"
#include "infer/attention_doc.h"
#include "infer/eval_set.h"
#include "infer/evaluate.h"
#include "infer/session.h"
#include "models/fields.h"
#include "viz/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// A loaded model and the arena its work runs in (infer/session.h).
struct tinyseq_model {
    ts_session s;
    char *header;  // the checkpoint's header as a JSON object (the checkpoint itself is not kept)
};

enum { BATCH = 128 };             // sentences decoded together: cli/cmd_translate.c's batch

const char *tinyseq_version(void) { return "0.1.0"; }

const char *tinyseq_last_error(void) { return ts_last_error(); }

void tinyseq_free(void *p) { free(p); }

// The checkpoint's header, every value as its string.
static int header_json(const ts_ckpt *ck, char **out) {
    api_text text;
    int rc = api_text_open(&text);
    if (rc) return rc;
    fputc('{', text.f);
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        fputs(i ? ", " : "", text.f);
        ts_render_json_string(text.f, key);
        fputs(": ", text.f);
        ts_render_json_string(text.f, value);
    }
    fputc('}', text.f);
    return api_text_close(&text, TS_OK, out);
}

int tinyseq_load(const char *path, tinyseq_model **out) {
    *out = NULL;
    if (!path) return ts_fail(TS_ERR_ARG, "no checkpoint path");
    tinyseq_model *m = calloc(1, sizeof *m);
    if (!m) return ts_fail(TS_ERR_NOMEM, "out of memory");
    ts_ckpt *ck = NULL;
    int rc = ts_ckpt_load(path, NULL, &ck);
    if (!rc) rc = ts_translator_from_ckpt(ck, &m->s.t);
    if (!rc) rc = header_json(ck, &m->header);
    if (!rc) rc = ts_session_start(&m->s);
    ts_ckpt_free(ck);
    if (rc) {
        tinyseq_model_free(m);
        return rc;
    }
    *out = m;
    return TS_OK;
}

void tinyseq_model_free(tinyseq_model *m) {
    if (!m) return;
    ts_session_free(&m->s);
    free(m->header);
    free(m);
}

// The search options every decoding call checks (*beam: the width it asks
// for, 0 the default; alpha < 0: no GNMT penalty).
static int set_search(tinyseq_model *m, int *beam, double alpha) {
    return ts_session_search(&m->s, beam, alpha < 0 ? (ts_length_penalty){0, 0.0} : (ts_length_penalty){1, alpha});
}

int tinyseq_translate(tinyseq_model *m, const char *const *texts, int n, int beam, double alpha, char **out) {
    *out = NULL;
    int rc = set_search(m, &beam, alpha);
    if (rc) return rc;
    if (n < 0) return ts_fail(TS_ERR_ARG, "a negative number of texts");
    ts_hypothesis *h = calloc((size_t)(n ? n : 1), sizeof *h);
    api_text text;
    if (!h) return ts_fail(TS_ERR_NOMEM, "out of memory");
    if ((rc = api_text_open(&text))) {
        free(h);
        return rc;
    }
    // Batches of at most BATCH sentences, as tinyseq translate cuts its
    // input: greedy decoding of a batch rounds as the CLI's does.
    for (int from = 0; !rc && from < n; from += BATCH) {
        int count = n - from < BATCH ? n - from : BATCH;
        for (int i = from; !rc && i < from + count; i++)
            if (!texts[i]) rc = ts_fail(TS_ERR_ARG, "text %d is NULL", i);
        if (!rc) rc = ts_translate_batch(&m->s.t, ts_session_ctx(&m->s), texts + from, count, beam, h + from);
        if (rc && from) rc = ts_fail(rc, "in the batch from text %d: %s", from, ts_last_error());
    }
    // The text tinyseq translate prints (a subword model's pieces as words).
    for (int i = 0; !rc && i < n; i++) {
        char *words = NULL;
        if (!(rc = ts_translator_text(&m->s.t, h[i].tokens, h[i].len, &words))) fprintf(text.f, "%s%s", i ? "\n" : "", words);
        free(words);
    }
    for (int i = 0; i < n; i++) ts_hypothesis_free(&h[i]);
    free(h);
    return api_text_close(&text, rc, out);
}

// The attention document of `text` (infer/attention_doc.h), as JSON in *json:
// what tinyseq attend --json writes with the same choices.
static int attend_json(tinyseq_model *m, const char *text, int beam, double alpha, ts_attention_doc_opts *o,
                       char **json) {
    if (!text) return ts_fail(TS_ERR_ARG, "no text");
    int rc = set_search(m, &beam, alpha);
    if (rc) return rc;
    o->beam = beam;
    ts_attention_doc d;
    if ((rc = ts_attention_doc_build(&m->s, text, o, &d))) return rc;
    ts_attention_json j;
    ts_attention_doc_json(&d, &j);
    api_text out;
    if (!(rc = api_text_open(&out))) {
        rc = ts_render_attention_json_heads(out.f, j.weights, j.T, j.S, j.target, j.source, j.attention, j.more);
        rc = api_text_close(&out, rc, json);
    }
    ts_attention_doc_free(&d);
    return rc;
}

int tinyseq_attend(tinyseq_model *m, const char *text, int beam, double alpha, int words, char **json) {
    *json = NULL;
    if (!ts_model_attends(&m->s.t.model->cfg))
        return ts_fail(TS_ERR_ARG, "this model has no attention, so there are no weights");
    ts_attention_doc_opts o = {.words = words, .explain = -1};
    return attend_json(m, text, beam, alpha, &o, json);
}

int tinyseq_explain(tinyseq_model *m, const char *text, int beam, double alpha, int words, const char *method, int steps,
                    char **json) {
    *json = NULL;
    int kind = method ? ts_explain_parse(method) : -1;
    if (kind < 0) return ts_fail(TS_ERR_ARG, "explain: method '%s' (grad or ig)", method ? method : "(null)");
    if (steps == 0) steps = TS_IG_STEPS_DEFAULT;
    if (steps < 1 || steps > TS_IG_STEPS_MAX) return ts_fail(TS_ERR_ARG, "explain: %d steps outside 1..%d", steps, TS_IG_STEPS_MAX);
    ts_attention_doc_opts o = {.words = words, .explain = kind, .ig_steps = steps};
    return attend_json(m, text, beam, alpha, &o, json);
}

int tinyseq_info(const tinyseq_model *m, char **json) {
    api_text text;
    int rc = api_text_open(&text);
    if (rc) return rc;
    const ts_translator *t = &m->s.t;
    const ts_model_config *cfg = &t->model->cfg;
    // The model's fields as checkpoints name them (models/fields.h's table),
    // the architecture's row first.
    fprintf(text.f, "{\"model\": {");
    for (int i = 0, first = 1; i < ts_model_field_count; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        if (!ts_model_field_applies(f, cfg->arch)) continue;
        int value = ts_model_field_get(cfg, f);
        if (!first) fputs(", ", text.f);
        first = 0;
        ts_render_json_string(text.f, f->key);
        fputs(": ", text.f);
        if (f->set.names) ts_render_json_string(text.f, ts_names_name(f->set.names, value));
        else fprintf(text.f, "%d", value);
    }
    size_t parameters = 0;
    for (int i = 0; i < t->model->params.count; i++) parameters += t->model->params.items[i]->size;
    fprintf(text.f, "}, \"attends\": %s, \"max_len\": %d, \"vocabularies\": {\"source\": %zu, \"target\": %zu}, "
                    "\"parameters\": %zu, \"header\": %s}",
            ts_model_attends(cfg) ? "true" : "false", t->max_len, ts_vocab_size(t->src_vocab),
            ts_vocab_size(t->tgt_vocab), parameters, m->header);
    return api_text_close(&text, TS_OK, json);
}

// ts_evaluate's result and the outputs as JSON.
static int write_eval(FILE *f, const ts_eval_result *r, const ts_hypothesis *hyps, size_t n, const ts_translator *t) {
    const struct {
        const char *key;
        double value;
    } numbers[] = {{"loss", r->loss}, {"perplexity", r->perplexity}, {"bleu", r->bleu}, {"bleu_detok", r->bleu_detok},
                   {"chrf", r->chrf}, {"exact", r->exact}};
    fprintf(f, "{\"pairs\": %zu, \"tokens\": %zu", r->pairs, r->tokens);
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        fprintf(f, ", \"%s\": ", numbers[i].key);
        api_json_number(f, numbers[i].value);
    }
    fputs(", \"bucket_bleu\": [", f);
    for (int b = 0; b < TS_EVAL_BUCKETS; b++) {
        fputs(b ? ", " : "", f);
        api_json_number(f, r->bucket_pairs[b] ? r->bucket_bleu[b] : NAN);
    }
    fputs("], \"bucket_pairs\": [", f);
    for (int b = 0; b < TS_EVAL_BUCKETS; b++) fprintf(f, "%s%zu", b ? ", " : "", r->bucket_pairs[b]);
    fputs("], \"aer\": ", f);
    api_json_number(f, r->has_aer ? r->aer : NAN);
    fputs(", \"aer_diagonal\": ", f);
    api_json_number(f, r->has_aer ? r->aer_diagonal : NAN);
    fputs(", \"aer_forced\": ", f);
    api_json_number(f, r->has_aer_forced ? r->aer_forced : NAN);
    fputs(", \"aer_forced_best\": ", f);
    api_json_number(f, r->has_aer_forced ? r->aer_forced_best : NAN);
    fputs(", \"entropy\": ", f);
    api_json_number(f, r->has_attention ? r->entropy : NAN);
    fputs(", \"pad_mass\": ", f);
    api_json_number(f, r->has_attention ? r->pad_mass : NAN);
    fputs(", \"outputs\": [", f);
    int rc = TS_OK;
    for (size_t k = 0; !rc && k < n; k++) {
        char *words = NULL;
        if ((rc = ts_translator_text(t, hyps[k].tokens, hyps[k].len, &words))) break;
        fputs(k ? ", " : "", f);
        ts_render_json_string(f, words);
        free(words);
    }
    fputs("]}", f);
    return rc;
}

int tinyseq_eval(tinyseq_model *m, const char *corpus_path, const char *align_path, int beam, int max_len,
                 char **json) {
    *json = NULL;
    if (!corpus_path) return ts_fail(TS_ERR_ARG, "no corpus path");
    int rc = set_search(m, &beam, -1);
    if (rc) return rc;
    ts_eval_set set;
    if ((rc = ts_eval_set_read(&m->s.t, corpus_path, align_path, 0, max_len, &set))) return rc;
    ts_hypothesis *hyps = NULL;
    if (set.n_rows == 0) rc = ts_fail(TS_ERR_ARG, "%s: no sentence pairs left to evaluate (see max_len)", corpus_path);
    ts_eval_result r;
    ts_eval_opts opts = {.beam = beam, .batch = 64, .gold = set.row_gold, .gold_counts = set.row_counts};
    if (!rc) rc = ts_evaluate(&m->s.t, ts_session_ctx(&m->s), ts_eval_set_input(&set), set.rows, set.n_rows, &opts, &r, &hyps);
    api_text text;
    if (!rc && !(rc = api_text_open(&text))) {
        rc = api_text_close(&text, write_eval(text.f, &r, hyps, set.n_rows, &m->s.t), json);
    }
    for (size_t k = 0; hyps && k < set.n_rows; k++) ts_hypothesis_free(&hyps[k]);
    free(hyps);
    ts_eval_set_free(&set);
    return rc;
}
