// Tensors: float64 or float32 (dtype), contiguous row-major, up to 3 dimensions.
//
// A tensor made inside a training step lives in the step's arena (see
// arena.h) and disappears at ts_arena_reset(); parameters are persistent
// (ts_tensor_new_persistent) and own their data and gradient.
//
// The autograd fields (op, src, ...) are filled by autograd/; tensor/ only
// stores them.
#ifndef TS_TENSOR_H
#define TS_TENSOR_H

#include <stddef.h>

#include "tensor/arena.h"
#include "tensor/dtype.h"
#include "tensor/status.h"

#define TS_MAX_DIMS 3
#define TS_MAX_SRC 4
// Bytes of a tensor name with its NUL: the longest PyTorch state_dict key of
// a Transformer ("transformer.decoder.layers.11.multihead_attn.out_proj.weight", 60) fits.
#define TS_NAME_SIZE 64

typedef struct ts_tensor ts_tensor;
struct ts_tensor {
    int ndim;                // 1..TS_MAX_DIMS (a scalar is shape (1))
    int shape[TS_MAX_DIMS];  // unused trailing dims are 1
    size_t size;             // product of the shape
    int dtype;               // ts_dtype: what data and grad hold (TS_F64 = 0)
    // The values as the dtype's type: float64 code reads data, templated
    // code (tensor/dtype_twice.h) raw. One pointer under three names, so the
    // float64 code written before float32 came compiles unchanged.
    union {
        double *data;        // (size) when dtype is TS_F64
        float *data_f32;     // (size) when dtype is TS_F32
        void *raw;
    };
    union {                  // (size), NULL until a gradient flows into it
        double *grad;
        float *grad_f32;
        void *grad_raw;
    };

    // Autograd bookkeeping (autograd/graph.h).
    int op;                      // enum ts_op; 0 (TS_OP_LEAF) for inputs and parameters
    ts_tensor *src[TS_MAX_SRC];  // the op's tensor inputs
    int iarg[4];                 // op arguments: flags, offsets, ignore index ...
    double darg[2];              // op arguments: scale factors, probabilities ...
    const void *aux;             // op data kept for backward (ids, masks, saved values)
    void *saved;                 // arena buffer the op's forward filled for backward
    ts_tensor *tape_prev;        // the node recorded before this one
    unsigned requires_grad : 1;  // a gradient must flow into this tensor
    unsigned persistent : 1;     // owns malloc'd data/grad (parameters, test inputs)
    unsigned borrowed : 1;       // data is a read-only mapping's (a loaded checkpoint): not freed, never written
    unsigned uses : 2;           // nodes on the tape that read it, counted up to 2 (autograd/graph.c)
    char name[TS_NAME_SIZE];     // "encoder.gru.weight_ih", or the op's name
};

// Number of rows when the last dimension is taken as the row length.
static inline size_t ts_rows(const ts_tensor *t) { return t->size / (size_t)t->shape[t->ndim - 1]; }
static inline int ts_cols(const ts_tensor *t) { return t->shape[t->ndim - 1]; }

// Fills shape and size from (ndim, dims); returns TS_ERR_SHAPE with a message
// naming `what` if ndim is out of 1..3 or a dimension is not positive.
int ts_shape_set(ts_tensor *t, int ndim, const int *dims, const char *what);

// 1 when a and b have the same ndim and dimensions.
int ts_same_shape(const ts_tensor *a, const ts_tensor *b);

// Writes "(2, 3)" into buf (at most n bytes); returns buf.
char *ts_shape_str(const ts_tensor *t, char *buf, size_t n);

// A float64 tensor in the arena with uninitialised data and no gradient.
// Returns NULL on a bad shape (TS_ERR_SHAPE) or a full arena (TS_ERR_ARENA);
// see ts_last_error().
ts_tensor *ts_tensor_new(ts_arena *arena, int ndim, const int *dims);

// As ts_tensor_new, with data set to zero.
ts_tensor *ts_tensor_zeros(ts_arena *arena, int ndim, const int *dims);

// As ts_tensor_new, holding `dtype` values.
ts_tensor *ts_tensor_new_dtype(ts_arena *arena, int dtype, int ndim, const int *dims);

// A float64 tensor that owns malloc'd, zeroed data and gradient, named `name`
// (copied, truncated to TS_NAME_SIZE - 1 bytes). Free with
// ts_tensor_free_persistent. NULL on error.
ts_tensor *ts_tensor_new_persistent(int ndim, const int *dims, const char *name);
// As ts_tensor_new_persistent, holding `dtype` values.
ts_tensor *ts_tensor_persistent_dtype(int dtype, int ndim, const int *dims, const char *name);
void ts_tensor_free_persistent(ts_tensor *t);

// Value i of t as a double, whatever its dtype.
static inline double ts_value(const ts_tensor *t, size_t i) { return t->dtype == TS_F32 ? t->data_f32[i] : t->data[i]; }

// Bytes of t's values (size times its element size).
static inline size_t ts_tensor_bytes(const ts_tensor *t) { return t->size * ts_dtype_size(t->dtype); }

#endif
