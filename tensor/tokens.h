// The special token ids every vocabulary starts with, shared by data/ (which
// builds vocabularies and batches) and models/ (which decodes).
#ifndef TS_TOKENS_H
#define TS_TOKENS_H

enum { TS_PAD = 0, TS_SOS = 1, TS_EOS = 2, TS_UNK = 3, TS_N_SPECIALS = 4 };

#endif
