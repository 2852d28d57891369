// The checkpoint format's shared helpers: growth, copies, validation, CRC.
#include "ckpt/format.h"

#include "tensor/parallel.h"
#include "tensor/status.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>


// Makes room for one more element in a growing array.
int ts_ckpt_reserve(void **items, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return TS_OK;
    size_t new_cap = *cap ? *cap * 2 : 8;
    if (new_cap > SIZE_MAX / elem) return ts_fail(TS_ERR_NOMEM, "checkpoint: array too large");
    void *grown = realloc(*items, new_cap * elem);
    if (!grown) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    *items = grown;
    *cap = new_cap;
    return TS_OK;
}

char *ts_ckpt_dup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

// ---- validation shared by the setters and the loader -----------------------------

// Header keys and vocabulary names: 1..255 bytes of [A-Za-z0-9_.-].
int ts_ckpt_key_ok(const char *s, size_t n) {
    if (n == 0 || n > TS_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        if (!ok) return 0;
    }
    return 1;
}

// Tensor and blob names: 1..255 printable ASCII bytes, no space, no '='.
int ts_ckpt_name_ok(const char *s, size_t n) {
    if (n == 0 || n > TS_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '=') return 0;
    }
    return 1;
}

// Header values: at most TS_CKPT_MAX_VALUE bytes, no NUL (implied for C
// strings), no newline (it ends the line in the file).
int ts_ckpt_value_ok(const char *s, size_t n) {
    return n <= TS_CKPT_MAX_VALUE && !memchr(s, '\n', n) && !memchr(s, '\0', n);
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
static int utf8_ok(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

// Tokens: valid UTF-8, at most TS_CKPT_MAX_TOKEN bytes, no NUL, no newline.
int ts_ckpt_token_ok(const char *s, size_t n) {
    return n <= TS_CKPT_MAX_TOKEN && !memchr(s, '\n', n) && !memchr(s, '\0', n) &&
           utf8_ok((const unsigned char *)s, n);
}

// zlib's crc32 takes a uInt length; feed huge buffers in pieces.
static uint32_t crc32_serial(uint32_t crc, const unsigned char *p, size_t n) {
    uLong c = crc;
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

// A large buffer (a checkpoint's weights) is cut into parts whose CRCs the
// threads compute at once and crc32_combine joins in order: the same value
// as one pass, which was most of a one-sentence translate's CPU time.
typedef struct {
    const unsigned char *bytes;
    size_t n;
    uint32_t crc[TS_PARALLEL_MAX_PARTS];  // (parts) each part's, from 0
} crc_parts;

static void crc_part(void *arg, int part, int parts) {
    crc_parts *c = arg;
    size_t first, end;
    ts_part_range(c->n, part, parts, &first, &end);
    c->crc[part] = crc32_serial(0, c->bytes + first, end - first);
}

uint32_t ts_crc32(uint32_t crc, const void *bytes, size_t n) {
    enum { BYTES_PER_PART = 1 << 20 };  // below this a part costs less than waking a thread
    if (n < 2 * (size_t)BYTES_PER_PART) return crc32_serial(crc, bytes, n);
    size_t most = n / BYTES_PER_PART;
    int parts = ts_parallel_parts(n, most < TS_PARALLEL_MAX_PARTS ? (int)most : TS_PARALLEL_MAX_PARTS);
    if (parts < 2) return crc32_serial(crc, bytes, n);
    crc_parts c = {.bytes = bytes, .n = n};
    ts_parallel_run(parts, crc_part, &c);
    uLong all = crc;
    for (int part = 0; part < parts; part++) {
        size_t first, end;
        ts_part_range(n, part, parts, &first, &end);
        all = crc32_combine(all, c.crc[part], (z_off_t)(end - first));
    }
    return (uint32_t)all;
}

