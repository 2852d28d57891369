// mha_cost: one forward and backward of multi-head attention, fused node
// (ts_mha) or composed from primitive ops (ts_mha_composed), for counting
// instructions (docs/design.md, "Multi-head attention: fused"):
//
//   cc -O2 -I. bench/mha_cost.c BUILD/libtinyseq_{autograd,tensor}.a -lgsl -lopenblas -lm -o mha_cost
//   OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind ./mha_cost fused|composed|none [B T S D H]
//
// "none" runs the setup and a loss on q alone: subtract it from the others.
#include "autograd/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2 && argc != 7) {
        fprintf(stderr, "usage: mha_cost fused|composed|none [B T S D H]\n");
        return 2;
    }
    int composed = !strcmp(argv[1], "composed");
    int B = 32, T = 10, S = 10, D = 256, H = 4;
    if (argc == 7) B = atoi(argv[2]), T = atoi(argv[3]), S = atoi(argv[4]), D = atoi(argv[5]), H = atoi(argv[6]);
    ts_tensor *q = ts_tensor_new_persistent(3, (int[]){B, T, D}, "q");
    ts_tensor *k = ts_tensor_new_persistent(3, (int[]){B, S, D}, "k");
    ts_tensor *v = ts_tensor_new_persistent(3, (int[]){B, S, D}, "v");
    double *mask = malloc((size_t)B * S * sizeof *mask);
    if (!q || !k || !v || !mask) return 1;
    unsigned x = 1;
    ts_tensor *in[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < in[i]->size; j++) in[i]->data[j] = (double)((x = x * 1103515245u + 12345u) >> 16) / 65536.0 - 0.5;
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) mask[b * S + s] = s < S - b % 3;  // some padding
    ts_arena *arena = ts_arena_new((size_t)64 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_tensor *y = !strcmp(argv[1], "none") ? q : (composed ? ts_mha_composed : ts_mha)(&ctx, q, k, v, H, mask, 0);
    int rc = ts_backward(&ctx, ts_sum(&ctx, ts_mul(&ctx, y, y)));
    if (rc) {
        fprintf(stderr, "mha_cost: %s\n", ts_last_error());
        return 1;
    }
    printf("%s B=%d T=%d S=%d D=%d H=%d arena peak %zu bytes, dq[0] %.17g\n", argv[1], B, T, S, D, H,
           ts_arena_peak(arena), q->grad[0]);
    ts_arena_free(arena);
    return 0;
}
