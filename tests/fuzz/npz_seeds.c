// Writes a few small valid .npz files into the directory named by argv[1]:
// the npz fuzzer's seed corpus (scripts/fuzz.sh). Stored archives let
// mutations reach the .npy headers directly.
#include "interop/npz.h"

#include "tensor/status.h"

#include <math.h>
#include <stdio.h>

static int save(const ts_npz *z, const char *dir, const char *name, enum ts_npz_method method) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = ts_npz_save(z, path, method);
    if (rc != TS_OK) fprintf(stderr, "npz_seeds: %s\n", ts_last_error());
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: npz_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int rc = 0;

    ts_npz *empty = ts_npz_new();
    rc |= save(empty, dir, "empty.npz", TS_NPZ_STORE);
    ts_npz_free(empty);

    ts_npz *z = ts_npz_new();
    double w[24];
    for (int i = 0; i < 24; i++) w[i] = sin(i) * 0.1;
    size_t s1[] = {4}, s2[] = {2, 3}, s3[] = {2, 3, 4}, sv[] = {5};
    const char *words[] = {"<pad>", "le", "été", "日本", ""};
    const char *config = "model.attention=bahdanau\nmodel.hidden=4\n";
    rc |= ts_npz_add_f8(z, "encoder.gru.bias_ih_l0", 1, s1, w);
    rc |= ts_npz_add_f8(z, "encoder.gru.weight_ih_l0", 2, s2, w);
    rc |= ts_npz_add_f8(z, "cube", 3, s3, w);
    rc |= ts_npz_add_f8(z, "scalar", 0, NULL, w);
    rc |= ts_npz_add_strings(z, "tinyseq.vocab.source", 1, sv, words);
    rc |= ts_npz_add_strings(z, "tinyseq.config", 0, NULL, &config);
    rc |= save(z, dir, "small-stored.npz", TS_NPZ_STORE);
    rc |= save(z, dir, "small-deflated.npz", TS_NPZ_DEFLATE);
    ts_npz_free(z);

    ts_npz *one = ts_npz_new();
    rc |= ts_npz_add_f8(one, "w", 1, s1, w);
    rc |= save(one, dir, "one.npz", TS_NPZ_STORE);
    ts_npz_free(one);

    // A float32 model's export: '<f4' arrays, held as doubles once loaded.
    ts_npz *f4 = ts_npz_new();
    float wf[24];
    for (int i = 0; i < 24; i++) wf[i] = (float)w[i];
    rc |= ts_npz_add_f4(f4, "encoder.gru.weight_ih_l0", 2, s2, wf);
    rc |= ts_npz_add_f4(f4, "scalar", 0, NULL, wf);
    rc |= ts_npz_add_strings(f4, "tinyseq.config", 0, NULL, &config);
    rc |= save(f4, dir, "float32-stored.npz", TS_NPZ_STORE);
    ts_npz_free(f4);

    // A subword model's export: its SentencePiece models as '|u1' bytes.
    ts_npz *u1 = ts_npz_new();
    const uint8_t model[] = "TSSP\x01\0\0\0\x04\0\0\0\0\0\0\0\0\0\0\0\x0a\x02\x08\x01";
    size_t s_model[1] = {sizeof model - 1};
    rc |= ts_npz_add_u1(u1, "tinyseq.subword.source", 1, s_model, model);
    rc |= ts_npz_add_u1(u1, "tinyseq.subword.target", 1, s_model, model);
    rc |= ts_npz_add_f8(u1, "w", 1, s1, w);
    rc |= save(u1, dir, "bytes-stored.npz", TS_NPZ_STORE);
    ts_npz_free(u1);
    return rc ? 1 : 0;
}
