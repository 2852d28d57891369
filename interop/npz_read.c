// .npz container: zip writer and reader (zlib only) and the .npy format.
// Layout: docs/interop.md.
//
// Writing builds the whole archive in memory (one entry at a time: .npy
// bytes, CRC-32, optional raw deflate), then saves it atomically. Reading
// takes the whole file into memory and trusts nothing in it: the central
// directory is found from the end, every record is checked to lie inside the
// bytes before it is read, the declared uncompressed sizes are summed and
// capped before anything is inflated, each entry inflates into a buffer of
// exactly its declared size, and the .npy header is parsed as a strict
// subset of Python's literal syntax. Fuzzing builds (TS_NPZ_FUZZING) skip the
// CRC comparison so the fuzzer reaches the .npy parser.
#include "interop/npz.h"

#include "tensor/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef TS_NPZ_FUZZING
#define CRC_CHECKED 0
#else
#define CRC_CHECKED 1
#endif

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
// deflate cannot expand more than about 1032:1; a larger declared ratio lies.
#define DEFLATE_MAX_RATIO 1032u

struct entry {
    char *name;
    ts_npz_array a;
    double *values;
    char **strings;
};

struct ts_npz {
    struct entry *items;
    size_t count, cap;
};

// ---- the container --------------------------------------------------------------

ts_npz *ts_npz_new(void) {
    ts_npz *z = calloc(1, sizeof *z);
    if (!z) ts_fail(TS_ERR_NOMEM, "npz: out of memory");
    return z;
}

static void entry_free(struct entry *e) {
    for (size_t i = 0; e->strings && i < e->a.size; i++) free(e->strings[i]);
    free(e->strings);
    free(e->values);
    free(e->name);
}

void ts_npz_free(ts_npz *z) {
    if (!z) return;
    for (size_t i = 0; i < z->count; i++) entry_free(&z->items[i]);
    free(z->items);
    free(z);
}

size_t ts_npz_count(const ts_npz *z) { return z->count; }

const ts_npz_array *ts_npz_at(const ts_npz *z, size_t i) { return i < z->count ? &z->items[i].a : NULL; }

const ts_npz_array *ts_npz_find(const ts_npz *z, const char *name) {
    for (size_t i = 0; i < z->count; i++)
        if (!strcmp(z->items[i].name, name)) return &z->items[i].a;
    return NULL;
}

// 1 when name[0..n) is a valid array name (see ts_npz_add_f8).
static int name_ok(const char *name, size_t n) {
    if (n == 0 || n > TS_NPZ_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= ' ' || c > '~' || c == '/' || c == '\\') return 0;
    }
    return 1;
}

// Product of shape[0..ndim) in *size; 0 on a zero dimension or overflow of
// `limit` (the caller's bound on the element count).
static int shape_size(int ndim, const size_t *shape, size_t limit, size_t *size) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0 || shape[i] > limit || n > limit / shape[i]) return 0;
        n *= shape[i];
    }
    *size = n;
    return 1;
}

// Appends an entry with the name and shape checked; values/strings are the
// caller's to fill. Returns the entry or NULL (message set).
static struct entry *append(ts_npz *z, const char *name, enum ts_npz_dtype dtype, int ndim, const size_t *shape,
                            int *rc) {
    *rc = TS_ERR_ARG;
    size_t n = name ? strlen(name) : 0;
    if (!name_ok(name ? name : "", n)) {
        ts_fail(TS_ERR_ARG, "npz: bad array name '%s' (1..%d printable ASCII bytes, no space, '/' or '\\')",
                name ? name : "(null)", TS_NPZ_MAX_NAME);
        return NULL;
    }
    if (ts_npz_find(z, name)) {
        ts_fail(TS_ERR_ARG, "npz: duplicate array name '%s'", name);
        return NULL;
    }
    size_t size;
    if (ndim < 0 || ndim > TS_NPZ_MAX_NDIM || (ndim > 0 && !shape) ||
        !shape_size(ndim, shape, TS_NPZ_MAX_ENTRY_BYTES / 8, &size)) {
        ts_fail(TS_ERR_ARG, "npz: array '%s': bad shape (0..%d dimensions, each at least 1)", name, TS_NPZ_MAX_NDIM);
        return NULL;
    }
    if (z->count == TS_NPZ_MAX_ENTRIES) {
        ts_fail(TS_ERR_ARG, "npz: more than %d arrays", TS_NPZ_MAX_ENTRIES);
        return NULL;
    }
    *rc = TS_ERR_NOMEM;
    if (z->count == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 16;
        struct entry *items = realloc(z->items, cap * sizeof *items);
        if (!items) {
            ts_fail(TS_ERR_NOMEM, "npz: out of memory");
            return NULL;
        }
        z->items = items;
        z->cap = cap;
    }
    struct entry *e = &z->items[z->count];
    memset(e, 0, sizeof *e);
    if (!(e->name = strdup(name))) {
        ts_fail(TS_ERR_NOMEM, "npz: out of memory");
        return NULL;
    }
    e->a.name = e->name;
    e->a.dtype = dtype;
    e->a.ndim = ndim;
    for (int i = 0; i < TS_NPZ_MAX_NDIM; i++) e->a.shape[i] = i < ndim ? shape[i] : 1;
    e->a.size = size;
    *rc = TS_OK;
    return e;
}

int ts_npz_add_f8(ts_npz *z, const char *name, int ndim, const size_t *shape, const double *values) {
    int rc;
    struct entry *e = append(z, name, TS_NPZ_F8, ndim, shape, &rc);
    if (!e) return rc;
    if (!(e->values = malloc(e->a.size * sizeof *e->values))) {
        entry_free(e);
        return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
    }
    memcpy(e->values, values, e->a.size * sizeof *e->values);
    e->a.values = e->values;
    z->count++;
    return TS_OK;
}

// Decodes one UTF-8 code point at s[0..n); returns its length, 0 if invalid
// (overlong, surrogate, above U+10FFFF, truncated).
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xf4) return 0;
    uint32_t c = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

// Code points in the NUL-terminated UTF-8 string s, or -1 if invalid.
static long utf8_count(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    long count = 0;
    for (size_t i = 0; i < n; count++) {
        uint32_t cp;
        size_t k = utf8_decode(p + i, n - i, &cp);
        if (k == 0) return -1;
        i += k;
    }
    return count;
}

int ts_npz_add_strings(ts_npz *z, const char *name, int ndim, const size_t *shape, const char *const *strings) {
    int rc;
    struct entry *e = append(z, name, TS_NPZ_STR, ndim, shape, &rc);
    if (!e) return rc;
    if (e->a.size > TS_NPZ_MAX_STRINGS) {
        entry_free(e);
        return ts_fail(TS_ERR_ARG, "npz: array '%s': more than %u strings", name, TS_NPZ_MAX_STRINGS);
    }
    for (size_t i = 0; i < e->a.size; i++) {
        long n = utf8_count(strings[i]);
        if (n < 0 || n > TS_NPZ_MAX_WIDTH) {
            entry_free(e);
            return ts_fail(TS_ERR_ARG, "npz: array '%s': string %zu is %s", name, i,
                           n < 0 ? "not valid UTF-8" : "longer than the limit");
        }
    }
    if (!(e->strings = calloc(e->a.size, sizeof *e->strings))) {
        entry_free(e);
        return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
    }
    for (size_t i = 0; i < e->a.size; i++)
        if (!(e->strings[i] = strdup(strings[i]))) {
            entry_free(e);
            return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
        }
    e->a.strings = (const char *const *)e->strings;
    z->count++;
    return TS_OK;
}

// ---- little-endian bytes ------------------------------------------------------

static void put16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v) {
    put16(p, v & 0xffff);
    put16(p + 2, v >> 16);
}
static uint32_t get16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t get32(const unsigned char *p) { return get16(p) | get16(p + 2) << 16; }
static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

// zlib's crc32 takes a uInt length; feed huge buffers in pieces.
static uint32_t crc_of(const unsigned char *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

// ---- writing --------------------------------------------------------------------

// A growable byte buffer.
struct buf {
    unsigned char *data;
    size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more) {
    if (more > SIZE_MAX / 2 - b->len) return ts_fail(TS_ERR_NOMEM, "npz: archive too large");
    if (b->len + more <= b->cap) return TS_OK;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) cap *= 2;
    unsigned char *data = realloc(b->data, cap);
    if (!data) return ts_fail(TS_ERR_NOMEM, "npz: out of memory (%zu bytes)", cap);
    b->data = data;
    b->cap = cap;
    return TS_OK;
}

static int buf_put(struct buf *b, const void *p, size_t n) {
    int rc = buf_reserve(b, n);
    if (rc) return rc;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return TS_OK;
}

// Width in code points of the widest string (at least 1, as numpy says '<U1').
static size_t str_width(const ts_npz_array *a) {
    size_t w = 1;
    for (size_t i = 0; i < a->size; i++) {
        size_t n = (size_t)utf8_count(a->strings[i]);
        if (n > w) w = n;
    }
    return w;
}

// The .npy bytes of one array (version 1.0, header padded with spaces and a
// newline so the data starts at a multiple of 64, as numpy writes it).
static int npy_bytes(const ts_npz_array *a, struct buf *out) {
    char header[512];
    size_t width = a->dtype == TS_NPZ_STR ? str_width(a) : 0;
    int n = a->dtype == TS_NPZ_F8 ? snprintf(header, sizeof header, "{'descr': '<f8', 'fortran_order': False, 'shape': (")
                                 : snprintf(header, sizeof header,
                                            "{'descr': '<U%zu', 'fortran_order': False, 'shape': (", width);
    for (int i = 0; i < a->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, "%zu%s", a->shape[i],
                      a->ndim == 1 ? "," : i + 1 < a->ndim ? ", " : "");
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    size_t total = ((size_t)NPY_PREFIX + (size_t)n + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    size_t header_len = total - NPY_PREFIX;
    size_t item = a->dtype == TS_NPZ_F8 ? 8 : 4 * width;
    if (a->size > (TS_NPZ_MAX_ENTRY_BYTES - total) / item)
        return ts_fail(TS_ERR_ARG, "npz: array '%s' needs 4 GiB or more (ZIP64 is not supported)", a->name);
    int rc = buf_reserve(out, total + a->size * item);
    if (rc) return rc;
    unsigned char *p = out->data + out->len;
    memcpy(p, npy_magic, 6);
    p[6] = 1;
    p[7] = 0;
    put16(p + 8, (uint32_t)header_len);
    memcpy(p + NPY_PREFIX, header, (size_t)n);
    memset(p + NPY_PREFIX + n, ' ', header_len - (size_t)n - 1);
    p[total - 1] = '\n';
    p += total;
    if (a->dtype == TS_NPZ_F8) {
        for (size_t i = 0; i < a->size; i++, p += 8) {
            uint64_t bits;
            memcpy(&bits, &a->values[i], 8);
            put32(p, (uint32_t)bits);
            put32(p + 4, (uint32_t)(bits >> 32));
        }
    } else {
        memset(p, 0, a->size * item);
        for (size_t i = 0; i < a->size; i++, p += item) {
            const unsigned char *s = (const unsigned char *)a->strings[i];
            size_t len = strlen(a->strings[i]), k = 0;
            for (size_t j = 0; j < len; k++) {
                uint32_t cp = 0;
                j += utf8_decode(s + j, len - j, &cp); // validated when added
                put32(p + 4 * k, cp);
            }
        }
    }
    out->len += total + a->size * item;
    return TS_OK;
}

// Raw-deflates in[0..n) into out; *ok = 0 when it did not shrink.
static int deflate_bytes(const unsigned char *in, size_t n, struct buf *out, int *ok) {
    *ok = 0;
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2(&s, ZLEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ts_fail(TS_ERR_NOMEM, "npz: deflateInit2 failed");
    out->len = 0;
    int rc = buf_reserve(out, n);  // more than that and we store instead
    s.next_in = (unsigned char *)in;
    s.avail_in = (uInt)n;  // n <= TS_NPZ_MAX_ENTRY_BYTES fits in uInt
    s.next_out = out->data;
    s.avail_out = (uInt)n;
    if (!rc && deflate(&s, Z_FINISH) == Z_STREAM_END && s.total_out < n) {
        out->len = s.total_out;
        *ok = 1;
    }
    deflateEnd(&s);
    return rc;
}

int ts_npz_save_mem(const ts_npz *z, enum ts_npz_method method, unsigned char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    struct buf zip = {0}, npy = {0}, packed = {0}, central = {0};
    int rc = TS_OK;
    for (size_t i = 0; !rc && i < z->count; i++) {
        const ts_npz_array *a = &z->items[i].a;
        npy.len = 0;
        if ((rc = npy_bytes(a, &npy))) break;
        int deflated = 0;
        if (method == TS_NPZ_DEFLATE && (rc = deflate_bytes(npy.data, npy.len, &packed, &deflated))) break;
        const struct buf *data = deflated ? &packed : &npy;
        uint32_t crc = crc_of(npy.data, npy.len);
        size_t name_len = strlen(a->name) + 4;
        uint64_t offset = zip.len;
        if (offset + LOCAL_SIZE + name_len + data->len > TS_NPZ_MAX_ENTRY_BYTES) {
            rc = ts_fail(TS_ERR_ARG, "npz: the archive reaches 4 GiB at array '%s' (ZIP64 is not supported)", a->name);
            break;
        }
        // Local header (30 bytes) + name, then the data.
        unsigned char h[CENTRAL_SIZE];
        put32(h, 0x04034b50);
        put16(h + 4, ZIP_VERSION);
        put16(h + 6, 0);                                   // flags
        put16(h + 8, deflated ? ZIP_DEFLATED : ZIP_STORED);
        put16(h + 10, 0);                                  // time 00:00:00
        put16(h + 12, DOS_DATE_1980);
        put32(h + 14, crc);
        put32(h + 18, (uint32_t)data->len);
        put32(h + 22, (uint32_t)npy.len);
        put16(h + 26, (uint32_t)name_len);
        put16(h + 28, 0);                                  // extra field length
        if ((rc = buf_put(&zip, h, LOCAL_SIZE)) || (rc = buf_put(&zip, a->name, name_len - 4)) ||
            (rc = buf_put(&zip, ".npy", 4)) || (rc = buf_put(&zip, data->data, data->len)))
            break;
        // Its central directory record: the same fields, plus where it is.
        unsigned char c[CENTRAL_SIZE];
        put32(c, 0x02014b50);
        put16(c + 4, ZIP_HOST_UNIX << 8 | ZIP_VERSION);   // made by
        memcpy(c + 6, h + 4, 26);                          // needed .. name length
        put16(c + 32, 0);                                  // comment length
        put16(c + 34, 0);                                  // disk
        put16(c + 36, 0);                                  // internal attributes
        put32(c + 38, (uint32_t)0100644 << 16);            // regular file, rw-r--r--
        put32(c + 42, (uint32_t)offset);
        if ((rc = buf_put(&central, c, CENTRAL_SIZE)) || (rc = buf_put(&central, a->name, name_len - 4)) ||
            (rc = buf_put(&central, ".npy", 4)))
            break;
    }
    if (!rc && (uint64_t)zip.len + central.len + EOCD_SIZE > TS_NPZ_MAX_ENTRY_BYTES)
        rc = ts_fail(TS_ERR_ARG, "npz: the archive reaches 4 GiB (ZIP64 is not supported)");
    if (!rc) {
        unsigned char e[EOCD_SIZE];
        put32(e, 0x06054b50);
        put16(e + 4, 0);
        put16(e + 6, 0);
        put16(e + 8, (uint32_t)z->count);
        put16(e + 10, (uint32_t)z->count);
        put32(e + 12, (uint32_t)central.len);
        put32(e + 16, (uint32_t)zip.len);
        put16(e + 20, 0);
        if (!(rc = buf_put(&zip, central.data, central.len))) rc = buf_put(&zip, e, EOCD_SIZE);
    }
    free(npy.data);
    free(packed.data);
    free(central.data);
    if (rc) {
        free(zip.data);
        return rc;
    }
    *out = zip.data;
    *len = zip.len;
    return TS_OK;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int ts_npz_save(const ts_npz *z, const char *path, enum ts_npz_method method) {
    unsigned char *bytes;
    size_t len;
    int rc = ts_npz_save_mem(z, method, &bytes, &len);
    if (rc) return rc;
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp-XXXXXX");
    char *dir = dir_of(path);
    if (!tmp || !dir) {
        rc = ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", path);
        goto done;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save %s: cannot create a temporary file in %s: %s", path, dir,
                     strerror(errno));
        goto done;
    }
    const char *step = "fchmod";
    if (fchmod(fd, 0644) != 0) goto fail;
    step = "write";
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, bytes + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            goto fail;
        }
        off += (size_t)n;
    }
    step = "fsync";
    if (fsync(fd) != 0) goto fail;
    step = "close";
    int closed = close(fd);
    fd = -1;
    if (closed != 0) goto fail;
    step = "rename";
    if (rename(tmp, path) != 0) goto fail;
    // The rename is only durable once the directory entry is on disk.
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL))
        rc = ts_fail(TS_ERR_IO, "%s was renamed into place but fsync of directory %s failed: %s", path, dir,
                     strerror(errno));
    if (dfd >= 0) close(dfd);
    goto done;
fail:
    rc = ts_fail(TS_ERR_IO, "cannot save %s: %s %s: %s", path, step, tmp, strerror(errno));
    if (fd >= 0) close(fd);
    unlink(tmp);
done:
    free(tmp);
    free(dir);
    free(bytes);
    return rc;
}

// ---- reading: the .npy format --------------------------------------------------

// A cursor over the header text.
struct lex {
    const char *p, *end;
};

static void skip_space(struct lex *l) {
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t')) l->p++;
}

static int eat(struct lex *l, char c) {
    skip_space(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return 1;
    }
    return 0;
}

// A quoted string ('...' or "...", no escapes) into out[0..cap).
static int quoted(struct lex *l, char *out, size_t cap) {
    skip_space(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return 0;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || n + 1 >= cap) return 0;
        out[n++] = *l->p++;
    }
    if (l->p >= l->end) return 0;
    l->p++;
    out[n] = '\0';
    return 1;
}

static int word(struct lex *l, const char *w) {
    skip_space(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && !memcmp(l->p, w, n)) {
        l->p += n;
        return 1;
    }
    return 0;
}

// A decimal dimension (no sign, no leading zero) at most `limit`.
static int dimension(struct lex *l, size_t limit, size_t *out) {
    skip_space(l);
    if (l->p >= l->end || *l->p < '0' || *l->p > '9' || (*l->p == '0' && l->p + 1 < l->end && l->p[1] >= '0' &&
                                                          l->p[1] <= '9'))
        return 0;
    size_t v = 0;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        size_t d = (size_t)(*l->p++ - '0');
        if (v > (limit - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

// The shape tuple: "()", "(3,)", "(3, 4)" with an optional trailing comma.
static int shape_tuple(struct lex *l, int *ndim, size_t *shape) {
    if (!eat(l, '(')) return 0;
    *ndim = 0;
    if (eat(l, ')')) return 1;
    for (;;) {
        if (*ndim == TS_NPZ_MAX_NDIM) return 0;
        if (!dimension(l, TS_NPZ_MAX_ENTRY_BYTES, &shape[(*ndim)++])) return 0;
        int comma = eat(l, ',');
        if (eat(l, ')')) return *ndim > 1 || comma; // "(3)" is not a tuple
        if (!comma) return 0;
    }
}

// What a .npy header says.
struct npy_header {
    enum ts_npz_dtype dtype;
    size_t width; // code points per string
    int ndim;
    size_t shape[TS_NPZ_MAX_NDIM];
};

// Parses the header dict text[0..n): exactly the keys descr, fortran_order and
// shape, once each, in any order; then only spaces and a final newline.
static int parse_header(const char *what, const char *entry, const char *text, size_t n, struct npy_header *h) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': control byte in the .npy header", what, entry);
    if (n == 0 || text[n - 1] != '\n')
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the .npy header does not end with a newline", what,
                       entry);
    struct lex l = {text, text + n - 1};
    int seen_descr = 0, seen_order = 0, seen_shape = 0;
    char key[32], descr[32];
    if (!eat(&l, '{')) goto bad;
    while (!eat(&l, '}')) {
        if (!quoted(&l, key, sizeof key) || !eat(&l, ':')) goto bad;
        if (!strcmp(key, "descr") && !seen_descr++) {
            if (!quoted(&l, descr, sizeof descr)) goto bad;
        } else if (!strcmp(key, "fortran_order") && !seen_order++) {
            if (word(&l, "True"))
                return ts_fail(TS_ERR_FORMAT,
                               "npz %s: entry '%s': fortran_order True is not supported (save a C-ordered array: "
                               "numpy.ascontiguousarray)", what, entry);
            if (!word(&l, "False")) goto bad;
        } else if (!strcmp(key, "shape") && !seen_shape++) {
            if (!shape_tuple(&l, &h->ndim, h->shape)) goto bad;
        } else {
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': unexpected or repeated key '%s' in the .npy header",
                           what, entry, key);
        }
        if (!eat(&l, ',')) {
            if (!eat(&l, '}')) goto bad;
            break;
        }
    }
    skip_space(&l);
    if (l.p != l.end) goto bad;
    if (!seen_descr || !seen_order || !seen_shape)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the .npy header lacks '%s'", what, entry,
                       !seen_descr ? "descr" : !seen_order ? "fortran_order" : "shape");
    struct lex digits = {descr + 2, descr + strlen(descr)};
    size_t width = 0;
    if (!strcmp(descr, "<f8")) {
        h->dtype = TS_NPZ_F8;
    } else if (!strncmp(descr, "<U", 2) && descr[2] != ' ' && dimension(&digits, TS_NPZ_MAX_WIDTH, &width) &&
               digits.p == digits.end && width >= 1) {
        h->dtype = TS_NPZ_STR;
        h->width = width;
    } else {
        return ts_fail(TS_ERR_FORMAT,
                       "npz %s: entry '%s': dtype '%s' is not supported (only '<f8' float64 and '<U<n>' strings of "
                       "at most %d characters)", what, entry, descr, TS_NPZ_MAX_WIDTH);
    }
    for (int i = 0; i < h->ndim; i++)
        if (h->shape[i] == 0)
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': empty arrays (a dimension of 0) are not supported",
                           what, entry);
    return TS_OK;
bad:;
    // The header is not NUL-terminated: show a copy of its start.
    char shown[61];
    size_t k = n < 60 ? n : 60;
    for (size_t i = 0; i < k; i++) shown[i] = text[i] == '\n' || (unsigned char)text[i] >= 0x7f ? '?' : text[i];
    shown[k] = '\0';
    return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed .npy header near byte %zu: \"%s\"", what, entry,
                   (size_t)(l.p - text), shown);
}

// Appends to buf the UTF-8 of code point cp (validated by the caller).
static size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

// Parses one .npy file npy[0..n) into entry e (name already set).
static int parse_npy(const char *what, struct entry *e, const unsigned char *npy, size_t n) {
    const char *name = e->name;
    if (n < NPY_PREFIX || memcmp(npy, npy_magic, 6) != 0)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is not a .npy file (bad magic)", what, name);
    if ((npy[6] != 1 && npy[6] != 2) || npy[7] != 0)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': .npy version %u.%u is not supported (1.0 or 2.0)", what,
                       name, npy[6], npy[7]);
    size_t prefix = npy[6] == 1 ? NPY_PREFIX : NPY_PREFIX + 2;
    if (n < prefix) return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': truncated .npy prefix", what, name);
    size_t header_len = npy[6] == 1 ? get16(npy + 8) : get32(npy + 8);
    if (header_len > TS_NPZ_MAX_HEADER || header_len > n - prefix)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': .npy header length %zu does not fit (%zu bytes left, at "
                       "most %d)", what, name, header_len, n - prefix, TS_NPZ_MAX_HEADER);
    struct npy_header h;
    memset(&h, 0, sizeof h);
    int rc = parse_header(what, name, (const char *)npy + prefix, header_len, &h);
    if (rc) return rc;
    const unsigned char *data = npy + prefix + header_len;
    size_t data_len = n - prefix - header_len;
    size_t item = h.dtype == TS_NPZ_F8 ? 8 : 4 * h.width, size;
    if (!shape_size(h.ndim, h.shape, SIZE_MAX / item, &size) || size * item != data_len)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': %zu data bytes do not hold the shape the header declares",
                       what, name, data_len);
    e->a.dtype = h.dtype;
    e->a.ndim = h.ndim;
    for (int i = 0; i < TS_NPZ_MAX_NDIM; i++) e->a.shape[i] = i < h.ndim ? h.shape[i] : 1;
    e->a.size = size;
    if (h.dtype == TS_NPZ_F8) {
        if (!(e->values = malloc(size * sizeof *e->values)))
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        for (size_t i = 0; i < size; i++) {
            uint64_t bits = get64(data + 8 * i);
            memcpy(&e->values[i], &bits, 8);
        }
        e->a.values = e->values;
        return TS_OK;
    }
    if (size > TS_NPZ_MAX_STRINGS)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': more than %u strings", what, name, TS_NPZ_MAX_STRINGS);
    if (!(e->strings = calloc(size, sizeof *e->strings)))
        return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
    e->a.strings = (const char *const *)e->strings;
    char *utf8 = malloc(4 * h.width + 1);
    if (!utf8) return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
    for (size_t i = 0; i < size; i++) {
        const unsigned char *s = data + i * item;
        size_t len = h.width; // numpy drops trailing NULs
        while (len > 0 && get32(s + 4 * (len - 1)) == 0) len--;
        size_t k = 0;
        for (size_t j = 0; j < len; j++) {
            uint32_t cp = get32(s + 4 * j);
            if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                free(utf8);
                return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': string %zu holds an invalid character (U+%04X)",
                               what, name, i, (unsigned)cp);
            }
            k += utf8_encode(cp, utf8 + k);
        }
        utf8[k] = '\0';
        if (!(e->strings[i] = strdup(utf8))) {
            free(utf8);
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        }
    }
    free(utf8);
    return TS_OK;
}

// ---- reading: the zip structure -------------------------------------------------

// What the central directory says of one entry.
struct record {
    const unsigned char *name; // in the file, not NUL-terminated, with ".npy"
    size_t name_len;
    uint32_t flags, method, crc;
    uint64_t csize, usize, offset;
    uint64_t data, end;        // the data's byte range, from the local header
};

static int by_name(const void *a, const void *b) {
    const struct record *x = *(const struct record *const *)a, *y = *(const struct record *const *)b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int by_offset(const void *a, const void *b) {
    const struct record *x = *(const struct record *const *)a, *y = *(const struct record *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

// Checks that extra[0..n) is a well-formed list of (id, size, data) fields
// and finds the ZIP64 one (id 1), if any.
static int extra_fields(const unsigned char *extra, size_t n, const unsigned char **zip64, size_t *zip64_len) {
    *zip64 = NULL;
    *zip64_len = 0;
    size_t i = 0;
    while (i < n) {
        if (n - i < 4) return 0;
        size_t len = get16(extra + i + 2);
        if (len > n - i - 4) return 0;
        if (get16(extra + i) == 1) {
            *zip64 = extra + i + 4;
            *zip64_len = len;
        }
        i += 4 + len;
    }
    return 1;
}

// Inflates the raw deflate stream in[0..n) into exactly out[0..want).
static int inflate_entry(const char *what, const char *name, const unsigned char *in, size_t n, unsigned char *out,
                         size_t want) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK) return ts_fail(TS_ERR_NOMEM, "npz %s: inflateInit2 failed", what);
    s.next_in = (unsigned char *)in;
    s.avail_in = (uInt)n;  // both below 4 GiB: no ZIP64
    s.next_out = out;
    s.avail_out = (uInt)want;
    int ret = inflate(&s, Z_FINISH);
    int rc = TS_OK;
    if (ret == Z_STREAM_END) {
        if (s.avail_out != 0)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' inflates to %lu bytes, its header says %zu", what, name,
                         s.total_out, want);
        else if (s.avail_in != 0)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': %u bytes after the end of its deflate stream", what, name,
                         s.avail_in);
    } else if (ret == Z_DATA_ERROR) {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': corrupt deflate data (%s)", what, name,
                     s.msg ? s.msg : "zlib");
    } else if (ret == Z_MEM_ERROR) {
        rc = ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory in inflate", what, name);
    } else if (s.avail_out == 0) {
        // Output full and the stream goes on: it lies about its size (a bomb?).
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' inflates past the %zu bytes its header declares", what, name,
                     want);
    } else {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the deflate stream is truncated", what, name);
    }
    inflateEnd(&s);
    return rc;
}

// Reads the central directory into recs[0..count) and checks each local header.
static int read_directory(const char *what, const unsigned char *d, size_t n, uint64_t max_payload,
                          struct record **recs_out, size_t *count_out) {
    *recs_out = NULL;
    *count_out = 0;
    if (n < EOCD_SIZE)
        return ts_fail(TS_ERR_FORMAT, "npz %s: %zu bytes is too short for a zip file", what, n);
    // The end record: the last signature whose comment reaches exactly the end.
    size_t eocd = SIZE_MAX;
    size_t lowest = n - EOCD_SIZE > MAX_COMMENT ? n - EOCD_SIZE - MAX_COMMENT : 0;
    for (size_t i = n - EOCD_SIZE + 1; i-- > lowest;)
        if (get32(d + i) == 0x06054b50 && get16(d + i + 20) == n - i - EOCD_SIZE) {
            eocd = i;
            break;
        }
    if (eocd == SIZE_MAX)
        return ts_fail(TS_ERR_FORMAT, "npz %s: no zip end-of-central-directory record (not a zip file, or truncated)",
                       what);
    const unsigned char *e = d + eocd;
    uint32_t entries = get16(e + 10), cd_size = get32(e + 12), cd_offset = get32(e + 16);
    if (entries == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu ||
        (eocd >= 20 && get32(d + eocd - 20) == 0x07064b50))
        return ts_fail(TS_ERR_FORMAT, "npz %s: ZIP64 archives are not supported (files under 4 GiB only)", what);
    if (get16(e + 4) != 0 || get16(e + 6) != 0 || get16(e + 8) != entries)
        return ts_fail(TS_ERR_FORMAT, "npz %s: multi-disk zip archives are not supported", what);
    if (entries > TS_NPZ_MAX_ENTRIES)
        return ts_fail(TS_ERR_FORMAT, "npz %s: %u entries, more than the limit %d", what, entries, TS_NPZ_MAX_ENTRIES);
    if ((uint64_t)cd_offset + cd_size != eocd)
        return ts_fail(TS_ERR_FORMAT, "npz %s: the central directory (offset %u, %u bytes) does not end where the "
                       "end record starts (%zu)", what, cd_offset, cd_size, eocd);
    struct record *recs = calloc(entries ? entries : 1, sizeof *recs);
    struct record **order = calloc(entries ? entries : 1, sizeof *order);
    if (!recs || !order) {
        free(recs);
        free(order);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
    }
    int rc = TS_OK;
    uint64_t total = 0;
    size_t at = cd_offset;
    for (uint32_t k = 0; k < entries; k++) {
        struct record *r = &recs[k];
        if (eocd - at < CENTRAL_SIZE || get32(d + at) != 0x02014b50) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: central directory record %u is truncated or has a bad signature",
                         what, k);
            goto done;
        }
        const unsigned char *c = d + at;
        size_t name_len = get16(c + 28), extra_len = get16(c + 30), comment_len = get16(c + 32);
        if (eocd - at - CENTRAL_SIZE < name_len + extra_len + comment_len) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: central directory record %u runs past the directory", what, k);
            goto done;
        }
        r->name = c + CENTRAL_SIZE;
        r->name_len = name_len;
        r->flags = get16(c + 8);
        r->method = get16(c + 10);
        r->crc = get32(c + 16);
        r->csize = get32(c + 20);
        r->usize = get32(c + 24);
        r->offset = get32(c + 42);
        at += CENTRAL_SIZE + name_len + extra_len + comment_len;
        const unsigned char *z64;
        size_t z64_len;
        // Names are shown in messages only once they are known to be printable.
        char shown[TS_NPZ_MAX_NAME + 8];
        if (name_len < 5 || name_len > TS_NPZ_MAX_NAME + 4 || memcmp(r->name + name_len - 4, ".npy", 4) != 0 ||
            !name_ok((const char *)r->name, name_len - 4)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry %u has a bad name (expected 1..%d printable ASCII bytes, "
                         "then \".npy\")", what, k, TS_NPZ_MAX_NAME);
            goto done;
        }
        memcpy(shown, r->name, name_len - 4);  // the array's name, as numpy.load shows it
        shown[name_len - 4] = '\0';
        if (!extra_fields(c + CENTRAL_SIZE + name_len, extra_len, &z64, &z64_len)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed extra field", what, shown);
            goto done;
        }
        if (r->flags & 0x0001) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is encrypted", what, shown);
            goto done;
        }
        if (r->flags & ~(uint32_t)(FLAG_DESCRIPTOR | FLAG_UTF8 | FLAG_DEFLATE_LEVEL)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': unsupported zip flags 0x%04x", what, shown, r->flags);
            goto done;
        }
        if (r->method != ZIP_STORED && r->method != ZIP_DEFLATED) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': compression method %u is not supported (only stored and "
                         "deflated)", what, shown, r->method);
            goto done;
        }
        if (r->csize == 0xffffffffu || r->usize == 0xffffffffu || r->offset == 0xffffffffu) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': ZIP64 sizes are not supported (entries under 4 GiB "
                         "only)", what, shown);
            goto done;
        }
        if (r->method == ZIP_STORED && r->csize != r->usize) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is stored but its sizes differ (%llu and %llu)", what,
                         shown, (unsigned long long)r->csize, (unsigned long long)r->usize);
            goto done;
        }
        if (r->method == ZIP_DEFLATED && r->usize > r->csize * DEFLATE_MAX_RATIO + 64) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' declares %llu bytes from %llu compressed: more than "
                         "deflate can expand to", what, shown, (unsigned long long)r->usize,
                         (unsigned long long)r->csize);
            goto done;
        }
        total += r->usize;
        if (total > max_payload) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: the entries declare more than %llu bytes uncompressed (the cap)", what,
                         (unsigned long long)max_payload);
            goto done;
        }
        // The local header must sit before the directory and agree with it.
        if (r->offset > cd_offset || cd_offset - r->offset < LOCAL_SIZE || get32(d + r->offset) != 0x04034b50) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': no local header at offset %llu", what, shown,
                         (unsigned long long)r->offset);
            goto done;
        }
        const unsigned char *h = d + r->offset;
        size_t local_name = get16(h + 26), local_extra = get16(h + 28);
        uint64_t data = r->offset + LOCAL_SIZE + local_name + local_extra;
        if (data > cd_offset || r->csize > cd_offset - data) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': its %llu bytes run past the start of the central "
                         "directory", what, shown, (unsigned long long)r->csize);
            goto done;
        }
        if (local_name != name_len || memcmp(h + LOCAL_SIZE, r->name, name_len) != 0 || get16(h + 8) != r->method ||
            get16(h + 6) != r->flags) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the local header disagrees with the central directory "
                         "(name, flags or method)", what, shown);
            goto done;
        }
        if (!extra_fields(h + LOCAL_SIZE + local_name, local_extra, &z64, &z64_len)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed local extra field", what, shown);
            goto done;
        }
        uint32_t lcrc = get32(h + 14), lcsize = get32(h + 18), lusize = get32(h + 22);
        int sizes_ok;
        if (r->flags & FLAG_DESCRIPTOR) {
            sizes_ok = 1;  // the sizes follow the data; the central copy holds them
        } else if (lcsize == 0xffffffffu && lusize == 0xffffffffu) {
            // numpy.savez writes its local headers with a ZIP64 field (force_zip64).
            sizes_ok = z64 && z64_len >= 16 && get64(z64) == r->usize && get64(z64 + 8) == r->csize;
        } else {
            sizes_ok = lcsize == r->csize && lusize == r->usize;
        }
        if (!sizes_ok || (!(r->flags & FLAG_DESCRIPTOR) && lcrc != r->crc)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the local header's sizes or CRC disagree with the central "
                         "directory", what, shown);
            goto done;
        }
        r->data = data;
        r->end = data + r->csize;
        order[k] = r;
    }
    if (at != eocd) {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: %zu unexplained bytes at the end of the central directory", what,
                     eocd - at);
        goto done;
    }
    // Entries may not share bytes (overlapping entries are how a small zip
    // bombs), nor names (which array would numpy.load give?).
    qsort(order, entries, sizeof *order, by_offset);
    for (uint32_t k = 1; k < entries; k++)
        if (order[k]->offset < order[k - 1]->end) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entries '%.*s' and '%.*s' overlap", what,
                         (int)order[k - 1]->name_len - 4, (const char *)order[k - 1]->name,
                         (int)order[k]->name_len - 4, (const char *)order[k]->name);
            goto done;
        }
    qsort(order, entries, sizeof *order, by_name);
    for (uint32_t k = 1; k < entries; k++)
        if (by_name(&order[k - 1], &order[k]) == 0) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%.*s' appears twice", what, (int)order[k]->name_len - 4,
                         (const char *)order[k]->name);
            goto done;
        }
done:
    free(order);
    if (rc) {
        free(recs);
        return rc;
    }
    *recs_out = recs;
    *count_out = entries;
    return TS_OK;
}

int ts_npz_load_mem(const void *data, size_t len, const char *what, const ts_npz_load_opts *opts, ts_npz **out) {
    *out = NULL;
    if (!what) what = "(memory)";
    uint64_t cap = opts && opts->max_payload ? opts->max_payload : TS_NPZ_DEFAULT_MAX_PAYLOAD;
    const unsigned char *d = data;
    struct record *recs;
    size_t count;
    int rc = read_directory(what, d, len, cap, &recs, &count);
    if (rc) return rc;
    ts_npz *z = ts_npz_new();
    if (!z || (count && !(z->items = calloc(count, sizeof *z->items)))) {
        free(recs);
        ts_npz_free(z);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
    }
    z->cap = count;
    unsigned char *npy = NULL;
    for (size_t k = 0; k < count; k++) {
        const struct record *r = &recs[k];
        struct entry *e = &z->items[k];
        if (!(e->name = strndup((const char *)r->name, r->name_len - 4))) {
            rc = ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
            break;
        }
        e->a.name = e->name;
        z->count++;
        if (r->method == ZIP_STORED) {
            npy = (unsigned char *)d + r->data;
        } else if (!(npy = malloc(r->usize ? r->usize : 1))) {
            rc = ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory (%llu bytes)", what, e->name,
                         (unsigned long long)r->usize);
            break;
        } else if ((rc = inflate_entry(what, e->name, d + r->data, r->csize, npy, r->usize))) {
            free(npy);
            break;
        }
        if (CRC_CHECKED && crc_of(npy, r->usize) != r->crc)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': CRC-32 mismatch (the file is corrupt)", what, e->name);
        if (!rc) rc = parse_npy(what, e, npy, r->usize);
        if (r->method != ZIP_STORED) free(npy);
        if (rc) break;
    }
    free(recs);
    if (rc) {
        ts_npz_free(z);
        return rc;
    }
    *out = z;
    return TS_OK;
}

int ts_npz_load(const char *path, const ts_npz_load_opts *opts, ts_npz **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ts_fail(TS_ERR_IO, "cannot read %s: not a regular file", path);
    }
    // No ZIP64: a valid file is below 4 GiB plus the end record's comment.
    if ((uint64_t)st.st_size > TS_NPZ_MAX_ENTRY_BYTES + EOCD_SIZE + MAX_COMMENT) {
        fclose(f);
        return ts_fail(TS_ERR_FORMAT, "npz %s: %lld bytes is too large (no ZIP64: under 4 GiB)", path,
                       (long long)st.st_size);
    }
    size_t len = (size_t)st.st_size;
    unsigned char *bytes = malloc(len ? len : 1);
    if (!bytes) {
        fclose(f);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory (%zu bytes)", path, len);
    }
    size_t got = fread(bytes, 1, len, f);
    int err = ferror(f), more = fgetc(f) != EOF;
    fclose(f);
    int rc;
    if (err || got != len || more)
        rc = ts_fail(TS_ERR_IO, "cannot read %s: %s", path, err ? strerror(errno) : "the file changed while read");
    else
        rc = ts_npz_load_mem(bytes, len, path, opts, out);
    free(bytes);
    return rc;
}
