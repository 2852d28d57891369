// Writes fuzz_options's seed inputs into the directory named by argv[1]:
// training options as a caller names them (Python's spelling, the flags',
// config.txt's keys), with and without each preset.
#include <stdio.h>

static const char *const seeds[] = {
    "",
    "preset=transformer-small\ncorpus=pairs.tsv\n",
    "preset=gru-small\ncorpus=pairs.tsv\nepochs=3\nlr=0.001\n",
    "preset=transformer-small\nwarmup_steps=0\nsubword=0\nheads=8\n",
    "arch=transformer\nd_model=64\nheads=4\nlayers=3\nff=256\ndropout=0.1\nlr_schedule=inverse-sqrt\n",
    "attn=general\ndecoder=bahdanau\nbidirectional=1\ndtype=float64\nemb=32\nhidden=48\n",
    "guided-alignment=toy\nguided-weight=0.5\nguided_layer=0\nguided_head=0\narch=transformer\n",
    "corpus=pairs.tsv\ndev=dev.tsv\ntest=test.tsv\nmax_len=12\nmin_count=2\nskip_bad=1\nsubword=800\n"
    "subword_kind=unigram\nsubword_joint=1\n",
    "dev=40\ntoy_pairs=500\nbatch=8\naccumulate=2\nsteps=100\nlog_every=5\neval_every=20\nbeam=0\nkeep=2\n"
    "best=loss\noptim=sgd\nclip=0\ntf=0.5\nlabel_smoothing=0\npatience=2\nseed=7\nthreads=2\n",
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: options_seeds DIR\n");
        return 2;
    }
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/options-%zu.txt", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f || fputs(seeds[k], f) < 0 || fclose(f) != 0) return 1;
    }
    return 0;
}
