#define _DEFAULT_SOURCE  // MAP_ANONYMOUS, MAP_NORESERVE
// Checkpoint container: round trips, determinism, atomic saves, and a loader
// that rejects every kind of damaged or hostile file with a message.
//
// Several tests edit the decompressed payload and then repair its CRCs with
// fix_crcs() below, an independent reading of docs/checkpoint.md, so that a
// structure check (not a CRC) is what must catch the damage.
#include "ckpt/ckpt.h"
#include "infer/load.h"
#include "models/fields.h"
#include "infer/translate.h"

#include "tensor/kernels.h"
#include "tensor/status.h"
#include "testutil.h"
#include "tensor/threads.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

// Strings and buffers a test hands to keep() are freed after it, and the
// directories made by tmpdir() are removed, so LeakSanitizer stays quiet.
static void *kept[64];
static int n_kept;
static char *tmp_dirs[8];
static int n_tmp_dirs;

static void *keep(void *p) {
    cr_assert_lt(n_kept, 64);
    return kept[n_kept++] = p;
}

static char *tmpdir(void) {
    cr_assert_lt(n_tmp_dirs, 8);
    return tmp_dirs[n_tmp_dirs++] = keep(test_tmpdir());
}

static void release_kept(void) {
    for (int i = 0; i < n_tmp_dirs; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dirs[i]);
        if (system(cmd) != 0) cr_log_warn("could not remove %s", tmp_dirs[i]);
    }
    for (int i = 0; i < n_kept; i++) free(kept[i]);
    n_kept = n_tmp_dirs = 0;
}

TestSuite(checkpoint, .fini = release_kept);

// ---- helpers ----------------------------------------------------------------

static const char *const SOURCE_TOKENS[] = {"<pad>", "<unk>", "<s>", "</s>", "le", "chat",
                                            "été", "naïve", "日本", "🙂"};
static const char *const TARGET_TOKENS[] = {"<pad>", "<unk>", "<s>", "</s>", "the", "cat"};

// A small checkpoint touching every section and every tensor rank.
static ts_ckpt *sample(void) {
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_not_null(ck);
    cr_assert_eq(ts_ckpt_set(ck, "model", "seq2seq"), TS_OK);
    cr_assert_eq(ts_ckpt_set(ck, "attention", "bahdanau"), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "hidden", 4), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "step", 1234567), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "data.position", -1), TS_OK);
    cr_assert_eq(ts_ckpt_set_double(ck, "lr", 1e-3), TS_OK);
    cr_assert_eq(ts_ckpt_set_double(ck, "best_dev_loss", 2.718281828459045), TS_OK);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "source", SOURCE_TOKENS, 10), TS_OK);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "target", TARGET_TOKENS, 6), TS_OK);

    double scalar = -0.0;
    double bias[3] = {NAN, INFINITY, -INFINITY};
    double weight[2 * 3];
    double cube[2 * 2 * 2];
    for (int i = 0; i < 6; i++) weight[i] = 0.1 * i - 0.25;
    for (int i = 0; i < 8; i++) cube[i] = i % 2 ? DBL_MIN / 3 : DBL_MAX / (i + 1);
    size_t s1[] = {3}, s2[] = {2, 3}, s3[] = {2, 2, 2};
    // float32 tensors beside the float64 ones (a float32 model keeps float64
    // history): every damage test below covers them too. 5 values: 20 bytes,
    // so the next tensor's padding is not a multiple of 8.
    uint32_t nan_payload = 0x7fa00001;  // a NaN with a payload: kept bit for bit
    float embedding[5] = {-0.0f, FLT_MIN / 4, FLT_MAX, 0, 1.0f / 3};
    memcpy(&embedding[3], &nan_payload, sizeof nan_payload);
    size_t s5[] = {5};
    cr_assert_eq(ts_ckpt_add_tensor_dtype(ck, TS_CKPT_OPTIM, "adam.v.decoder.embedding", TS_F32, 1, s5, embedding),
                 TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "encoder.weight", 2, s2, weight), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "encoder.bias", 1, s1, bias), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "attn.cube", 3, s3, cube), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor_dtype(ck, TS_CKPT_PARAMS, "decoder.embedding", TS_F32, 1, s5, embedding), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "scale", 0, NULL, &scalar), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "adam.m.encoder.weight", 2, s2, weight),
                 TS_OK);
    double t = 17;
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "adam.t", 0, NULL, &t), TS_OK);
    unsigned char rng[40];
    for (int i = 0; i < 40; i++) rng[i] = (unsigned char)(i * 37 + 11);
    cr_assert_eq(ts_ckpt_set_blob(ck, "rng", rng, sizeof rng), TS_OK);
    cr_assert_eq(ts_ckpt_set_blob(ck, "empty", NULL, 0), TS_OK);
    return ck;
}

static void save_mem(const ts_ckpt *ck, unsigned char **buf, size_t *len) {
    cr_assert_eq(ts_ckpt_save_mem(ck, buf, len), TS_OK, "%s", ts_last_error());
}

// Asserts a and b hold the same entries, vocabularies, tensors (bit for bit)
// and blobs, in the same order.
static void assert_same(const ts_ckpt *a, const ts_ckpt *b) {
    cr_assert_eq(ts_ckpt_header_count(a), ts_ckpt_header_count(b));
    for (size_t i = 0; i < ts_ckpt_header_count(a); i++) {
        const char *ka, *va, *kb, *vb;
        ts_ckpt_header_at(a, i, &ka, &va);
        ts_ckpt_header_at(b, i, &kb, &vb);
        cr_assert_str_eq(ka, kb);
        cr_assert_str_eq(va, vb);
    }
    cr_assert_eq(ts_ckpt_vocab_count(a), ts_ckpt_vocab_count(b));
    for (size_t i = 0; i < ts_ckpt_vocab_count(a); i++) {
        const ts_ckpt_vocab *x = ts_ckpt_vocab_at(a, i), *y = ts_ckpt_vocab_at(b, i);
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->count, y->count);
        for (size_t k = 0; k < x->count; k++) cr_assert_str_eq(x->tokens[k], y->tokens[k]);
    }
    for (int s = TS_CKPT_PARAMS; s <= TS_CKPT_OPTIM; s++) {
        cr_assert_eq(ts_ckpt_tensor_count(a, s), ts_ckpt_tensor_count(b, s));
        for (size_t i = 0; i < ts_ckpt_tensor_count(a, s); i++) {
            const ts_ckpt_tensor *x = ts_ckpt_tensor_at(a, s, i), *y = ts_ckpt_tensor_at(b, s, i);
            cr_assert_str_eq(x->name, y->name);
            cr_assert_eq(x->dtype, y->dtype, "tensor %s", x->name);
            cr_assert_eq(x->ndim, y->ndim);
            cr_assert_eq(x->size, y->size);
            for (int d = 0; d < TS_CKPT_MAX_NDIM; d++) cr_assert_eq(x->shape[d], y->shape[d]);
            cr_assert(memcmp(x->raw, y->raw, x->size * ts_dtype_size(x->dtype)) == 0,
                      "tensor %s differs in its bits", x->name);
        }
    }
    cr_assert_eq(ts_ckpt_blob_count(a), ts_ckpt_blob_count(b));
    for (size_t i = 0; i < ts_ckpt_blob_count(a); i++) {
        const char *na, *nb;
        const void *ba, *bb;
        size_t la, lb;
        ts_ckpt_blob_at(a, i, &na, &ba, &la);
        ts_ckpt_blob_at(b, i, &nb, &bb, &lb);
        cr_assert_str_eq(na, nb);
        cr_assert_eq(la, lb);
        cr_assert(la == 0 || memcmp(ba, bb, la) == 0);
    }
}

static void gzip_bytes(const unsigned char *in, size_t n, int level, unsigned char **out,
                       size_t *out_len) {
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *buf = malloc(cap);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    *out = buf;
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void wr64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// Recomputes every CRC of a payload laid out as docs/checkpoint.md says:
// prelude CRC at 28 over [0,28); sections from 32 as tag(4) len(8) body crc(4)
// with the CRC over tag..body; a trailer CRC over everything before it.
// Damaged structure is repaired as far as it can be walked.
static void fix_crcs(unsigned char *p, size_t len) {
    if (len < 32) return;
    wr32(p + 28, (uint32_t)crc32(0, p, 28));
    size_t pos = 32;
    for (int s = 0; s < 5 && len >= 4 && pos + 12 <= len - 4; s++) {
        uint64_t body = rd64(p + pos + 4);
        if (body > len - 4 - (pos + 12) || len - 4 - (pos + 12) - body < 4) break;
        size_t end = pos + 12 + (size_t)body;
        wr32(p + end, (uint32_t)crc32(0, p + pos, (uInt)(end - pos)));
        pos = end + 4;
    }
    wr32(p + len - 4, (uint32_t)crc32(0, p, (uInt)(len - 4)));
}

// `ck`'s file, for editing: a version-2 file is its payload, uncompressed.
static void payload_of(const ts_ckpt *ck, unsigned char **payload, size_t *len) { save_mem(ck, payload, len); }

// `ck`'s file gzip'd, as a version-1 file or `gzip -k` of a version-2 one:
// what the gzip layer's checks are tried on.
static void gzip_of(const ts_ckpt *ck, unsigned char **file, size_t *len) {
    unsigned char *payload;
    size_t payload_len;
    payload_of(ck, &payload, &payload_len);
    gzip_bytes(payload, payload_len, 6, file, len);
    free(payload);
}

// Fixes the CRCs of an edited payload and loads it; returns the status (the
// container, if any, is freed).
static int load_edited(unsigned char *payload, size_t len, int fix) {
    if (fix) fix_crcs(payload, len);
    ts_ckpt *ck = (ts_ckpt *)1;
    ts_clear_error();
    int rc = ts_ckpt_load_mem(payload, len, NULL, &ck);
    if (rc == TS_OK) ts_ckpt_free(ck);
    else cr_assert_null(ck, "*out must be NULL on failure");
    return rc;
}

// As load_edited, through the gzip layer.
static int load_edited_gzip(unsigned char *payload, size_t len) {
    unsigned char *file;
    size_t file_len;
    gzip_bytes(payload, len, 6, &file, &file_len);
    ts_ckpt *ck = (ts_ckpt *)1;
    ts_clear_error();
    int rc = ts_ckpt_load_mem(file, file_len, NULL, &ck);
    free(file);
    if (rc == TS_OK) ts_ckpt_free(ck);
    else cr_assert_null(ck, "*out must be NULL on failure");
    return rc;
}

static unsigned char *find_bytes(unsigned char *hay, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return hay + i;
    cr_assert_fail("'%s' not found in payload", needle);
    return NULL;
}

static void assert_fails_with(int rc, int want, const char *fragment) {
    cr_assert_eq(rc, want, "status %d (%s), want %d; message: %s", rc, ts_strerror(rc), want,
                 ts_last_error());
    cr_assert(strstr(ts_last_error(), fragment) != NULL, "message '%s' lacks '%s'",
              ts_last_error(), fragment);
}

static char *path_in(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static char *keep_path(const char *dir, const char *name) { return keep(path_in(dir, name)); }

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *buf = malloc(cap);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = realloc(buf, cap *= 2);
    fclose(f);
    *len = n;
    return buf;
}

// ---- round trips ----------------------------------------------------------------

Test(checkpoint, round_trips_every_section_bit_exact) {
    char *dir = tmpdir();
    char *path = keep_path(dir, "model.ckpt");
    ts_ckpt *ck = sample();
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt *back = NULL;
    cr_assert_eq(ts_ckpt_load(path, NULL, &back), TS_OK, "%s", ts_last_error());
    assert_same(ck, back);

    // The typed view of what came back.
    int64_t hidden, step, pos;
    double lr, best;
    const char *attention;
    cr_assert_eq(ts_ckpt_get_int(back, "hidden", 1, 4096, &hidden), TS_OK);
    cr_assert_eq(ts_ckpt_get_int(back, "step", 0, INT64_MAX, &step), TS_OK);
    cr_assert_eq(ts_ckpt_get_int(back, "data.position", -1, 100, &pos), TS_OK);
    cr_assert_eq(ts_ckpt_get_double(back, "lr", 0, 1, &lr), TS_OK);
    cr_assert_eq(ts_ckpt_get_double(back, "best_dev_loss", 0, INFINITY, &best), TS_OK);
    cr_assert_eq(ts_ckpt_get_string(back, "attention", &attention), TS_OK);
    cr_assert_eq(hidden, 4);
    cr_assert_eq(step, 1234567);
    cr_assert_eq(pos, -1);
    cr_assert(lr == 1e-3 && best == 2.718281828459045);
    cr_assert_str_eq(attention, "bahdanau");
    const ts_ckpt_vocab *src = ts_ckpt_find_vocab(back, "source");
    cr_assert_not_null(src);
    cr_assert_str_eq(src->tokens[9], "🙂");
    cr_assert_null(ts_ckpt_find_vocab(back, "nope"));
    const ts_ckpt_tensor *bias = ts_ckpt_find_tensor(back, TS_CKPT_PARAMS, "encoder.bias");
    cr_assert_not_null(bias);
    cr_assert(isnan(bias->data[0]) && bias->data[1] == INFINITY);
    cr_assert_null(ts_ckpt_find_tensor(back, TS_CKPT_OPTIM, "encoder.bias"));
    const ts_ckpt_tensor *scale = ts_ckpt_find_tensor(back, TS_CKPT_PARAMS, "scale");
    cr_assert(scale->ndim == 0 && scale->size == 1 && signbit(scale->data[0]));

    // The file on disk is exactly what save_mem gives.
    size_t file_len, mem_len;
    unsigned char *file = read_all(path, &file_len), *mem;
    save_mem(ck, &mem, &mem_len);
    cr_assert(file_len == mem_len && memcmp(file, mem, mem_len) == 0);
    cr_assert_eq(test_count_tmp_files(dir), 0);
    free(file);
    free(mem);
    ts_ckpt_free(ck);
    ts_ckpt_free(back);
}

Test(checkpoint, round_trips_an_empty_container) {
    ts_ckpt *ck = ts_ckpt_new();
    unsigned char *buf;
    size_t len;
    save_mem(ck, &buf, &len);
    ts_ckpt *back = NULL;
    cr_assert_eq(ts_ckpt_load_mem(buf, len, NULL, &back), TS_OK, "%s", ts_last_error());
    assert_same(ck, back);
    ts_ckpt_free(ck);
    ts_ckpt_free(back);
    free(buf);
}

// A view is saved as the copy would be, from the caller's memory as it is
// when saving; the container neither frees nor hands it out.
Test(checkpoint, a_tensor_view_saves_the_bytes_a_copy_saves) {
    double values[6] = {1.5, -0.0, 1e-300, NAN, INFINITY, 3};
    size_t shape[2] = {2, 3};
    ts_ckpt *copy = ts_ckpt_new(), *view = ts_ckpt_new();
    cr_assert_eq(ts_ckpt_add_tensor(copy, TS_CKPT_OPTIM, "w", 2, shape, values), TS_OK);
    values[5] = 4;  // after the copy was taken, before the view is saved
    cr_assert_eq(ts_ckpt_add_tensor_view(view, TS_CKPT_OPTIM, "w", 2, shape, values), TS_OK);
    cr_assert_null(ts_ckpt_take_tensor_data(view, TS_CKPT_OPTIM, "w"), "a view is not the container's to give");
    cr_assert_eq(ts_ckpt_find_tensor(view, TS_CKPT_OPTIM, "w")->data, values);
    unsigned char *a, *b;
    size_t la, lb;
    save_mem(view, &b, &lb);
    ts_ckpt *back = NULL;
    cr_assert_eq(ts_ckpt_load_mem(b, lb, NULL, &back), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_find_tensor(back, TS_CKPT_OPTIM, "w")->data[5], 4.0, "the view's data as it was when saved");
    ts_ckpt_free(back);
    free(b);
    values[5] = 3;
    save_mem(copy, &a, &la);
    save_mem(view, &b, &lb);
    cr_assert(la == lb && !memcmp(a, b, la), "the same values give the same file");
    ts_ckpt_free(copy);
    ts_ckpt_free(view);  // must not free values (ASan)
    free(a);
    free(b);
}

Test(checkpoint, header_doubles_round_trip_bit_exact) {
    ts_ckpt *ck = ts_ckpt_new();
    double fixed[] = {0.0, -0.0, 0.1, -1e-3, 1.0 / 3, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_TRUE_MIN,
                      DBL_MIN / 3, DBL_EPSILON, 1.5, 2.0, INFINITY, -INFINITY};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    for (int i = 0; i < 20000; i++) {
        double x;
        if (i < (int)(sizeof fixed / sizeof *fixed)) {
            x = fixed[i];
        } else {
            uint64_t bits = (uint64_t)gsl_rng_get(rng) << 32 | gsl_rng_get(rng);
            memcpy(&x, &bits, 8);
            if (isnan(x)) continue;
        }
        cr_assert_eq(ts_ckpt_set_double(ck, "x", x), TS_OK);
        double y;
        cr_assert_eq(ts_ckpt_get_double(ck, "x", -INFINITY, INFINITY, &y), TS_OK, "%s",
                     ts_last_error());
        cr_assert(memcmp(&x, &y, 8) == 0, "%a came back as %a", x, y);
    }
    // The text is also what C's own %a and strtod agree on.
    cr_assert_eq(ts_ckpt_set_double(ck, "x", 0.1), TS_OK);
    const char *text;
    cr_assert_eq(ts_ckpt_get_string(ck, "x", &text), TS_OK);
    char want[64];
    snprintf(want, sizeof want, "%a", 0.1);
    cr_assert_str_eq(text, want);
    cr_assert(strtod(text, NULL) == 0.1);
    gsl_rng_free(rng);
    ts_ckpt_free(ck);
}

Test(checkpoint, rng_blob_resumes_the_gsl_stream) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    for (int i = 0; i < 1000; i++) gsl_rng_get(rng);
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_eq(ts_ckpt_set_blob(ck, "rng.mt19937", gsl_rng_state(rng), gsl_rng_size(rng)),
                 TS_OK);
    unsigned char *buf;
    size_t len;
    save_mem(ck, &buf, &len);
    ts_ckpt *back;
    cr_assert_eq(ts_ckpt_load_mem(buf, len, NULL, &back), TS_OK, "%s", ts_last_error());
    const void *state;
    size_t n;
    cr_assert_eq(ts_ckpt_get_blob(back, "rng.mt19937", &state, &n), TS_OK);
    cr_assert_eq(n, gsl_rng_size(rng));
    gsl_rng *resumed = gsl_rng_alloc(gsl_rng_mt19937);
    memcpy(gsl_rng_state(resumed), state, n);
    for (int i = 0; i < 1000; i++) cr_assert_eq(gsl_rng_get(resumed), gsl_rng_get(rng));
    assert_fails_with(ts_ckpt_get_blob(back, "rng.other", &state, &n), TS_ERR_FORMAT,
                      "rng.other");
    gsl_rng_free(rng);
    gsl_rng_free(resumed);
    ts_ckpt_free(ck);
    ts_ckpt_free(back);
    free(buf);
}

Test(checkpoint, saves_identical_bytes_for_identical_content) {
    char *dir = tmpdir();
    char *a = keep_path(dir, "a.ckpt"), *b = keep_path(dir, "b.ckpt");
    char *c = keep_path(dir, "c.ckpt");
    ts_ckpt *ck = sample();
    cr_assert_eq(ts_ckpt_save(ck, a), TS_OK);
    cr_assert_eq(ts_ckpt_save(ck, b), TS_OK);
    // A loaded-then-saved copy is byte-identical too.
    ts_ckpt *back;
    cr_assert_eq(ts_ckpt_load(a, NULL, &back), TS_OK);
    cr_assert_eq(ts_ckpt_save(back, c), TS_OK);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp %s %s && cmp %s %s", a, b, a, c);
    char *out;
    cr_assert_eq(test_run(cmd, &out), 0, "%s", out);
    free(out);
    ts_ckpt_free(ck);
    ts_ckpt_free(back);
}

// Version 2 is uncompressed (the magic is the file's first bytes, every
// tensor 64-byte aligned), and the same file gzip'd loads the same content.
Test(checkpoint, the_file_is_its_payload_and_a_gzipped_copy_loads_the_same) {
    char *dir = tmpdir();
    char *path = keep_path(dir, "model.ckpt"), *gz = keep_path(dir, "model.ckpt.gz");
    ts_ckpt *ck = sample();
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK);
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "head -c 8 %s; gzip -c %s > %s", path, path, gz);
    cr_assert_eq(test_run(cmd, &out), 0, "%s", out);
    cr_assert_str_eq(out, "TSEQCKPT");
    free(out);
    size_t len;
    unsigned char *file = keep(read_all(path, &len));
    cr_assert_eq(rd32(file + 8), 2, "format version");
    ts_ckpt *mapped, *inflated;
    cr_assert_eq(ts_ckpt_load(path, NULL, &mapped), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load(gz, NULL, &inflated), TS_OK, "%s", ts_last_error());
    assert_same(ck, mapped);
    assert_same(ck, inflated);
    for (int s = TS_CKPT_PARAMS; s <= TS_CKPT_OPTIM; s++)
        for (size_t i = 0; i < ts_ckpt_tensor_count(mapped, s); i++) {
            const ts_ckpt_tensor *t = ts_ckpt_tensor_at(mapped, s, i);
            cr_assert_eq(t->dtype, strstr(t->name, "decoder.embedding") ? TS_F32 : TS_F64, "%s", t->name);
            cr_assert_eq((uintptr_t)t->raw % 64, 0, "tensor %s is not 64-byte aligned", t->name);
        }
    // The tensors point into the file's mapping: nothing to hand over.
    cr_assert_null(ts_ckpt_take_tensor_data(mapped, TS_CKPT_PARAMS, "encoder.weight"));
    ts_ckpt_free(mapped);
    ts_ckpt_free(inflated);
    ts_ckpt_free(ck);
}

// ---- setters reject what the format cannot hold -----------------------------------

Test(checkpoint, setters_reject_bad_names_values_and_shapes) {
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_eq(ts_ckpt_set(ck, "a=b", "1"), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_set(ck, "", "1"), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_set(ck, "has space", "1"), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_set(ck, "k", "two\nlines"), TS_ERR_ARG);
    char long_value[TS_CKPT_MAX_VALUE + 2];
    memset(long_value, 'v', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = '\0';
    cr_assert_eq(ts_ckpt_set(ck, "k", long_value), TS_ERR_ARG);
    const char *newline[] = {"a", "b\n"}, *bad_utf8[] = {"\xc3\x28"}, *overlong[] = {"\xc0\xaf"},
               *surrogate[] = {"\xed\xa0\x80"};
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", newline, 2), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", bad_utf8, 1), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", overlong, 1), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", surrogate, 1), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", TARGET_TOKENS, 6), TS_OK);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "v", TARGET_TOKENS, 6), TS_ERR_ARG);
    double x[4] = {0};
    size_t shape4[] = {1, 1, 1, 1}, zero[] = {2, 0};
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w", 4, shape4, x), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w", 2, zero, x), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w=1", 1, shape4, x), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_tensor(ck, 7, "w", 1, shape4, x), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w", 1, shape4, x), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w", 1, shape4, x), TS_ERR_ARG);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "w", 1, shape4, x), TS_OK);
    cr_assert_eq(ts_ckpt_set_blob(ck, "has space", "x", 1), TS_ERR_ARG);
    // Setting an existing key replaces its value in place.
    cr_assert_eq(ts_ckpt_set_int(ck, "k", 1), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "k", 2), TS_OK);
    cr_assert_eq(ts_ckpt_header_count(ck), 1);
    int64_t k;
    cr_assert_eq(ts_ckpt_get_int(ck, "k", 0, 9, &k), TS_OK);
    cr_assert_eq(k, 2);
    ts_ckpt_free(ck);
}

// ---- typed getters ------------------------------------------------------------------

Test(checkpoint, get_int_rejects_absent_malformed_negative_and_out_of_bounds) {
    ts_ckpt *ck = ts_ckpt_new();
    int64_t v = 99;
    assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT,
                      "'hidden' is missing");
    const char *not_int[] = {"", " 7", "+7", "7 ", "7x", "0x10", "1e3", "-", "7.0", "--1"};
    for (size_t i = 0; i < sizeof not_int / sizeof *not_int; i++) {
        cr_assert_eq(ts_ckpt_set(ck, "hidden", not_int[i]), TS_OK);
        assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT,
                          "not an integer");
    }
    cr_assert_eq(ts_ckpt_set_int(ck, "hidden", -3), TS_OK);
    assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT, "negative");
    cr_assert_eq(ts_ckpt_set_int(ck, "hidden", 11), TS_OK);
    assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT,
                      "out of bounds [1, 10]");
    cr_assert_eq(ts_ckpt_set(ck, "hidden", "99999999999999999999999"), TS_OK);
    assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT, "out of bounds");
    cr_assert_eq(ts_ckpt_set(ck, "hidden", "-99999999999999999999999"), TS_OK);
    assert_fails_with(ts_ckpt_get_int(ck, "hidden", 1, 10, &v), TS_ERR_FORMAT, "negative");
    cr_assert_eq(v, 99, "*out is untouched on failure");
    cr_assert_eq(ts_ckpt_set_int(ck, "hidden", INT64_MIN), TS_OK);
    cr_assert_eq(ts_ckpt_get_int(ck, "hidden", INT64_MIN, INT64_MAX, &v), TS_OK);
    cr_assert_eq(v, INT64_MIN);
    ts_ckpt_free(ck);
}

Test(checkpoint, get_double_rejects_absent_malformed_nan_negative_and_huge) {
    ts_ckpt *ck = ts_ckpt_new();
    double v = 5;
    assert_fails_with(ts_ckpt_get_double(ck, "lr", 0, 1, &v), TS_ERR_FORMAT, "missing");
    const char *not_num[] = {"", " 0.1", "0.1x", "abc", "1,5", "nan"};
    for (size_t i = 0; i < sizeof not_num / sizeof *not_num; i++) {
        cr_assert_eq(ts_ckpt_set(ck, "lr", not_num[i]), TS_OK);
        int rc = ts_ckpt_get_double(ck, "lr", 0, 1, &v);
        cr_assert_eq(rc, TS_ERR_FORMAT, "'%s' accepted", not_num[i]);
    }
    cr_assert_eq(ts_ckpt_set_double(ck, "lr", NAN), TS_OK);
    assert_fails_with(ts_ckpt_get_double(ck, "lr", -INFINITY, INFINITY, &v), TS_ERR_FORMAT, "lr");
    cr_assert_eq(ts_ckpt_set_double(ck, "lr", -1e-3), TS_OK);
    assert_fails_with(ts_ckpt_get_double(ck, "lr", 0, 1, &v), TS_ERR_FORMAT, "negative");
    cr_assert_eq(ts_ckpt_set(ck, "lr", "1e400"), TS_OK);
    assert_fails_with(ts_ckpt_get_double(ck, "lr", 0, 1, &v), TS_ERR_FORMAT, "out of bounds");
    cr_assert_eq(ts_ckpt_set_double(ck, "lr", INFINITY), TS_OK);
    assert_fails_with(ts_ckpt_get_double(ck, "lr", 0, DBL_MAX, &v), TS_ERR_FORMAT,
                      "out of bounds");
    cr_assert_eq(v, 5, "*out is untouched on failure");
    cr_assert_eq(ts_ckpt_set(ck, "lr", "0.001"), TS_OK);
    cr_assert_eq(ts_ckpt_get_double(ck, "lr", 0, 1, &v), TS_OK);
    cr_assert(v == 0.001);
    ts_ckpt_free(ck);
}

// A file whose header holds a key twice loads (the container keeps what the
// file says) but every typed getter refuses the key.
Test(checkpoint, getters_reject_a_key_duplicated_in_the_file) {
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_eq(ts_ckpt_set_int(ck, "hidden", 8), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "hiddeX", 9), TS_OK);
    unsigned char *payload, *file;
    size_t len, file_len;
    payload_of(ck, &payload, &len);
    memcpy(find_bytes(payload, len, "hiddeX"), "hidden", 6);
    fix_crcs(payload, len);
    gzip_bytes(payload, len, 6, &file, &file_len);  // through the gzip layer too
    ts_ckpt *back, *back_gzip;
    cr_assert_eq(ts_ckpt_load_mem(payload, len, NULL, &back), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load_mem(file, file_len, NULL, &back_gzip), TS_OK, "%s", ts_last_error());
    assert_same(back, back_gzip);
    ts_ckpt_free(back_gzip);
    int64_t v;
    double d;
    const char *s;
    assert_fails_with(ts_ckpt_get_int(back, "hidden", 0, 100, &v), TS_ERR_FORMAT,
                      "'hidden' appears 2 times");
    assert_fails_with(ts_ckpt_get_double(back, "hidden", 0, 100, &d), TS_ERR_FORMAT, "2 times");
    assert_fails_with(ts_ckpt_get_string(back, "hidden", &s), TS_ERR_FORMAT, "2 times");
    ts_ckpt_free(back);
    ts_ckpt_free(ck);
    free(payload);
    free(file);
}

Test(checkpoint, expect_tensor_names_the_shape_mismatch) {
    ts_ckpt *ck = sample();
    size_t right[] = {2, 3}, wrong[] = {2, 4};
    const ts_ckpt_tensor *t = NULL;
    cr_assert_eq(ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, "encoder.weight", 2, right, &t), TS_OK);
    cr_assert_eq(t->size, 6);
    assert_fails_with(ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, "encoder.weight", 2, wrong, NULL),
                      TS_ERR_SHAPE, "has shape [2,3], expected [2,4]");
    assert_fails_with(ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, "encoder.weight", 1, right, NULL),
                      TS_ERR_SHAPE, "expected [2]");
    assert_fails_with(ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, "decoder.weight", 2, right, NULL),
                      TS_ERR_FORMAT, "no parameter tensor 'decoder.weight'");
    ts_ckpt_free(ck);
}

// ---- damaged files ----------------------------------------------------------------

Test(checkpoint, rejects_a_truncation_at_every_byte_offset) {
    ts_ckpt *ck = sample();
    unsigned char *buf;
    size_t len;
    save_mem(ck, &buf, &len);
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1); // exact size: ASan sees overreads
        memcpy(copy, buf, cut);
        ts_ckpt *back = (ts_ckpt *)1;
        ts_clear_error();
        int rc = ts_ckpt_load_mem(copy, cut, NULL, &back);
        cr_assert_eq(rc, TS_ERR_FORMAT, "truncated to %zu of %zu bytes: status %d", cut, len, rc);
        cr_assert_null(back);
        cr_assert(ts_last_error()[0] != '\0', "no message at cut %zu", cut);
        free(copy);
    }
    cr_log_info("rejected all %zu truncations of a %zu-byte checkpoint", len, len);
    ts_ckpt_free(ck);
    free(buf);
}

// Flips in the compressed file must never load different content. Some bits
// carry no content (gzip's FTEXT/MTIME/XFL/OS fields, padding after the last
// deflate block) and some flips decode to the same bytes (a match distance
// moved to an identical earlier run), so the rule is "rejected, or loads
// exactly the original" -- about 1.5% of bits are of the second kind.
Test(checkpoint, rejects_bit_flips_in_the_compressed_file) {
    ts_ckpt *ck = sample();
    unsigned char *buf, *copy, *original;
    size_t len, original_len;
    gzip_of(ck, &buf, &len);
    save_mem(ck, &original, &original_len);
    copy = malloc(len);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    int rejected = 0, harmless = 0;
    for (int trial = 0; trial < 1000; trial++) {
        size_t bit = gsl_rng_uniform_int(rng, len * 8);
        memcpy(copy, buf, len);
        copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        ts_ckpt *back = NULL;
        int rc = ts_ckpt_load_mem(copy, len, NULL, &back);
        if (rc != TS_OK) {
            cr_assert_eq(rc, TS_ERR_FORMAT, "bit %zu: status %d: %s", bit, rc, ts_last_error());
            rejected++;
            continue;
        }
        unsigned char *again;
        size_t again_len;
        save_mem(back, &again, &again_len);
        cr_assert(again_len == original_len && memcmp(again, original, original_len) == 0,
                  "bit %zu (byte %zu) flipped: loaded different content", bit, bit / 8);
        harmless++;
        free(again);
        ts_ckpt_free(back);
    }
    cr_log_info("compressed flips: %d rejected, %d loaded identical content", rejected, harmless);
    gsl_rng_free(rng);
    ts_ckpt_free(ck);
    free(original);
    free(buf);
    free(copy);
}

Test(checkpoint, rejects_bit_flips_in_the_payload) {
    ts_ckpt *ck = sample();
    unsigned char *payload, *copy;
    size_t len;
    payload_of(ck, &payload, &len);
    copy = malloc(len);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2);
    int by_crc = 0;
    for (int trial = 0; trial < 1000; trial++) {
        size_t bit = gsl_rng_uniform_int(rng, len * 8);
        memcpy(copy, payload, len);
        copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        ts_clear_error();
        int rc = load_edited(copy, len, 0);
        cr_assert_eq(rc, TS_ERR_FORMAT, "payload bit %zu (byte %zu of %zu) flipped: status %d",
                     bit, bit / 8, len, rc);
        by_crc += strstr(ts_last_error(), "CRC") != NULL;
    }
    cr_log_info("payload flips: 1000 rejected, %d by a CRC", by_crc);
    gsl_rng_free(rng);
    ts_ckpt_free(ck);
    free(payload);
    free(copy);
}

Test(checkpoint, rejects_trailing_garbage_after_the_gzip_stream) {
    ts_ckpt *ck = sample();
    unsigned char *buf;
    size_t len;
    gzip_of(ck, &buf, &len);
    unsigned char *longer = malloc(2 * len);
    memcpy(longer, buf, len);
    longer[len] = 'x';
    ts_ckpt *back;
    assert_fails_with(ts_ckpt_load_mem(longer, len + 1, NULL, &back), TS_ERR_FORMAT,
                      "trailing bytes");
    memcpy(longer + len, buf, len); // a second gzip member
    assert_fails_with(ts_ckpt_load_mem(longer, 2 * len, NULL, &back), TS_ERR_FORMAT,
                      "trailing bytes");
    // Through a file too (the loader reads files in chunks).
    char *dir = tmpdir();
    char *path = keep(test_write_file(dir, "two.ckpt", longer, 2 * len));
    assert_fails_with(ts_ckpt_load(path, NULL, &back), TS_ERR_FORMAT, "trailing bytes");
    ts_ckpt_free(ck);
    free(buf);
    free(longer);
}

Test(checkpoint, rejects_trailing_bytes_inside_the_payload) {
    ts_ckpt *ck = sample();
    unsigned char *payload;
    size_t len;
    payload_of(ck, &payload, &len);
    unsigned char *longer = calloc(1, len + 8);
    memcpy(longer, payload, len);
    // Declared length left alone: the file is longer than the prelude says.
    assert_fails_with(load_edited(longer, len + 8, 0), TS_ERR_FORMAT, "8 trailing bytes after the checkpoint");
    assert_fails_with(load_edited_gzip(longer, len + 8), TS_ERR_FORMAT, "longer than its declared");
    char *dir = tmpdir();
    char *path = keep(test_write_file(dir, "long.ckpt", longer, len + 1));
    ts_ckpt *back;
    assert_fails_with(ts_ckpt_load(path, NULL, &back), TS_ERR_FORMAT, "trailing bytes");
    // Declared length and every CRC updated: bytes after the last section.
    // The old trailer becomes stray bytes, a new one goes at the end.
    wr64(longer + 16, rd64(longer + 16) + 8);
    assert_fails_with(load_edited(longer, len + 8, 1), TS_ERR_FORMAT,
                      "unexpected bytes after the last section");
    ts_ckpt_free(ck);
    free(payload);
    free(longer);
}

Test(checkpoint, rejects_wrong_magic_version_flags_and_crcs) {
    ts_ckpt *ck = sample();
    unsigned char *payload;
    size_t len;
    payload_of(ck, &payload, &len);
    unsigned char *copy = malloc(len);
    memcpy(copy, payload, len);
    copy[0] = 'X';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "bad magic");
    memcpy(copy, payload, len);
    wr32(copy + 8, 3);
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "format version 3");
    memcpy(copy, payload, len);
    wr32(copy + 12, 1);
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "flags");
    memcpy(copy, payload, len);
    copy[28] ^= 1;
    assert_fails_with(load_edited(copy, len, 0), TS_ERR_FORMAT, "prelude CRC");
    memcpy(copy, payload, len);
    copy[len - 1] ^= 1;
    assert_fails_with(load_edited(copy, len, 0), TS_ERR_FORMAT, "payload CRC");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "bahdanau")[0] = 'B';
    assert_fails_with(load_edited(copy, len, 0), TS_ERR_FORMAT, "section HEAD CRC");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "adam.t")[0] = 'A';
    assert_fails_with(load_edited(copy, len, 0), TS_ERR_FORMAT, "section OPTM CRC");
    ts_ckpt_free(ck);
    free(payload);
    free(copy);
}

Test(checkpoint, rejects_empty_missing_and_foreign_files) {
    char *dir = tmpdir();
    ts_ckpt *back = (ts_ckpt *)1;
    char *empty = keep(test_write_file(dir, "empty.ckpt", "", 0));
    assert_fails_with(ts_ckpt_load(empty, NULL, &back), TS_ERR_FORMAT, "empty file");
    cr_assert_null(back);
    assert_fails_with(ts_ckpt_load_mem("", 0, NULL, &back), TS_ERR_FORMAT, "empty file");
    const char text[] = "hidden=8\nthis is not gzip\n";
    char *plain = keep(test_write_file(dir, "plain.ckpt", text, sizeof text - 1));
    assert_fails_with(ts_ckpt_load(plain, NULL, &back), TS_ERR_FORMAT, "not a tinyseq checkpoint");
    assert_fails_with(ts_ckpt_load_mem(text, sizeof text - 1, NULL, &back), TS_ERR_FORMAT, "not a tinyseq checkpoint");
    char *missing = keep_path(dir, "missing.ckpt");
    assert_fails_with(ts_ckpt_load(missing, NULL, &back), TS_ERR_IO, "missing.ckpt");
    assert_fails_with(ts_ckpt_load(dir, NULL, &back), TS_ERR_IO, dir); // a directory
    // Valid gzip of something else.
    unsigned char *gz;
    size_t gz_len;
    gzip_bytes((const unsigned char *)text, sizeof text - 1, 6, &gz, &gz_len);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, NULL, &back), TS_ERR_FORMAT,
                      "truncated payload");
    free(gz);
    unsigned char zeros[64] = {0};
    gzip_bytes(zeros, sizeof zeros, 6, &gz, &gz_len);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, NULL, &back), TS_ERR_FORMAT, "bad magic");
    free(gz);
}

// Edits one field of a parameter tensor and checks the structure check (the
// CRCs are repaired) names the problem.
Test(checkpoint, rejects_tensors_that_do_not_fit_their_declared_sizes) {
    ts_ckpt *ck = sample();
    unsigned char *payload, *copy;
    size_t len;
    payload_of(ck, &payload, &len);
    copy = malloc(len);
    size_t name_at = (size_t)(find_bytes(payload, len, "encoder.weight") - payload);
    size_t dtype_at = name_at + 14, ndim_at = dtype_at + 4, dim0_at = ndim_at + 4;
    size_t offset_at = dim0_at + 16;  // after the two dimensions
    uint64_t offset = rd64(payload + offset_at);
    cr_assert_eq(offset % 64, 0);
    struct {
        size_t at;
        int width;
        uint64_t value;
        const char *fragment;
    } edits[] = {
        {dim0_at, 8, 1000, "does not fit"},
        {dim0_at, 8, UINT64_MAX, "does not fit"},
        {dim0_at, 8, 0, "is 0"},
        {dim0_at + 8, 8, UINT64_C(1) << 62, "does not fit"},
        {dim0_at, 8, 3, "overlaps tensor 'encoder.weight'"}, // 3x3 reaches into the next tensor's bytes
        {ndim_at, 4, 4, "ndim 4"},
        {ndim_at, 4, 0xffffffff, "ndim"},
        {name_at - 4, 4, 0xffffffff, "length"},
        {name_at - 4, 4, 13, "dtype"}, // "encoder.weigh": the dtype starts at the 't'
        {name_at - 8, 4, 0xffffffff, "tensor count 4294967295 exceeds"},
        {name_at - 8, 4, 60000, "does not fit"},
        {name_at - 8, 4, 4, "leaves a gap: it belongs at"},  // the index, a record shorter, ends before a 64-byte line
        {dtype_at, 4, 3, "dtype 3, which this build does not read (1 float64, 2 float32)"},
        {dtype_at, 4, 0, "dtype 0, which"},
        {dtype_at, 4, 77, "dtype 77"},
        {dtype_at, 4, 2, "padding byte"},  // read as float32: half its bytes, the rest must be padding
        {offset_at, 8, offset + 8, "not a multiple of 64"},
        {offset_at, 8, offset - 64, "overlaps the index"},
        {offset_at, 8, offset + 64, "leaves a gap: it belongs at"},
        {offset_at, 8, UINT64_MAX - 63, "leaves a gap"},
        {offset - 1, 1, 1, "padding byte"},
        {name_at - 16, 8, 1u << 30, "section PARM length"},
        {name_at - 20, 4, 0x4d524150 ^ 0x20, "expected section PARM"}, // "pARM"
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        memcpy(copy, payload, len);
        if (edits[i].width == 8) wr64(copy + edits[i].at, edits[i].value);
        else if (edits[i].width == 4) wr32(copy + edits[i].at, (uint32_t)edits[i].value);
        else copy[edits[i].at] = (unsigned char)edits[i].value;
        int rc = load_edited(copy, len, 1);
        cr_assert_eq(rc, TS_ERR_FORMAT, "edit %zu loaded (status %d)", i, rc);
        cr_assert(strstr(ts_last_error(), edits[i].fragment), "edit %zu: message '%s' lacks '%s'",
                  i, ts_last_error(), edits[i].fragment);
    }
    ts_ckpt_free(ck);
    free(payload);
    free(copy);
}

Test(checkpoint, rejects_duplicate_names_and_bad_tokens_in_the_file) {
    ts_ckpt *ck = ts_ckpt_new();
    double x = 1;
    size_t one[] = {1};
    const char *toks[] = {"ab", "cd"};
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w.a", 1, one, &x), TS_OK);
    cr_assert_eq(ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "w.b", 1, one, &x), TS_OK);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "src", toks, 2), TS_OK);
    cr_assert_eq(ts_ckpt_add_vocab(ck, "sr2", toks, 2), TS_OK);
    cr_assert_eq(ts_ckpt_set_blob(ck, "b.1", "x", 1), TS_OK);
    cr_assert_eq(ts_ckpt_set_blob(ck, "b.2", "y", 1), TS_OK);
    unsigned char *payload, *copy;
    size_t len;
    payload_of(ck, &payload, &len);
    copy = malloc(len);
    memcpy(copy, payload, len);
    memcpy(find_bytes(copy, len, "w.b"), "w.a", 3);
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "'w.a' appears twice");
    memcpy(copy, payload, len);
    memcpy(find_bytes(copy, len, "sr2"), "src", 3);
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "'src' appears twice");
    memcpy(copy, payload, len);
    memcpy(find_bytes(copy, len, "b.2"), "b.1", 3);
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "'b.1' appears twice");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "cd")[0] = '\n';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "token");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "cd")[0] = (char)0xff;
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "token");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "w.a")[1] = ' ';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "tensor name");
    ts_ckpt_free(ck);
    free(payload);
    free(copy);
}

Test(checkpoint, rejects_malformed_header_lines) {
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_eq(ts_ckpt_set(ck, "alpha", "1"), TS_OK);
    cr_assert_eq(ts_ckpt_set(ck, "beta", "2"), TS_OK);
    unsigned char *payload, *copy;
    size_t len;
    payload_of(ck, &payload, &len);
    copy = malloc(len);
    memcpy(copy, payload, len);
    find_bytes(copy, len, "alpha=")[5] = ':';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "has no '='");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "alpha=")[1] = ' ';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "header key");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "=2\n")[2] = 'x';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "newline");
    memcpy(copy, payload, len);
    find_bytes(copy, len, "=2\n")[1] = '\0';
    assert_fails_with(load_edited(copy, len, 1), TS_ERR_FORMAT, "NUL");
    ts_ckpt_free(ck);
    free(payload);
    free(copy);
}

// ---- decompression bombs ----------------------------------------------------------

// gzip of a valid prelude declaring `declared` payload bytes followed by
// `zeros` zero bytes, built by streaming so the test itself stays small.
// Feeds in[0..n) to deflate with `flush`, appending output to *buf.
static void deflate_into(z_stream *z, const void *in, size_t n, int flush, unsigned char **buf,
                         size_t *cap, size_t *len) {
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)n;
    int ret;
    do {
        if (*cap - *len < 4096) *buf = realloc(*buf, *cap *= 2);
        z->next_out = *buf + *len;
        z->avail_out = (uInt)(*cap - *len);
        ret = deflate(z, flush);
        *len = *cap - z->avail_out;
    } while (z->avail_in > 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
}

// gzip of a valid prelude declaring `declared` payload bytes followed by
// `zeros` zero bytes, built by streaming so the test itself stays small.
static void bomb(uint64_t declared, size_t zeros, unsigned char **out, size_t *out_len) {
    unsigned char prelude[32] = {'T', 'S', 'E', 'Q', 'C', 'K', 'P', 'T'};
    wr32(prelude + 8, 1);
    wr64(prelude + 16, declared);
    wr32(prelude + 28, (uint32_t)crc32(0, prelude, 28));
    static const unsigned char zero_chunk[1 << 16];
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    deflate_into(&z, prelude, sizeof prelude, Z_NO_FLUSH, &buf, &cap, &len);
    for (size_t left = zeros; left > 0;) {
        size_t n = left < sizeof zero_chunk ? left : sizeof zero_chunk;
        deflate_into(&z, zero_chunk, n, Z_NO_FLUSH, &buf, &cap, &len);
        left -= n;
    }
    deflate_into(&z, NULL, 0, Z_FINISH, &buf, &cap, &len);
    deflateEnd(&z);
    *out = buf;
    *out_len = len;
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

static long peak_rss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

Test(checkpoint, rejects_decompression_bombs_fast_with_bounded_memory) {
    const size_t zeros = (size_t)64 << 20;
    ts_ckpt_load_opts opts = {.max_payload = (uint64_t)16 << 20};
    unsigned char *gz;
    size_t gz_len;
    ts_ckpt *back;
    struct timespec t0;

    // Declares a small payload, inflates to 64 MiB: stops one byte past it.
    bomb(1000, zeros, &gz, &gz_len);
    long rss0 = peak_rss_kib();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, &opts, &back), TS_ERR_FORMAT,
                      "longer than its declared 1000 bytes");
    double small_s = seconds_since(&t0);
    free(gz);

    // Declares more than the cap: rejected from the prelude alone.
    bomb((uint64_t)64 << 20, zeros, &gz, &gz_len);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, &opts, &back), TS_ERR_FORMAT,
                      "exceeds the limit of 16777216 bytes");
    double over_s = seconds_since(&t0);
    // Also with the default 2 GiB cap against a declared 3 GiB.
    free(gz);
    bomb((uint64_t)3 << 30, 1 << 20, &gz, &gz_len);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, NULL, &back), TS_ERR_FORMAT,
                      "exceeds the limit of 2147483648 bytes");
    free(gz);

    // Declares just under the cap, then inflates past it: memory stays at
    // the declared size, and it stops there.
    bomb((uint64_t)15 << 20, zeros, &gz, &gz_len);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_fails_with(ts_ckpt_load_mem(gz, gz_len, &opts, &back), TS_ERR_FORMAT,
                      "longer than its declared");
    double under_s = seconds_since(&t0);
    long grew_kib = peak_rss_kib() - rss0;
    cr_log_info("bomb %zu-byte file inflating to 64 MiB: rejected in %.4f s (declared 1000), "
                "%.6f s (declared > cap), %.4f s (declared 15 MiB); peak RSS grew %ld KiB",
                gz_len, small_s, over_s, under_s, grew_kib);
    cr_assert_lt(small_s, 0.5);
    cr_assert_lt(over_s, 0.5);
    cr_assert_lt(under_s, 2.0);
    cr_assert_lt(grew_kib, 40 << 10, "peak RSS grew %ld KiB", grew_kib);
    free(gz);
}

// ---- saving safely -------------------------------------------------------------------

// Saves `sample()` as the "old" checkpoint at dir/name and returns its path
// and bytes, for checking failed saves leave it alone.
static char *old_checkpoint(const char *dir, unsigned char **bytes, size_t *len) {
    char *path = keep_path(dir, "model.ckpt");
    ts_ckpt *ck = sample();
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    *bytes = keep(read_all(path, len));
    return path;
}

static void assert_unchanged(const char *path, const unsigned char *bytes, size_t len) {
    size_t now_len;
    unsigned char *now = read_all(path, &now_len);
    cr_assert(now_len == len && memcmp(now, bytes, len) == 0, "%s changed", path);
    free(now);
    ts_ckpt *back;
    cr_assert_eq(ts_ckpt_load(path, NULL, &back), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(back);
}

static ts_ckpt *newer(void) {
    ts_ckpt *ck = sample();
    cr_assert_eq(ts_ckpt_set_int(ck, "step", 999), TS_OK);
    return ck;
}

Test(checkpoint, save_into_a_missing_directory_fails_with_the_path) {
    char *dir = tmpdir();
    char *path = keep_path(dir, "no/such/dir/model.ckpt");
    ts_ckpt *ck = sample();
    assert_fails_with(ts_ckpt_save(ck, path), TS_ERR_IO, path);
    cr_assert(strstr(ts_last_error(), strerror(ENOENT)), "%s", ts_last_error());
    ts_ckpt_free(ck);
}

Test(checkpoint, save_under_a_file_posing_as_directory_fails) {
    char *dir = tmpdir();
    char *file = keep(test_write_file(dir, "plain", "x", 1));
    char *path = keep_path(file, "model.ckpt");
    ts_ckpt *ck = sample();
    assert_fails_with(ts_ckpt_save(ck, path), TS_ERR_IO, strerror(ENOTDIR));
    ts_ckpt_free(ck);
}

Test(checkpoint, save_into_proc_fails) {
    ts_ckpt *ck = sample();
    assert_fails_with(ts_ckpt_save(ck, "/proc/self/tinyseq.ckpt"), TS_ERR_IO,
                      "/proc/self/tinyseq.ckpt");
    ts_ckpt_free(ck);
}

Test(checkpoint, failed_rename_leaves_no_temporary_file) {
    char *dir = tmpdir();
    char *target = keep_path(dir, "model.ckpt");
    cr_assert_eq(mkdir(target, 0755), 0);
    free(test_write_file(target, "keep", "x", 1)); // non-empty: rename must fail
    ts_ckpt *ck = sample();
    assert_fails_with(ts_ckpt_save(ck, target), TS_ERR_IO, "rename");
    cr_assert_eq(test_count_tmp_files(dir), 0);
    ts_ckpt_free(ck);
}

Test(checkpoint, failed_write_or_fsync_keeps_the_old_checkpoint) {
    char *dir = tmpdir();
    unsigned char *old;
    size_t old_len;
    char *path = old_checkpoint(dir, &old, &old_len);
    ts_ckpt *ck = newer();
    unsigned char *new_bytes;
    size_t new_len;
    save_mem(ck, &new_bytes, &new_len);
    free(new_bytes);
    size_t budgets[] = {0, 1, 100, new_len - 1};
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        struct test_fault f = {.budget = budgets[i]};
        ts_ckpt_save_opts opts = {test_faulty_write, test_faulty_fsync, &f};
        assert_fails_with(ts_ckpt_save_ex(ck, path, &opts), TS_ERR_IO, strerror(ENOSPC));
        cr_assert(strstr(ts_last_error(), path), "%s", ts_last_error());
        assert_unchanged(path, old, old_len);
        cr_assert_eq(test_count_tmp_files(dir), 0);
    }
    struct test_fault f = {.budget = SIZE_MAX, .fail_fsync = 1};
    ts_ckpt_save_opts opts = {test_faulty_write, test_faulty_fsync, &f};
    assert_fails_with(ts_ckpt_save_ex(ck, path, &opts), TS_ERR_IO, "fsync");
    cr_assert(strstr(ts_last_error(), strerror(EIO)), "%s", ts_last_error());
    assert_unchanged(path, old, old_len);
    cr_assert_eq(test_count_tmp_files(dir), 0);
    ts_ckpt_free(ck);
}

Test(checkpoint, short_writes_still_save_the_same_bytes) {
    char *dir = tmpdir();
    char *path = keep_path(dir, "model.ckpt");
    ts_ckpt *ck = sample();
    struct test_fault f = {.budget = SIZE_MAX, .max_piece = 7};
    ts_ckpt_save_opts opts = {test_faulty_write, NULL, &f};
    cr_assert_eq(ts_ckpt_save_ex(ck, path, &opts), TS_OK, "%s", ts_last_error());
    size_t len, mem_len;
    unsigned char *file = read_all(path, &len), *mem;
    save_mem(ck, &mem, &mem_len);
    cr_assert(len == mem_len && memcmp(file, mem, len) == 0);
    free(file);
    free(mem);
    ts_ckpt_free(ck);
}

// A real write(2) failure, no hook: the file size limit makes write fail
// with EFBIG once the temporary file reaches it.
Test(checkpoint, write_past_the_file_size_limit_keeps_the_old_checkpoint) {
    char *dir = tmpdir();
    unsigned char *old;
    size_t old_len;
    char *path = old_checkpoint(dir, &old, &old_len);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 100, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ts_ckpt *ck = newer();
    int rc = ts_ckpt_save(ck, path);
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &lim);
    assert_fails_with(rc, TS_ERR_IO, strerror(EFBIG));
    assert_unchanged(path, old, old_len);
    cr_assert_eq(test_count_tmp_files(dir), 0);
    ts_ckpt_free(ck);
}

// A saver killed at random moments never leaves a corrupt checkpoint: the
// path always holds the old or the new content.
Test(checkpoint, survives_sigkill_at_random_moments, .timeout = 60) {
    char *dir = tmpdir();
    char *path = keep_path(dir, "model.ckpt");
    ts_ckpt *a = sample(), *b = sample();
    cr_assert_eq(ts_ckpt_set_int(a, "which", 0), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(b, "which", 1), TS_OK);
    // b is bigger, so a torn file could not pass for a.
    double *big = calloc(1 << 16, sizeof *big);
    size_t shape[] = {1 << 16};
    cr_assert_eq(ts_ckpt_add_tensor(b, TS_CKPT_OPTIM, "big", 1, shape, big), TS_OK);
    cr_assert_eq(ts_ckpt_save(a, path), TS_OK);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    int seen[2] = {0, 0};
    for (int trial = 0; trial < 100; trial++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            for (int i = 0;; i++)
                if (ts_ckpt_save(i % 2 ? a : b, path) != TS_OK) _exit(3);
        }
        long delay_us = (long)gsl_rng_uniform_int(rng, 20000);
        struct timespec delay = {0, delay_us * 1000};
        nanosleep(&delay, NULL);
        kill(pid, SIGKILL);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status), "saver exited on its own (status %d): a save failed",
                  status);
        ts_ckpt *back;
        cr_assert_eq(ts_ckpt_load(path, NULL, &back), TS_OK, "trial %d: %s", trial,
                     ts_last_error());
        int64_t which;
        cr_assert_eq(ts_ckpt_get_int(back, "which", 0, 1, &which), TS_OK);
        assert_same(which ? b : a, back);
        seen[which]++;
        ts_ckpt_free(back);
    }
    cr_log_info("sigkill: 100 trials, loaded old/new content %d/%d times, %d temp files left",
                seen[0], seen[1], test_count_tmp_files(dir));
    gsl_rng_free(rng);
    free(big);
    ts_ckpt_free(a);
    ts_ckpt_free(b);
}

// ---- fuzzer findings -------------------------------------------------------------------

// Every input in tests/fixtures/ckpt_crashes/ once crashed the loader in a
// fuzzing build. Each must now load or fail cleanly, both as found and with
// its CRCs repaired (fuzzing builds skip CRC checks, so that is how the
// fuzzer reached the crash). With no files this passes trivially.
Test(checkpoint, replays_fuzzer_crash_inputs) {
    const char *dir_path = TS_SOURCE_DIR "/tests/fixtures/ckpt_crashes";
    DIR *dir = opendir(dir_path);
    int replayed = 0;
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        char *path = path_in(dir_path, e->d_name);
        size_t len;
        unsigned char *bytes = read_all(path, &len);
        ts_ckpt *back = NULL;
        if (ts_ckpt_load(path, NULL, &back) == TS_OK) ts_ckpt_free(back);
        // Past the gzip layer with repaired CRCs, when it decompresses at all.
        z_stream z = {0};
        unsigned char *payload = malloc(1 << 20);
        inflateInit2(&z, 31);
        z.next_in = bytes;
        z.avail_in = (uInt)len;
        z.next_out = payload;
        z.avail_out = 1 << 20;
        int ret = inflate(&z, Z_FINISH);
        size_t plen = (1 << 20) - z.avail_out;
        inflateEnd(&z);
        if (ret == Z_STREAM_END) load_edited(payload, plen, 1);
        else load_edited(bytes, len, 1);  // an uncompressed (version 2) file
        free(payload);
        free(bytes);
        free(path);
        replayed++;
    }
    if (dir) closedir(dir);
    cr_log_info("replayed %d fuzzer crash inputs from %s", replayed, dir_path);
}

// ---- loading a model: every error names its file, once ------------------------------

Test(checkpoint, fail_may_quote_the_current_message) {
    ts_fail(TS_ERR_FORMAT, "bogus '%s'", "x");
    ts_fail(TS_ERR_FORMAT, "checkpoint header: %s", ts_last_error());
    cr_assert_str_eq(ts_last_error(), "checkpoint header: bogus 'x'");
}

// A small model's checkpoint, as train writes it (without the trainer's state).
static ts_ckpt *copy_without(const ts_ckpt *ck, const char *skip);

// The small models' vocabularies: le chat -> the cat, with the four specials.
static void two_vocabs(ts_vocab **src, ts_vocab **tgt) {
    cr_assert_eq(ts_vocab_from_words((const char *const[]){"<pad>", "<sos>", "<eos>", "<unk>", "le", "chat"}, 6, src),
                 TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_vocab_from_words((const char *const[]){"<pad>", "<sos>", "<eos>", "<unk>", "the", "cat"}, 6, tgt),
                 TS_OK, "%s", ts_last_error());
}

static ts_ckpt *model_ckpt_of(ts_attn_type attn, ts_decoder_type decoder, int bidirectional, ts_cell_type cell) {
    ts_vocab *src, *tgt;
    two_vocabs(&src, &tgt);
    ts_model_config cfg = {.src_vocab = 6, .tgt_vocab = 6, .emb = 3, .hidden = 4, .attn = attn, .decoder = decoder,
                           .bidirectional = bidirectional, .cell = cell};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    ts_ckpt *view = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(view, &trained), TS_OK, "%s", ts_last_error());
    ts_ckpt *ck = copy_without(view, "");  // owned copies: the model's weights are only viewed
    ts_ckpt_free(view);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    return ck;
}

static ts_ckpt *model_ckpt(ts_attn_type attn, ts_decoder_type decoder, int bidirectional) {
    return model_ckpt_of(attn, decoder, bidirectional, TS_CELL_GRU);
}

// A copy of ck without parameter tensor `skip`.
static ts_ckpt *copy_without(const ts_ckpt *ck, const char *skip) {
    ts_ckpt *out = ts_ckpt_new();
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *k, *v;
        ts_ckpt_header_at(ck, i, &k, &v);
        cr_assert_eq(ts_ckpt_set(out, k, v), TS_OK);
    }
    for (size_t i = 0; i < ts_ckpt_vocab_count(ck); i++) {
        const ts_ckpt_vocab *v = ts_ckpt_vocab_at(ck, i);
        cr_assert_eq(ts_ckpt_add_vocab(out, v->name, v->tokens, v->count), TS_OK);
    }
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        if (!strcmp(t->name, skip)) continue;
        cr_assert_eq(ts_ckpt_add_tensor(out, TS_CKPT_PARAMS, t->name, t->ndim, t->shape, t->data), TS_OK);
    }
    return out;
}

static int occurrences(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

// Saves ck to dir/name, loads it as translate/attend/eval do and as the
// trainer's --resume does, and checks both fail with a message that names
// the file exactly once and contains `fragment`.
static void assert_load_names_file(ts_ckpt *ck, const char *dir, const char *name, const char *fragment) {
    char *path = keep_path(dir, name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_translator t;
    int rc = ts_translator_load(path, &t);
    cr_assert_neq(rc, TS_OK, "%s loaded", name);
    cr_assert_null(t.model);
    cr_assert(strstr(ts_last_error(), fragment), "%s: '%s' lacks '%s'", name, ts_last_error(), fragment);
    cr_assert_eq(occurrences(ts_last_error(), path), 1, "%s: the path once: %s", name, ts_last_error());
    cr_assert_eq(occurrences(ts_last_error(), "checkpoint"), 1, "%s: not doubled: %s", name, ts_last_error());
    // --resume: the container first, then the model from it.
    ts_ckpt *loaded;
    cr_assert_eq(ts_ckpt_load(path, NULL, &loaded), TS_OK, "%s", ts_last_error());
    cr_assert_neq(ts_translator_from_ckpt(loaded, &t), TS_OK);
    cr_assert_eq(occurrences(ts_last_error(), path), 1, "%s (resume): %s", name, ts_last_error());
    ts_ckpt_free(loaded);
}

Test(checkpoint, every_model_load_error_names_the_file_once) {
    char *dir = tmpdir();
    struct { const char *key, *value, *fragment; } headers[] = {
        {"model.hidden", "0", "'model.hidden' = 0 is out of bounds"},
        {"model.hidden", "x", "'model.hidden' = 'x' is not an integer"},
        {"model.embedding", "-3", "is negative"},
        {"model.attention", "bogus", "unknown attention 'bogus'"},
        {"model.decoder", "bogus", "unknown decoder 'bogus'"},
        {"model.bidirectional", "2", "'model.bidirectional' = 2"},
        {"model.source_vocabulary", "7", "has shape [6,3], expected [7,3]"},
        {"model.target_vocabulary", "4", "'model.target_vocabulary' = 4"},
        {"data.max_len", "-1", "'data.max_len' = -1 is negative"},
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        ts_ckpt *ck = model_ckpt(TS_ATTN_BAHDANAU, TS_DECODER_LUONG, 0);
        cr_assert_eq(ts_ckpt_set(ck, headers[i].key, headers[i].value), TS_OK);
        char name[64];
        snprintf(name, sizeof name, "header-%zu.ckpt", i);
        assert_load_names_file(ck, dir, name, headers[i].fragment);
    }
    ts_ckpt *whole = model_ckpt(TS_ATTN_BAHDANAU, TS_DECODER_LUONG, 0);
    assert_load_names_file(copy_without(whole, "decoder.out.bias"), dir, "missing.ckpt",
                           "has no parameter tensor 'decoder.out.bias'");
    ts_ckpt_free(whole);
    ts_ckpt *extra = model_ckpt(TS_ATTN_DOT, TS_DECODER_BAHDANAU, 0);
    cr_assert_eq(ts_ckpt_add_tensor(extra, TS_CKPT_PARAMS, "decoder.extra", 1, (size_t[]){1}, (double[]){0}), TS_OK);
    assert_load_names_file(extra, dir, "extra.ckpt", "parameter 'decoder.extra' that a dot/bahdanau model does not");
    // A vocabulary with a word twice.
    ts_ckpt *plain = model_ckpt(TS_ATTN_NONE, TS_DECODER_BAHDANAU, 1), *twice_ck = ts_ckpt_new();
    for (size_t i = 0; i < ts_ckpt_header_count(plain); i++) {
        const char *k, *v;
        ts_ckpt_header_at(plain, i, &k, &v);
        ts_ckpt_set(twice_ck, k, v);
    }
    cr_assert_eq(ts_ckpt_add_vocab(twice_ck, "source", ts_ckpt_find_vocab(plain, "source")->tokens, 6), TS_OK);
    const char *twice[] = {"<pad>", "<sos>", "<eos>", "<unk>", "the", "the"};
    cr_assert_eq(ts_ckpt_add_vocab(twice_ck, "target", twice, 6), TS_OK);
    for (size_t i = 0; i < ts_ckpt_tensor_count(plain, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(plain, TS_CKPT_PARAMS, i);
        ts_ckpt_add_tensor(twice_ck, TS_CKPT_PARAMS, t->name, t->ndim, t->shape, t->data);
    }
    ts_ckpt_free(plain);
    assert_load_names_file(twice_ck, dir, "twice.ckpt", "target vocabulary");
}

// A header that promises a huge model over a file that stores a small one is
// rejected from the stored shapes, before the model is allocated.
Test(checkpoint, a_header_promising_a_huge_model_costs_no_memory) {
    char *dir = tmpdir();
    ts_ckpt *ck = model_ckpt(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 1);
    cr_assert_eq(ts_ckpt_set(ck, "model.hidden", "8000"), TS_OK);
    cr_assert_eq(ts_ckpt_set(ck, "model.embedding", "8000"), TS_OK);
    long before = peak_rss_kib();
    assert_load_names_file(ck, dir, "huge.ckpt", "has shape [6,3], expected [6,8000]");
    long grown = peak_rss_kib() - before;
    cr_assert_lt(grown, 64 * 1024, "peak memory grew by %ld KiB", grown);
}

// ---- loading for inference ----------------------------------------------------------------

// skip_training_state: OPTM is checked, not parsed; the rest loads as usual
// (blobs too: a subword model lives there), and a damaged optimizer section
// is still caught by its CRC.
Test(checkpoint, loading_for_inference_skips_the_training_state_but_checks_it) {
    ts_ckpt *ck = sample();
    unsigned char *file;
    size_t file_len;
    save_mem(ck, &file, &file_len);
    ts_ckpt *got;
    ts_ckpt_load_opts opts = {.skip_training_state = 1};
    cr_assert_eq(ts_ckpt_load_mem(file, file_len, &opts, &got), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_tensor_count(got, TS_CKPT_OPTIM), 0);
    cr_assert_eq(ts_ckpt_blob_count(got), ts_ckpt_blob_count(ck));
    cr_assert_eq(ts_ckpt_tensor_count(got, TS_CKPT_PARAMS), ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS));
    cr_assert_eq(ts_ckpt_vocab_count(got), 2);
    ts_ckpt_free(got);
    free(file);

    unsigned char *payload;
    size_t len;
    payload_of(ck, &payload, &len);
    unsigned char *m = find_bytes(payload, len, "adam.m.encoder.weight");
    m[0] ^= 1;  // one bit in the optimizer section, CRCs left as they were
    assert_fails_with(ts_ckpt_load_mem(payload, len, &opts, &got), TS_ERR_FORMAT, "section OPTM CRC mismatch");
    m[0] ^= 1;
    find_bytes(payload, len, "rng")[0] ^= 1;  // and in the blobs
    assert_fails_with(ts_ckpt_load_mem(payload, len, &opts, &got), TS_ERR_FORMAT, "section BLOB CRC mismatch");
    free(payload);
    ts_ckpt_free(ck);
}

Test(checkpoint, take_tensor_data_hands_over_the_buffer) {
    ts_ckpt *ck = sample();
    const ts_ckpt_tensor *t = ts_ckpt_find_tensor(ck, TS_CKPT_PARAMS, "encoder.weight");
    double want[6];
    memcpy(want, t->data, sizeof want);
    double *data = ts_ckpt_take_tensor_data(ck, TS_CKPT_PARAMS, "encoder.weight");
    cr_assert_not_null(data);
    cr_assert_arr_eq(data, want, sizeof want);
    cr_assert_null(ts_ckpt_find_tensor(ck, TS_CKPT_PARAMS, "encoder.weight")->data);
    cr_assert_null(ts_ckpt_take_tensor_data(ck, TS_CKPT_PARAMS, "no.such"));
    cr_assert_null(ts_ckpt_take_tensor_data(ck, TS_CKPT_OPTIM, "encoder.weight"));
    ts_ckpt_free(ck);  // frees what it still owns, not the taken buffer
    free(data);
}

// zlib leaves gzip's CRC and size to the loader (derived from the CRCs it
// computes anyway): a flip in either field is still rejected.
Test(checkpoint, rejects_a_wrong_gzip_crc_or_size) {
    ts_ckpt *ck = sample();
    unsigned char *file;
    size_t len;
    gzip_of(ck, &file, &len);
    for (size_t i = len - 8; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            file[i] ^= (unsigned char)(1u << bit);
            ts_ckpt *got = (ts_ckpt *)1;
            int rc = ts_ckpt_load_mem(file, len, NULL, &got);
            cr_assert_eq(rc, TS_ERR_FORMAT, "byte %zu bit %d: status %d", i, bit, rc);
            cr_assert_null(got);
            cr_assert(strstr(ts_last_error(), "gzip"), "byte %zu: %s", i, ts_last_error());
            file[i] ^= (unsigned char)(1u << bit);
        }
    }
    ts_ckpt *got;
    cr_assert_eq(ts_ckpt_load_mem(file, len, NULL, &got), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(got);
    free(file);
    ts_ckpt_free(ck);
}

// ---- CRC-32 ----------------------------------------------------------------------

// ts_crc32 over more than 4 GiB (zlib takes a 32-bit length, so one call
// would silently cover n mod 4 GiB bytes). A read-only mapping of zero pages
// costs no memory; the expected value doubles a 4 KiB CRC up to 4 GiB with
// crc32_combine, then adds 3 bytes.
Test(checkpoint, crc32_covers_buffers_over_4_gib_and_continues) {
    size_t n = ((size_t)4 << 30) + 3;
    const unsigned char *zeros = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq((const void *)zeros, MAP_FAILED, "%s", strerror(errno));
    uLong want = crc32(0, zeros, 4096);
    for (z_off_t len = 4096; len < ((z_off_t)4 << 30); len *= 2) want = crc32_combine(want, want, len);
    want = crc32(want, zeros, 3);
    cr_assert_eq(ts_crc32(0, zeros, n), (uint32_t)want);
    munmap((void *)zeros, n);
    cr_assert_eq(ts_crc32(ts_crc32(0, "abc", 3), "def", 3), ts_crc32(0, "abcdef", 6));
    cr_assert_eq(ts_crc32(0, "123456789", 9), 0xcbf43926u);  // the standard check value
}

// A buffer of a few MB is checked in parts on the threads and the parts'
// CRCs combined: the value of one pass, continuing a CRC, for any thread count
// (ragged parts included).
Test(checkpoint, crc32_in_parts_on_threads_is_one_pass) {
    size_t n = ((size_t)5 << 20) + 7;
    unsigned char *bytes = malloc(n);
    cr_assert_not_null(bytes);
    uint32_t state = 12345;
    for (size_t i = 0; i < n; i++) bytes[i] = (unsigned char)((state = state * 1664525u + 1013904223u) >> 24);
    uLong want = crc32(crc32(0, (const Bytef *)"prelude", 7), bytes, (uInt)n);
    for (int threads = 1; threads <= 16; threads = threads < 4 ? threads + 1 : threads * 4) {
        ts_threads_use(threads);
        cr_assert_eq(ts_crc32(ts_crc32(0, "prelude", 7), bytes, n), (uint32_t)want, "%d threads", threads);
    }
    ts_threads_use(1);
    free(bytes);
}

// A model's header is the field table (models/config.h) walked in order: a
// GRU file has "model.<key>" for each of the GRU's rows and no
// "model.architecture" (files from before it keep their bytes), and reading
// it back gives every field its value. A bad architecture name is refused
// naming the key.
Test(checkpoint, model_header_rows_are_the_field_table) {
    for (int bi = 0; bi <= 1; bi++) {
        ts_ckpt *ck = model_ckpt(TS_ATTN_GENERAL, TS_DECODER_LUONG, bi);
        size_t h = 0;
        for (int i = 0; i < ts_model_field_count; i++) {
            const ts_model_field *f = &ts_model_fields[i];
            if (f->newer || !ts_model_field_applies(f, TS_ARCH_GRU)) continue;  // newer: 0 for the GRU, not written
            const char *k, *v;
            ts_ckpt_header_at(ck, h++, &k, &v);
            char key[64];
            snprintf(key, sizeof key, "model.%s", f->key);
            cr_assert_str_eq(k, key);
        }
        const char *k, *v;
        ts_ckpt_header_at(ck, h, &k, &v);
        cr_assert_str_eq(k, "data.max_len");
        ts_translator t;
        cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
        ts_model_config want = {.src_vocab = 6, .tgt_vocab = 6, .emb = 3, .hidden = 4, .attn = TS_ATTN_GENERAL,
                                .decoder = TS_DECODER_LUONG, .bidirectional = bi};
        for (int i = 0; i < ts_model_field_count; i++)
            cr_assert_eq(ts_model_field_get(&t.model->cfg, &ts_model_fields[i]), ts_model_field_get(&want, &ts_model_fields[i]),
                         "%s", ts_model_fields[i].key);
        ts_translator_free(&t);
        cr_assert_eq(ts_ckpt_set(ck, "model.architecture", "lstm"), TS_OK);
        cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_ERR_FORMAT);
        cr_assert(strstr(ts_last_error(), "header 'model.architecture': unknown architecture 'lstm'"), "%s", ts_last_error());
        ts_ckpt_free(ck);
    }
}

// The recurrent cell is a newer row: a GRU model's file has no
// "model.cell" (files from before it keep their bytes, and read as the
// GRU); a file that names its cell loads that cell, and a name that no row
// has is refused naming the key.
Test(checkpoint, model_cell_is_absent_for_the_gru_and_read_by_name) {
    ts_ckpt *ck = model_ckpt(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 0);
    const char *name;
    cr_assert_neq(ts_ckpt_get_string(ck, "model.cell", &name), TS_OK);
    ts_clear_error();
    ts_translator t;
    cr_assert_eq(ts_ckpt_set(ck, "model.cell", "gru"), TS_OK);
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    cr_assert_eq(t.model->cfg.cell, TS_CELL_GRU);
    ts_translator_free(&t);
    cr_assert_eq(ts_ckpt_set(ck, "model.cell", "nope"), TS_OK);
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "header 'model.cell': unknown cell 'nope' (gru"), "%s", ts_last_error());
    ts_ckpt_free(ck);
}

// An LSTM model's file says "model.cell = lstm" after the GRU
// architecture's other rows, holds the parameters under torch's LSTM names
// and loads back as that model; the same file claiming the GRU cell is
// refused on its first parameter, before anything is allocated for it.
Test(checkpoint, lstm_checkpoint_names_its_cell_and_loads_back) {
    ts_ckpt *ck = model_ckpt_of(TS_ATTN_GENERAL, TS_DECODER_LUONG, 1, TS_CELL_LSTM);
    const char *k, *v;
    ts_ckpt_header_at(ck, 3, &k, &v);
    cr_assert(!strcmp(k, "model.cell") && !strcmp(v, "lstm"), "header row 3: %s = %s", k, v);
    size_t shape[2] = {16, 3};
    cr_assert_eq(ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, "encoder.lstm.weight_ih_l0_reverse", 2, shape, NULL), TS_OK,
                 "%s", ts_last_error());
    ts_translator t;
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    cr_assert_eq(t.model->cfg.cell, TS_CELL_LSTM);
    const ts_tensor *c_bias = ts_params_find(&t.model->params, "decoder.lstm.bias_hh");
    cr_assert(c_bias && c_bias->size == 16);
    ts_translator_free(&t);
    cr_assert_eq(ts_ckpt_set(ck, "model.cell", "gru"), TS_OK);
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "encoder.gru.weight_ih_l0"), "%s", ts_last_error());
    ts_ckpt_free(ck);
}

// A Transformer's checkpoint names its architecture and its own sizes from
// the field table, has no GRU rows, and loads back to the same model.
Test(checkpoint, transformer_checkpoint_round_trips_through_the_field_table) {
    ts_vocab *src, *tgt;
    two_vocabs(&src, &tgt);
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = 6, .tgt_vocab = 6, .emb = 4, .hidden = 4,
                           .d_model = 4, .heads = 2, .layers = 1, .ff = 8};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    const char *value;
    cr_assert_eq(ts_ckpt_get_string(ck, "model.architecture", &value), TS_OK);
    cr_assert_str_eq(value, "transformer");
    cr_assert_eq(ts_ckpt_get_string(ck, "model.heads", &value), TS_OK);
    cr_assert_str_eq(value, "2");
    cr_assert_neq(ts_ckpt_get_string(ck, "model.attention", &value), TS_OK, "no GRU rows");
    ts_translator t;
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    for (int i = 0; i < ts_model_field_count; i++)
        cr_assert_eq(ts_model_field_get(&t.model->cfg, &ts_model_fields[i]), ts_model_field_get(&cfg, &ts_model_fields[i]),
                     "%s", ts_model_fields[i].key);
    cr_assert_eq(t.model->params.count, m->params.count);
    for (int i = 0; i < m->params.count; i++)
        cr_assert_arr_eq(t.model->params.items[i]->data, m->params.items[i]->data,
                         m->params.items[i]->size * sizeof(double), "%s", m->params.items[i]->name);
    ts_translator_free(&t);
    ts_ckpt_set(ck, "model.heads", "3");
    cr_assert_neq(ts_translator_from_ckpt(ck, &t), TS_OK, "3 heads do not divide d_model 4");
    ts_ckpt_free(ck);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
}

// A Transformer's checkpoint (d_model 4, 2 heads, 1 layer) whose header
// claims sizes its model cannot have: each refused naming the file and the
// key, before any tensor is compared or allocated.
// The container holds views of *model's weights: free it after saving.
static ts_ckpt *transformer_ckpt(ts_seq2seq **model) {
    ts_vocab *src, *tgt;
    two_vocabs(&src, &tgt);
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = 6, .tgt_vocab = 6, .emb = 4, .hidden = 4,
                           .d_model = 4, .heads = 2, .layers = 1, .ff = 8};
    ts_seq2seq *m = ts_seq2seq_new(&cfg, NULL);
    cr_assert_not_null(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    *model = m;
    return ck;
}

Test(checkpoint, a_transformer_header_with_impossible_sizes_is_refused_naming_the_file_and_key) {
    char *dir = tmpdir();
    struct { const char *key, *value, *fragment; } headers[] = {
        {"model.heads", "3", "its model.* header: heads 3 do not divide d_model 4"},
        {"model.heads", "8", "heads 8 do not divide d_model 4"},
        {"model.heads", "0", "header 'model.heads' = 0 is out of bounds"},
        {"model.layers", "0", "header 'model.layers' = 0 is out of bounds [1, 16]"},
        {"model.layers", "17", "header 'model.layers' = 17 is out of bounds [1, 16]"},
        {"model.layers", "x", "'model.layers' = 'x' is not an integer"},
        {"model.d_model", "9000", "header 'model.d_model' = 9000 is out of bounds [1, 8192]"},
        {"model.d_model", "8000", "expected [6,8000]"},  // in bounds: the tensors disagree, nothing allocated
        {"model.feed_forward", "70000", "header 'model.feed_forward' = 70000 is out of bounds [1, 65536]"},
        {"model.feed_forward", "0", "header 'model.feed_forward' = 0 is out of bounds"},
        {"model.architecture", "lstm", "header 'model.architecture': unknown architecture 'lstm'"},
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        ts_seq2seq *m;
        ts_ckpt *ck = transformer_ckpt(&m);
        cr_assert_eq(ts_ckpt_set(ck, headers[i].key, headers[i].value), TS_OK);
        char name[64];
        snprintf(name, sizeof name, "transformer-%zu.ckpt", i);
        assert_load_names_file(ck, dir, name, headers[i].fragment);
        ts_seq2seq_free(m);
    }
}

// A model of `dtype` saved to DIR/NAME (the same weights, rounded, for
// float32: ts_seq2seq_new starts a float32 model from its float64 twin).
// model.dtype edited to `claim` when not NULL, so a float64 model's file
// claims float32: what the builds before float32 tensors wrote for one.
static char *save_model_of(const char *dir, const char *name, int dtype, const char *claim) {
    ts_vocab *src, *tgt;
    two_vocabs(&src, &tgt);
    ts_model_config cfg = {.src_vocab = 6, .tgt_vocab = 6, .emb = 16, .hidden = 32, .attn = TS_ATTN_BAHDANAU,
                           .decoder = TS_DECODER_BAHDANAU, .dtype = dtype};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert_not_null(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    if (claim) cr_assert_eq(ts_ckpt_set(ck, "model.dtype", claim), TS_OK);
    char *path = keep_path(dir, name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    return path;
}

static char *translate_with(ts_translator *t, const char *text, int beam);

static size_t file_size(const char *path) {
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (size_t)st.st_size;
}

// A float32 model's checkpoint says so (model.dtype, absent for float64),
// stores every parameter as float32 (so the file is about half its float64
// twin's), and loads back to the same bits three ways: read, mapped (the
// parameters point into the mapping: no float64 copy, no conversion), and
// from a file that stored them as float64 (builds before float32 tensors),
// converted once.
Test(checkpoint, float32_model_is_stored_in_float32_and_loads_bit_exact) {
    char *dir = tmpdir();
    char *f32 = save_model_of(dir, "f32.ckpt", TS_F32, NULL), *f64 = save_model_of(dir, "f64.ckpt", TS_F64, NULL);
    char *old = save_model_of(dir, "old.ckpt", TS_F64, "float32");
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(f32, NULL, &ck), TS_OK, "%s", ts_last_error());
    const char *dtype = NULL;
    cr_assert_eq(ts_ckpt_get_string(ck, "model.dtype", &dtype), TS_OK, "%s", ts_last_error());
    cr_assert_str_eq(dtype, "float32");
    size_t values = 0;
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        cr_assert_eq(t->dtype, TS_F32, "%s is stored as %s", t->name, ts_dtype_name(t->dtype));
        values += t->size;
    }
    ts_ckpt_free(ck);
    // Half, but for the header, vocabularies and alignment padding.
    size_t small = file_size(f32), large = file_size(f64);
    cr_assert_lt(small, large / 2 + 2048, "float32 file %zu bytes, float64 %zu (%zu values)", small, large, values);
    cr_assert_gt(large - small, 4 * values - 64 * 16, "%zu and %zu bytes", small, large);

    ts_translator want, read, mapped, converted;
    cr_assert_eq(ts_translator_load(old, &converted), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_translator_load(f32, &read), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_translator_map(f32, &mapped), TS_OK, "%s", ts_last_error());
    cr_assert_not_null(mapped.weights, "the parameters borrow the mapping");
    cr_assert_eq(ts_translator_load(f32, &want), TS_OK, "%s", ts_last_error());
    ts_translator *loaded[] = {&read, &mapped, &converted};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(loaded[k]->model->cfg.dtype, TS_F32);
        for (int i = 0; i < want.model->params.count; i++) {
            const ts_tensor *a = want.model->params.items[i], *b = loaded[k]->model->params.items[i];
            cr_assert_eq(b->dtype, TS_F32, "%s", b->name);
            cr_assert_eq(b->borrowed, k == 1, "%s: borrowed only from a mapped float32 file", b->name);
            cr_assert_arr_eq(b->data_f32, a->data_f32, a->size * sizeof(float), "%s (load %d)", a->name, k);
        }
    }
    char *line = translate_with(&mapped, "le chat", 2), *line_read = translate_with(&read, "le chat", 2);
    cr_assert_str_eq(line, line_read);
    free(line);
    free(line_read);
    // A flipped bit in a float32 weight is refused by its section's CRC,
    // naming the file, mapped or read.
    size_t len;
    unsigned char *bytes = keep(read_all(f32, &len));
    unsigned char *record = find_bytes(bytes, len, "decoder.gru.weight_hh");
    size_t at = (size_t)rd64(record + strlen("decoder.gru.weight_hh") + 4 + 4 + 16) + 4 * 5 + 2;
    cr_assert_lt(at, len);
    bytes[at] ^= 0x08;
    char *flipped = keep(test_write_file(dir, "flipped-f32.ckpt", bytes, len));
    ts_translator none;
    assert_fails_with(ts_translator_map(flipped, &none), TS_ERR_FORMAT, "section PARM CRC mismatch");
    cr_assert(strstr(ts_last_error(), flipped), "%s", ts_last_error());
    assert_fails_with(ts_translator_load(flipped, &none), TS_ERR_FORMAT, "section PARM CRC mismatch");
    ts_translator_free(&want);
    ts_translator_free(&read);
    ts_translator_free(&mapped);
    ts_translator_free(&converted);
}

// ---- version 2: mapped, and version 1 still loads ---------------------------------

// A toy model's best.ckpt written by tinyseq before version 2 (commit
// 864d841: gzip, stored blocks), and what that program translated with it.
#define FORMAT1_MODEL TS_SOURCE_DIR "/tests/fixtures/format1/toy-best.ckpt"
#define FORMAT1_SENTENCE "the cat sleeps ."
#define FORMAT1_TRANSLATION "trois trois attend vache grand . les médecin . les médecin . les médecin . les médecin ."

static char *translate_with(ts_translator *t, const char *text, int beam) {
    ts_arena *arena = ts_arena_new(16 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_hypothesis h;
    cr_assert_eq(ts_translate_text(t, &ctx, text, beam, &h, NULL, NULL), TS_OK, "%s", ts_last_error());
    char *line = malloc(4096);
    ts_vocab_decode(t->tgt_vocab, h.tokens, (size_t)h.len, line, 4096);
    ts_hypothesis_free(&h);
    ts_arena_free(arena);
    return line;
}

// The fixture saved again by this build (version 2), at `path`.
static void resave_format1_model(const char *path) {
    ts_translator t;
    cr_assert_eq(ts_translator_load(FORMAT1_MODEL, &t), TS_OK, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_eq(ts_model_to_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_translator_free(&t);
}

Test(checkpoint, a_format_1_file_still_loads_and_translates_as_it_did) {
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(FORMAT1_MODEL, NULL, &ck), TS_OK, "%s", ts_last_error());
    const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, 0);
    cr_assert_eq(t->dtype, TS_F64);
    ts_ckpt_free(ck);
    for (int mapped = 0; mapped < 2; mapped++) {
        ts_translator tr;
        cr_assert_eq((mapped ? ts_translator_map : ts_translator_load)(FORMAT1_MODEL, &tr), TS_OK, "%s", ts_last_error());
        cr_assert_null(tr.weights, "a gzip file has no mapping to borrow from");
        char *line = translate_with(&tr, FORMAT1_SENTENCE, 1);
        cr_assert_str_eq(line, FORMAT1_TRANSLATION);
        free(line);
        ts_translator_free(&tr);
    }
}

// translate, attend and eval borrow the weights from the file's mapping; the
// model must be the one ts_translator_load copies, bit for bit, and
// translate identically, greedy and beam.
Test(checkpoint, a_mapped_model_translates_as_a_read_model) {
    char *path = keep_path(tmpdir(), "v2.ckpt");
    resave_format1_model(path);
    ts_translator read, mapped;
    cr_assert_eq(ts_translator_load(path, &read), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_translator_map(path, &mapped), TS_OK, "%s", ts_last_error());
    cr_assert_null(read.weights);
    cr_assert_not_null(mapped.weights);
    for (int i = 0; i < read.model->params.count; i++) {
        const ts_tensor *a = read.model->params.items[i], *b = mapped.model->params.items[i];
        cr_assert(!a->borrowed && b->borrowed, "%s", a->name);
        cr_assert_eq((uintptr_t)b->data % 64, 0, "%s is not aligned", b->name);
        cr_assert(memcmp(a->data, b->data, a->size * sizeof(double)) == 0, "%s differs", a->name);
    }
    const char *sentences[] = {FORMAT1_SENTENCE, "a dog runs .", "the big cat sees the dog ."};
    for (int beam = 1; beam <= 3; beam += 2)
        for (int k = 0; k < 3; k++) {
            char *x = translate_with(&read, sentences[k], beam), *y = translate_with(&mapped, sentences[k], beam);
            cr_assert_str_eq(x, y, "beam %d, '%s'", beam, sentences[k]);
            if (k == 0 && beam == 1) cr_assert_str_eq(y, FORMAT1_TRANSLATION);
            free(x);
            free(y);
        }
    ts_translator_free(&read);
    ts_translator_free(&mapped);
}

// One flipped bit in the header, in a tensor's values or in the trailer of a
// file on disk is refused by a CRC, and the message names the file.
Test(checkpoint, a_flipped_bit_in_a_file_is_refused_naming_the_file) {
    char *dir = tmpdir();
    char *good = keep_path(dir, "good.ckpt");
    resave_format1_model(good);
    size_t len;
    unsigned char *bytes = keep(read_all(good, &len));
    struct {
        const char *part;
        size_t at;
        const char *crc;
    } flips[] = {
        {"header", (size_t)(find_bytes(bytes, len, "model.hidden=") - bytes) + 3, "section HEAD CRC"},
        {"tensor values", 0, "section PARM CRC"},
        {"trailer", len - 1, "payload CRC"},
    };
    // Where decoder.gru.weight_hh's values are: its index record ends with its offset.
    unsigned char *record = find_bytes(bytes, len, "decoder.gru.weight_hh");
    flips[1].at = (size_t)rd64(record + strlen("decoder.gru.weight_hh") + 4 + 4 + 16) + 8 * 5;
    for (size_t i = 0; i < sizeof flips / sizeof *flips; i++) {
        bytes[flips[i].at] ^= 0x10;
        char name[64];
        snprintf(name, sizeof name, "flipped-%zu.ckpt", i);
        char *path = keep(test_write_file(dir, name, bytes, len));
        bytes[flips[i].at] ^= 0x10;
        ts_ckpt *back = (ts_ckpt *)1;
        assert_fails_with(ts_ckpt_load(path, NULL, &back), TS_ERR_FORMAT, flips[i].crc);
        cr_assert_null(back);
        cr_assert(strstr(ts_last_error(), path), "%s: the message names the file: %s", flips[i].part, ts_last_error());
        ts_translator tr;
        assert_fails_with(ts_translator_map(path, &tr), TS_ERR_FORMAT, path);
    }
}

Test(checkpoint, a_truncated_file_is_refused_naming_the_file) {
    char *dir = tmpdir();
    char *good = keep_path(dir, "good.ckpt");
    resave_format1_model(good);
    size_t len;
    unsigned char *bytes = keep(read_all(good, &len));
    size_t cuts[] = {1, 8, 31, 32, 100, len / 2, len - 4, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char *path = keep(test_write_file(dir, "cut.ckpt", bytes, cuts[i]));
        ts_ckpt *back = (ts_ckpt *)1;
        assert_fails_with(ts_ckpt_load(path, NULL, &back), TS_ERR_FORMAT, "truncated");
        cr_assert(strstr(ts_last_error(), path), "cut at %zu: %s", cuts[i], ts_last_error());
        cr_assert_null(back);
    }
}
