// The table of architectures (models/model.h): one row per ts_model_arch,
// each defined beside its layers in its own file, and the names read from
// it. The rows' headers build on models/model.h, so the table lives here,
// above them, and model.c, which asks the rows, above the table.
#include "models/model.h"

#include "models/rnn.h"
#include "models/transformer.h"

static const ts_model_kind *const kinds[] = {
    [TS_ARCH_GRU] = &ts_rnn_kind,
    [TS_ARCH_TRANSFORMER] = &ts_transformer_kind,
};
_Static_assert(sizeof kinds / sizeof kinds[0] == TS_ARCH_COUNT, "one row per architecture");

const ts_model_kind *ts_model_kind_of(ts_model_arch arch) { return kinds[arch]; }

const char *ts_arch_name(int arch) { return arch >= 0 && arch < TS_ARCH_COUNT ? ts_model_kind_of(arch)->name : "?"; }

const ts_names ts_arch_names = {.what = "architecture", .count = TS_ARCH_COUNT, .name = ts_arch_name};

int ts_arch_parse(const char *name, ts_model_arch *arch) {
    int v, rc = ts_names_parse(&ts_arch_names, name, &v);
    if (!rc) *arch = (ts_model_arch)v;
    return rc;
}
