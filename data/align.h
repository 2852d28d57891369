// Word alignment links, shared by data/ (gold alignments of a corpus) and
// infer/ and viz/ (AER, attention argmax alignments, Pharaoh files). Kept
// apart from corpus.h so that code above data/ can include just this.
#ifndef TS_ALIGN_H
#define TS_ALIGN_H

#include <stdint.h>

// Marks a target token that has no source counterpart in a gold alignment.
#define TS_UNALIGNED (-1)

// One alignment link: source token `src` translates (part of) target token
// `tgt`. Indices are 0-based token positions; src == TS_UNALIGNED says
// explicitly that target token `tgt` has no source token.
typedef struct {
    int32_t src;  // i, source position
    int32_t tgt;  // j, target position
} ts_link;

#endif
