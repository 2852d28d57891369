// Internal to interop/: the .npz container's layout, the zip and .npy
// constants, and the helpers the container (npz.c), the writer (npz_write.c)
// and the reader (npz_read.c) share. Layout: docs/interop.md.
#ifndef TS_NPZ_INTERNAL_H
#define TS_NPZ_INTERNAL_H

#include "ckpt/ckpt.h"  // ts_crc32
#include "interop/npz.h"

#include <stddef.h>
#include <stdint.h>

enum {
    LOCAL_SIZE = 30,    // local file header without name and extra field
    CENTRAL_SIZE = 46,  // central directory record without name, extra, comment
    EOCD_SIZE = 22,     // end of central directory record without comment
    MAX_COMMENT = 65535,
    ZIP_STORED = 0,
    ZIP_DEFLATED = 8,
    ZIP_VERSION = 20,   // 2.0: deflate
    ZIP_HOST_UNIX = 3,
    DOS_DATE_1980 = (1 << 5) | 1, // 1980-01-01, the earliest a zip can say
    FLAG_DESCRIPTOR = 0x0008,     // sizes and CRC follow the data (central copy is authoritative)
    FLAG_UTF8 = 0x0800,
    FLAG_DEFLATE_LEVEL = 0x0006,  // a deflate level hint, meaningless to a reader
    ZLEVEL = 6,
    NPY_PREFIX = 10,    // magic (6) + version (2) + header length (2), version 1.0
    NPY_ALIGN = 64,     // numpy aligns the data to 64 bytes
};

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

// The .npy dtypes: the descr the writer gives and the reader takes, and the
// bytes of one item (a string's: 4 per code point of the array's width).
static const struct {
    const char *descr;
    size_t item;
} npy_dtypes[] = {
    [TS_NPZ_F8] = {"<f8", 8},
    [TS_NPZ_STR] = {"<U", 4},
    [TS_NPZ_F4] = {"<f4", 4},
    [TS_NPZ_U1] = {"|u1", 1},
};
#define NPY_DTYPE_COUNT (sizeof npy_dtypes / sizeof *npy_dtypes)
_Static_assert(NPY_DTYPE_COUNT == TS_NPZ_U1 + 1, "a row per ts_npz_dtype");
// deflate cannot expand more than about 1032:1; a larger declared ratio lies.
#define DEFLATE_MAX_RATIO 1032u

struct entry {
    char *name;
    ts_npz_array a;
    double *values;
    char **strings;
    uint8_t *bytes;
};

struct ts_npz {
    struct entry *items;
    size_t count, cap;
};

// ---- little-endian bytes ------------------------------------------------------

static inline void put16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static inline void put32(unsigned char *p, uint32_t v) {
    put16(p, v & 0xffff);
    put16(p + 2, v >> 16);
}
static inline uint32_t get16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static inline uint32_t get32(const unsigned char *p) { return get16(p) | get16(p + 2) << 16; }
static inline uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

// ---- shared helpers (npz.c) -----------------------------------------------------

// 1 when name[0..n) is a valid array name (see ts_npz_add_f8).
int ts_npz_name_ok(const char *name, size_t n);

// Product of shape[0..ndim) in *size; 0 on a zero dimension or overflow of
// `limit` (the caller's bound on the element count).
int ts_npz_shape_size(int ndim, const size_t *shape, size_t limit, size_t *size);

// The code point starting s[0..n) in *cp and its length, 0 when invalid.
size_t ts_npz_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

// Code points in s, -1 when s is not valid UTF-8.
long ts_npz_utf8_count(const char *s);

// ---- the .npy reader (npy_read.c) ------------------------------------------------

// Parses one .npy file npy[0..n) into entry e (its name already set); `what`
// names the file in messages. TS_OK, or an error naming the entry.
int ts_npy_parse(const char *what, struct entry *e, const unsigned char *npy, size_t n);

#endif
