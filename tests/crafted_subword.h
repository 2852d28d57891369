// Hostile SentencePiece models for the tests (issue 38): a model tinyseq
// wrote (the TSSP blob of ts_subword_bytes) with one top-level protobuf field
// replaced or added, and the blob's length and CRC recomputed, so that only
// what the model says is wrong.
#ifndef TS_CRAFTED_SUBWORD_H
#define TS_CRAFTED_SUBWORD_H

#include <stddef.h>
#include <stdint.h>

// Blob (n bytes) with occurrence `occurrence` (from 0) of top-level field
// `field` replaced by a length-delimited field holding content[0..len), or
// appended when the model has fewer such fields. Malloc'd; *out_n its size.
uint8_t *crafted_subword(const uint8_t *blob, size_t n, uint32_t field, size_t occurrence, const void *content,
                         size_t len, size_t *out_n);

// One hostile edit and a word the refusal must hold.
typedef struct {
    const char *what;
    uint32_t field;
    size_t occurrence;
    const char *content;  // (len) bytes
    size_t len;
    const char *says;
} crafted_case;

extern const crafted_case crafted_subword_cases[];
extern const size_t crafted_subword_count;

// Case 0 of crafted_subword_cases: the one of issue 38, `nmt_nfkc` with a
// character map whose trie points outside it, which made SentencePiece
// segfault on the first encoding.
#define CRAFTED_NFKC 0

#endif
