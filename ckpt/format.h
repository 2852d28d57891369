// Internal to ckpt/: the file format's constants, the container's in-memory
// layout, and the helpers the container (ckpt.c), the writer (write.c) and
// the loader (read.c) share. Byte layout: docs/checkpoint.md.
#ifndef TS_CKPT_FORMAT_H
#define TS_CKPT_FORMAT_H

#include "ckpt/ckpt.h"

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

// ---- the container ------------------------------------------------------------

struct entry {
    char *key;
    char *value;
};

struct vocab {
    ts_ckpt_vocab pub;   // pub.name and pub.tokens point into the fields below
    char *name;
    char **tokens;       // count pointers into `text`
    char *text;          // every token, NUL-terminated, back to back
};

struct tensor {
    ts_ckpt_tensor pub;  // pub.name / pub.raw alias name / data (a view: pub.raw is the caller's)
    char *name;
    void *data;          // owned, pub.size values of pub.dtype; NULL for a view (ts_ckpt_add_tensor_view, or into `storage`)
};

struct blob {
    char *name;
    unsigned char *bytes;
    size_t n;
};

struct ts_ckpt {
    struct entry *entries;
    size_t n_entries, cap_entries;
    struct vocab *vocabs;
    size_t n_vocabs, cap_vocabs;
    struct tensor *tensors[2];
    size_t n_tensors[2], cap_tensors[2];
    struct blob *blobs;
    size_t n_blobs, cap_blobs;
    // A version-2 file's bytes, which its tensors are views into: a read-only
    // mapping of the file (munmap'd by ts_ckpt_free) or a malloc'd copy.
    const unsigned char *storage;
    size_t storage_len;
    int storage_mapped;
    char *path;  // the file it was loaded from, NULL otherwise: named by every getter's error
};

// The getters' error prefix: "checkpoint PATH: " for a loaded file, else "checkpoint ".
#define FROM_FMT "checkpoint%s%s%s "
#define FROM(ck) (ck)->path ? " " : "", (ck)->path ? (ck)->path : "", (ck)->path ? ":" : ""

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


// ---- shared helpers (format.c) -------------------------------------------------------

// Makes room for one more element in a growing array.
int ts_ckpt_reserve(void **items, size_t *cap, size_t n, size_t elem);

// s[0..n) as a malloc'd NUL-terminated string; NULL when out of memory.
char *ts_ckpt_dup(const char *s, size_t n);

// Validation shared by the setters and the loader: 1 when acceptable.
// Header keys and vocabulary names: 1..255 bytes of [A-Za-z0-9_.-].
int ts_ckpt_key_ok(const char *s, size_t n);
// Tensor and blob names: 1..255 printable ASCII bytes, no space, no '='.
int ts_ckpt_name_ok(const char *s, size_t n);
// Header values: at most TS_CKPT_MAX_VALUE bytes, no NUL, no newline.
int ts_ckpt_value_ok(const char *s, size_t n);
// Tokens: valid UTF-8, at most TS_CKPT_MAX_TOKEN bytes, no NUL, no newline.
int ts_ckpt_token_ok(const char *s, size_t n);


// ---- the container's internals (ckpt.c), for the loader ------------------------------

// Take ownership of their pointer arguments (freed on failure too).
int ts_ckpt_push_vocab(ts_ckpt *ck, char *name, char **tokens, char *text, size_t count);
int ts_ckpt_push_tensor(ts_ckpt *ck, enum ts_ckpt_section section, char *name, int dtype, int ndim,
                        const size_t *shape, size_t size, void *data);
// "parameter" or "optimizer", for messages.
const char *ts_ckpt_section_noun(enum ts_ckpt_section s);
// Product of shape[0..ndim) into *size; 0 on overflow past `limit`.
int ts_ckpt_shape_size(int ndim, const size_t *shape, size_t limit, size_t *size);
// Unmaps or frees a loaded file's storage (ckpt.c: the container owns it; read.c makes it).
void ts_ckpt_release_storage(ts_ckpt *ck);
// Gives back a payload's bytes: munmap when mapped, else free (ckpt/ckpt.c).
void ts_ckpt_release_bytes(const unsigned char *bytes, size_t len, int mapped);
// The blob called `name`, NULL when there is none.
struct blob *ts_ckpt_blob_lookup(const ts_ckpt *ck, const char *name);

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
