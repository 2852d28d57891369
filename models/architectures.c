// The table of architectures (models/model.h): one row per ts_model_arch,
// each defined beside its layers in its own file. The rows' headers build on
// models/model.h, so the table lives here, above them, and model.c, which
// asks the rows, below them.
#include "models/model.h"

#include "models/rnn.h"
#include "models/transformer.h"

static const ts_model_kind *const kinds[] = {
    [TS_ARCH_GRU] = &ts_rnn_kind,
    [TS_ARCH_TRANSFORMER] = &ts_transformer_kind,
};
_Static_assert(sizeof kinds / sizeof kinds[0] == TS_ARCH_COUNT, "one row per architecture");

const ts_model_kind *ts_model_kind_of(ts_model_arch arch) { return kinds[arch]; }
