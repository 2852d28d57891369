// libFuzzer harness for the checkpoint loader (ts_ckpt_load_mem).
//
// Inputs are whole checkpoint files: uncompressed version-2 files (the
// payload itself, tensors at aligned offsets), and gzip files (version 1, or
// a gzip'd version 2). Random bytes rarely survive inflate, so for a gzip
// input a custom mutator usually decompresses it, lets libFuzzer mutate the
// payload and compresses it again; sometimes it mutates the raw bytes, to
// exercise the gzip layer too. This build skips CRC checks
// (TS_CKPT_FUZZING), so mutated payloads reach the parser.
//
// Beyond "no crash, no leak, no sanitizer report", each input checks:
//   - a failure is TS_ERR_FORMAT or TS_ERR_NOMEM, with a message;
//   - whatever loads, saves, and loads back to the same bytes;
//   - the typed getters never crash on any loaded key, and every tensor's
//     values, float32 or float64, lie within the loaded bytes;
//   - loading for inference (skip_training_state) succeeds whenever the full
//     load does (it parses less), holds no optimizer tensors and the same
//     blobs as the full load (a subword model lives there), and
//     hands its tensor data out cleanly (ts_ckpt_take_tensor_data).
#include "ckpt/ckpt.h"

#include "tensor/status.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

enum { MAX_PAYLOAD = 1 << 20 };

// Small cap: keeps each run fast and far below libFuzzer's RSS limit.
static const ts_ckpt_load_opts opts = {.max_payload = 16u << 20};

static void check_round_trip(const ts_ckpt *ck) {
    unsigned char *a, *b;
    size_t a_len, b_len;
    if (ts_ckpt_save_mem(ck, &a, &a_len) != TS_OK) __builtin_trap();
    ts_ckpt *again = NULL;
    if (ts_ckpt_load_mem(a, a_len, &opts, &again) != TS_OK) __builtin_trap();
    if (ts_ckpt_save_mem(again, &b, &b_len) != TS_OK) __builtin_trap();
    if (a_len != b_len || memcmp(a, b, a_len) != 0) __builtin_trap();
    ts_ckpt_free(again);
    free(a);
    free(b);
}

static void poke_getters(const ts_ckpt *ck) {
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        int64_t n;
        double x;
        ts_ckpt_header_at(ck, i, &key, &value);
        ts_ckpt_get_string(ck, key, &value);
        ts_ckpt_get_int(ck, key, 0, 1000, &n);
        ts_ckpt_get_double(ck, key, -INFINITY, INFINITY, &x);
    }
    for (size_t i = 0; i < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); i++) {
        const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, i);
        if (ts_ckpt_find_tensor(ck, TS_CKPT_PARAMS, t->name) != t) __builtin_trap();
        if (t->dtype != TS_F64 && t->dtype != TS_F32) __builtin_trap();
        // The last byte of its values, at its dtype's width: ASan sees a read
        // past the loaded bytes if the loader bounded a tensor by another width.
        volatile unsigned char last = ((const unsigned char *)t->raw)[t->size * ts_dtype_size(t->dtype) - 1];
        (void)last;
        size_t shape[3] = {1, 1, 1};
        ts_ckpt_expect_tensor(ck, TS_CKPT_PARAMS, t->name, 2, shape, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_ckpt *ck = NULL;
    int rc = ts_ckpt_load_mem(data, size, &opts, &ck);
    ts_ckpt_load_opts light_opts = opts;
    light_opts.skip_training_state = 1;
    ts_ckpt *light = NULL;
    int light_rc = ts_ckpt_load_mem(data, size, &light_opts, &light);
    if (rc == TS_OK && light_rc != TS_OK) __builtin_trap();  // it parses less, never more
    if (light_rc == TS_OK) {
        if (ts_ckpt_tensor_count(light, TS_CKPT_OPTIM) != 0) __builtin_trap();
        if (rc == TS_OK && ts_ckpt_blob_count(light) != ts_ckpt_blob_count(ck)) __builtin_trap();
        for (size_t i = 0; i < ts_ckpt_tensor_count(light, TS_CKPT_PARAMS); i++)
            free(ts_ckpt_take_tensor_data(light, TS_CKPT_PARAMS, ts_ckpt_tensor_at(light, TS_CKPT_PARAMS, i)->name));
        ts_ckpt_free(light);
    }
    if (rc == TS_OK) {
        poke_getters(ck);
        check_round_trip(ck);
        ts_ckpt_free(ck);
    } else if ((rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || ck != NULL ||
               ts_last_error()[0] == '\0') {
        __builtin_trap();
    }
    return 0;
}

static size_t gunzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 31) != Z_OK) return 0;
    z.next_in = (uint8_t *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int ret = inflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    inflateEnd(&z);
    return ret == Z_STREAM_END ? len : 0;
}

static size_t gzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    z.next_in = (uint8_t *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int ret = deflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return ret == Z_STREAM_END ? len : 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    static uint8_t payload[MAX_PAYLOAD];
    static uint8_t packed[MAX_PAYLOAD + 1024];
    size_t len = seed % 8 == 0 ? 0 : gunzip(data, size, payload, sizeof payload);
    if (len == 0) return LLVMFuzzerMutate(data, size, max_size);
    len = LLVMFuzzerMutate(payload, len, sizeof payload);
    size_t packed_len = gzip(payload, len, packed, sizeof packed);
    if (packed_len == 0 || packed_len > max_size) return LLVMFuzzerMutate(data, size, max_size);
    memcpy(data, packed, packed_len);
    return packed_len;
}
