// Reading a .npz: takes the whole file into memory and trusts nothing in it:
// the central directory is found from the end, every record is checked to
// lie inside the bytes before it is read, the declared uncompressed sizes are
// summed and capped before anything is inflated, each entry inflates into a
// buffer of exactly its declared size, and each .npy inside is parsed by
// npy_read.c. Fuzzing builds (TS_NPZ_FUZZING)
// skip the CRC comparison so the fuzzer reaches the .npy parser.
// Layout: docs/interop.md.
#include "interop/npz_internal.h"

#include "tensor/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#ifdef TS_NPZ_FUZZING
#define CRC_CHECKED 0
#else
#define CRC_CHECKED 1
#endif

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
            !ts_npz_name_ok((const char *)r->name, name_len - 4)) {
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
        if (CRC_CHECKED && ts_crc32(0, npy, r->usize) != r->crc)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': CRC-32 mismatch (the file is corrupt)", what, e->name);
        if (!rc) rc = ts_npy_parse(what, e, npy, r->usize);
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

