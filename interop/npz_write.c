// Writing a .npz: builds the whole archive in memory (one entry at a time:
// .npy bytes, CRC-32, optional raw deflate), then saves it atomically.
// Layout: docs/interop.md.
#include "interop/npz_internal.h"

#include "tensor/atomic_write.h"
#include "tensor/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
        size_t n = (size_t)ts_npz_utf8_count(a->strings[i]);
        if (n > w) w = n;
    }
    return w;
}

// The .npy bytes of one array (version 1.0, header padded with spaces and a
// newline so the data starts at a multiple of 64, as numpy writes it).
static int npy_bytes(const ts_npz_array *a, struct buf *out) {
    char header[512];
    size_t width = a->dtype == TS_NPZ_STR ? str_width(a) : 0;
    char descr[32];  // '<f8', or '<U7' with the width
    snprintf(descr, sizeof descr, a->dtype == TS_NPZ_STR ? "%s%zu" : "%s", npy_dtypes[a->dtype].descr, width);
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < a->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, "%zu%s", a->shape[i],
                      a->ndim == 1 ? "," : i + 1 < a->ndim ? ", " : "");
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    size_t total = ((size_t)NPY_PREFIX + (size_t)n + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    size_t header_len = total - NPY_PREFIX;
    size_t item = npy_dtypes[a->dtype].item * (a->dtype == TS_NPZ_STR ? width : 1);
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
    } else if (a->dtype == TS_NPZ_F4) {
        for (size_t i = 0; i < a->size; i++, p += 4) {
            float value = (float)a->values[i];  // exact: the values came from floats
            uint32_t bits;
            memcpy(&bits, &value, 4);
            put32(p, bits);
        }
    } else if (a->dtype == TS_NPZ_U1) {
        memcpy(p, a->bytes, a->size);
    } else {
        memset(p, 0, a->size * item);
        for (size_t i = 0; i < a->size; i++, p += item) {
            const unsigned char *s = (const unsigned char *)a->strings[i];
            size_t len = strlen(a->strings[i]), k = 0;
            for (size_t j = 0; j < len; k++) {
                uint32_t cp = 0;
                j += ts_npz_utf8_decode(s + j, len - j, &cp); // validated when added
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
        uint32_t crc = ts_crc32(0, npy.data, npy.len);
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

struct bytes {
    const unsigned char *p;
    size_t n;
};

static int fill_bytes(void *ctx, FILE *out) {
    const struct bytes *b = ctx;
    fwrite(b->p, 1, b->n, out);  // the atomic writer sees and names a failure
    return TS_OK;
}

int ts_npz_save(const ts_npz *z, const char *path, enum ts_npz_method method) {
    struct bytes b;
    unsigned char *bytes;
    int rc = ts_npz_save_mem(z, method, &bytes, &b.n);
    if (rc) return rc;
    b.p = bytes;
    rc = ts_write_atomic(path, fill_bytes, &b, NULL);
    free(bytes);
    return rc;
}

