// The table of architectures (models/model.h): one row per ts_model_arch,
// each defined beside its layers in its own file, and the names read from
// it. The rows' headers build on models/model.h, so the table lives here,
// above them, and model.c, which asks the rows, above the table.
#include "models/model.h"

#include "models/rnn.h"
#include "models/transformer.h"

#include <string.h>

static const ts_model_kind *const kinds[] = {
    [TS_ARCH_GRU] = &ts_rnn_kind,
    [TS_ARCH_TRANSFORMER] = &ts_transformer_kind,
};
_Static_assert(sizeof kinds / sizeof kinds[0] == TS_ARCH_COUNT, "one row per architecture");

// Rows a program (or a test) adds at run time, after the table's:
// architecture TS_ARCH_COUNT + i is registered[i].
static const ts_model_kind *registered[TS_ARCH_MAX - TS_ARCH_COUNT];

const ts_model_kind *ts_model_kind_of(ts_model_arch arch) {
    return arch < TS_ARCH_COUNT ? kinds[arch] : registered[arch - TS_ARCH_COUNT];
}

const char *ts_arch_name(int arch) { return arch >= 0 && arch < ts_arch_names.count ? ts_model_kind_of(arch)->name : "?"; }

ts_names ts_arch_names = {.what = "architecture", .count = TS_ARCH_COUNT, .name = ts_arch_name};

int ts_model_register(const ts_model_kind *kind, ts_model_arch *arch) {
    if (!kind || !kind->name || !*kind->name) return ts_fail(TS_ERR_ARG, "register: a row without a name");
    for (int a = 0; a < ts_arch_names.count; a++)
        if (!strcmp(ts_model_kind_of(a)->name, kind->name))
            return ts_fail(TS_ERR_ARG, "register: architecture %s exists already", kind->name);
    if (ts_arch_names.count >= TS_ARCH_MAX)
        return ts_fail(TS_ERR_ARG, "register: architecture %s: the table is full (%d rows)", kind->name, TS_ARCH_MAX);
    registered[ts_arch_names.count - TS_ARCH_COUNT] = kind;
    *arch = (ts_model_arch)ts_arch_names.count++;
    return TS_OK;
}

int ts_arch_parse(const char *name, ts_model_arch *arch) {
    int v, rc = ts_names_parse(&ts_arch_names, name, &v);
    if (!rc) *arch = (ts_model_arch)v;
    return rc;
}
