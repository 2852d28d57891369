// The parameter registry: every trainable tensor by name
// ("encoder.gru.weight_ih"), in registration order. The optimizer, the
// gradient check and the checkpoint all iterate this one list.
#ifndef TS_PARAMS_H
#define TS_PARAMS_H

#include "tensor/tensor.h"

typedef struct {
    ts_tensor **items;  // (count) persistent tensors, owned
    int count;
    int capacity;
} ts_params;

void ts_params_init(ts_params *p);

// Registers a new zero-initialised float64 parameter that owns its data and
// gradient. NULL (with ts_last_error set) on a duplicate or too long name
// (TS_NAME_SIZE - 1 bytes max), a bad shape or no memory. The registry owns the tensor.
ts_tensor *ts_params_add(ts_params *p, const char *name, int ndim, const int *dims);
// The same in dtype.
ts_tensor *ts_params_add_dtype(ts_params *p, int dtype, const char *name, int ndim, const int *dims);

// The parameter called `name`, or NULL.
ts_tensor *ts_params_find(const ts_params *p, const char *name);

// Converts every parameter's values to `dtype` (its gradient becomes zeros
// of that dtype). TS_OK, or TS_ERR_NOMEM with the parameters unchanged from
// the one that failed on.
int ts_params_convert(ts_params *p, int dtype);

// Sets every gradient to zero.
void ts_params_zero_grad(ts_params *p);

// Total number of values over all parameters.
size_t ts_params_size(const ts_params *p);

// Frees every parameter and the list.
void ts_params_free(ts_params *p);

#endif
