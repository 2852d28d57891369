// Checkpoint files: a model-independent container of header key=value
// strings, vocabularies, named tensors (parameters and optimizer state) and
// opaque binary blobs (RNG state). The byte layout is in docs/checkpoint.md;
// this header is the API. The code: ckpt.c (the container in memory, its
// layout and the internals the loader and writer share in container.h),
// header.c (the header entries, typed), write.c (sizing, atomic save),
// read.c (mapping or inflating a file), parse.c (the bounded parse of its
// payload, parse.h), inflate.c (version 1's gzip), format.h (the byte
// layout's constants and encoding), crc.c (ts_crc32). The internal headers
// build on this one, and container.h and format.h never include each other:
// the container knows no bytes of the file.
//
// Version 2 files (written now) are uncompressed, with every tensor's data
// 64-byte aligned, so loading maps the file and the tensors point into the
// mapping; version 1 files (gzip, from older builds) still load.
//
// The container knows nothing about models: the model and trainer map
// themselves onto it (tensor names, header keys) and check on load that what
// they find fits what the header implies (ts_ckpt_expect_tensor).
//
// Ownership: a ts_ckpt owns copies of everything added to it (or, for a
// loaded version-2 file, the mapping its tensors point into); pointers
// returned by getters stay valid until the entry is replaced or the container
// is freed. Every function that can fail returns a ts_status (tensor/status.h)
// and records a message naming what is wrong (ts_last_error()); none of them
// prints, exits or aborts.
#ifndef TS_CHECKPOINT_H
#define TS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tensor/atomic_write.h"
#include "tensor/dtype.h"

// ---- format limits (a loaded file that exceeds one is rejected) ------------
#define TS_CKPT_VERSION 2u                 // written; versions 1 and 2 are read
#define TS_CKPT_MAX_NAME 255               // keys, vocab/tensor/blob names: bytes
#define TS_CKPT_MAX_VALUE 4096             // header value: bytes
#define TS_CKPT_MAX_ENTRIES 4096           // header entries
#define TS_CKPT_MAX_VOCABS 16              // vocabularies
#define TS_CKPT_MAX_TOKENS (1u << 24)      // tokens per vocabulary
#define TS_CKPT_MAX_TOKEN 1024             // token: bytes
#define TS_CKPT_MAX_TENSORS 65536          // tensors per section
#define TS_CKPT_MAX_NDIM 3
#define TS_CKPT_MAX_BLOBS 64
// Default cap on the decompressed payload; raise it through ts_ckpt_load_opts.
#define TS_CKPT_DEFAULT_MAX_PAYLOAD (UINT64_C(2) << 30)

typedef struct ts_ckpt ts_ckpt;

// The two tensor sections. Names are unique within a section.
enum ts_ckpt_section {
    TS_CKPT_PARAMS = 0, // model parameters, "encoder.gru.weight_ih"
    TS_CKPT_OPTIM = 1,  // optimizer state, "adam.m.encoder.gru.weight_ih"
};

// A stored tensor. Row-major, shape[i] >= 1 for i < ndim (ndim 0 is a scalar
// with size 1); shape[i] for i >= ndim is 1. Owned by the container: read-only.
// Its values are stored in `dtype` (version 2 files; version 1 is all
// float64), the dtype the writer gave: a float32 model's parameters are
// float32 in the file and in memory, never converted on the way.
// For a loaded version-2 file, the values point into the file's read-only
// mapping (64-byte aligned): writing through them faults.
typedef struct ts_ckpt_tensor {
    const char *name;
    int dtype;  // TS_F64 or TS_F32 (tensor/dtype.h); the file's code is ts_dtypes[dtype].ckpt_code
    int ndim;
    size_t shape[TS_CKPT_MAX_NDIM];
    size_t size;  // product of the shape
    union {       // `size` values, never NULL: read the member of `dtype`
        const double *data;     // TS_F64
        const float *data_f32;  // TS_F32
        const void *raw;
    };
} ts_ckpt_tensor;

// A stored vocabulary: an ordered list of UTF-8 tokens (no NUL, no newline).
typedef struct ts_ckpt_vocab {
    const char *name;
    size_t count;
    const char *const *tokens;
} ts_ckpt_vocab;

// ---- building ----------------------------------------------------------------

// A new empty container, or NULL when out of memory (message set).
// Free with ts_ckpt_free.
ts_ckpt *ts_ckpt_new(void);

// Frees the container and everything it owns. NULL is a no-op.
void ts_ckpt_free(ts_ckpt *ck);

// Sets header `key` to a copy of `value`: replaces the value of the first
// entry with that key, else appends (entries keep insertion order).
// Keys are 1..TS_CKPT_MAX_NAME bytes of [A-Za-z0-9_.-]; values are at most
// TS_CKPT_MAX_VALUE bytes without NUL or newline.
// Errors: TS_ERR_ARG for a bad key or value, TS_ERR_NOMEM.
int ts_ckpt_set(ts_ckpt *ck, const char *key, const char *value);

// Sets `key` to the decimal text of `value` ("-12").
int ts_ckpt_set_int(ts_ckpt *ck, const char *key, int64_t value);

// Sets `key` to the exact hexadecimal text of `value` ("0x1.999999999999ap-4",
// "inf", "nan"), written without the C locale's help, so that
// ts_ckpt_get_double gives back the same bits (NaN payloads excepted).
int ts_ckpt_set_double(ts_ckpt *ck, const char *key, double value);

// Appends a copy of vocabulary `name` with tokens[0..n). Names as for keys,
// unique; tokens valid UTF-8, at most TS_CKPT_MAX_TOKEN bytes, no NUL or
// newline. Errors: TS_ERR_ARG (bad or duplicate name, bad token, too many),
// TS_ERR_NOMEM.
int ts_ckpt_add_vocab(ts_ckpt *ck, const char *name, const char *const *tokens, size_t n);

// Appends a copy of a tensor to `section`. `name` is 1..TS_CKPT_MAX_NAME
// printable ASCII bytes other than space and '=', unique in its section;
// 0 <= ndim <= 3, every shape[i] >= 1; `data` holds the product of
// shape[0..ndim) float64 values (1 for ndim 0). Values are stored
// bit-exactly (NaN and Inf included). Errors: TS_ERR_ARG, TS_ERR_NOMEM.
int ts_ckpt_add_tensor(ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                       int ndim, const size_t *shape, const double *data);

// As ts_ckpt_add_tensor, without the copy: the container reads `data` where
// it is, so it must stay unchanged and alive until the container is saved
// or freed (saving a training state this way needs no second copy of the
// weights and Adam's moments). ts_ckpt_take_tensor_data gives NULL for it.
int ts_ckpt_add_tensor_view(ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                            int ndim, const size_t *shape, const double *data);

// As ts_ckpt_add_tensor and ts_ckpt_add_tensor_view, for values of `dtype`
// (TS_F64: data is double *, TS_F32: float *), stored in that dtype: a
// float32 tensor takes 4 bytes a value in the file. Errors as theirs, and
// TS_ERR_ARG for a dtype that is neither.
int ts_ckpt_add_tensor_dtype(ts_ckpt *ck, enum ts_ckpt_section section, const char *name, int dtype,
                             int ndim, const size_t *shape, const void *data);
int ts_ckpt_add_tensor_view_dtype(ts_ckpt *ck, enum ts_ckpt_section section, const char *name, int dtype,
                                  int ndim, const size_t *shape, const void *data);

// Sets blob `name` (names as for tensors) to a copy of bytes[0..n),
// replacing an existing blob of that name. For RNG state (gsl_rng_state,
// gsl_rng_size) and the like. Errors: TS_ERR_ARG, TS_ERR_NOMEM.
int ts_ckpt_set_blob(ts_ckpt *ck, const char *name, const void *bytes, size_t n);

// ---- reading -------------------------------------------------------------------

// Header entries in order, duplicates included (a loaded file may hold them).
size_t ts_ckpt_header_count(const ts_ckpt *ck);
// Entry i < ts_ckpt_header_count: borrowed key and value.
void ts_ckpt_header_at(const ts_ckpt *ck, size_t i, const char **key, const char **value);

// The value of header `key` in *out (borrowed). Fails with TS_ERR_FORMAT and a
// message naming the key when it is absent or present more than once.
int ts_ckpt_get_string(const ts_ckpt *ck, const char *key, const char **out);

// Parses header `key` as a decimal integer in [lo, hi] into *out. Fails with
// TS_ERR_FORMAT naming the key and the text when it is absent, duplicated, not
// an integer (empty, spaces, '+', trailing text), negative where lo >= 0, or
// outside [lo, hi]. *out is untouched on failure.
int ts_ckpt_get_int(const ts_ckpt *ck, const char *key, int64_t lo, int64_t hi, int64_t *out);

// Parses header `key` as a double in [lo, hi] into *out: the hex text written
// by ts_ckpt_set_double (exact), or decimal text for strtod (which follows
// LC_NUMERIC: keep the C locale). NaN is always rejected; Inf only passes when
// the bounds include it. Errors as for ts_ckpt_get_int.
int ts_ckpt_get_double(const ts_ckpt *ck, const char *key, double lo, double hi, double *out);

// Vocabularies in order.
size_t ts_ckpt_vocab_count(const ts_ckpt *ck);
const ts_ckpt_vocab *ts_ckpt_vocab_at(const ts_ckpt *ck, size_t i);
// The vocabulary called `name`, or NULL.
const ts_ckpt_vocab *ts_ckpt_find_vocab(const ts_ckpt *ck, const char *name);

// Tensors of a section in order.
size_t ts_ckpt_tensor_count(const ts_ckpt *ck, enum ts_ckpt_section section);
const ts_ckpt_tensor *ts_ckpt_tensor_at(const ts_ckpt *ck, enum ts_ckpt_section section,
                                        size_t i);
// The tensor called `name` in `section`, or NULL. For the model layer's check
// that the parameters fit the configuration in the header.
const ts_ckpt_tensor *ts_ckpt_find_tensor(const ts_ckpt *ck, enum ts_ckpt_section section,
                                          const char *name);

// Finds tensor `name` in `section` and checks it has exactly `ndim` and
// shape[0..ndim). On success stores it in *out (may be NULL). Fails with
// TS_ERR_FORMAT ("checkpoint has no parameter tensor X") or TS_ERR_SHAPE
// ("parameter tensor X has shape [3,4], expected [3,5]").
int ts_ckpt_expect_tensor(const ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                          int ndim, const size_t *shape, const ts_ckpt_tensor **out);

// Hands tensor `name`'s data buffer (size values of its dtype) to the caller,
// who frees it with free(); NULL when there is no such tensor, or when the container does
// not own the buffer (a view, or a loaded version-2 file's mapping: copy
// those). The container's tensor keeps its name and shape but its data
// becomes NULL: call it only on a container that is freed next. Saves a copy
// of every weight when loading a model from a version-1 file.
void *ts_ckpt_take_tensor_data(ts_ckpt *ck, enum ts_ckpt_section section, const char *name);

// Blobs in order of first setting; ts_ckpt_blob_at gives borrowed name/bytes.
size_t ts_ckpt_blob_count(const ts_ckpt *ck);
void ts_ckpt_blob_at(const ts_ckpt *ck, size_t i, const char **name, const void **bytes,
                     size_t *n);
// Blob `name` (borrowed) in *bytes and its length in *n. Fails with
// TS_ERR_FORMAT when absent.
int ts_ckpt_get_blob(const ts_ckpt *ck, const char *name, const void **bytes, size_t *n);

// ---- CRC-32 (also the .npz files' in interop/) ------------------------------------

// zlib's CRC-32 of n bytes continuing `crc` (0 to start), for any n: zlib
// takes a uInt length, so longer buffers go in 1 GiB pieces.
uint32_t ts_crc32(uint32_t crc, const void *bytes, size_t n);

// ---- saving ----------------------------------------------------------------------

// Fault injection for tests: replacements for write(2) and fsync(2) on the
// temporary file (tensor/atomic_write.h).
typedef ts_write_hooks ts_ckpt_save_opts;

// Writes `ck` to `path` (format version 2) with ts_write_atomic: serialises
// into a new temporary file "<path>.tmp-XXXXXX" in the same directory (mode
// 0644), fsyncs it, renames it over `path`, then fsyncs the directory.
// The same content always gives the same bytes (no timestamps, zero padding).
// Errors: TS_ERR_IO naming the path and strerror for a failed create, write,
// fsync, close or rename; then the temporary file is removed and an existing
// `path` is untouched. If only the final directory fsync fails, the new file
// is in place but the status is still TS_ERR_IO (it may not survive a power
// loss). TS_ERR_NOMEM.
int ts_ckpt_save(const ts_ckpt *ck, const char *path);
int ts_ckpt_save_ex(const ts_ckpt *ck, const char *path, const ts_ckpt_save_opts *opts);

// Serialises `ck` into a malloc'd buffer (*out, *len; free() it): the exact
// bytes ts_ckpt_save would write. Errors: TS_ERR_NOMEM.
int ts_ckpt_save_mem(const ts_ckpt *ck, unsigned char **out, size_t *len);

// ---- loading ----------------------------------------------------------------------

typedef struct ts_ckpt_load_opts {
    // Largest accepted payload in bytes (0 = the default,
    // TS_CKPT_DEFAULT_MAX_PAYLOAD). A file declaring more is rejected before
    // reading on; a gzip file inflating past its declared size is rejected as
    // soon as it does. Memory used is bounded by the bytes actually inflated.
    uint64_t max_payload;
    // Nonzero: the OPTM section (the optimizer's state) is checked (frame,
    // CRCs) but not parsed: the container has no optimizer tensors. For
    // inference, which needs none. Blobs are parsed either way: a subword
    // model lives there (RNG states are a few KB).
    int skip_training_state;
} ts_ckpt_load_opts;

// Reads and fully validates a checkpoint file (opts NULL = defaults) and on
// success stores a new container in *out (caller frees with ts_ckpt_free).
// A version-2 file is mapped read-only (mmap MAP_PRIVATE): every CRC is
// checked over every byte, and its tensors point into the mapping, which
// lives until ts_ckpt_free. A gzip file (version 1) is inflated and its
// tensors copied. Errors: TS_ERR_IO (open/read/map), TS_ERR_FORMAT (neither a
// checkpoint nor gzip, truncated, trailing bytes, bad magic/version, CRC
// mismatch, a length, count or tensor offset that does not fit, a misaligned
// or overlapping tensor, an unknown dtype, a bad name or token, payload larger
// than declared or than the cap), TS_ERR_NOMEM. The message names the path
// and what is wrong. *out is NULL on failure.
int ts_ckpt_load(const char *path, const ts_ckpt_load_opts *opts, ts_ckpt **out);

// The file a container was loaded from (borrowed), or NULL for one built in
// memory or loaded with ts_ckpt_load_mem. The errors of the getters above
// (ts_ckpt_get_*, ts_ckpt_expect_tensor) name it: "checkpoint PATH: header
// 'model.hidden' = 0 is out of bounds [1, 65536]".
const char *ts_ckpt_path(const ts_ckpt *ck);

// As ts_ckpt_load, from the bytes data[0..len) (a version-2 payload is
// copied: the container does not keep pointers into data).
int ts_ckpt_load_mem(const void *data, size_t len, const ts_ckpt_load_opts *opts,
                     ts_ckpt **out);

#endif
