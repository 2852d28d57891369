// libFuzzer harness for a subword model inside a checkpoint (issue 38: a
// crafted SentencePiece model, every CRC right, crashed SentencePiece).
//
// An input is a SentencePiece model's bytes (a serialized ModelProto; the
// seeds are models tinyseq learned, subword_seeds). The harness gives it
// tinyseq's 20-byte header with the right length and CRC, so every input
// reaches the model check and SentencePiece behind it, stores it as the blob
// subword.source of a checkpoint, saves and loads that checkpoint in memory
// and loads the blob as every command does (ts_subword_load). Beyond "no
// crash, no leak, no sanitizer report":
//   - a failure is TS_ERR_FORMAT or TS_ERR_NOMEM, with a message;
//   - a model that loads passed the check (data/subword_proto.h), has the
//     specials and byte pieces where tinyseq puts them, and encodes and
//     decodes text (unseen characters, byte fallback, an empty line) cleanly.
#include "ckpt/ckpt.h"
#include "data/subword.h"
#include "data/subword_proto.h"
#include "tensor/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_le(uint8_t *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) out[i] = (uint8_t)(v >> (8 * i));
}

// Encodes text, then decodes its pieces: both must succeed on a loaded model.
static void round_trip(const ts_subword *sw, const char *text) {
    char *pieces, *decoded;
    int32_t *ids;
    size_t n;
    if (ts_subword_encode(sw, text, strlen(text), &pieces, &ids, &n) != TS_OK) __builtin_trap();
    const char **split = malloc((n + 1) * sizeof *split);
    size_t k = 0;
    for (char *save = NULL, *p = strtok_r(pieces, " ", &save); p && k < n; p = strtok_r(NULL, " ", &save)) split[k++] = p;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= ts_subword_size(sw)) __builtin_trap();
    if (ts_subword_decode(sw, split, k, &decoded) != TS_OK) __builtin_trap();
    free(decoded);
    free(split);
    free(pieces);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20)) return 0;
    uint8_t *blob = malloc(size + 20);
    memcpy(blob, "TSSP", 4);
    put_le(blob + 4, 1, 4);
    put_le(blob + 8, size, 8);
    put_le(blob + 16, crc32(crc32(0, NULL, 0), data, (uInt)size), 4);
    if (size) memcpy(blob + 20, data, size);
    ts_ckpt *ck = ts_ckpt_new(), *back = NULL;
    unsigned char *file;
    size_t file_len;
    if (!ck || ts_ckpt_set_blob(ck, "subword.source", blob, size + 20) != TS_OK ||
        ts_ckpt_save_mem(ck, &file, &file_len) != TS_OK || ts_ckpt_load_mem(file, file_len, NULL, &back) != TS_OK)
        __builtin_trap();
    const void *bytes;
    size_t n;
    if (ts_ckpt_get_blob(back, "subword.source", &bytes, &n) != TS_OK || n != size + 20) __builtin_trap();
    ts_subword *sw = NULL;
    int rc = ts_subword_load(bytes, n, &sw);
    if (rc != TS_OK) {
        if ((rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || ts_last_error()[0] == '\0' || sw) __builtin_trap();
    } else {
        if (ts_subword_check_proto(data, size) != TS_OK) __builtin_trap();
        if (strcmp(ts_subword_piece(sw, 3), "<unk>") || strcmp(ts_subword_piece(sw, 4), "<0x00>")) __builtin_trap();
        for (size_t id = 0; id < ts_subword_size(sw); id++)
            if (!ts_subword_piece(sw, (int32_t)id)) __builtin_trap();
        round_trip(sw, "the cat sleeps .");
        round_trip(sw, "Le \xe2\x98\x83 \xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1 zzqx !");
        round_trip(sw, "");
        ts_subword_free(sw);
    }
    ts_ckpt_free(back);
    ts_ckpt_free(ck);
    free(file);
    free(blob);
    return 0;
}
