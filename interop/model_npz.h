// A trained model as NumPy arrays: the parameters under their PyTorch names
// (the registry names of docs/models.md), float64 in C order, plus the
// vocabularies and the configuration. The layout is in docs/interop.md.
//
//   <parameter name>        '<f8', the parameter's shape ("decoder.out.weight": (Vt, H))
//   tinyseq.vocab.source    '<U<n>', (Vs,): the source words in id order
//   tinyseq.vocab.target    '<U<n>', (Vt,)
//   tinyseq.config          '<U<n>', (): the checkpoint header lines of the
//                           model, "key=value\n" each (model.*, data.*)
//   tinyseq.subword.source  '|u1', (n,): a subword model's SentencePiece models,
//   tinyseq.subword.target  the checkpoint's blobs byte for byte (ts_subword_bytes:
//                           a 20-byte header, then a SentencePiece model file)
#ifndef TS_MODEL_NPZ_H
#define TS_MODEL_NPZ_H

#include "interop/npz.h"
#include "infer/load.h"

#define TS_NPZ_CONFIG "tinyseq.config"
#define TS_NPZ_VOCAB_SOURCE "tinyseq.vocab.source"
#define TS_NPZ_VOCAB_TARGET "tinyseq.vocab.target"
#define TS_NPZ_SUBWORD_SOURCE "tinyseq.subword.source"
#define TS_NPZ_SUBWORD_TARGET "tinyseq.subword.target"

// A new container holding every parameter of t's model, its vocabularies,
// its configuration and its subword models if any (free with ts_npz_free). Errors: those of the container
// setters (TS_ERR_ARG, TS_ERR_NOMEM) and of ts_model_to_ckpt.
int ts_model_to_npz(const ts_translator *t, ts_npz **out);

// Copies the weights in z into t's model. Every parameter of the model must
// be there, '<f8' or '<f4' (converted to the model's dtype: exactly, or
// rounded to float32) with exactly its shape and finite values; an entry that is
// neither a parameter nor one of the tinyseq.* entries is an error (a model
// of another configuration). The tinyseq.* entries are optional (an .npz
// saved from PyTorch has none); when present the vocabularies must equal t's
// word for word and every model.* line of the configuration must match t's.
// The subword models, both or neither, must load and spell t's vocabularies
// piece for piece: they then replace t's (an export's are what its
// checkpoint held; without them t keeps its own). Everything is checked
// before anything is copied: on failure t is unchanged. Errors: TS_ERR_FORMAT / TS_ERR_SHAPE with a message naming
// `what` (the file) and the entry.
int ts_model_from_npz(ts_translator *t, const ts_npz *z, const char *what);

// How many of t's parameters z holds in the other dtype ('<f8' for a float32
// model, '<f4' for a float64 one): what ts_model_from_npz converts.
int ts_model_npz_converted(const ts_translator *t, const ts_npz *z);

#endif
