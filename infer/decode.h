// Decoding a batch of sentences, the one way translate and eval both do it
// (infer/translate.h, infer/evaluate.h), so the two give the same outputs.
//
// B = sentences in the batch, S = the longest source (tokens).
#ifndef TS_INFER_DECODE_H
#define TS_INFER_DECODE_H

#include "models/search.h"
#include "models/seq2seq.h"

// Decodes every sentence of batch (its src fields; tgt unused) with beam
// search of width beam (1: greedy; 2..TS_BEAM_MAX; resolve 0 first with
// ts_beam_width), each sentence at most max_len tokens when max_len > 0,
// else ts_output_limit of its own source length. Greedy decodes to the
// batch's limit and cuts each sentence to its own after (a cut sentence has
// ended 0), so each gets what decoding it alone gives; beam search keeps each
// to its own limit as it searches. out[B] as ts_seq2seq_greedy and
// ts_seq2seq_beam_batch give them: attention rows of S columns (greedy: the
// batch's S, padding after src_len[b]; beam: src_len[b]). ctx's arena holds
// the encoding and is reset after. TS_OK, or the failure (out[] then holds
// nothing to free): TS_ERR_ARG (beam out of range), TS_ERR_NOMEM,
// TS_ERR_ARENA, the model's.
int ts_decode_batch(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out);

#endif
