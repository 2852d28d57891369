// The recurrent encoder-decoder with attention of docs/models.md
// (architecture "gru", the first row of the model table; its cell, GRU or
// another row of models/cell.h, is cfg.cell): it composes the layers
// (models/encoder.h, attention.h, decoder.h) and implements the model
// interface (models/model.h) with them.
//
// Legend: B batch, S source length, T target length (with <eos>), E
// embedding, H hidden, M memory width (H, or 2H when bidirectional), V
// target vocabulary, P the cell's state parts.
#ifndef TS_MODELS_RNN_H
#define TS_MODELS_RNN_H

#include "models/decoder.h"

// The layers of a recurrent model (ts_seq2seq.layers when cfg.arch is TS_ARCH_GRU).
typedef struct {
    ts_encoder enc;
    ts_attention attn;
    ts_decoder dec;
} ts_rnn;

// What decoding carries from step to step (the state of models/model.h).
typedef struct {
    const ts_encoded *enc;  // the memory, its keys and mask: rows follow the sentences
    ts_decoder_state dec;   // the cell's state (P B, H) and, for Luong, h~ (B, H): rows follow the hypotheses
} ts_rnn_decoding;

// The model table's row for the GRU (models/architectures.c).
extern const ts_model_kind ts_rnn_kind;

#endif
