// The .npz container (interop/npz.h): round trips, determinism, and a reader
// that rejects every kind of damaged or hostile file with a message naming
// the file and the entry.
//
// Hostile files are built by build_zip() below, an independent reading of the
// zip format (PKWARE APPNOTE 4.3) and of the .npy format, with correct CRCs,
// so that a structure check (not a CRC) is what must catch the damage.
#include "interop/npz.h"

#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zlib.h>

TestSuite(npz);

// ---- helpers ------------------------------------------------------------------

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

static void assert_fails_with(int rc, int want, const char *fragment) {
    cr_assert_eq(rc, want, "status %d (%s), wanted %d; message: %s", rc, ts_strerror(rc), want, ts_last_error());
    cr_assert(strstr(ts_last_error(), fragment), "message '%s' lacks '%s'", ts_last_error(), fragment);
}

// A .npy file: version `major`.0, header text exactly `header` (the caller
// pads it), then data[0..n).
static unsigned char *npy_raw(int major, const char *header, size_t header_len, const void *data, size_t n,
                              size_t *len) {
    size_t prefix = major == 1 ? 10 : 12;
    *len = prefix + header_len + n;
    unsigned char *p = malloc(*len);
    memcpy(p, "\x93NUMPY", 6);
    p[6] = (unsigned char)major;
    p[7] = 0;
    if (major == 1) put16(p + 8, (uint32_t)header_len);
    else put32(p + 8, (uint32_t)header_len);
    memcpy(p + prefix, header, header_len);
    if (n) memcpy(p + prefix + header_len, data, n);
    return p;
}

// A version 1.0 .npy with the dict `dict`, padded with spaces and a newline
// to a multiple of 64 bytes as numpy does.
static unsigned char *npy(const char *dict, const void *data, size_t n, size_t *len) {
    char header[1024];
    size_t d = strlen(dict), total = (10 + d + 1 + 63) / 64 * 64;
    memcpy(header, dict, d);
    memset(header + d, ' ', total - 10 - d - 1);
    header[total - 10 - 1] = '\n';
    return npy_raw(1, header, total - 10, data, n, len);
}

typedef struct {
    const char *name;  // the entry's full name, "w.npy"
    const unsigned char *data;
    size_t len;
    int method;        // 0 stored, 8 deflated
} zentry;

// A zip archive of the entries, with CRCs and sizes right and no comment.
static unsigned char *build_zip(const zentry *e, int n, size_t *out_len) {
    size_t cap = 1 << 16;
    for (int i = 0; i < n; i++) cap += 2 * e[i].len + 256;
    unsigned char *z = malloc(cap), *central = malloc(cap);
    size_t at = 0, c_at = 0;
    for (int i = 0; i < n; i++) {
        const unsigned char *body = e[i].data;
        size_t body_len = e[i].len;
        unsigned char *packed = NULL;
        if (e[i].method == 8) {
            uLong bound = compressBound((uLong)e[i].len) + 64;
            packed = malloc(bound);
            z_stream s = {0};
            cr_assert_eq(deflateInit2(&s, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
            s.next_in = (unsigned char *)e[i].data;
            s.avail_in = (uInt)e[i].len;
            s.next_out = packed;
            s.avail_out = (uInt)bound;
            cr_assert_eq(deflate(&s, Z_FINISH), Z_STREAM_END);
            body_len = s.total_out;
            deflateEnd(&s);
            body = packed;
        }
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
        size_t nl = strlen(e[i].name);
        unsigned char *h = z + at, *c = central + c_at;
        memset(h, 0, 30);
        put32(h, 0x04034b50);
        put16(h + 4, 20);
        put16(h + 8, (uint32_t)e[i].method);
        put16(h + 12, 0x21);
        put32(h + 14, crc);
        put32(h + 18, (uint32_t)body_len);
        put32(h + 22, (uint32_t)e[i].len);
        put16(h + 26, (uint32_t)nl);
        memcpy(h + 30, e[i].name, nl);
        memcpy(h + 30 + nl, body, body_len);
        memset(c, 0, 46);
        put32(c, 0x02014b50);
        put16(c + 4, 20);
        memcpy(c + 6, h + 4, 26);
        put32(c + 42, (uint32_t)at);
        memcpy(c + 46, e[i].name, nl);
        at += 30 + nl + body_len;
        c_at += 46 + nl;
        free(packed);
    }
    memcpy(z + at, central, c_at);
    unsigned char *end = z + at + c_at;
    memset(end, 0, 22);
    put32(end, 0x06054b50);
    put16(end + 8, (uint32_t)n);
    put16(end + 10, (uint32_t)n);
    put32(end + 12, (uint32_t)c_at);
    put32(end + 16, (uint32_t)at);
    *out_len = at + c_at + 22;
    free(central);
    return z;
}

// Central directory record k of a zip without comment.
static unsigned char *central_at(unsigned char *z, size_t len, int k) {
    unsigned char *c = z + get32(z + len - 22 + 16);
    for (int i = 0; i < k; i++) c += 46 + get16(c + 28) + get16(c + 30) + get16(c + 32);
    return c;
}
static unsigned char *local_at(unsigned char *z, size_t len, int k) { return z + get32(central_at(z, len, k) + 42); }

static const double W[6] = {0.5, -1.25, 3.0, 1e-300, -0.0, 42.0};

// A valid one-entry zip holding "w" = W as (2, 3) float64, stored or deflated.
static unsigned char *one_entry(int method, size_t *len) {
    size_t n;
    unsigned char *p = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", W, sizeof W, &n);
    zentry e = {"w.npy", p, n, method};
    unsigned char *z = build_zip(&e, 1, len);
    free(p);
    return z;
}

static int load(const unsigned char *z, size_t len, ts_npz **out) {
    return ts_npz_load_mem(z, len, "test.npz", NULL, out);
}

// Loads a one-entry zip whose .npy is `dict` + data[0..n); returns the status.
static int load_npy(const char *dict, const void *data, size_t n) {
    size_t np_len, len;
    unsigned char *p = npy(dict, data, n, &np_len);
    zentry e = {"a.npy", p, np_len, 0};
    unsigned char *z = build_zip(&e, 1, &len);
    ts_npz *back = NULL;
    int rc = load(z, len, &back);
    ts_npz_free(back);
    free(z);
    free(p);
    return rc;
}

// ---- round trips ---------------------------------------------------------------

static const char *const WORDS[] = {"<pad>", "", "chat", "été", "日本", "🙂x", "naïve"};

static ts_npz *sample(void) {
    ts_npz *z = ts_npz_new();
    double cube[24], odd[3] = {NAN, INFINITY, -INFINITY}, scalar = -0.0;
    for (int i = 0; i < 24; i++) cube[i] = sin(i) * 1e-3 + i;
    size_t s3[] = {2, 3, 4}, s1[] = {3}, s2[] = {1, 7}, sw[] = {7};
    cr_assert_eq(ts_npz_add_f8(z, "encoder.gru.weight_ih_l0", 3, s3, cube), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_add_f8(z, "odd", 1, s1, odd), TS_OK);
    cr_assert_eq(ts_npz_add_f8(z, "scalar", 0, NULL, &scalar), TS_OK);
    cr_assert_eq(ts_npz_add_strings(z, "tinyseq.vocab.source", 1, sw, WORDS), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_add_strings(z, "words2d", 2, s2, WORDS), TS_OK);
    const char *config = "model.hidden=8\nmodel.attention=dot\n";
    cr_assert_eq(ts_npz_add_strings(z, "tinyseq.config", 0, NULL, &config), TS_OK);
    return z;
}

static void assert_same(const ts_npz *a, const ts_npz *b) {
    cr_assert_eq(ts_npz_count(a), ts_npz_count(b));
    for (size_t i = 0; i < ts_npz_count(a); i++) {
        const ts_npz_array *x = ts_npz_at(a, i), *y = ts_npz_at(b, i);
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->dtype, y->dtype, "%s", x->name);
        cr_assert_eq(x->ndim, y->ndim, "%s", x->name);
        cr_assert_eq(x->size, y->size, "%s", x->name);
        for (int d = 0; d < TS_NPZ_MAX_NDIM; d++) cr_assert_eq(x->shape[d], y->shape[d], "%s dim %d", x->name, d);
        if (x->dtype == TS_NPZ_F8)
            cr_assert(memcmp(x->values, y->values, x->size * 8) == 0, "%s: values differ", x->name);
        else
            for (size_t k = 0; k < x->size; k++) cr_assert_str_eq(x->strings[k], y->strings[k], "%s[%zu]", x->name, k);
    }
}

Test(npz, round_trips_every_dtype_and_rank_bit_exact_stored_and_deflated) {
    ts_npz *z = sample();
    for (int method = 0; method < 2; method++) {
        unsigned char *bytes;
        size_t len;
        cr_assert_eq(ts_npz_save_mem(z, (enum ts_npz_method)method, &bytes, &len), TS_OK, "%s", ts_last_error());
        ts_npz *back;
        cr_assert_eq(load(bytes, len, &back), TS_OK, "%s", ts_last_error());
        assert_same(z, back);
        const ts_npz_array *w = ts_npz_find(back, "tinyseq.vocab.source");
        cr_assert_str_eq(w->strings[3], "été");
        cr_assert_str_eq(w->strings[1], "");
        cr_assert(isnan(ts_npz_find(back, "odd")->values[0]));
        cr_assert(signbit(ts_npz_find(back, "scalar")->values[0]));
        cr_assert_null(ts_npz_find(back, "absent"));
        ts_npz_free(back);
        free(bytes);
    }
    ts_npz_free(z);
}

// '<f4' arrays (a float32 model's export): 4 bytes a value in the file, the
// same floats back (held as float64, which holds them exactly), NaN and
// signed zero included; numpy reads them as float32 (test_cli_interop).
Test(npz, float32_arrays_round_trip_bit_exact_in_half_the_bytes) {
    float values[6] = {1.0f / 3.0f, -2.5e-7f, 3.4e38f, -0.0f, NAN, 1e-45f};
    double as_double[6];
    for (int i = 0; i < 6; i++) as_double[i] = values[i];
    size_t shape[2] = {2, 3};
    ts_npz *z4 = ts_npz_new(), *z8 = ts_npz_new();
    cr_assert_eq(ts_npz_add_f4(z4, "w", 2, shape, values), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_add_f8(z8, "w", 2, shape, as_double), TS_OK);
    unsigned char *b4, *b8;
    size_t n4, n8;
    cr_assert_eq(ts_npz_save_mem(z4, TS_NPZ_STORE, &b4, &n4), TS_OK);
    cr_assert_eq(ts_npz_save_mem(z8, TS_NPZ_STORE, &b8, &n8), TS_OK);
    cr_assert_eq(n8 - n4, 6 * 4, "the data of '<f4' is half of '<f8''s: %zu against %zu bytes", n4, n8);
    int says_f4 = 0;
    for (size_t i = 0; i + 14 <= n4 && !says_f4; i++) says_f4 = !memcmp(b4 + i, "'descr': '<f4'", 14);
    cr_assert(says_f4, "the header says '<f4'");
    ts_npz *back;
    cr_assert_eq(load(b4, n4, &back), TS_OK, "%s", ts_last_error());
    const ts_npz_array *w = ts_npz_find(back, "w");
    cr_assert_eq(w->dtype, TS_NPZ_F4);
    for (int i = 0; i < 6; i++) {
        float got = (float)w->values[i];
        cr_assert(memcmp(&got, &values[i], 4) == 0, "value %d: %.9g, want %.9g", i, got, values[i]);
    }
    ts_npz_free(back);
    free(b4);
    free(b8);
    ts_npz_free(z4);
    ts_npz_free(z8);
}

// '|u1' arrays (a subword model's SentencePiece models in an export): one
// byte a value, every byte value back as it was, whatever the method.
Test(npz, byte_arrays_round_trip_as_u1) {
    uint8_t bytes[300];
    for (int i = 0; i < 300; i++) bytes[i] = (uint8_t)(i * 7 + 3);
    size_t shape[1] = {300};
    for (int method = 0; method < 2; method++) {
        ts_npz *z = ts_npz_new();
        cr_assert_eq(ts_npz_add_u1(z, "tinyseq.subword.source", 1, shape, bytes), TS_OK, "%s", ts_last_error());
        unsigned char *file;
        size_t n;
        cr_assert_eq(ts_npz_save_mem(z, (enum ts_npz_method)method, &file, &n), TS_OK);
        int says_u1 = 0;
        for (size_t i = 0; i + 14 <= n && !says_u1; i++) says_u1 = !memcmp(file + i, "'descr': '|u1'", 14);
        cr_assert(method == TS_NPZ_DEFLATE || says_u1, "the header says '|u1'");
        ts_npz *back;
        cr_assert_eq(load(file, n, &back), TS_OK, "%s", ts_last_error());
        const ts_npz_array *a = ts_npz_find(back, "tinyseq.subword.source");
        cr_assert(a && a->dtype == TS_NPZ_U1 && a->ndim == 1 && a->size == 300 && !a->values && !a->strings);
        cr_assert(!memcmp(a->bytes, bytes, 300), "the bytes changed");
        ts_npz_free(back);
        free(file);
        ts_npz_free(z);
    }
}

Test(npz, saves_identical_bytes_and_aligns_data_to_64) {
    ts_npz *a = sample(), *b = sample();
    unsigned char *x, *y;
    size_t nx, ny;
    cr_assert_eq(ts_npz_save_mem(a, TS_NPZ_STORE, &x, &nx), TS_OK);
    cr_assert_eq(ts_npz_save_mem(b, TS_NPZ_STORE, &y, &ny), TS_OK);
    cr_assert(nx == ny && memcmp(x, y, nx) == 0);
    // First entry, stored: its .npy header ends with '\n' at a multiple of 64.
    const unsigned char *npy_start = x + 30 + get16(x + 26);
    size_t header_len = get16(npy_start + 8);
    cr_assert_eq((10 + header_len) % 64, 0);
    cr_assert_eq(npy_start[10 + header_len - 1], '\n');
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }";
    cr_assert(memcmp(npy_start + 10, dict, strlen(dict)) == 0, "%.*s", (int)header_len, (const char *)npy_start + 10);
    free(x);
    free(y);
    ts_npz_free(a);
    ts_npz_free(b);
}

Test(npz, deflate_shrinks_what_compresses_and_stored_keeps_sizes_equal) {
    ts_npz *z = ts_npz_new();
    double zeros[512] = {0};
    size_t n[] = {512};
    cr_assert_eq(ts_npz_add_f8(z, "zeros", 1, n, zeros), TS_OK);
    for (int method = 0; method < 2; method++) {
        unsigned char *bytes;
        size_t len;
        cr_assert_eq(ts_npz_save_mem(z, (enum ts_npz_method)method, &bytes, &len), TS_OK);
        const unsigned char *c = central_at(bytes, len, 0);
        cr_assert_eq(get16(c + 10), method == TS_NPZ_DEFLATE ? 8 : 0);
        cr_assert_eq(get32(c + 24), 128 + 512 * 8);
        if (method == TS_NPZ_DEFLATE) cr_assert_lt(get32(c + 20), 200);
        else cr_assert_eq(get32(c + 20), get32(c + 24));
        ts_npz *back;
        cr_assert_eq(load(bytes, len, &back), TS_OK, "%s", ts_last_error());
        assert_same(z, back);
        ts_npz_free(back);
        free(bytes);
    }
    ts_npz_free(z);
}

Test(npz, saves_atomically_and_reports_the_path) {
    char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/w.npz", dir);
    ts_npz *z = sample(), *back;
    cr_assert_eq(ts_npz_save(z, path, TS_NPZ_DEFLATE), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_load(path, NULL, &back), TS_OK, "%s", ts_last_error());
    assert_same(z, back);
    ts_npz_free(back);
    snprintf(path, sizeof path, "%s/missing/w.npz", dir);
    assert_fails_with(ts_npz_save(z, path, TS_NPZ_STORE), TS_ERR_IO, path);
    assert_fails_with(ts_npz_load(path, NULL, &back), TS_ERR_IO, path);
    cr_assert_null(back);
    // No temporary file is left behind.
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            files++;
            cr_assert(!strstr(e->d_name, ".tmp-"), "left %s", e->d_name);
        }
    closedir(d);
    cr_assert_eq(files, 1);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    free(dir);
    ts_npz_free(z);
}

// A write that fails half way (here: past the file size limit) leaves the
// old file as it was and no temporary file.
Test(npz, failed_write_keeps_the_old_file) {
    char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/w.npz", dir);
    ts_npz *small = ts_npz_new(), *big = sample();
    size_t one[] = {1};
    cr_assert_eq(ts_npz_add_f8(small, "w", 1, one, W), TS_OK);
    cr_assert_eq(ts_npz_save(small, path, TS_NPZ_STORE), TS_OK, "%s", ts_last_error());
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 400, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = ts_npz_save(big, path, TS_NPZ_STORE);
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &lim);
    assert_fails_with(rc, TS_ERR_IO, strerror(EFBIG));
    cr_assert(strstr(ts_last_error(), path), "%s", ts_last_error());
    ts_npz *back;
    cr_assert_eq(ts_npz_load(path, NULL, &back), TS_OK, "%s", ts_last_error());
    assert_same(small, back);
    ts_npz_free(back);
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d))) cr_assert(!strstr(e->d_name, ".tmp-"), "left %s", e->d_name);
    closedir(d);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    free(dir);
    ts_npz_free(small);
    ts_npz_free(big);
}

Test(npz, setters_reject_bad_names_shapes_and_strings) {
    ts_npz *z = ts_npz_new();
    double v[2] = {1, 2};
    size_t s[] = {2}, zero[] = {0};
    assert_fails_with(ts_npz_add_f8(z, "", 1, s, v), TS_ERR_ARG, "bad array name");
    assert_fails_with(ts_npz_add_f8(z, "a b", 1, s, v), TS_ERR_ARG, "bad array name");
    assert_fails_with(ts_npz_add_f8(z, "dir/a", 1, s, v), TS_ERR_ARG, "bad array name");
    assert_fails_with(ts_npz_add_f8(z, "a", 1, zero, v), TS_ERR_ARG, "bad shape");
    assert_fails_with(ts_npz_add_f8(z, "a", 9, s, v), TS_ERR_ARG, "bad shape");
    cr_assert_eq(ts_npz_add_f8(z, "a", 1, s, v), TS_OK);
    assert_fails_with(ts_npz_add_f8(z, "a", 1, s, v), TS_ERR_ARG, "duplicate");
    const char *bad[] = {"ok", "\xff"};
    assert_fails_with(ts_npz_add_strings(z, "s", 1, s, bad), TS_ERR_ARG, "not valid UTF-8");
    cr_assert_eq(ts_npz_count(z), 1);
    ts_npz_free(z);
}

// ---- what numpy writes ------------------------------------------------------------

// numpy.savez opens its entries with force_zip64: the local header says
// 0xffffffff for both sizes and carries them in a ZIP64 extra field, while
// the central directory has plain 32-bit sizes. That must load.
Test(npz, accepts_numpy_local_headers_with_a_zip64_extra_field) {
    size_t n, len;
    unsigned char *p = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", W, sizeof W, &n);
    zentry e = {"w.npy", p, n, 0};
    unsigned char *z = build_zip(&e, 1, &len);
    // Rebuild with a 20-byte extra field after the local name.
    unsigned char *y = malloc(len + 20);
    size_t head = 30 + 5;
    memcpy(y, z, head);
    put32(y + 18, 0xffffffffu);
    put32(y + 22, 0xffffffffu);
    put16(y + 28, 20);
    put16(y + head, 1);
    put16(y + head + 2, 16);
    unsigned char sizes[16] = {0};
    put32(sizes, (uint32_t)n);
    put32(sizes + 8, (uint32_t)n);
    memcpy(y + head + 4, sizes, 16);
    memcpy(y + head + 20, z + head, len - head);
    put32(y + len + 20 - 22 + 16, get32(z + len - 22 + 16) + 20); // central directory moved
    ts_npz *back;
    cr_assert_eq(load(y, len + 20, &back), TS_OK, "%s", ts_last_error());
    cr_assert(memcmp(ts_npz_find(back, "w")->values, W, sizeof W) == 0);
    ts_npz_free(back);
    // The same field with wrong sizes is refused.
    y[head + 4] ^= 1;
    assert_fails_with(load(y, len + 20, &back), TS_ERR_FORMAT, "local header's sizes or CRC disagree");
    free(y);
    free(z);
    free(p);
}

Test(npz, accepts_version_2_headers_and_double_quotes) {
    const char *dict = "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (6,)}\n";
    size_t n, len;
    unsigned char *p = npy_raw(2, dict, strlen(dict), W, sizeof W, &n);
    zentry e = {"w.npy", p, n, 8};
    unsigned char *z = build_zip(&e, 1, &len);
    ts_npz *back;
    cr_assert_eq(load(z, len, &back), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_find(back, "w")->size, 6);
    ts_npz_free(back);
    free(z);
    free(p);
}

// ---- damaged files -----------------------------------------------------------------

Test(npz, rejects_a_truncation_at_every_byte_offset) {
    for (int method = 0; method < 2; method++) {
        ts_npz *z = sample();
        unsigned char *bytes;
        size_t len;
        cr_assert_eq(ts_npz_save_mem(z, (enum ts_npz_method)method, &bytes, &len), TS_OK);
        for (size_t cut = 0; cut < len; cut++) {
            ts_npz *back = NULL;
            int rc = load(bytes, cut, &back);
            cr_assert_eq(rc, TS_ERR_FORMAT, "cut at %zu of %zu loaded (%d)", cut, len, rc);
            cr_assert_null(back);
            cr_assert(strstr(ts_last_error(), "test.npz"), "message without the file: %s", ts_last_error());
        }
        free(bytes);
        ts_npz_free(z);
    }
}

// A flipped bit either is rejected or changes nothing a reader sees (zip
// fields such as the timestamp or the "made by" version mean nothing here):
// never different arrays.
Test(npz, a_bit_flip_is_rejected_or_harmless) {
    for (int method = 0; method < 2; method++) {
        ts_npz *z = sample();
        unsigned char *bytes;
        size_t len;
        cr_assert_eq(ts_npz_save_mem(z, (enum ts_npz_method)method, &bytes, &len), TS_OK);
        size_t rejected = 0, harmless = 0;
        for (size_t i = 0; i < len; i++)
            for (int bit = 0; bit < 8; bit++) {
                bytes[i] ^= (unsigned char)(1 << bit);
                ts_npz *back = NULL;
                int rc = load(bytes, len, &back);
                if (rc == TS_OK) {
                    assert_same(z, back);
                    harmless++;
                } else {
                    cr_assert_eq(rc, TS_ERR_FORMAT, "byte %zu bit %d: %d %s", i, bit, rc, ts_last_error());
                    rejected++;
                }
                ts_npz_free(back);
                bytes[i] ^= (unsigned char)(1 << bit);
            }
        cr_log_info("%s: %zu flips rejected, %zu harmless", method ? "stored" : "deflated", rejected, harmless);
        cr_assert_gt(rejected, 8 * harmless);
        free(bytes);
        ts_npz_free(z);
    }
}

Test(npz, rejects_a_bad_crc) {
    size_t len;
    unsigned char *z = one_entry(0, &len);
    ts_npz *back;
    // The data changes; both CRC copies keep the old value.
    z[30 + 5 + 64] ^= 0x40;
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "entry 'w': CRC-32 mismatch");
    z[30 + 5 + 64] ^= 0x40;
    // Both CRCs changed consistently.
    put32(local_at(z, len, 0) + 14, 0x12345678);
    put32(central_at(z, len, 0) + 16, 0x12345678);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "CRC-32 mismatch");
    free(z);
}

Test(npz, rejects_sizes_that_do_not_fit) {
    for (int method = 0; method < 2; method++) {
        size_t len;
        unsigned char *z = one_entry(method ? 8 : 0, &len);
        unsigned char *c = central_at(z, len, 0), *h = local_at(z, len, 0);
        ts_npz *back;
        uint32_t csize = get32(c + 20), usize = get32(c + 24);
        // Uncompressed size one more / one less in both headers.
        for (int delta = -1; delta <= 1; delta += 2) {
            put32(c + 24, usize + (uint32_t)delta);
            put32(h + 22, usize + (uint32_t)delta);
            if (method == 0) {
                put32(c + 20, usize + (uint32_t)delta);
                put32(h + 18, usize + (uint32_t)delta);
            }
            cr_assert_eq(load(z, len, &back), TS_ERR_FORMAT, "usize %+d loaded", delta);
            cr_log_info("usize %+d: %s", delta, ts_last_error());
            put32(c + 24, usize);
            put32(h + 22, usize);
            put32(c + 20, csize);
            put32(h + 18, csize);
        }
        // Compressed size running into the central directory.
        put32(c + 20, csize + 1);
        put32(h + 18, csize + 1);
        if (method == 0) {
            put32(c + 24, usize + 1);
            put32(h + 22, usize + 1);
        }
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "run past the start of the central directory");
        put32(c + 20, csize);
        put32(h + 18, csize);
        put32(c + 24, usize);
        put32(h + 22, usize);
        // Local and central disagree.
        put32(h + 22, usize + 8);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "disagree with the central directory");
        put32(h + 22, usize);
        // Stored with different sizes.
        if (method == 0) {
            put32(c + 24, usize - 8);
            put32(h + 22, usize - 8);
            assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "stored but its sizes differ");
            put32(c + 24, usize);
            put32(h + 22, usize);
        }
        // Offsets and counts in the end record.
        unsigned char *end = z + len - 22;
        put32(end + 16, get32(end + 16) + 1);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "does not end where the end record starts");
        put32(end + 16, get32(end + 16) - 1);
        put16(end + 10, 2);
        put16(end + 8, 2);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "central directory record 1");
        put16(end + 10, 0);
        put16(end + 8, 0);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "unexplained bytes");
        put16(end + 10, 1);
        put16(end + 8, 1);
        put32(c + 42, 1);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "no local header at offset 1");
        put32(c + 42, 0);
        put16(c + 30, 0xffff); // extra field length past the directory
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "runs past the directory");
        put16(c + 30, 0);
        cr_assert_eq(load(z, len, &back), TS_OK, "%s", ts_last_error());
        ts_npz_free(back);
        free(z);
    }
}

Test(npz, rejects_empty_short_and_non_zip_files) {
    ts_npz *back;
    assert_fails_with(load((const unsigned char *)"", 0, &back), TS_ERR_FORMAT, "too short for a zip file");
    const char *text = "this is not a zip file, just some words long enough to be scanned";
    assert_fails_with(load((const unsigned char *)text, strlen(text), &back), TS_ERR_FORMAT,
                      "no zip end-of-central-directory record");
    // A gzip file (a checkpoint, say) is not an npz either.
    unsigned char gz[64] = {0x1f, 0x8b, 8};
    assert_fails_with(load(gz, sizeof gz, &back), TS_ERR_FORMAT, "not a zip file");
    cr_assert_null(back);
}

Test(npz, rejects_zip_features_it_does_not_support) {
    size_t len;
    unsigned char *z = one_entry(0, &len);
    unsigned char *c = central_at(z, len, 0), *h = local_at(z, len, 0);
    ts_npz *back;
    put16(c + 8, 1);
    put16(h + 6, 1);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "entry 'w' is encrypted");
    put16(c + 8, 0x0010);
    put16(h + 6, 0x0010);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "unsupported zip flags");
    put16(c + 8, 0);
    put16(h + 6, 0);
    put16(c + 10, 12);
    put16(h + 8, 12);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "compression method 12 is not supported");
    put16(c + 10, 0);
    put16(h + 8, 0);
    put32(c + 24, 0xffffffffu);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "ZIP64");
    put32(c + 24, get32(h + 22));
    unsigned char *end = z + len - 22;
    put16(end + 4, 1);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "multi-disk");
    put16(end + 4, 0);
    put16(end + 10, 0xffff);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "ZIP64 archives are not supported");
    free(z);
}

Test(npz, rejects_bad_entry_names_and_duplicates) {
    size_t n, len;
    unsigned char *p = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", W, sizeof W, &n);
    const char *bad[] = {"w.txt", ".npy", "dir/w.npy", "a b.npy", "w\x01.npy", "w.NPY"};
    ts_npz *back;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zentry e = {bad[i], p, n, 0};
        unsigned char *z = build_zip(&e, 1, &len);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "bad name");
        free(z);
    }
    zentry two[] = {{"w.npy", p, n, 0}, {"v.npy", p, n, 8}, {"w.npy", p, n, 8}};
    unsigned char *z = build_zip(two, 3, &len);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "entry 'w' appears twice");
    free(z);
    z = build_zip(two, 2, &len);
    cr_assert_eq(load(z, len, &back), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_count(back), 2);
    ts_npz_free(back);
    free(z);
    free(p);
}

Test(npz, rejects_lying_and_malformed_npy_headers) {
    struct {
        const char *dict;
        size_t data;  // bytes of W to append
        const char *fragment;
    } cases[] = {
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 48, "data bytes do not hold the shape"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (7,), }", 48, "data bytes do not hold the shape"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 16, "data bytes do not hold the shape"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (24,), }", 48, "dtype '<f2' is not supported"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (11,), }", 48, "data bytes do not hold the shape"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (47,), }", 48, "data bytes do not hold the shape"},
        {"{'descr': '|i1', 'fortran_order': False, 'shape': (48,), }", 48, "dtype '|i1' is not supported"},
        {"{'descr': '<U', 'fortran_order': False, 'shape': (12,), }", 48, "dtype '<U' is not supported"},
        {"{'descr': '>f8', 'fortran_order': False, 'shape': (6,), }", 48, "dtype '>f8' is not supported"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (6,), }", 48, "dtype '|O' is not supported"},
        {"{'descr': '<U0', 'fortran_order': False, 'shape': (12,), }", 48, "dtype '<U0'"},
        {"{'descr': '<U012', 'fortran_order': False, 'shape': (1,), }", 48, "dtype '<U012'"},
        {"{'descr': '<U99999', 'fortran_order': False, 'shape': (1,), }", 48, "dtype '<U99999'"},
        {"{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48, "fortran_order True is not supported"},
        {"{'descr': '<f8', 'fortran_order': 0, 'shape': (6,), }", 48, "malformed .npy header"},
        {"{'descr': '<f8', 'shape': (6,), }", 48, "lacks 'fortran_order'"},
        {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 48, "repeated key 'descr'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'extra': 1, }", 48, "unexpected or repeated key"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (6), }", 48, "malformed .npy header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (-6,), }", 48, "malformed .npy header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (06,), }", 48, "malformed .npy header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }", 0, "empty arrays"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 48,
         "malformed .npy header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967294, 4294967294), }", 48,
         "data bytes do not hold"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", 48, "malformed .npy header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (6,), } junk", 48, "malformed .npy header"},
        {"{'descr': '<f8\\', 'fortran_order': False, 'shape': (6,), }", 48, "malformed .npy header"},
        {"['descr', '<f8']", 48, "malformed .npy header"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = load_npy(cases[i].dict, W, cases[i].data);
        cr_assert_eq(rc, TS_ERR_FORMAT, "case %zu (%s) gave %d", i, cases[i].dict, rc);
        cr_assert(strstr(ts_last_error(), cases[i].fragment) && strstr(ts_last_error(), "entry 'a'"),
                  "case %zu: message '%s' lacks '%s'", i, ts_last_error(), cases[i].fragment);
    }
    // The prefix: magic, version, header length, newline.
    size_t n, len;
    ts_npz *back;
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }";
    struct {
        int major;
        const char *header;
        size_t header_len;
        const char *fragment;
    } raw[] = {
        {3, dict, 0, ".npy version 3.0 is not supported"},
        {1, dict, 0, "does not end with a newline"},
        {1, "{'descr': '<f8',\x01 'fortran_order': False, 'shape': (6,), }\n", 0, "control byte"},
        {1, "", 60000, "header length 60000 does not fit"},
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        // header_len 0: the text as it is; else a length field that lies.
        size_t text_len = raw[i].header_len == 60000 ? 0 : strlen(raw[i].header);
        unsigned char *p = npy_raw(raw[i].major, raw[i].header, text_len, W, sizeof W, &n);
        if (raw[i].header_len == 60000) put16(p + 8, 60000);
        zentry e = {"a.npy", p, n, 8};
        unsigned char *z = build_zip(&e, 1, &len);
        assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, raw[i].fragment);
        free(z);
        free(p);
    }
    unsigned char not_npy[16] = "NUMPY not magic";
    zentry e = {"a.npy", not_npy, sizeof not_npy, 0};
    unsigned char *z = build_zip(&e, 1, &len);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "entry 'a' is not a .npy file (bad magic)");
    free(z);
}

Test(npz, rejects_strings_with_invalid_characters) {
    uint32_t units[4] = {'a', 0, 'b', 0}; // an interior NUL
    cr_assert_eq(load_npy("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", units, 16), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "invalid character (U+0000)"), "%s", ts_last_error());
    uint32_t surrogate[2] = {0xd800, 'x'};
    cr_assert_eq(load_npy("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", surrogate, 8), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "U+D800"), "%s", ts_last_error());
    uint32_t big[1] = {0x110000};
    cr_assert_eq(load_npy("{'descr': '<U1', 'fortran_order': False, 'shape': (), }", big, 4), TS_ERR_FORMAT);
    // Trailing NULs are padding, as numpy reads them.
    uint32_t padded[3] = {0xe9, 't', 0};
    cr_assert_eq(load_npy("{'descr': '<U3', 'fortran_order': False, 'shape': (), }", padded, 12), TS_OK, "%s",
                 ts_last_error());
}

// ---- zip bombs ---------------------------------------------------------------------

static long peak_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

// A one-entry zip "bomb.npy": a valid .npy header for `zeros` bytes of
// float64 zeros, deflated in pieces so the test itself never holds them.
static unsigned char *bomb_zip(size_t zeros, size_t *len) {
    size_t header_len;
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu,), }", zeros / 8);
    unsigned char *header = npy(dict, NULL, 0, &header_len);
    size_t cap = zeros / 1000 + (1 << 20);
    unsigned char *z = malloc(cap), *piece = calloc(1, 1 << 20);
    z_stream s = {0};
    cr_assert_eq(deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    s.next_out = z + 30 + 8;
    s.avail_out = (uInt)(cap - 30 - 8 - 200);
    s.next_in = header;
    s.avail_in = (uInt)header_len;
    cr_assert_eq(deflate(&s, Z_NO_FLUSH), Z_OK);
    uLong crc = crc32(0, header, (uInt)header_len);
    for (size_t done = 0; done < zeros; done += 1 << 20) {
        size_t k = zeros - done < (1 << 20) ? zeros - done : 1 << 20;
        s.next_in = piece;
        s.avail_in = (uInt)k;
        crc = crc32(crc, piece, (uInt)k);
        cr_assert_eq(deflate(&s, done + k == zeros ? Z_FINISH : Z_NO_FLUSH), done + k == zeros ? Z_STREAM_END : Z_OK);
    }
    size_t csize = s.total_out, usize = header_len + zeros;
    deflateEnd(&s);
    free(piece);
    free(header);
    unsigned char *h = z, *c = z + 30 + 8 + csize;
    memset(h, 0, 30);
    put32(h, 0x04034b50);
    put16(h + 4, 20);
    put16(h + 8, 8);
    put32(h + 14, (uint32_t)crc);
    put32(h + 18, (uint32_t)csize);
    put32(h + 22, (uint32_t)usize);
    put16(h + 26, 8);
    memcpy(h + 30, "bomb.npy", 8);
    memset(c, 0, 46);
    put32(c, 0x02014b50);
    memcpy(c + 6, h + 4, 26);
    memcpy(c + 46, "bomb.npy", 8);
    unsigned char *end = c + 46 + 8;
    memset(end, 0, 22);
    put32(end, 0x06054b50);
    put16(end + 8, 1);
    put16(end + 10, 1);
    put32(end + 12, 46 + 8);
    put32(end + 16, (uint32_t)(30 + 8 + csize));
    *len = (size_t)(end + 22 - z);
    return z;
}

Test(npz, rejects_zip_bombs_fast_with_bounded_memory) {
    // 256 MiB of zeros deflate to about 256 KiB.
    size_t len;
    unsigned char *z = bomb_zip((size_t)256 << 20, &len);
    unsigned char *c = central_at(z, len, 0), *h = local_at(z, len, 0);
    ts_npz *back;
    ts_npz_load_opts opts = {.max_payload = (uint64_t)16 << 20};
    long rss0 = peak_rss_kib();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    // Declared larger than the cap: refused before inflating.
    assert_fails_with(ts_npz_load_mem(z, len, "bomb.npz", &opts, &back), TS_ERR_FORMAT,
                      "more than 16777216 bytes uncompressed (the cap)");
    // Declared small, inflating to 256 MiB: stops at the declared size,
    // with the default cap too.
    put32(c + 24, 1000);
    put32(h + 22, 1000);
    assert_fails_with(ts_npz_load_mem(z, len, "bomb.npz", NULL, &back), TS_ERR_FORMAT,
                      "inflates past the 1000 bytes its header declares");
    // Declared beyond what deflate can expand to from so few bytes.
    put32(c + 24, 0xfffffff0u);
    put32(h + 22, 0xfffffff0u);
    assert_fails_with(ts_npz_load_mem(z, len, "bomb.npz", NULL, &back), TS_ERR_FORMAT,
                      "more than deflate can expand to");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long grew = peak_rss_kib() - rss0;
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_log_info("zip bomb (%zu-byte file, 256 MiB inflated): rejected three ways in %.4f s, peak RSS grew %ld KiB", len,
                s, grew);
    cr_assert_lt(grew, 8 << 10, "peak RSS grew %ld KiB", grew);
    free(z);
}

// Many central records pointing at the same local entry: the classic way a
// small zip declares far more data than it holds.
Test(npz, rejects_overlapping_entries) {
    size_t n, len;
    unsigned char *p = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", W, sizeof W, &n);
    zentry two[] = {{"a.npy", p, n, 0}, {"a.npy", p, n, 0}};
    unsigned char *z = build_zip(two, 2, &len);
    ts_npz *back;
    // Both central records point at the first local header (which agrees
    // with both): the overlap is found before the duplicate name.
    unsigned char *c1 = central_at(z, len, 1);
    put32(c1 + 42, 0);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "entries 'a' and 'a' overlap");
    // A local header that starts inside the previous entry's data.
    put32(c1 + 42, 30 + 5 + 8);
    assert_fails_with(load(z, len, &back), TS_ERR_FORMAT, "no local header");
    free(z);
    free(p);
}

// Every input in tests/fixtures/npz_crashes/ once crashed the reader in a
// fuzzing build; each must now load or fail cleanly. With no files this
// passes trivially.
Test(npz, replays_fuzzer_crash_inputs) {
    const char *dir_path = TS_SOURCE_DIR "/tests/fixtures/npz_crashes";
    DIR *dir = opendir(dir_path);
    int replayed = 0;
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
        ts_npz *back = NULL;
        int rc = ts_npz_load(path, NULL, &back);
        cr_assert(rc == TS_OK || rc == TS_ERR_FORMAT || rc == TS_ERR_NOMEM, "%s: %d", path, rc);
        ts_npz_free(back);
        replayed++;
    }
    if (dir) closedir(dir);
    cr_log_info("replayed %d fuzzer crash inputs from %s", replayed, dir_path);
}
