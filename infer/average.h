// Checkpoint averaging: the element-wise mean of the parameters of several
// checkpoints of one model (same configuration, same vocabularies), e.g. the
// last epochs of a run kept with `train --keep N`. Averaging nearby points
// of one run usually scores a little better than any of them alone.
#ifndef TS_AVERAGE_H
#define TS_AVERAGE_H

#include "infer/load.h"

// Loads paths[0..n) (n >= 1) for inference and fills *out with the model of
// paths[0] whose every parameter is the mean over the n files, summed in
// file order and divided by n (so the result does not depend on timing).
// Errors name the file: unreadable or corrupt (the loader's), another model
// configuration or data.max_len (TS_ERR_ARG, naming the first differing
// field), other vocabularies (TS_ERR_ARG, naming the first differing word),
// TS_ERR_NOMEM. *out is zeroed on failure.
int ts_average_models(const char *const *paths, int n, ts_translator *out);

#endif
