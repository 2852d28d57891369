// The model's configuration: the attention and decoder types, their names,
// ONE limit per field (checked by ts_model_config_check and nowhere else),
// and the parameter specs every layer declares its weights with.
#ifndef TS_MODELS_CONFIG_H
#define TS_MODELS_CONFIG_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"
#include "autograd/params.h"
#include "tensor/names.h"

// The bounds of ts_model_config's sizes; the CLI and the checkpoint loader
// read them from here.
enum {
    TS_MODEL_MIN_VOCAB = 5,  // the four special tokens and one word
    TS_MODEL_MAX_VOCAB = 10000000,
    TS_MODEL_MAX_EMB = 8192,
    TS_MODEL_MAX_HIDDEN = 8192,
    TS_MODEL_MAX_LAYERS = 16,  // Transformer layers per stack
    TS_MODEL_MAX_FF = 65536,   // Transformer feed-forward width
};

// The attention types; their names, parameters and scores are the table in
// models/attention.c (one row per type, in this order).
typedef enum {
    TS_ATTN_NONE,        // the plain encoder-decoder baseline
    TS_ATTN_DOT,         // q . k
    TS_ATTN_SCALED_DOT,  // q . k / sqrt(H)
    TS_ATTN_GENERAL,     // q . W m
    TS_ATTN_CONCAT,      // v . tanh(W [q; m] + b)
    TS_ATTN_BAHDANAU,    // v . tanh(W_q q + W_k m + b): the additive score, named "bahdanau"
    TS_ATTN_COUNT
} ts_attn_type;

extern const ts_names ts_attn_names;  // "attention": the table's names, and "additive" for bahdanau

// How the decoder uses attention: Bahdanau attends with s_{t-1} and feeds the
// context into the GRU; Luong attends with s_t and combines (models/decoder.c).
typedef enum { TS_DECODER_BAHDANAU, TS_DECODER_LUONG, TS_DECODER_COUNT } ts_decoder_type;

const char *ts_decoder_name(int type);  // "bahdanau", "luong"; "?" out of range
extern const ts_names ts_decoder_names;
// TS_OK and *type, or TS_ERR_ARG naming the accepted names.
int ts_decoder_parse(const char *name, ts_decoder_type *type);

// The recurrent cells of the GRU architecture's encoder and decoder; their
// names, gates, state and step are the table in models/cells.c (one row per
// cell, in this order).
typedef enum {
    TS_CELL_GRU,  // torch.nn.GRU (models/gru.h)
    TS_CELL_LSTM, // torch.nn.LSTM (models/lstm.h)
    TS_CELL_COUNT
} ts_cell_type;

extern const ts_names ts_cell_names;  // "cell": the table's names (models/cell.c, from models/cells.c)

// The architectures; their names and functions are the table in
// models/architectures.c (one row per architecture, in this order).
typedef enum {
    TS_ARCH_GRU,          // the GRU encoder-decoder with attention (models/rnn.h)
    TS_ARCH_TRANSFORMER,  // torch.nn.Transformer's encoder-decoder (models/transformer.h)
    TS_ARCH_COUNT         // the table's rows; ts_model_register adds more after them
} ts_model_arch;

enum { TS_ARCH_MAX = 8 };  // rows at most, the table's and those registered

// "architecture": the rows' names (models/architectures.c); its count is
// the rows there are, TS_ARCH_COUNT and those registered since.
extern ts_names ts_arch_names;

typedef struct {
    ts_model_arch arch;        // the zero value is the GRU
    int src_vocab, tgt_vocab;  // including the four special tokens
    int emb, hidden;
    ts_attn_type attn;
    ts_decoder_type decoder;
    int bidirectional;
    ts_cell_type cell;  // the encoder's and decoder's recurrent cell (the zero value is the GRU)
    // The Transformer's sizes (0 for the GRU, which uses emb and hidden above).
    int d_model, heads, layers, ff;  // width, heads (dividing it), layers per stack, feed-forward width
    int dtype;  // ts_dtype of the parameters and of every tensor of a step: TS_F64 (0) or TS_F32
} ts_model_config;

// TS_OK, or TS_ERR_ARG naming the field that is out of range (each field
// by its row of ts_model_fields), or what the architecture's row checks
// (models/model.c).
int ts_model_config_check(const ts_model_config *cfg);
// The same, what the architecture's row checks named by train's flags when
// `flags` is 1 ("--heads 3 does not divide the model width 256 ...").
int ts_model_config_check_as(const ts_model_config *cfg, int flags);

// Its architecture's sizes left at 0 (not given) set to their defaults (the
// row's default_sizes, what train --arch transformer gives: a Transformer's
// are written once, in models/transformer.c).
void ts_model_config_default_sizes(ts_model_config *cfg);

// M, the encoder memory's width: H, or 2H when bidirectional.
int ts_model_memory_width(const ts_model_config *cfg);

// 1 when ids[0..n) are all in [0, vocab); else 0 with ctx failed
// (TS_ERR_ARG) naming `what` and the first bad index.
int ts_model_check_ids(ts_ctx *ctx, const char *what, const int *ids, size_t n, int vocab);

// The name and shape of one parameter, as ts_seq2seq_new registers it.
typedef struct {
    char name[TS_NAME_SIZE];
    int ndim;      // 1 or 2
    int shape[2];  // shape[1] is 0 when ndim is 1
} ts_param_shape;

// One parameter as a layer declares it: the model registers, initialises and
// lists (ts_seq2seq_layout) parameters from these, so all three agree.
typedef struct {
    ts_param_shape shape;
    double bound;      // initial values U(-bound, bound), or one of the TS_INIT_ kinds below
    ts_tensor **slot;  // where the registered tensor is stored
} ts_param_spec;

// A spec's bound for an embedding: N(0, 1), its <pad> row zero (as torch's
// padding_idx: with no gradient reaching it, it stays zero).
#define TS_INIT_EMBEDDING (-1.0)
#define TS_INIT_ONES (-2.0)  // every value 1 (LayerNorm's gamma)
// An embedding that is multiplied by sqrt(D) before positions are added (the
// Transformer's): N(0, 1/sqrt(D)), <pad> row zero, as Vaswani et al. and
// fairseq initialise it, so the scaled embedding is about N(0, 1), the size
// of the sinusoidal positions. torch's N(0, 1) grows to N(0, D) there and
// drowns the positions (docs/models.md measures it).
#define TS_INIT_EMBEDDING_SCALED (-3.0)

// Fills *spec (name from the printf format) and returns 1, the number of
// specs written, so that layers count as they declare.
int ts_param_spec_set(ts_param_spec *spec, ts_tensor **slot, double bound, int ndim, int d0, int d1,
                      const char *fmt, ...) __attribute__((format(printf, 7, 8)));

// Registers specs[0..n) on params in order, each initialised from rng as
// its bound says right after it is registered, and stores each tensor in
// its slot. With an rng the values are drawn in float64; without one (a
// model whose values come next, from a file) they are made in dtype and
// left zero, but for TS_INIT_ONES. TS_OK or TS_ERR_NOMEM.
int ts_param_specs_create(ts_params *params, gsl_rng *rng, int dtype, const ts_param_spec *specs, int n);

#endif
