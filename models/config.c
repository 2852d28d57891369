// The configuration's names, limits and parameter specs (models/config.h).
#include "models/config.h"

#include "tensor/init.h"
#include "tensor/tokens.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char *ts_decoder_name(int type) {
    static const char *const names[TS_DECODER_COUNT] = {[TS_DECODER_BAHDANAU] = "bahdanau", [TS_DECODER_LUONG] = "luong"};
    return type >= 0 && type < TS_DECODER_COUNT ? names[type] : "?";
}

const ts_names ts_decoder_names = {.what = "decoder", .count = TS_DECODER_COUNT, .name = ts_decoder_name};

int ts_decoder_parse(const char *name, ts_decoder_type *type) {
    int v, rc = ts_names_parse(&ts_decoder_names, name, &v);
    if (!rc) *type = (ts_decoder_type)v;
    return rc;
}

#define FIELD(f) .offset = offsetof(ts_model_config, f)
#define GRU (1u << TS_ARCH_GRU)
#define TRANSFORMER (1u << TS_ARCH_TRANSFORMER)
_Static_assert(sizeof(ts_attn_type) == sizeof(int) && sizeof(ts_decoder_type) == sizeof(int) &&
               sizeof(ts_model_arch) == sizeof(int) && sizeof(ts_dtype) == sizeof(int) && sizeof(ts_cell_type) == sizeof(int),
               "named fields are int-sized");

// The architecture comes first: which rows a file has depends on it. A
// Transformer's sizes left at 0 (their flags' default: not given) take the
// defaults of ts_model_config_default_sizes.
const ts_model_field ts_model_fields[TS_FIELD_COUNT] = {
    [TS_FIELD_ARCH] = {
        .set = {.flag = "arch", .key = "arch", .text = "gru", .names = &ts_arch_names, .meta = "NAME",
                .help = "gru or transformer (default {}; docs/models.md)"},
        .key = "architecture", .label = "architecture", FIELD(arch), .newer = 1},
    [TS_FIELD_ATTN] = {
        .set = {.flag = "attn", .key = "attention", .text = "bahdanau", .names = &ts_attn_names, .meta = "NAME",
                .help = "bahdanau, dot, general, concat, scaled-dot or none (default {})"},
        .key = "attention", .label = "attention", FIELD(attn), .archs = GRU},
    [TS_FIELD_DECODER] = {
        .set = {.flag = "decoder", .key = "decoder", .text = "bahdanau", .names = &ts_decoder_names, .meta = "NAME",
                .help = "bahdanau or luong (default: bahdanau for --attn bahdanau, else luong)"},
        .key = "decoder", .label = "decoder", FIELD(decoder), .archs = GRU},
    [TS_FIELD_BIDIRECTIONAL] = {
        .set = {.flag = "bidirectional", .key = "bidirectional", .lo = 0, .hi = 1, .help = "bidirectional encoder"},
        .key = "bidirectional", .label = "bidirectional", FIELD(bidirectional), .archs = GRU},
    // Newer than the files of the GRU's years: a GRU model's keep their bytes, and theirs read as gru.
    [TS_FIELD_CELL] = {
        .set = {.flag = "cell", .key = "cell", .text = "gru", .names = &ts_cell_names, .meta = "NAME",
                .help = "the recurrent cell: {names} (default {}; docs/models.md)"},
        .key = "cell", .label = "cell", FIELD(cell), .archs = GRU, .newer = 1},
    [TS_FIELD_EMB] = {
        .set = {.flag = "emb", .key = "emb", .lo = 1, .hi = TS_MODEL_MAX_EMB, .value = 64, .meta = "N",
                .help = "embedding size (default {})"},
        .key = "embedding", .label = "embedding", FIELD(emb), .flag_archs = GRU},
    [TS_FIELD_HIDDEN] = {
        .set = {.flag = "hidden", .key = "hidden", .lo = 1, .hi = TS_MODEL_MAX_HIDDEN, .value = 128, .meta = "N",
                .help = "hidden size (default {}; a Transformer's: below)"},
        .key = "hidden", .label = "hidden", FIELD(hidden)},
    [TS_FIELD_D_MODEL] = {
        .set = {.flag = "d-model", .key = "d_model", .lo = 1, .hi = TS_MODEL_MAX_HIDDEN, .value = 0, .meta = "N",
                .help = "transformer: model width (default: --hidden)"},
        .key = "d_model", .label = "d_model", FIELD(d_model), .archs = TRANSFORMER},
    [TS_FIELD_HEADS] = {
        .set = {.flag = "heads", .key = "heads", .lo = 1, .hi = TS_MODEL_MAX_HIDDEN, .value = 0, .meta = "N",
                .help = "transformer: attention heads, dividing --d-model (default: below)"},
        .key = "heads", .label = "heads", FIELD(heads), .archs = TRANSFORMER},
    [TS_FIELD_LAYERS] = {
        .set = {.flag = "layers", .key = "layers", .lo = 1, .hi = TS_MODEL_MAX_LAYERS, .value = 0, .meta = "N",
                .help = "transformer: layers per stack (default: below)"},
        .key = "layers", .label = "layers", FIELD(layers), .archs = TRANSFORMER},
    [TS_FIELD_FF] = {
        .set = {.flag = "ff", .key = "ff", .lo = 1, .hi = TS_MODEL_MAX_FF, .value = 0, .meta = "N",
                .help = "transformer: feed-forward width (default 4 d_model)"},
        .key = "feed_forward", .label = "feed-forward width", FIELD(ff), .archs = TRANSFORMER},
    [TS_FIELD_SRC_VOCAB] = {.set = {.lo = TS_MODEL_MIN_VOCAB, .hi = TS_MODEL_MAX_VOCAB}, .key = "source_vocabulary",
                            .label = "source vocabulary", FIELD(src_vocab)},
    [TS_FIELD_TGT_VOCAB] = {.set = {.lo = TS_MODEL_MIN_VOCAB, .hi = TS_MODEL_MAX_VOCAB}, .key = "target_vocabulary",
                            .label = "target vocabulary", FIELD(tgt_vocab)},
    [TS_FIELD_DTYPE] = {
        .set = {.flag = "dtype", .key = "dtype", .text = "float32", .names = &ts_dtype_names, .meta = "NAME",
                .help = "float64 or float32, GRU and Transformer: the parameters, the\n"
                        "optimizer's moments, every step's numbers and the checkpoint's\n"
                        "tensors (default {}; sums and the loss stay float64;\n"
                        "translate, attend and eval run in the checkpoint's dtype)"},
        .key = "dtype", .label = "dtype", FIELD(dtype), .newer = 1},
};
const int ts_model_field_count = TS_FIELD_COUNT;

int ts_model_field_get(const ts_model_config *c, const ts_model_field *f) {
    return *(const int *)((const char *)c + f->offset);
}

void ts_model_field_set(ts_model_config *c, const ts_model_field *f, int value) {
    *(int *)((char *)c + f->offset) = value;
}

int ts_model_field_applies(const ts_model_field *f, ts_model_arch arch) { return !f->archs || (f->archs >> arch & 1u); }

unsigned ts_model_field_flag_archs(const ts_model_field *f) {
    unsigned archs = f->flag_archs ? f->flag_archs : f->archs;
    return archs ? archs : ~0u;
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

int ts_param_specs_create(ts_params *params, gsl_rng *rng, int dtype, const ts_param_spec *specs, int n) {
    for (int i = 0; i < n; i++) {
        const ts_param_spec *s = &specs[i];
        ts_tensor *t = ts_params_add_dtype(params, rng ? TS_F64 : dtype, s->shape.name, s->shape.ndim, s->shape.shape);
        if (!t) return TS_ERR_NOMEM;
        if (!rng) {  // nothing to draw: zeros (calloc's), and ones where a bound says so
            for (size_t k = 0; s->bound == TS_INIT_ONES && k < t->size; k++)
                if (t->dtype == TS_F32) t->data_f32[k] = 1.0f;
                else t->data[k] = 1.0;
        } else if (s->bound == TS_INIT_EMBEDDING || s->bound == TS_INIT_EMBEDDING_SCALED) {
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
