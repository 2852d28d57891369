// decode_cost: incremental decoding of a Transformer (ts_transformer_step,
// models/transformer.c) for counting instructions: how much of a step is
// the key/value cache copied one position longer (ts_concat under
// append_positions) against the step as a whole (docs/design.md, "The model
// interface").
//
//   cc -O2 -I. bench/decode_cost.c BUILD/libtinyseq_{models,autograd,tensor}.a -lgsl -lopenblas -lm -o decode_cost
//   OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind ./decode_cost [B T S D H L F V]
//   callgrind_annotate --inclusive=yes callgrind.out.* | grep -E 'ts_transformer_step|ts_concat'
//
// Random weights, B rows decoding T positions each (fixed tokens, so no
// sentence ends), a source of S tokens, as the search runs it: each step in
// one of two arenas that alternate.
#include "autograd/ops.h"
#include "models/transformer.h"
#include "tensor/tokens.h"

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int B = 1, T = 30, S = 10, D = 256, H = 4, L = 3, F = 1024, V = 6000;
    if (argc == 9)
        B = atoi(argv[1]), T = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]), H = atoi(argv[5]),
        L = atoi(argv[6]), F = atoi(argv[7]), V = atoi(argv[8]);
    else if (argc != 1) {
        fprintf(stderr, "usage: decode_cost [B T S D H L F V]\n");
        return 2;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_model_config cfg = {.arch = TS_ARCH_TRANSFORMER, .src_vocab = V, .tgt_vocab = V, .emb = D, .hidden = D,
                           .d_model = D, .heads = H, .layers = L, .ff = F};
    ts_seq2seq *model = ts_seq2seq_new(&cfg, rng);
    ts_arena *arena = ts_arena_new((size_t)256 << 20), *steps[2] = {ts_arena_new((size_t)64 << 20), ts_arena_new((size_t)64 << 20)};
    int *src = malloc((size_t)S * B * sizeof *src), *len = malloc((size_t)B * sizeof *len), *tokens = malloc((size_t)B * sizeof *tokens);
    if (!model || !arena || !steps[0] || !steps[1] || !src || !len || !tokens) return 1;
    for (int i = 0; i < S * B; i++) src[i] = 4 + i % (V - 4);
    for (int b = 0; b < B; b++) len[b] = S;
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_set_grad_enabled(&ctx, 0);
    ts_batch_view bv = {.B = B, .S = S, .src = src, .src_len = len};
    ts_transformer_source source;
    if (ts_transformer_prepare(model->layers, &ctx, &bv, &source)) return 1;
    ts_transformer_state *st = ts_transformer_start(&ctx, &source);
    double checksum = 0;
    for (int t = 0; t < T && st; t++) {
        for (int b = 0; b < B; b++) tokens[b] = t ? 4 + (t + b) % (V - 4) : TS_SOS;
        ts_arena_reset(steps[t % 2]);
        ctx.arena = steps[t % 2];
        ts_tensor *logits = ts_transformer_step(model->layers, &ctx, st, tokens, &st, NULL, NULL);
        if (!logits) return 1;
        checksum += logits->data[0];
    }
    printf("decoded %d x %d positions (d_model %d, %d heads, %d layers, ff %d, V %d): checksum %.6f\n", B, T, D, H, L,
           F, V, checksum);
    ts_arena_free(steps[0]);
    ts_arena_free(steps[1]);
    ts_arena_free(arena);
    ts_seq2seq_free(model);
    gsl_rng_free(rng);
    free(src), free(len), free(tokens);
    return 0;
}
