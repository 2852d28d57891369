// A trained model as one unit: the seq2seq model, its two vocabularies and
// the options that shape its input, stored in and rebuilt from a checkpoint
// (ckpt/ckpt.h, docs/checkpoint.md). translate, attend and eval need
// nothing but the checkpoint file.
#ifndef TS_INFER_LOAD_H
#define TS_INFER_LOAD_H

#include "data/normalize.h"
#include "data/subword.h"
#include "data/vocab.h"
#include "models/search.h"
#include "models/seq2seq.h"
#include "ckpt/ckpt.h"

// The longest sentence translate, attend and eval accept, in tokens after
// normalisation: it bounds the time and memory one input can ask for.
#define TS_MAX_SENTENCE_TOKENS 1000

typedef struct {
    ts_seq2seq *model;     // owned
    ts_vocab *src_vocab;   // owned
    ts_vocab *tgt_vocab;   // owned
    // Subword models (data/subword.h), owned; NULL for a word-level model.
    // Their piece lists are the vocabularies above, id for id.
    ts_subword *src_sw, *tgt_sw;
    int max_len;           // the longest sentence (tokens) it was trained on
    ts_normalisation normalisation;  // how it reads text (data/normalize.h): checkpoint key data.normalisation
    // The cross-attention head the run trained towards gold links (train
    // --guided-alignment: layer guided_layer, head guided_head; a GRU's one
    // is 0, 0), when `guided`; read from the header, for eval's tables.
    int guided, guided_layer, guided_head;
    ts_length_penalty length_penalty;  // beam search's ranking (zero: length normalisation)
    // ts_translator_map: the loaded checkpoint whose read-only mapping the
    // parameters point into (borrowed); freed after the model. NULL otherwise.
    ts_ckpt *weights;
} ts_translator;

// Adds t's model configuration (header keys model.*, data.max_len,
// data.normalisation: the name of t->normalisation), both
// vocabularies ("source", "target"), the subword models when it has them
// (blobs TS_CKPT_SUBWORD_SOURCE and _TARGET, ts_subword_bytes) and every
// parameter to ck. The parameters are views (ts_ckpt_add_tensor_view): save
// or free ck before changing or freeing the model. Errors: those of the
// checkpoint setters (TS_ERR_ARG, TS_ERR_NOMEM).
int ts_model_to_ckpt(ts_ckpt *ck, const ts_translator *t);

// The blobs of a subword model's checkpoint.
#define TS_CKPT_SUBWORD_SOURCE "subword.source"
#define TS_CKPT_SUBWORD_TARGET "subword.target"

// Rebuilds everything from a loaded checkpoint: the configuration from the
// header, the vocabularies, and each parameter, checked to exist with the
// shape the configuration implies; a parameter the configuration does not
// have is an error too. The shapes are checked before the model is
// allocated, so memory follows the file, not the header's claims. On success
// fills *out (free with ts_translator_free). Errors: TS_ERR_FORMAT /
// TS_ERR_SHAPE naming the key or tensor and, for a container loaded from a
// file, that file once ("checkpoint PATH: ..."); TS_ERR_NOMEM. *out is zeroed
// on failure. A checkpoint with subword blobs loads its models; a blob that
// is truncated or corrupt, or whose pieces are not the vocabulary's, is
// TS_ERR_FORMAT, and a build without SentencePiece refuses it (TS_ERR_ARG),
// each naming the file and the blob. data.normalisation must name a row of
// ts_normalisations (absent: nfc-lowercase-punct-split); one that keeps the
// text needs the subword models (TS_ERR_FORMAT otherwise).
int ts_translator_from_ckpt(const ts_ckpt *ck, ts_translator *out);

// ts_ckpt_load + ts_translator_from_ckpt: the parameters are the model's
// own (writable), for whoever changes them (average, import, training).
int ts_translator_load(const char *path, ts_translator *out);

// For inference (translate, attend, eval): as ts_translator_load, but the
// parameters of a version-2 file point into its read-only mapping instead of
// being copied (borrowed tensors: a write faults), so loading costs the
// CRC pass over the file and no copy. The mapping lives in out->weights
// until ts_translator_free. A version-1 (gzip) file loads as by
// ts_translator_load. Errors as ts_translator_load's.
int ts_translator_map(const char *path, ts_translator *out);

void ts_translator_free(ts_translator *t);

#endif
