// The table of ts_model_config's fields (models/fields.h). Its choices point
// to the names of the attention, cell and architecture tables, so it sits
// above them; the layers' shared helpers stay below, in models/config.c.
#include "models/fields.h"

#include <stddef.h>

#define FIELD(f) .offset = offsetof(ts_model_config, f)
#define GRU (1u << TS_ARCH_GRU)
#define TRANSFORMER (1u << TS_ARCH_TRANSFORMER)
_Static_assert(sizeof(ts_attn_type) == sizeof(int) && sizeof(ts_decoder_type) == sizeof(int) &&
               sizeof(ts_model_arch) == sizeof(int) && sizeof(ts_dtype) == sizeof(int) && sizeof(ts_cell_type) == sizeof(int),
               "named fields are int-sized");

// A GRU's decoder follows its attention unless given: Bahdanau's additive
// attention went with Bahdanau's decoder, the others with Luong's.
static int decoder_of_attention(const ts_model_config *c) {
    return c->attn == TS_ATTN_BAHDANAU ? TS_DECODER_BAHDANAU : TS_DECODER_LUONG;
}

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
        .key = "decoder", .label = "decoder", FIELD(decoder), .archs = GRU, .derived = decoder_of_attention},
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

void ts_model_fields_derive(ts_model_config *c, const int given[]) {
    for (int f = 0; f < TS_FIELD_COUNT; f++)
        if (ts_model_fields[f].derived && !given[f]) ts_model_field_set(c, &ts_model_fields[f], ts_model_fields[f].derived(c));
}

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
