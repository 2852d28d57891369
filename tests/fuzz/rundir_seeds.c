// Writes fuzz_rundir's seed inputs into the directory named by argv[1]: the
// files a run directory holds as tinyseq train writes them (metrics.csv,
// steps.csv, heads.csv of a Transformer on the toy corpus, attention.jsonl),
// in the harness's layout (the checkpoint's epoch as a byte and step as u16,
// the three CSV files' lengths as u16, all little-endian, then the files).
#include <stdio.h>
#include <string.h>

static const char metrics[] =
    "epoch,step,train_loss,dev_loss,dev_ppl,dev_bleu,dev_chrf,dev_exact,lr,tokens_per_s,elapsed_s\n"
    "0.500,6,5.900000,5.800000,330.2999,0.000000,0.100000,0.000000,0.003,50000.0,0.20\n"
    "1,12,5.730000,5.660000,287.3000,0.000000,0.146000,0.000000,0.003,52000.0,0.41\n"
    "2,24,5.610000,5.570000,263.1000,0.000000,0.057000,0.000000,0.0015,51000.0,0.83\n";
static const char steps[] = "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n3,0.250,5.740000,0.003,50000.0,0.10\n"
                            "6,0.500,,0.003,,0.20\n12,1,5.700000,0.003,52000.0,0.40\n24,2,5.600000,0.0015,51000.0,0.80\n";
static const char heads[] = "epoch,step,layer,head,aer\n1,12,0,0,0.812000\n1,12,0,1,0.433000\n1,12,0,mean,0.500000\n"
                            "2,24,0,0,0.700000\n2,24,0,1,0.300000\n2,24,0,mean,0.400000\n";
static const char jsonl[] =
    "{\"epoch\":1,\"step\":12,\"beam\":5,\"bleu_by_length\":[[0,8]],\"sentences\":[]}\n"
    "{\"epoch\":2,\"step\":24,\"beam\":5,\"bleu_by_length\":[[0.1,8]],\"sentences\":[]}\n"
    "{\"epoch\":3,\"bleu_by_length\":[[0.2,8]],\"sentences\":[]}\n";

static void put_u16(FILE *f, size_t v) {
    fputc((int)(v & 0xff), f);
    fputc((int)((v >> 8) & 0xff), f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: rundir_seeds DIR\n");
        return 2;
    }
    static const struct { int epoch, step; } at[] = {{0, 0}, {1, 12}, {2, 18}, {9, 1000}};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/run-%zu.bin", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        fputc(at[k].epoch, f);
        put_u16(f, (size_t)at[k].step);
        put_u16(f, strlen(metrics));
        put_u16(f, strlen(steps));
        put_u16(f, strlen(heads));
        fputs(metrics, f);
        fputs(steps, f);
        fputs(heads, f);
        fputs(jsonl, f);
        if (fclose(f) != 0) return 1;
    }
    return 0;
}
