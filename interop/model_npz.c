#include "interop/model_npz.h"

#include "tensor/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The model as ts_model_to_ckpt writes it: its header (model.*, data.*) is
// the one source of the configuration text, its blobs of the subword models.
static int model_header(const ts_translator *t, ts_ckpt **out) {
    *out = ts_ckpt_new();
    if (!*out) return TS_ERR_NOMEM;
    // The header and the subword blobs are wanted; the parameters come along (cheap next to the file).
    int rc = ts_model_to_ckpt(*out, t);
    if (rc) {
        ts_ckpt_free(*out);
        *out = NULL;
    }
    return rc;
}

static int add_vocab(ts_npz *z, const char *name, const ts_vocab *v) {
    size_t n = ts_vocab_size(v);
    const char **words = malloc(n * sizeof *words);
    if (!words) return ts_fail(TS_ERR_NOMEM, "cannot list the vocabulary %s", name);
    for (size_t i = 0; i < n; i++) words[i] = ts_vocab_word(v, (int32_t)i);
    int rc = ts_npz_add_strings(z, name, 1, &n, words);
    free(words);
    return rc;
}

// The subword models (a word-level model has none): the blobs of ck, the
// checkpoint made of the model, byte for byte.
static int add_subwords(ts_npz *z, const ts_ckpt *ck) {
    static const char *const blobs[2] = {TS_CKPT_SUBWORD_SOURCE, TS_CKPT_SUBWORD_TARGET};
    static const char *const names[2] = {TS_NPZ_SUBWORD_SOURCE, TS_NPZ_SUBWORD_TARGET};
    int rc = TS_OK;
    for (int k = 0; !rc && k < 2; k++) {
        const void *bytes;
        size_t n;
        if (ts_ckpt_get_blob(ck, blobs[k], &bytes, &n) == TS_OK) rc = ts_npz_add_u1(z, names[k], 1, &n, bytes);
        else ts_clear_error();
    }
    return rc;
}

int ts_model_to_npz(const ts_translator *t, ts_npz **out) {
    *out = NULL;
    ts_ckpt *ck;
    int rc = model_header(t, &ck);
    if (rc) return rc;
    // The configuration: "key=value\n" per header line.
    size_t len = 1;
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        len += strlen(key) + strlen(value) + 2;
    }
    char *config = malloc(len);
    ts_npz *z = ts_npz_new();
    if (!config || !z) {
        rc = ts_fail(TS_ERR_NOMEM, "npz: out of memory");
        goto done;
    }
    config[0] = '\0';
    for (size_t i = 0, at = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        at += (size_t)snprintf(config + at, len - at, "%s=%s\n", key, value);
    }
    const ts_params *params = &t->model->params;
    for (int i = 0; !rc && i < params->count; i++) {
        const ts_tensor *p = params->items[i];
        size_t shape[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        // Each parameter in the model's dtype: '<f4' for a float32 model, half the bytes.
        rc = p->dtype == TS_F32 ? ts_npz_add_f4(z, p->name, p->ndim, shape, p->data_f32)
                                : ts_npz_add_f8(z, p->name, p->ndim, shape, p->data);
    }
    if (!rc) rc = add_vocab(z, TS_NPZ_VOCAB_SOURCE, t->src_vocab);
    if (!rc) rc = add_vocab(z, TS_NPZ_VOCAB_TARGET, t->tgt_vocab);
    if (!rc) rc = ts_npz_add_strings(z, TS_NPZ_CONFIG, 0, NULL, (const char *const *)&config);
    if (!rc) rc = add_subwords(z, ck);
done:
    free(config);
    ts_ckpt_free(ck);
    if (rc) ts_npz_free(z);
    else *out = z;
    return rc;
}

// A present vocabulary entry must list v's words in order.
static int check_vocab(const ts_npz *z, const char *name, const ts_vocab *v, const char *what) {
    const ts_npz_array *a = ts_npz_find(z, name);
    if (!a) return TS_OK;
    size_t n = ts_vocab_size(v);
    if (a->dtype != TS_NPZ_STR || a->ndim != 1)
        return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' must be a 1-D array of strings", what, name);
    if (a->size != n)
        return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' has %zu words, the model's vocabulary %zu", what, name, a->size,
                       n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->strings[i], ts_vocab_word(v, (int32_t)i)) != 0)
            return ts_fail(TS_ERR_FORMAT, "%s: entry '%s': word %zu is '%s', the model's is '%s'", what, name, i,
                           a->strings[i], ts_vocab_word(v, (int32_t)i));
    return TS_OK;
}

// A present configuration entry must agree with the model on every model.* key.
static int check_config(const ts_npz *z, const ts_translator *t, const char *what) {
    const ts_npz_array *a = ts_npz_find(z, TS_NPZ_CONFIG);
    if (!a) return TS_OK;
    if (a->dtype != TS_NPZ_STR || a->ndim != 0)
        return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' must be a single string", what, TS_NPZ_CONFIG);
    ts_ckpt *ck;
    int rc = model_header(t, &ck);
    if (rc) return rc;
    char *text = strdup(a->strings[0]);
    if (!text) {
        ts_ckpt_free(ck);
        return ts_fail(TS_ERR_NOMEM, "out of memory");
    }
    int line_no = 0;
    char *save = NULL;
    // strtok_r skips empty lines, which is what we want.
    for (char *line = strtok_r(text, "\n", &save); !rc && line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        char *eq = strchr(line, '=');
        if (!eq || eq == line) {
            rc = ts_fail(TS_ERR_FORMAT, "%s: entry '%s' line %d is not key=value: '%.80s'", what, TS_NPZ_CONFIG,
                         line_no, line);
            break;
        }
        *eq = '\0';
        const char *mine;
        if (strncmp(line, "model.", 6) != 0) continue;  // data.* describe, model.* define
        // ... all but the dtype: the --like model's decides, and arrays of the
        // other convert into it (import says how many).
        if (strcmp(line, "model.dtype") == 0) continue;
        if (ts_ckpt_get_string(ck, line, &mine) != TS_OK)
            rc = ts_fail(TS_ERR_FORMAT, "%s: entry '%s' line %d: the model has no '%s'", what, TS_NPZ_CONFIG,
                         line_no, line);
        else if (strcmp(mine, eq + 1) != 0)
            rc = ts_fail(TS_ERR_FORMAT, "%s: entry '%s' line %d: %s=%.80s, the model has %s", what, TS_NPZ_CONFIG,
                         line_no, line, eq + 1, mine);
    }
    free(text);
    ts_ckpt_free(ck);
    return rc;
}

// The subword models of z, both or neither, into sw[2] (NULL when absent),
// each checked to load and to spell t's vocabulary of its side.
static int subwords_from_npz(const ts_npz *z, const ts_translator *t, const char *what, ts_subword *sw[2]) {
    const char *names[2] = {TS_NPZ_SUBWORD_SOURCE, TS_NPZ_SUBWORD_TARGET};
    const ts_vocab *vocabs[2] = {t->src_vocab, t->tgt_vocab};
    const ts_npz_array *a[2] = {ts_npz_find(z, names[0]), ts_npz_find(z, names[1])};
    if (!a[0] != !a[1])
        return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' without '%s' (a subword model has both)", what,
                       names[a[0] ? 0 : 1], names[a[0] ? 1 : 0]);
    for (int k = 0; a[0] && k < 2; k++) {
        if (a[k]->dtype != TS_NPZ_U1 || a[k]->ndim != 1)
            return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' must be a 1-D array of bytes ('|u1')", what, names[k]);
        int rc = ts_subword_load(a[k]->bytes, a[k]->size, &sw[k]);
        if (!rc) rc = ts_subword_check_vocab(sw[k], vocabs[k]);
        if (rc) return ts_fail(rc, "%s: entry '%s': %s", what, names[k], ts_last_error());
    }
    return TS_OK;
}

static const char *shape_text(char *buf, size_t cap, int ndim, const size_t *shape) {
    size_t at = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < ndim && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%zu%s", shape[i], ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    if (at < cap) snprintf(buf + at, cap - at, ")");
    return buf;
}

int ts_model_npz_converted(const ts_translator *t, const ts_npz *z) {
    int n = 0;
    for (int i = 0; i < t->model->params.count; i++) {
        const ts_tensor *p = t->model->params.items[i];
        const ts_npz_array *a = ts_npz_find(z, p->name);
        n += a && (a->dtype == TS_NPZ_F4) != (p->dtype == TS_F32);
    }
    return n;
}

int ts_model_from_npz(ts_translator *t, const ts_npz *z, const char *what) {
    ts_params *params = &t->model->params;
    char model[160];  // the model in words, for messages
    ts_model_describe(&t->model->cfg, model, sizeof model);
    // Check everything first.
    for (int i = 0; i < params->count; i++) {
        const ts_tensor *p = params->items[i];
        const ts_npz_array *a = ts_npz_find(z, p->name);
        if (!a)
            return ts_fail(TS_ERR_FORMAT, "%s: no entry '%s' (a parameter of the model: %s)", what, p->name, model);
        if (a->dtype != TS_NPZ_F8 && a->dtype != TS_NPZ_F4)
            return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' is not float64 ('<f8') or float32 ('<f4'): convert it with "
                           ".astype('<f8')", what, p->name);
        size_t want[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        int same = a->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = a->shape[d] == want[d];
        if (!same) {
            char got_text[128], want_text[64];
            return ts_fail(TS_ERR_SHAPE, "%s: entry '%s' has shape %s, the model needs %s", what, p->name,
                           shape_text(got_text, sizeof got_text, a->ndim, a->shape),
                           shape_text(want_text, sizeof want_text, p->ndim, want));
        }
        for (size_t k = 0; k < a->size; k++)
            if (!isfinite(a->values[k]))
                return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' holds a non-finite value (%g at flat index %zu)", what,
                               p->name, a->values[k], k);
    }
    // The entries that are not parameters: one list, in the order export writes them.
    static const char *const own[] = {TS_NPZ_VOCAB_SOURCE, TS_NPZ_VOCAB_TARGET, TS_NPZ_CONFIG, TS_NPZ_SUBWORD_SOURCE,
                                      TS_NPZ_SUBWORD_TARGET};
    for (size_t i = 0; i < ts_npz_count(z); i++) {
        const char *name = ts_npz_at(z, i)->name;
        int ours = 0;
        for (size_t k = 0; !ours && k < sizeof own / sizeof *own; k++) ours = !strcmp(name, own[k]);
        if (!ts_params_find(params, name) && !ours)
            return ts_fail(TS_ERR_FORMAT, "%s: entry '%s' is not a parameter of the model (%s)", what, name, model);
    }
    int rc = check_vocab(z, TS_NPZ_VOCAB_SOURCE, t->src_vocab, what);
    if (!rc) rc = check_vocab(z, TS_NPZ_VOCAB_TARGET, t->tgt_vocab, what);
    if (!rc) rc = check_config(z, t, what);
    ts_subword *sw[2] = {NULL, NULL};
    if (!rc) rc = subwords_from_npz(z, t, what, sw);
    if (rc) {
        ts_subword_free(sw[0]);
        ts_subword_free(sw[1]);
        return rc;
    }
    if (sw[0]) {  // the file's models, which its checkpoint held
        ts_subword_free(t->src_sw);
        ts_subword_free(t->tgt_sw);
        t->src_sw = sw[0];
        t->tgt_sw = sw[1];
    }
    for (int i = 0; i < params->count; i++) {
        ts_tensor *p = params->items[i];
        ts_values_convert(p->raw, p->dtype, ts_npz_find(z, p->name)->values, TS_F64, p->size);  // float32 models round
    }
    return TS_OK;
}
