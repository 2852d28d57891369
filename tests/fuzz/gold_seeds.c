// Writes fuzz_gold's seed inputs into the directory named by argv[1]: a
// corpus file and its Pharaoh gold links as train --guided-alignment reads
// them (one gold line per pair, blank for a pair without links), in the
// harness's layout (--max-len as a byte, the corpus's length as u16
// little-endian, the corpus, the gold file).
#include <stdio.h>
#include <string.h>

static const struct {
    unsigned char max_len;
    const char *corpus, *gold;
} seeds[] = {
    {0, "the cat sleeps .\tle chat dort .\nthe dog eats .\tle chien mange .\nhe is tall .\til est grand .\n",
     "0-0 1-1 2-2 3-3\n0-0 1-1 2-2 3-3\n0-0 1-1 2-2 3-3\n"},
    {4, "a b\tc d e\r\nx y z w v\tq\r\nsmall .\tpetit .\r\n", "0-0 1-2 0-1\n\n1-1 0-0\n"},
    {0, "\xef\xbb\xbfgood morning .\tbonjour .\tignored\n\nthank you .\tmerci .\n", "0-0 1-0 2-1\n0-0 1-0 2-1"},
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gold_seeds DIR\n");
        return 2;
    }
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/gold-%zu.bin", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        size_t n = strlen(seeds[k].corpus);
        fputc(seeds[k].max_len, f);
        fputc((int)(n & 0xff), f);
        fputc((int)(n >> 8), f);
        fputs(seeds[k].corpus, f);
        fputs(seeds[k].gold, f);
        if (fclose(f) != 0) return 1;
    }
    return 0;
}
