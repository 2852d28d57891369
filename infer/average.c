// Checkpoint averaging (see average.h).
#include "infer/average.h"

#include "models/fields.h"
#include "tensor/status.h"

#include <string.h>

// TS_OK when b's model has a's configuration, else TS_ERR_ARG naming the field.
static int same_config(const ts_translator *a, const ts_translator *b, const char *a_path, const char *b_path) {
    const ts_model_config *x = &a->model->cfg, *y = &b->model->cfg;
    for (int i = 0; i <= ts_model_field_count; i++) {
        const ts_model_field *f = i < ts_model_field_count ? &ts_model_fields[i] : NULL;
        if (f && !ts_model_field_applies(f, x->arch)) continue;  // the architectures differ at the first row
        const char *label = f ? f->label : "max_len";
        long vx = f ? ts_model_field_get(x, f) : a->max_len, vy = f ? ts_model_field_get(y, f) : b->max_len;
        if (vx != vy && f && f->set.names)  // a named value: "dtype float32", not "dtype 1"
            return ts_fail(TS_ERR_ARG, "%s has %s %s, %s has %s: only checkpoints of one model average", b_path, label,
                           ts_names_name(f->set.names, (int)vy), a_path, ts_names_name(f->set.names, (int)vx));
        if (vx != vy)
            return ts_fail(TS_ERR_ARG, "%s has %s %ld, %s has %ld: only checkpoints of one model average", b_path, label,
                           vy, a_path, vx);
    }
    return TS_OK;
}

// TS_OK when the vocabularies agree word for word, else TS_ERR_ARG naming
// the first differing word.
static int same_vocab(const ts_vocab *a, const ts_vocab *b, const char *side, const char *a_path,
                      const char *b_path) {
    for (int32_t id = 0; id < (int32_t)ts_vocab_size(a); id++) {
        const char *x = ts_vocab_word(a, id), *y = ts_vocab_word(b, id);
        if (strcmp(x, y))
            return ts_fail(TS_ERR_ARG, "%s: %s word %d is '%s' where %s has '%s': other vocabularies", b_path, side,
                           (int)id, y, a_path, x);
    }
    return TS_OK;
}

// TS_OK when both are word-level or hold byte-identical subword models (the
// same pieces could still split text otherwise), else TS_ERR_ARG.
static int same_subword(const ts_subword *a, const ts_subword *b, const char *side, const char *a_path,
                        const char *b_path) {
    size_t na = 0, nb = 0;
    const uint8_t *x = a ? ts_subword_bytes(a, &na) : NULL, *y = b ? ts_subword_bytes(b, &nb) : NULL;
    if (!a && !b) return TS_OK;
    if (a && b && na == nb && !memcmp(x, y, na)) return TS_OK;
    return ts_fail(TS_ERR_ARG, "%s and %s have other %s subword models: only checkpoints of one model average", b_path,
                   a_path, side);
}

int ts_average_models(const char *const *paths, int n, ts_translator *out) {
    memset(out, 0, sizeof *out);
    if (n < 1) return ts_fail(TS_ERR_ARG, "average: no checkpoints");
    int rc = ts_translator_load(paths[0], out);
    ts_params *sum = rc ? NULL : &out->model->params;
    int dtype = rc ? TS_F64 : out->model->cfg.dtype;
    if (!rc) rc = ts_params_convert(sum, TS_F64);  // summed in float64 whatever the models' dtype
    for (int k = 1; !rc && k < n; k++) {
        ts_translator other;
        if ((rc = ts_translator_load(paths[k], &other))) break;
        rc = same_config(out, &other, paths[0], paths[k]);
        if (!rc) rc = same_vocab(out->src_vocab, other.src_vocab, "source", paths[0], paths[k]);
        if (!rc) rc = same_vocab(out->tgt_vocab, other.tgt_vocab, "target", paths[0], paths[k]);
        if (!rc) rc = same_subword(out->src_sw, other.src_sw, "source", paths[0], paths[k]);
        if (!rc) rc = same_subword(out->tgt_sw, other.tgt_sw, "target", paths[0], paths[k]);
        for (int i = 0; !rc && i < sum->count; i++) {  // same configuration: same registry order and shapes
            ts_tensor *into = sum->items[i];
            const ts_tensor *from = other.model->params.items[i];
            for (size_t j = 0; j < into->size; j++) into->data[j] += ts_value(from, j);
        }
        ts_translator_free(&other);
    }
    for (int i = 0; !rc && i < sum->count; i++) {
        ts_tensor *p = sum->items[i];
        for (size_t j = 0; j < p->size; j++) p->data[j] /= n;
    }
    if (!rc) rc = ts_params_convert(sum, dtype);
    if (rc) ts_translator_free(out);
    return rc;
}
