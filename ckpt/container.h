// Internal to ckpt/: the container's in-memory layout and the functions of
// ckpt.c that its header entries (header.c), the loader (read.c, parse.c)
// and the writer (write.c) share with it:
// growth, copies, the validation of keys, names, values and tokens (the
// setters' and the loader's one rule), and the loader's pushes. The byte
// format is ckpt/format.h's; neither header includes the other.
#ifndef TS_CKPT_CONTAINER_H
#define TS_CKPT_CONTAINER_H

#include "ckpt/ckpt.h"

#include <stddef.h>

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

// ---- growth, copies and validation ---------------------------------------------------

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

// ---- for the loader --------------------------------------------------------------------

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

#endif
