// What tinyseq accepts of a SentencePiece model (a serialized ModelProto)
// before SentencePiece sees it. SentencePiece trusts much of a model: a
// normalizer's character map it does not check can crash it (issue 38: a
// 4-byte map in `nmt_nfkc` segfaults in Normalizer::NormalizePrefix). tinyseq
// writes one shape of model (data/subword.cc), so this walks the protobuf
// wire format itself and accepts only that shape:
//
//   pieces             <pad> <sos> <eos> (CONTROL), <unk> (UNKNOWN), the 256
//                      byte pieces <0x00>..<0xFF> (BYTE), then NORMAL pieces:
//                      non-empty UTF-8 without controls or spaces, each once,
//                      finite scores; TS_SUBWORD_MIN_VOCAB..TS_SUBWORD_MAX_VOCAB
//   trainer_spec       unigram or bpe, byte fallback on, the special ids and
//                      pieces above, whitespace a prefix; fields that only
//                      training reads may hold any value of their type
//   normalizer_spec    "identity": no character map, no rules
//   nothing else       no denormalizer, no self-test data, no extensions
//
// Every field is read with its wire type and length checked against what is
// left; an unknown field, a repeated singular field or a group is refused.
// Needs no SentencePiece (tests and fuzzers run it in any build).
#ifndef TS_SUBWORD_PROTO_H
#define TS_SUBWORD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/tokens.h"

// Smallest vocabulary: the 4 specials, the 256 byte pieces and a few dozen
// characters. A model needs at least one piece per character of its text.
#define TS_SUBWORD_MIN_VOCAB 300
#define TS_SUBWORD_MAX_VOCAB 1000000

#ifdef __cplusplus
extern "C" {  // data/subword.cc, through data/subword.h
#endif

// The special pieces at the ids of tensor/tokens.h, as the model spells them.
extern const char *const ts_subword_specials[TS_N_SPECIALS];

// TS_OK when bytes[0..n) is a ModelProto of the shape above, else
// TS_ERR_FORMAT with a message naming the field ("normalizer_spec.
// precompiled_charsmap: ...", "piece 261: ...").
int ts_subword_check_proto(const uint8_t *bytes, size_t n);

#ifdef __cplusplus
}
#endif

#endif
