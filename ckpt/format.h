// Internal to ckpt/: the file format's constants, its little-endian
// encoding and what the writer (write.c), the loader (read.c) and the
// inflater (inflate.c) share of it. Byte layout: docs/checkpoint.md. The
// container in memory is ckpt/container.h's; neither header includes the
// other.
#ifndef TS_CKPT_FORMAT_H
#define TS_CKPT_FORMAT_H

#include "tensor/dtype.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    PRELUDE_SIZE = 32,
    SECTION_OVERHEAD = 16, // tag (4) + body length (8) + CRC (4)
    SECTION_COUNT = 5,
    TRAILER_SIZE = 4,
    GZIP_WINDOW = 31,  // 15-bit window + 16 = gzip framing (version-1 files, or any payload gzip'd by hand)
    CHUNK = 1 << 16,
    // Version 2: every tensor's data starts at a payload offset that is a
    // multiple of this, so a mapped file's tensors are aligned for any kernel
    // (a cache line; AVX-512 loads).
    TENSOR_ALIGN = 64,
};

// A tensor's dtype and its code in the file are a row of the one dtype
// table (tensor/dtype.h: ts_dtypes[d].ckpt_code, .size); the file's code for d:
static inline uint32_t dtype_code(int dtype) { return ts_dtypes[dtype].ckpt_code; }

// The first multiple of TENSOR_ALIGN at or after `offset`.
static inline uint64_t align_tensor(uint64_t offset) {
    return (offset + TENSOR_ALIGN - 1) / TENSOR_ALIGN * TENSOR_ALIGN;
}

static const char MAGIC[8] = {'T', 'S', 'E', 'Q', 'C', 'K', 'P', 'T'};
// Sections in their fixed order; every file has all five.
static const char SECTION_TAGS[SECTION_COUNT][4] = {
    {'H', 'E', 'A', 'D'}, {'V', 'O', 'C', 'B'}, {'P', 'A', 'R', 'M'},
    {'O', 'P', 'T', 'M'}, {'B', 'L', 'O', 'B'},
};
enum { SEC_HEAD, SEC_VOCB, SEC_PARM, SEC_OPTM, SEC_BLOB };

// ---- little-endian encoding --------------------------------------------------------

static inline void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

// CRC comparisons: fuzzing builds (TS_CKPT_FUZZING) skip them so the fuzzer
// reaches the parser.
#ifdef TS_CKPT_FUZZING
#define CRC_CHECKED 0
#else
#define CRC_CHECKED 1
#endif

// Where compressed bytes come from: one memory buffer, or a FILE read in chunks.
struct source {
    const unsigned char *mem;
    size_t mem_len;
    FILE *file;
    unsigned char *chunk;
    const char *what; // path or "<memory>", for messages
    uint64_t consumed;
};

// Checks the 32-byte prelude p against the magic, its CRC and the cap; on
// success *total is the whole payload size. TS_ERR_FORMAT naming `what`.
int ts_ckpt_check_prelude(const unsigned char *p, uint64_t cap, const char *what, size_t *total);

// Inflates src's single gzip member into *out (malloc'd, *len bytes), the
// prelude checked as soon as it arrives and never more than the declared
// size held, anything after the member rejected; gzip's trailer (CRC and
// size, which zlib does not check) is left in gzip_trailer for the caller.
int ts_ckpt_inflate(struct source *src, uint64_t cap, unsigned char **out, size_t *len, unsigned char gzip_trailer[8]);

#endif
