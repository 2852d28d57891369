// libFuzzer harness for the .npz reader (ts_npz_load_mem).
//
// Inputs are whole .npz files. This build skips the CRC comparison
// (TS_NPZ_FUZZING), so mutated stored entries reach the .npy parser; the
// seeds (npz_seeds) hold stored and deflated archives.
//
// Beyond "no crash, no leak, no sanitizer report", each input checks:
//   - a failure is TS_ERR_FORMAT or TS_ERR_NOMEM, with a message, and no container;
//   - whatever loads, saves (stored and deflated) and loads back to the same
//     arrays, and saving that again gives the same bytes.
#include "interop/npz.h"

#include "tensor/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Small cap: keeps each run fast and far below libFuzzer's RSS limit.
static const ts_npz_load_opts opts = {.max_payload = 16u << 20};

static void check_same(const ts_npz *a, const ts_npz *b) {
    if (ts_npz_count(a) != ts_npz_count(b)) __builtin_trap();
    for (size_t i = 0; i < ts_npz_count(a); i++) {
        const ts_npz_array *x = ts_npz_at(a, i), *y = ts_npz_at(b, i);
        if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->ndim != y->ndim || x->size != y->size ||
            memcmp(x->shape, y->shape, sizeof x->shape) || ts_npz_find(a, x->name) != x)
            __builtin_trap();
        for (size_t k = 0; k < x->size; k++)
            if (x->dtype == TS_NPZ_STR  ? strcmp(x->strings[k], y->strings[k]) != 0
                : x->dtype == TS_NPZ_U1 ? x->bytes[k] != y->bytes[k]
                                        : memcmp(&x->values[k], &y->values[k], 8) != 0)
                __builtin_trap();
    }
}

static void check_round_trip(const ts_npz *z, enum ts_npz_method method) {
    unsigned char *a, *b;
    size_t a_len, b_len;
    if (ts_npz_save_mem(z, method, &a, &a_len) != TS_OK) __builtin_trap();
    ts_npz *again = NULL;
    if (ts_npz_load_mem(a, a_len, "round trip", &opts, &again) != TS_OK) __builtin_trap();
    check_same(z, again);
    if (ts_npz_save_mem(again, method, &b, &b_len) != TS_OK) __builtin_trap();
    if (a_len != b_len || memcmp(a, b, a_len) != 0) __builtin_trap();
    ts_npz_free(again);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_npz *z = NULL;
    int rc = ts_npz_load_mem(data, size, "fuzz", &opts, &z);
    if (rc == TS_OK) {
        check_round_trip(z, TS_NPZ_STORE);
        check_round_trip(z, TS_NPZ_DEFLATE);
        ts_npz_free(z);
    } else if ((rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || z != NULL || ts_last_error()[0] == '\0') {
        __builtin_trap();
    }
    return 0;
}
