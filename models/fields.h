// The fields of ts_model_config as a table (models/fields.c), one row per
// field: its flag, bounds, default and help, its checkpoint key and the
// architectures that have it. Above the tables whose names its choices read
// (attention, cell, architecture), which is why it is not in models/config.
#ifndef TS_MODELS_FIELDS_H
#define TS_MODELS_FIELDS_H

#include "models/config.h"

// The fields of ts_model_config, in the order checkpoints write them.
enum ts_model_field_id {
    TS_FIELD_ARCH, TS_FIELD_ATTN, TS_FIELD_DECODER, TS_FIELD_BIDIRECTIONAL, TS_FIELD_CELL, TS_FIELD_EMB, TS_FIELD_HIDDEN,
    TS_FIELD_D_MODEL, TS_FIELD_HEADS, TS_FIELD_LAYERS, TS_FIELD_FF, TS_FIELD_SRC_VOCAB, TS_FIELD_TGT_VOCAB,
    TS_FIELD_DTYPE, TS_FIELD_COUNT
};

// One field of ts_model_config, once: how users set it (its flag, config.txt
// key, bounds or names, default and help: train's options table points to
// `set`), how checkpoints name it, and which architectures have it.
// ts_model_config_check checks every field by its row; checkpoints write and
// read the rows in order (infer/load.c), averaging and resuming compare them.
typedef struct {
    ts_setting set;     // set.lo, set.hi bound a number; set.names names a choice
    const char *key;    // the checkpoint header key after "model."
    const char *label;  // how messages name it
    size_t offset;      // of its int (or enum) in ts_model_config
    unsigned archs;     // a bit (1u << arch) per architecture that has it; 0 for all
    unsigned flag_archs;  // where they differ, those whose flag sets it (0: archs): a Transformer
                          // has an embedding (its checkpoints keep it: d_model) but no --emb
    int newer;          // newer than some files: written only when not 0, read as 0 when absent
    int (*derived)(const ts_model_config *cfg);
                        // its default when not given, read from the fields before it
                        // (NULL: set.value or set.text)
} ts_model_field;

extern const ts_model_field ts_model_fields[TS_FIELD_COUNT];
extern const int ts_model_field_count;

// Field f of cfg, and setting it.
int ts_model_field_get(const ts_model_config *cfg, const ts_model_field *f);
void ts_model_field_set(ts_model_config *cfg, const ts_model_field *f, int value);
// Sets each field with a derived default that given[f] (TS_FIELD_COUNT
// entries) says was not given, in the table's order: after the fields it
// reads have their final values.
void ts_model_fields_derive(ts_model_config *cfg, const int given[]);
// 1 when a model of architecture arch has field f.
int ts_model_field_applies(const ts_model_field *f, ts_model_arch arch);
// The architectures whose flag sets field f, a bit (1u << arch) each.
unsigned ts_model_field_flag_archs(const ts_model_field *f);

#endif
