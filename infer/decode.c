// Decoding a batch of sentences (see decode.h). B = sentences, S = the
// longest source (tokens).
#include "infer/decode.h"

#include <stdlib.h>

int ts_decode_batch(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    int B = batch->B;
    int *limit = malloc((size_t)(B > 0 ? B : 1) * sizeof *limit);  // (B) each sentence's output limit
    if (!limit) return ts_fail(TS_ERR_NOMEM, "cannot allocate the limits of %d sentences", B);
    for (int b = 0; b < B; b++) limit[b] = max_len > 0 ? max_len : ts_output_limit(batch->src_len[b]);
    int rc = beam == 1 ? ts_seq2seq_greedy(m, ctx, batch, max_len > 0 ? max_len : ts_output_limit(batch->S), out)
                       : ts_seq2seq_beam_batch(m, ctx, batch, beam, limit, lp, out);
    ts_ctx_reset(ctx);
    for (int b = 0; !rc && b < B; b++)
        if (out[b].len > limit[b]) out[b].len = limit[b], out[b].ended = 0;
    free(limit);
    return rc;
}
