// The configuration's names, limits and parameter specs (models/config.h).
#include "models/config.h"

#include "models/attention.h"
#include "models/model.h"
#include "tensor/init.h"
#include "tensor/tokens.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const decoder_names[TS_DECODER_COUNT] = {
    [TS_DECODER_BAHDANAU] = "bahdanau", [TS_DECODER_LUONG] = "luong"};

const char *ts_decoder_name(ts_decoder_type type) {
    return type >= 0 && type < TS_DECODER_COUNT ? decoder_names[type] : "?";
}

int ts_decoder_parse(const char *name, ts_decoder_type *type) {
    for (int i = 0; i < TS_DECODER_COUNT; i++)
        if (!strcmp(name, decoder_names[i])) {
            *type = (ts_decoder_type)i;
            return TS_OK;
        }
    return ts_fail(TS_ERR_ARG, "unknown decoder '%s' (bahdanau, luong)", name);
}

static const char *attn_name(int v) { return ts_attn_name((ts_attn_type)v); }
static int attn_parse(const char *name, int *v) {
    ts_attn_type t = TS_ATTN_NONE;
    int rc = ts_attn_parse(name, &t);
    if (!rc) *v = (int)t;
    return rc;
}
static const char *decoder_name(int v) { return ts_decoder_name((ts_decoder_type)v); }
static int decoder_parse(const char *name, int *v) {
    ts_decoder_type t = TS_DECODER_BAHDANAU;
    int rc = ts_decoder_parse(name, &t);
    if (!rc) *v = (int)t;
    return rc;
}
static const char *arch_name(int v) { return ts_arch_name((ts_model_arch)v); }
static int arch_parse(const char *name, int *v) {
    ts_model_arch a = TS_ARCH_GRU;
    int rc = ts_arch_parse(name, &a);
    if (!rc) *v = (int)a;
    return rc;
}

static const char *dtype_name(int v) { return ts_dtype_name(v); }
static int dtype_parse(const char *name, int *v) { return ts_dtype_parse(name, v); }

#define FIELD(f) .offset = offsetof(ts_model_config, f)
#define NAMED(f, names) FIELD(f), .name_of = names##_name, .parse = names##_parse
#define GRU (1u << TS_ARCH_GRU)
#define TRANSFORMER (1u << TS_ARCH_TRANSFORMER)
_Static_assert(sizeof(ts_attn_type) == sizeof(int) && sizeof(ts_decoder_type) == sizeof(int) &&
               sizeof(ts_model_arch) == sizeof(int) && sizeof(ts_dtype) == sizeof(int), "named fields are int-sized");

// The architecture comes first: which rows a file has depends on it.
const ts_model_field ts_model_fields[] = {
    {.key = "architecture", .label = "architecture", .flag = "--arch", NAMED(arch, arch), .newer = 1},
    {.key = "attention", .label = "attention", .flag = "--attn", NAMED(attn, attn), .archs = GRU},
    {.key = "decoder", .label = "decoder", .flag = "--decoder", NAMED(decoder, decoder), .archs = GRU},
    {.key = "bidirectional", .label = "bidirectional", .flag = "--bidirectional", FIELD(bidirectional), .lo = 0, .hi = 1,
     .archs = GRU},
    {.key = "embedding", .label = "embedding", .flag = "--emb", FIELD(emb), .lo = 1, .hi = TS_MODEL_MAX_EMB},
    {.key = "hidden", .label = "hidden", .flag = "--hidden", FIELD(hidden), .lo = 1, .hi = TS_MODEL_MAX_HIDDEN},
    {.key = "d_model", .label = "d_model", .flag = "--d-model", FIELD(d_model), .lo = 1, .hi = TS_MODEL_MAX_HIDDEN,
     .archs = TRANSFORMER},
    {.key = "heads", .label = "heads", .flag = "--heads", FIELD(heads), .lo = 1, .hi = TS_MODEL_MAX_HIDDEN,
     .archs = TRANSFORMER},
    {.key = "layers", .label = "layers", .flag = "--layers", FIELD(layers), .lo = 1, .hi = TS_MODEL_MAX_LAYERS,
     .archs = TRANSFORMER},
    {.key = "feed_forward", .label = "feed-forward width", .flag = "--ff", FIELD(ff), .lo = 1, .hi = TS_MODEL_MAX_FF,
     .archs = TRANSFORMER},
    {.key = "source_vocabulary", .label = "source vocabulary", FIELD(src_vocab), .lo = TS_MODEL_MIN_VOCAB,
     .hi = TS_MODEL_MAX_VOCAB},
    {.key = "target_vocabulary", .label = "target vocabulary", FIELD(tgt_vocab), .lo = TS_MODEL_MIN_VOCAB,
     .hi = TS_MODEL_MAX_VOCAB},
    {.key = "dtype", .label = "dtype", .flag = "--dtype", NAMED(dtype, dtype), .newer = 1},
};
const int ts_model_field_count = (int)(sizeof ts_model_fields / sizeof ts_model_fields[0]);

int ts_model_field_get(const ts_model_config *c, const ts_model_field *f) {
    return *(const int *)((const char *)c + f->offset);
}

void ts_model_field_set(ts_model_config *c, const ts_model_field *f, int value) {
    *(int *)((char *)c + f->offset) = value;
}

int ts_model_field_applies(const ts_model_field *f, ts_model_arch arch) { return !f->archs || (f->archs >> arch & 1u); }

void ts_model_config_default_sizes(ts_model_config *c) {
    if (c->arch != TS_ARCH_TRANSFORMER) return;
    if (!c->d_model) c->d_model = c->hidden;
    if (!c->heads) c->heads = 2;
    if (!c->layers) c->layers = 2;
    if (!c->ff) c->ff = 4 * c->d_model;
}

int ts_model_config_check(const ts_model_config *c) {
    if (c->arch < 0 || c->arch >= TS_ARCH_COUNT) return ts_fail(TS_ERR_ARG, "architecture %d", (int)c->arch);
    if (c->src_vocab < TS_MODEL_MIN_VOCAB || c->src_vocab > TS_MODEL_MAX_VOCAB)
        return ts_fail(TS_ERR_ARG, "source vocabulary of %d words", c->src_vocab);
    if (c->tgt_vocab < TS_MODEL_MIN_VOCAB || c->tgt_vocab > TS_MODEL_MAX_VOCAB)
        return ts_fail(TS_ERR_ARG, "target vocabulary of %d words", c->tgt_vocab);
    if (c->emb < 1 || c->emb > TS_MODEL_MAX_EMB)
        return ts_fail(TS_ERR_ARG, "embedding size %d (1 to %d)", c->emb, TS_MODEL_MAX_EMB);
    if (c->hidden < 1 || c->hidden > TS_MODEL_MAX_HIDDEN)
        return ts_fail(TS_ERR_ARG, "hidden size %d (1 to %d)", c->hidden, TS_MODEL_MAX_HIDDEN);
    if (c->attn < 0 || c->attn >= TS_ATTN_COUNT) return ts_fail(TS_ERR_ARG, "attention type %d", (int)c->attn);
    if (c->decoder < 0 || c->decoder >= TS_DECODER_COUNT) return ts_fail(TS_ERR_ARG, "decoder type %d", (int)c->decoder);
    if (c->bidirectional != 0 && c->bidirectional != 1) return ts_fail(TS_ERR_ARG, "bidirectional = %d", c->bidirectional);
    if (c->dtype < 0 || c->dtype >= TS_DTYPE_COUNT) return ts_fail(TS_ERR_ARG, "dtype %d", c->dtype);
    if (c->arch != TS_ARCH_TRANSFORMER) return TS_OK;
    if (c->d_model < 1 || c->d_model > TS_MODEL_MAX_HIDDEN)
        return ts_fail(TS_ERR_ARG, "d_model %d (1 to %d)", c->d_model, TS_MODEL_MAX_HIDDEN);
    if (c->heads < 1 || c->heads > c->d_model || c->d_model % c->heads)
        return ts_fail(TS_ERR_ARG, "heads %d do not divide d_model %d", c->heads, c->d_model);
    if (c->layers < 1 || c->layers > TS_MODEL_MAX_LAYERS)
        return ts_fail(TS_ERR_ARG, "layers %d (1 to %d per stack)", c->layers, TS_MODEL_MAX_LAYERS);
    if (c->ff < 1 || c->ff > TS_MODEL_MAX_FF)
        return ts_fail(TS_ERR_ARG, "feed-forward width %d (1 to %d)", c->ff, TS_MODEL_MAX_FF);
    return TS_OK;
}

char *ts_model_transformer_sizes(const ts_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, "d_model %d, %d heads, %d layers per stack, feed-forward %d", c->d_model, c->heads, c->layers, c->ff);
    return buf;
}

char *ts_model_attention_title(const ts_model_config *c, char *buf, size_t n) {
    if (c->arch == TS_ARCH_TRANSFORMER)  // the search keeps the last layer's cross-attention head mean
        snprintf(buf, n, "transformer cross-attention, layer %d (the last of %d), mean of %d heads", c->layers - 1,
                 c->layers, c->heads);
    else
        snprintf(buf, n, "%s (%s decoder)", ts_attn_name(c->attn), ts_decoder_name(c->decoder));
    return buf;
}

int ts_model_memory_width(const ts_model_config *c) { return c->bidirectional ? 2 * c->hidden : c->hidden; }

int ts_model_check_ids(ts_ctx *ctx, const char *what, const int *ids, size_t n, int vocab) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "%s[%zu] = %d outside the vocabulary of %d", what, i, ids[i], vocab);
            return 0;
        }
    return 1;
}

int ts_param_spec_set(ts_param_spec *spec, ts_tensor **slot, double bound, int ndim, int d0, int d1,
                      const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(spec->shape.name, sizeof spec->shape.name, fmt, ap);
    va_end(ap);
    spec->shape.ndim = ndim;
    spec->shape.shape[0] = d0;
    spec->shape.shape[1] = ndim == 2 ? d1 : 0;
    spec->bound = bound;
    spec->slot = slot;
    return 1;
}

int ts_param_specs_create(ts_params *params, gsl_rng *rng, const ts_param_spec *specs, int n) {
    for (int i = 0; i < n; i++) {
        const ts_param_spec *s = &specs[i];
        ts_tensor *t = ts_params_add(params, s->shape.name, s->shape.ndim, s->shape.shape);
        if (!t) return TS_ERR_NOMEM;
        if (s->bound == TS_INIT_EMBEDDING || s->bound == TS_INIT_EMBEDDING_SCALED) {
            double std = s->bound == TS_INIT_EMBEDDING ? 1.0 : 1.0 / sqrt((double)t->shape[1]);
            ts_init_normal(t, rng, std);
            memset(t->data + (size_t)TS_PAD * t->shape[1], 0, (size_t)t->shape[1] * sizeof(double));
        } else if (s->bound == TS_INIT_ONES) {
            for (size_t k = 0; k < t->size; k++) t->data[k] = 1.0;
        } else {
            ts_init_uniform(t, rng, -s->bound, s->bound);
        }
        *s->slot = t;
    }
    return TS_OK;
}
