// Writes fuzz_report's seed inputs into the directory named by argv[1]:
// metrics.csv, steps.csv, heads.csv and attention.jsonl as tinyseq train
// writes them (a GRU run and a Transformer line with heads), in the
// harness's layout (the lengths of the first three files as u16
// little-endian, then the files).
#include <stdio.h>
#include <string.h>

static const char metrics[] =
    "epoch,step,train_loss,dev_loss,dev_ppl,dev_bleu,dev_chrf,dev_exact,lr,tokens_per_s,elapsed_s\n"
    "1,12,5.73,5.66,287.3,0,0.146,0,0.003,52000,0.41\n2,24,5.61,5.57,263.1,0,0.057,0,0.003,51000,0.83\n";
static const char heads[] = "epoch,step,layer,head,aer\n1,12,0,0,0.677299\n1,12,0,1,0.785004\n1,12,0,mean,0.690555\n"
                            "1.500,18,1,0,\n2,24,1,mean,nan\n";
static const char steps[] = "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n3,0.25,5.74,0.003,50000,0.1\n6,0.5,,0.003,,0.2\n";
static const char *const jsonl[] = {
    "{\"epoch\":1,\"step\":12,\"bleu_by_length\":[[0,8],[0,17],[0,4],[0,11]],\"sentences\":[{\"source\":[\"he\",\"does\","
    "\"not\",\"hate\",\".\"],\"reference\":[\"il\",\"ne\",\"d\\u00e9teste\",\"pas\",\".\"],\"greedy\":{\"output\":[\"chaises\"],"
    "\"ended\":1,\"weights\":[[0.2,0.2,0.2,0.2,0.2],[0.1,0.3,0.2,0.2,0.2]]},\"beam\":{\"output\":[\"l'enfant\",\"va\"],"
    "\"ended\":0,\"weights\":[[0.2,0.2,0.2,0.2,0.2],[0.2,0.2,0.2,0.2,0.2],[0.5,0.1,0.1,0.2,0.1]]}}]}\n",
    "{\"epoch\":2,\"step\":24,\"bleu_by_length\":[[0.1,8]],\"sentences\":[{\"source\":[\"a\"],\"reference\":[\"b\"],"
    "\"greedy\":{\"output\":[],\"ended\":1,\"weights\":[]},\"beam\":{\"output\":[],\"ended\":1,\"weights\":[]},"
    "\"heads\":{\"layers\":1,\"heads\":2,\"cross\":[[[[1]],[[1]],[[1]]]],\"enc\":[[[[1]],[[1]],[[1]]]],"
    "\"dec\":[[[[1]],[[1]],[[1]]]]}}]}\n",
    "{\"epoch\":3,\"x\":\"\\u003c/script\\u003e \\ud83d\\ude00\",\"n\":-1.5e-3,\"t\":true,\"f\":false,\"z\":null}\n",
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: report_seeds DIR\n");
        return 2;
    }
    for (size_t k = 0; k < sizeof jsonl / sizeof *jsonl; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/run-%zu.bin", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        size_t lengths[3] = {strlen(metrics), strlen(steps), k ? strlen(heads) : 0};  // the first: a GRU run's, none
        for (int i = 0; i < 3; i++) {
            fputc((int)(lengths[i] & 0xff), f);
            fputc((int)(lengths[i] >> 8), f);
        }
        fputs(metrics, f);
        fputs(steps, f);
        if (k) fputs(heads, f);
        fputs(jsonl[k], f);
        if (fclose(f) != 0) return 1;
    }
    return 0;
}
