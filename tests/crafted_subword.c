// Hostile SentencePiece models (crafted_subword.h).
#include "crafted_subword.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// Field numbers and wire types of sentencepiece_model.proto, as bytes:
// key = number << 3 | wire type, as a varint.
#define S(text) text, sizeof text - 1
#define NFKC "\x0a\x08nmt_nfkc"
// tinyseq's trainer_spec (what data/subword.cc writes for bpe) with `extra`
// fields and byte_fallback `fallback`.
#define TRAINER(model_type, fallback, extra)                                                    \
    S("\x18" model_type "\x20\xac\x02\x98\x02" fallback "\xc0\x02\x03\xc8\x02\x01\xd0\x02\x02" \
      "\xd8\x02\x00\xea\x02\x05<unk>\xf2\x02\x05<sos>\xfa\x02\x05<eos>\x82\x03\x05<pad>" extra)

const crafted_case crafted_subword_cases[] = {
    // A 4-byte trie of one unit whose offset points gigabytes away: a SIGSEGV
    // in Normalizer::NormalizePrefix on the first encoding before issue 38.
    {"nmt_nfkc with a 4-byte trie pointing outside its map", 3, 0,
     S(NFKC "\x12\x08\x04\x00\x00\x00\xff\xff\xff\xff"), "normalizer_spec"},
    {"nmt_nfkc with an empty character map", 3, 0, S(NFKC "\x12\x00"), "normalizer_spec.name"},
    {"nmt_nfkc with an 8-byte map and no strings", 3, 0, S(NFKC "\x12\x08\x04\x00\x00\x00\x00\x00\x00\x00"),
     "normalizer_spec"},
    {"nmt_nfkc with a 4-byte map", 3, 0, S(NFKC "\x12\x04\x00\x00\x00\x00"), "normalizer_spec"},
    {"identity with a 4-byte character map", 3, 0, S("\x0a\x08identity\x12\x04\x00\x00\x00\x00"),
     "precompiled_charsmap"},
    {"identity with normalization rules", 3, 0, S("\x0a\x08identity\x32\x04" "a\tb\n"), "normalization_rule_tsv"},
    {"a denormalizer with a 4-byte map", 5, 0, S(NFKC "\x12\x04\x00\x00\x00\x00"), "denormalizer_spec"},
    {"self-test data", 4, 0, S("\x0a\x05\x0a\x01" "a\x12\x00"), "self_test_data"},
    {"an extension field", 200, 0, S("x"), "field 200"},
    {"a byte piece made NORMAL", 1, 4, S("\x0a\x06<0x00>\x18\x01"), "piece 4"},
    {"a special made NORMAL", 1, 2, S("\x0a\x05<eos>\x18\x01"), "piece 2"},
    {"a learned piece made USER_DEFINED", 1, 300, S("\x0a\x03zzz\x18\x04"), "piece 300"},
    {"a learned piece with a NaN score", 1, 261, S("\x0a\x03zzz\x15\x00\x00\xc0\x7f"), "piece 261"},
    {"a learned piece holding a control character", 1, 262, S("\x0a\x03z\x01z"), "piece 262"},
    {"a learned piece with an unknown field", 1, 263, S("\x0a\x03zzz\x20\x01"), "piece 263"},
    {"a piece given twice", 1, 264, S("\x0a\x05<sos>"), "twice"},
    {"byte fallback off", 2, 0, TRAINER("\x02", "\x00", ""), "byte_fallback"},
    {"a word model", 2, 0, TRAINER("\x03", "\x01", ""), "model_type"},
    {"an unk surface", 2, 0, TRAINER("\x02", "\x01", "\xe2\x02\x01?"), "unk_surface"},
    {"whitespace as a suffix", 2, 0, TRAINER("\x02", "\x01", "\xc0\x01\x01"), "treat_whitespace_as_suffix"},
    {"a normalizer field cut short", 3, 0, S("\x0a\x20identity"), "not protobuf"},
    {"a second normalizer", 3, 1, S("\x0a\x08identity"), "twice"},
};
const size_t crafted_subword_count = sizeof crafted_subword_cases / sizeof *crafted_subword_cases;

static size_t put_varint(uint8_t *out, uint64_t v) {
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static uint64_t get_varint(const uint8_t **p) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

static void put_le(uint8_t *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) out[i] = (uint8_t)(v >> (8 * i));
}

uint8_t *crafted_subword(const uint8_t *blob, size_t n, uint32_t field, size_t occurrence, const void *content,
                         size_t len, size_t *out_n) {
    enum { HEADER = 20 };  // "TSSP", version, payload length u64, CRC-32 (data/subword.h)
    uint8_t *out = malloc(n + len + 32), *at = out + HEADER;
    memcpy(out, blob, 8);
    size_t seen = 0;
    int done = 0;
    // The model's own fields, a trusted model: no bounds checks needed.
    for (const uint8_t *p = blob + HEADER, *end = blob + n; p < end;) {
        const uint8_t *start = p;
        uint64_t key = get_varint(&p);
        if ((key & 7) == 0) get_varint(&p);
        else if ((key & 7) == 5) p += 4;
        else if ((key & 7) == 1) p += 8;
        else p += get_varint(&p);
        if (key >> 3 == field && seen++ == occurrence) {
            at += put_varint(at, (uint64_t)field << 3 | 2);
            at += put_varint(at, len);
            memcpy(at, content, len);
            at += len;
            done = 1;
            continue;
        }
        memcpy(at, start, (size_t)(p - start));
        at += p - start;
    }
    if (!done) {
        at += put_varint(at, (uint64_t)field << 3 | 2);
        at += put_varint(at, len);
        memcpy(at, content, len);
        at += len;
    }
    size_t payload = (size_t)(at - out) - HEADER;
    put_le(out + 8, payload, 8);
    put_le(out + 16, crc32(crc32(0, NULL, 0), out + HEADER, (uInt)payload), 4);
    *out_n = HEADER + payload;
    return out;
}
