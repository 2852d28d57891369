#include "infer/load.h"

#include "models/fields.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_vocab(ts_ckpt *ck, const char *name, const ts_vocab *v) {
    size_t n = ts_vocab_size(v);
    const char **words = malloc(n * sizeof *words);
    if (!words) return ts_fail(TS_ERR_NOMEM, "cannot list the %s vocabulary", name);
    for (size_t i = 0; i < n; i++) words[i] = ts_vocab_word(v, (int32_t)i);
    int rc = ts_ckpt_add_vocab(ck, name, words, n);
    free(words);
    return rc;
}

// Whether a model of cfg's architecture saves field f: not when the
// architecture has no such field, nor a newer field at 0 (the files from
// before it keep their bytes).
static int saves(const ts_model_config *cfg, const ts_model_field *f) {
    return ts_model_field_applies(f, cfg->arch) && !(f->newer && ts_model_field_get(cfg, f) == 0);
}

// The subword models' bytes as blobs (a joint model is stored twice: every
// reader has one rule).
static int add_subwords(ts_ckpt *ck, const ts_translator *t) {
    const ts_subword *models[2] = {t->src_sw, t->tgt_sw};
    const char *names[2] = {TS_CKPT_SUBWORD_SOURCE, TS_CKPT_SUBWORD_TARGET};
    int rc = TS_OK;
    for (int k = 0; !rc && k < 2 && models[k]; k++) {
        size_t n;
        const uint8_t *bytes = ts_subword_bytes(models[k], &n);
        rc = ts_ckpt_set_blob(ck, names[k], bytes, n);
    }
    return rc;
}

int ts_model_to_ckpt(ts_ckpt *ck, const ts_translator *t) {
    const ts_seq2seq *m = t->model;
    int rc = TS_OK;
    for (int i = 0; !rc && i < ts_model_field_count; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        int value = ts_model_field_get(&m->cfg, f);
        if (!saves(&m->cfg, f)) continue;
        char key[64];
        snprintf(key, sizeof key, "model.%s", f->key);
        rc = f->set.names ? ts_ckpt_set(ck, key, ts_names_name(f->set.names, value)) : ts_ckpt_set_int(ck, key, value);
    }
    if (!rc) rc = ts_ckpt_set_int(ck, "data.max_len", t->max_len);
    if (!rc) rc = ts_ckpt_set(ck, "data.normalisation", ts_normalisations[t->normalisation].name);
    if (!rc) rc = add_vocab(ck, "source", t->src_vocab);
    if (!rc) rc = add_vocab(ck, "target", t->tgt_vocab);
    if (!rc) rc = add_subwords(ck, t);
    for (int i = 0; !rc && i < m->params.count; i++) {
        ts_tensor *p = m->params.items[i];
        size_t shape[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        rc = ts_ckpt_add_tensor_view_dtype(ck, TS_CKPT_PARAMS, p->name, p->dtype, p->ndim, shape, p->raw);
    }
    return rc;
}

// Prefixes the current message with "checkpoint PATH: " ("checkpoint: " when
// ck came from memory), for the errors that do not come from a checkpoint
// getter (those name the file already). Returns rc.
static int name_file(const ts_ckpt *ck, int rc) {
    const char *path = ts_ckpt_path(ck);
    return ts_fail(rc, "checkpoint%s%s: %s", path ? " " : "", path ? path : "", ts_last_error());
}

static int vocab_from_ckpt(const ts_ckpt *ck, const char *name, int64_t expected, ts_vocab **out) {
    const ts_ckpt_vocab *v = ts_ckpt_find_vocab(ck, name);
    if (!v) return name_file(ck, ts_fail(TS_ERR_FORMAT, "has no %s vocabulary", name));
    if ((int64_t)v->count != expected)
        return name_file(ck, ts_fail(TS_ERR_FORMAT, "the %s vocabulary has %zu words, the header says %lld", name,
                                     v->count, (long long)expected));
    int rc = ts_vocab_from_words(v->tokens, v->count, out);
    return rc ? name_file(ck, ts_fail(rc, "the %s vocabulary: %s", name, ts_last_error())) : TS_OK;
}

// The subword model of blob `name` into *out when the file has one (else
// *out stays NULL: a word-level model), checked to be vocabulary v's pieces.
static int subword_from_ckpt(const ts_ckpt *ck, const char *name, const ts_vocab *v, ts_subword **out) {
    const void *bytes;
    size_t n;
    if (ts_ckpt_get_blob(ck, name, &bytes, &n) != TS_OK) {
        ts_clear_error();
        return TS_OK;
    }
    int rc = ts_subword_load(bytes, n, out);
    if (!rc) rc = ts_subword_check_vocab(*out, v);
    return rc ? name_file(ck, ts_fail(rc, "blob %s: %s", name, ts_last_error())) : TS_OK;
}

// Checks that the file holds exactly the parameters cfg implies, each with its
// shape, before anything is allocated for them: a header that claims a huge
// model costs nothing unless the file really stores it.
static int check_params(const ts_ckpt *ck, const ts_model_config *cfg) {
    char model[128] = "";  // the names the file gives, "dot/bahdanau"
    for (int i = 0; i < ts_model_field_count; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        if (f->set.names && saves(cfg, f))
            snprintf(model + strlen(model), sizeof model - strlen(model), "%s%s", *model ? "/" : "",
                     ts_names_name(f->set.names, ts_model_field_get(cfg, f)));
    }
    ts_param_shape layout[TS_SEQ2SEQ_MAX_PARAMS];
    int n;
    int rc = ts_seq2seq_layout(cfg, layout, &n);
    if (rc) return name_file(ck, rc);
    for (int i = 0; i < n; i++) {
        size_t shape[2] = {(size_t)layout[i].shape[0], (size_t)layout[i].shape[1]};
        if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, layout[i].name, layout[i].ndim, shape, NULL))) return rc;
    }
    size_t stored = ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS);
    for (size_t i = 0; stored != (size_t)n && i < stored; i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        int known = 0;
        for (int k = 0; !known && k < n; k++) known = !strcmp(layout[k].name, t->name);
        if (!known)
            return name_file(ck, ts_fail(TS_ERR_FORMAT, "has a parameter '%s' that a %s model does not",
                                         t->name, model));
    }
    if (stored != (size_t)n)
        return name_file(ck, ts_fail(TS_ERR_FORMAT, "has %zu parameter tensors, the model %d", stored, n));
    return TS_OK;
}

// Reads field f of the model's configuration from ck's header "model.<key>"
// (a name or a bounded number) into cfg, whose architecture, read first,
// says whether the file has it. TS_OK, or TS_ERR_FORMAT naming the key.
static int field_from_ckpt(const ts_ckpt *ck, const ts_model_field *f, ts_model_config *cfg) {
    if (!ts_model_field_applies(f, cfg->arch)) return TS_OK;
    char key[64];
    snprintf(key, sizeof key, "model.%s", f->key);
    if (f->newer) {
        int present = 0;
        for (size_t i = 0; !present && i < ts_ckpt_header_count(ck); i++) {
            const char *k, *v;
            ts_ckpt_header_at(ck, i, &k, &v);
            present = !strcmp(k, key);
        }
        if (!present) return TS_OK;  // a file older than the field: 0
    }
    int value = 0;
    if (f->set.names) {
        const char *name;
        int rc = ts_ckpt_get_string(ck, key, &name);
        if (!rc && (rc = ts_names_parse(f->set.names, name, &value)))
            rc = name_file(ck, ts_fail(TS_ERR_FORMAT, "header '%s': %s", key, ts_last_error()));
        if (rc) return rc;
    } else {
        int64_t number;
        int rc = ts_ckpt_get_int(ck, key, (int64_t)f->set.lo, (int64_t)f->set.hi, &number);
        if (rc) return rc;
        value = (int)number;
    }
    ts_model_field_set(cfg, f, value);
    return TS_OK;
}

// The file's data.normalisation into *norm: the words when absent (no file
// has lacked it so far), else a row of ts_normalisations by name.
static int normalisation_from_ckpt(const ts_ckpt *ck, ts_normalisation *norm) {
    *norm = TS_NORM_SPLIT;
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *k, *v;
        ts_ckpt_header_at(ck, i, &k, &v);
        if (strcmp(k, "data.normalisation")) continue;
        int value;
        if (ts_names_parse(&ts_normalisation_names, v, &value))
            return name_file(ck, ts_fail(TS_ERR_FORMAT, "header 'data.normalisation': %s", ts_last_error()));
        *norm = (ts_normalisation)value;
    }
    return TS_OK;
}

// The head a run trained with guided alignment, from the header keys
// train/options.c saves its options under (resolved: the layer and head as
// trained); none when they are absent (an unguided run) or name no head of
// the model (then no table marks one).
static void guided_from_ckpt(const ts_ckpt *ck, ts_translator *out) {
    const char *alignment;
    int64_t layer, head;
    int layers, heads = ts_model_cross_heads(&out->model->cfg, &layers);
    if (ts_ckpt_get_string(ck, "train.guided_alignment", &alignment) ||
        ts_ckpt_get_int(ck, "train.guided_layer", 0, layers - 1, &layer) ||
        ts_ckpt_get_int(ck, "train.guided_head", 0, heads - 1, &head)) {
        ts_clear_error();
        return;
    }
    out->guided = 1;
    out->guided_layer = (int)layer;
    out->guided_head = (int)head;
}

// How the parameters get the file's values.
enum weights_from {
    COPY,    // memcpy (the container stays the caller's)
    MOVE,    // the container's own buffers move to the model (version 1), else copy
    BORROW,  // point into the container's read-only mapping (version 2), else move
};

// Moving or borrowing needs `owned` (ck itself, the caller's to change): it
// is freed next, or kept in out->weights when borrowed from.
static int from_ckpt(const ts_ckpt *ck, ts_ckpt *owned, enum weights_from how, ts_translator *out) {
    memset(out, 0, sizeof *out);
    int64_t max_len;
    ts_model_config cfg = {0};
    int rc = TS_OK;
    for (int i = 0; !rc && i < ts_model_field_count; i++) rc = field_from_ckpt(ck, &ts_model_fields[i], &cfg);
    // Each field's bounds the getters check, naming its key; what only fields
    // together can break (heads dividing d_model) ts_model_config_check says.
    if (!rc && (rc = ts_model_config_check(&cfg)))
        return name_file(ck, ts_fail(TS_ERR_FORMAT, "its model.* header: %s", ts_last_error()));
    if (!rc) rc = ts_ckpt_get_int(ck, "data.max_len", 0, 1000000, &max_len);
    if (rc) return rc;
    out->max_len = (int)max_len;
    // Size the model before allocating it: every parameter must be in the file.
    if ((rc = check_params(ck, &cfg)) || (rc = vocab_from_ckpt(ck, "source", cfg.src_vocab, &out->src_vocab)) ||
        (rc = vocab_from_ckpt(ck, "target", cfg.tgt_vocab, &out->tgt_vocab)) ||
        (rc = subword_from_ckpt(ck, TS_CKPT_SUBWORD_SOURCE, out->src_vocab, &out->src_sw)) ||
        (rc = subword_from_ckpt(ck, TS_CKPT_SUBWORD_TARGET, out->tgt_vocab, &out->tgt_sw)))
        goto fail;
    if ((rc = normalisation_from_ckpt(ck, &out->normalisation))) goto fail;
    if (ts_normalisations[out->normalisation].keeps_text && !out->src_sw) {
        rc = name_file(ck, ts_fail(TS_ERR_FORMAT, "reads text as '%s', which only a subword model can, and has no "
                                   "blob %s", ts_normalisations[out->normalisation].name, TS_CKPT_SUBWORD_SOURCE));
        goto fail;
    }
    if (!out->src_sw != !out->tgt_sw) {
        rc = name_file(ck, ts_fail(TS_ERR_FORMAT, "has the blob %s without %s",
                                   out->src_sw ? TS_CKPT_SUBWORD_SOURCE : TS_CKPT_SUBWORD_TARGET,
                                   out->src_sw ? TS_CKPT_SUBWORD_TARGET : TS_CKPT_SUBWORD_SOURCE));
        goto fail;
    }
    ts_clear_error();
    out->model = ts_seq2seq_new(&cfg, NULL);  // no initial values: the file's come next
    if (!out->model) {
        rc = name_file(ck, ts_last_error()[0] ? TS_ERR_NOMEM : ts_fail(TS_ERR_NOMEM, "cannot allocate the model"));
        goto fail;
    }
    for (int i = 0; i < out->model->params.count; i++) {
        ts_tensor *p = out->model->params.items[i];
        size_t shape[3] = {(size_t)p->shape[0], (size_t)p->shape[1], (size_t)p->shape[2]};
        const ts_ckpt_tensor *t;
        if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, p->name, p->ndim, shape, &t))) goto fail;
        // Stored in another dtype (a float32 model saved as float64 before the
        // container had float32, or an edited file): converted into the model's.
        void *data = how != COPY && t->dtype == p->dtype ? ts_ckpt_take_tensor_data(owned, TS_CKPT_PARAMS, p->name) : NULL;
        if (data) {
            free(p->raw), p->raw = data;
        } else if (how == BORROW && t->dtype == p->dtype) {
            free(p->raw), p->raw = (void *)t->raw;  // never written: the mapping is read-only
            p->borrowed = 1;
        } else {
            ts_values_convert(p->raw, p->dtype, t->raw, t->dtype, p->size);  // a copy when the dtypes agree
        }
    }
    guided_from_ckpt(ck, out);
    return TS_OK;
fail:
    ts_translator_free(out);
    return rc;
}

int ts_translator_from_ckpt(const ts_ckpt *ck, ts_translator *out) {
    return from_ckpt(ck, NULL, COPY, out);
}

static int load(const char *path, enum weights_from how, ts_translator *out) {
    memset(out, 0, sizeof *out);
    ts_ckpt *ck;
    int rc = ts_ckpt_load(path, &(ts_ckpt_load_opts){.skip_training_state = 1}, &ck);
    if (rc) return rc;
    rc = from_ckpt(ck, ck, how, out);  // its messages name the path already
    int borrowed = 0;
    for (int i = 0; !rc && i < out->model->params.count; i++) borrowed |= out->model->params.items[i]->borrowed;
    if (borrowed) out->weights = ck;  // the mapping lives as long as the model
    else ts_ckpt_free(ck);
    return rc;
}

int ts_translator_load(const char *path, ts_translator *out) { return load(path, MOVE, out); }

int ts_translator_map(const char *path, ts_translator *out) { return load(path, BORROW, out); }

void ts_translator_free(ts_translator *t) {
    ts_seq2seq_free(t->model);
    ts_ckpt_free(t->weights);  // after the model: its parameters pointed into it
    ts_vocab_free(t->src_vocab);
    ts_vocab_free(t->tgt_vocab);
    ts_subword_free(t->src_sw);
    ts_subword_free(t->tgt_sw);
    memset(t, 0, sizeof *t);
}
