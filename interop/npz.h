// NumPy .npz files: a zip archive of .npy arrays, as numpy.savez and
// numpy.savez_compressed write them and numpy.load reads them. Written and
// read with zlib alone. The layout we write and what we accept are in
// docs/interop.md; this header is the API. The code: npz.c (the container in
// memory), npz_write.c (the zip writer, atomic save), npz_read.c (the bounded
// zip and .npy reader), npz_internal.h (what the three share).
//
// The container knows nothing about models (interop/model_npz.h maps a model
// onto it). It holds named arrays of float64 ('<f8'), float32 ('<f4'), bytes
// ('|u1', numpy.uint8) and Unicode strings ('<U<n>', kept here as UTF-8).
// Every array is in C order.
//
// Ownership: a ts_npz owns copies of everything added to it; pointers
// returned by getters stay valid until the container is freed. Every function
// that can fail returns a ts_status (tensor/status.h) and records a message
// naming the file and the entry (ts_last_error()); none prints or exits.
#ifndef TS_NPZ_H
#define TS_NPZ_H

#include <stddef.h>
#include <stdint.h>

// ---- limits (a file that exceeds one is rejected) -----------------------------
#define TS_NPZ_MAX_ENTRIES 4096      // arrays per file
#define TS_NPZ_MAX_NAME 255          // array name, bytes (the entry adds ".npy")
#define TS_NPZ_MAX_NDIM 8
#define TS_NPZ_MAX_HEADER 16384      // .npy header dict, bytes
#define TS_NPZ_MAX_WIDTH 4096        // '<U<n>': code points per string
#define TS_NPZ_MAX_STRINGS (1u << 24) // strings per array
// No ZIP64: every entry and the whole archive stay below 4 GiB.
#define TS_NPZ_MAX_ENTRY_BYTES UINT64_C(0xfffffffe)
// Default cap on the sum of the entries' uncompressed sizes; see ts_npz_load_opts.
#define TS_NPZ_DEFAULT_MAX_PAYLOAD (UINT64_C(2) << 30)

typedef struct ts_npz ts_npz;

enum ts_npz_dtype {
    TS_NPZ_F8 = 0,  // '<f8': float64, little-endian
    TS_NPZ_STR = 1, // '<U<n>': fixed-width UTF-32LE in the file, UTF-8 here
    TS_NPZ_F4 = 2,  // '<f4': float32, little-endian in the file, held as float64 here (exactly)
    TS_NPZ_U1 = 3,  // '|u1': bytes (numpy.uint8), held as they are
};

// One array. shape[i] >= 1 for i < ndim (ndim 0 is a scalar of size 1).
// Owned by the container: read-only.
typedef struct ts_npz_array {
    const char *name;          // without ".npy": "encoder.gru.weight_ih_l0"
    enum ts_npz_dtype dtype;
    int ndim;
    size_t shape[TS_NPZ_MAX_NDIM];
    size_t size;               // product of the shape
    const double *values;      // TS_NPZ_F8, TS_NPZ_F4: (size) values; else NULL
    const char *const *strings; // TS_NPZ_STR: (size) UTF-8 strings; else NULL
    const uint8_t *bytes;      // TS_NPZ_U1: (size) bytes; else NULL
} ts_npz_array;

// ---- building ------------------------------------------------------------------

// A new empty container, or NULL when out of memory (message set).
ts_npz *ts_npz_new(void);

// Frees the container and everything it owns. NULL is a no-op.
void ts_npz_free(ts_npz *z);

// Appends a copy of a float64 array (values stored bit-exactly). `name` is
// 1..TS_NPZ_MAX_NAME bytes of printable ASCII other than space, '/' and '\',
// unique in the container; 0 <= ndim <= TS_NPZ_MAX_NDIM, every shape[i] >= 1.
// Errors: TS_ERR_ARG naming what is wrong, TS_ERR_NOMEM.
int ts_npz_add_f8(ts_npz *z, const char *name, int ndim, const size_t *shape, const double *values);

// As ts_npz_add_f8 for a float32 array: written as '<f4' (half the bytes),
// read back as float64 values that hold the floats exactly.
int ts_npz_add_f4(ts_npz *z, const char *name, int ndim, const size_t *shape, const float *values);

// Appends a copy of an array of bytes, written as '|u1' (numpy.uint8): a
// file's or a blob's bytes. Names and shapes as above.
int ts_npz_add_u1(ts_npz *z, const char *name, int ndim, const size_t *shape, const uint8_t *bytes);

// Appends a copy of an array of strings (valid UTF-8 without NUL, at most
// TS_NPZ_MAX_WIDTH code points each). Names and shapes as above.
int ts_npz_add_strings(ts_npz *z, const char *name, int ndim, const size_t *shape,
                       const char *const *strings);

// ---- reading -------------------------------------------------------------------

size_t ts_npz_count(const ts_npz *z);
// Array i < ts_npz_count, in file order.
const ts_npz_array *ts_npz_at(const ts_npz *z, size_t i);
// The array called `name`, or NULL.
const ts_npz_array *ts_npz_find(const ts_npz *z, const char *name);

// ---- saving --------------------------------------------------------------------

enum ts_npz_method {
    TS_NPZ_DEFLATE = 0, // as numpy.savez_compressed (an entry that would not
                        // shrink is stored instead)
    TS_NPZ_STORE = 1,   // as numpy.savez
};

// Serialises `z` into a malloc'd buffer (*out, *len; free() it). The same
// content gives the same bytes (fixed timestamps and compression level).
// Errors: TS_ERR_ARG when the archive would need ZIP64 (an entry or the whole
// file of 4 GiB or more), TS_ERR_NOMEM.
int ts_npz_save_mem(const ts_npz *z, enum ts_npz_method method, unsigned char **out, size_t *len);

// Writes `z` to `path` atomically, as the checkpoint writer does: a temporary
// file "<path>.tmp-XXXXXX" in the same directory, fsync, rename over `path`,
// fsync of the directory. On failure an existing `path` is untouched and the
// temporary file removed. Errors: TS_ERR_IO naming the path, those of
// ts_npz_save_mem.
int ts_npz_save(const ts_npz *z, const char *path, enum ts_npz_method method);

// ---- loading -------------------------------------------------------------------

typedef struct ts_npz_load_opts {
    // Largest accepted sum of the entries' uncompressed sizes in bytes
    // (0 = TS_NPZ_DEFAULT_MAX_PAYLOAD). Checked on the declared sizes before
    // anything is inflated; an entry that inflates past its declared size is
    // rejected as soon as it does.
    uint64_t max_payload;
} ts_npz_load_opts;

// Reads and fully validates an .npz file (opts NULL = defaults): zip
// structure (every offset, size and count within the file, entries disjoint,
// no duplicate names, CRC-32s), stored or deflated entries only, each a .npy
// of version 1.0 or 2.0 in C order with dtype '<f8', '<f4', '|u1' or '<U<n>'. On success
// stores a new container in *out (free with ts_npz_free); *out is NULL on
// failure. Errors: TS_ERR_IO (open/read), TS_ERR_FORMAT with a message naming
// the path, the entry and what is wrong, TS_ERR_NOMEM.
int ts_npz_load(const char *path, const ts_npz_load_opts *opts, ts_npz **out);

// As ts_npz_load, from the bytes data[0..len); `what` names them in messages.
int ts_npz_load_mem(const void *data, size_t len, const char *what, const ts_npz_load_opts *opts,
                    ts_npz **out);

#endif
