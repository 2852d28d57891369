// Writes a few small valid checkpoints into the directory named by argv[1]:
// the fuzzer's seed corpus (scripts/fuzz.sh, which adds the version-1
// fixtures of tests/fixtures/format1/). Each as this build writes it
// (version 2), a float32 model's among them, and two gzip'd, so the gzip
// layer is fuzzed too.
#include "ckpt/ckpt.h"

#include "tensor/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

// `ck`'s bytes gzip'd into DIR/NAME (a gzip'd checkpoint loads the same).
static int save_gzip(const ts_ckpt *ck, const char *dir, const char *name) {
    unsigned char *bytes;
    size_t len;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ts_ckpt_save_mem(ck, &bytes, &len) != TS_OK) return 1;
    gzFile gz = gzopen(path, "wb9");
    int ok = gz && gzwrite(gz, bytes, (unsigned)len) == (int)len;
    if (gz && gzclose(gz) != Z_OK) ok = 0;
    free(bytes);
    if (!ok) fprintf(stderr, "ckpt_seeds: cannot write %s\n", path);
    return !ok;
}

static int save(const ts_ckpt *ck, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = ts_ckpt_save(ck, path);
    if (rc != TS_OK) fprintf(stderr, "ckpt_seeds: %s\n", ts_last_error());
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int rc = 0;

    ts_ckpt *empty = ts_ckpt_new();
    rc |= save(empty, dir, "empty.ckpt");
    ts_ckpt_free(empty);

    ts_ckpt *ck = ts_ckpt_new();
    const char *src[] = {"<pad>", "<unk>", "<s>", "</s>", "le", "chat", "été", "日本"};
    const char *tgt[] = {"<pad>", "<unk>", "<s>", "</s>", "the", "cat"};
    rc |= ts_ckpt_set(ck, "model", "seq2seq");
    rc |= ts_ckpt_set(ck, "attention", "luong-general");
    rc |= ts_ckpt_set_int(ck, "hidden", 4);
    rc |= ts_ckpt_set_int(ck, "step", 120);
    rc |= ts_ckpt_set_double(ck, "lr", 1e-3);
    rc |= ts_ckpt_add_vocab(ck, "source", src, 8);
    rc |= ts_ckpt_add_vocab(ck, "target", tgt, 6);
    double w[24];
    for (int i = 0; i < 24; i++) w[i] = sin(i) * 0.1;
    size_t s1[] = {4}, s2[] = {2, 3}, s3[] = {2, 3, 4};
    rc |= ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "encoder.gru.bias_ih", 1, s1, w);
    rc |= ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "encoder.gru.weight_ih", 2, s2, w);
    rc |= ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "attn.cube", 3, s3, w);
    rc |= ts_ckpt_add_tensor(ck, TS_CKPT_PARAMS, "scale", 0, NULL, w);
    rc |= ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "adam.m.encoder.gru.weight_ih", 2, s2, w);
    rc |= ts_ckpt_set_blob(ck, "rng", "0123456789abcdef", 16);
    rc |= save(ck, dir, "small.ckpt");
    rc |= save_gzip(ck, dir, "small.ckpt.gz");
    ts_ckpt_free(ck);

    // A float32 model's checkpoint: float32 weights and moments (4 bytes a
    // value, so tensors end between 8-byte words) beside float64 history.
    ts_ckpt *f32 = ts_ckpt_new();
    float v[24];
    for (int i = 0; i < 24; i++) v[i] = (float)cos(i) * 0.1f;
    double history[3] = {2.5, 2.25, 2.125};
    size_t s5[] = {5}, s23[] = {2, 3}, s_hist[] = {3};
    rc |= ts_ckpt_set(f32, "model.dtype", "float32");
    rc |= ts_ckpt_set_int(f32, "model.hidden", 3);
    rc |= ts_ckpt_add_vocab(f32, "source", src, 8);
    rc |= ts_ckpt_add_tensor_dtype(f32, TS_CKPT_PARAMS, "decoder.embedding.weight", TS_F32, 2, s23, v);
    rc |= ts_ckpt_add_tensor_dtype(f32, TS_CKPT_PARAMS, "decoder.bias", TS_F32, 1, s5, v);
    rc |= ts_ckpt_add_tensor_dtype(f32, TS_CKPT_PARAMS, "scale", TS_F32, 0, NULL, v);
    rc |= ts_ckpt_add_tensor_dtype(f32, TS_CKPT_OPTIM, "adam.m.decoder.bias", TS_F32, 1, s5, v);
    rc |= ts_ckpt_add_tensor_dtype(f32, TS_CKPT_OPTIM, "adam.v.decoder.bias", TS_F32, 1, s5, v + 5);
    rc |= ts_ckpt_add_tensor(f32, TS_CKPT_OPTIM, "history.train_loss", 1, s_hist, history);
    rc |= save(f32, dir, "float32.ckpt");
    rc |= save_gzip(f32, dir, "float32.ckpt.gz");
    ts_ckpt_free(f32);

    ts_ckpt *header = ts_ckpt_new();
    rc |= ts_ckpt_set(header, "a", "1");
    rc |= ts_ckpt_set(header, "b", "-2");
    rc |= ts_ckpt_set_double(header, "c", -0.0);
    rc |= save(header, dir, "header-only.ckpt");
    ts_ckpt_free(header);
    return rc ? 1 : 0;
}
