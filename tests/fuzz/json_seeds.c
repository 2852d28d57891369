// Writes fuzz_json's seed inputs into the directory named by argv[1]: lines
// of attention.jsonl as tinyseq train writes them (a GRU evaluation, a
// Transformer's with heads) and objects that use the rest of the grammar
// (escapes, a surrogate pair, numbers, literals, the deepest nesting allowed).
#include "viz/json.h"

#include <stdio.h>
#include <string.h>

static const char *const lines[] = {
    "{\"epoch\":1,\"step\":12,\"beam\":5,\"bleu_by_length\":[[0,8],[0,17],[0,4],[0,11]],\"sentences\":[{\"source\":"
    "[\"he\",\"does\",\"not\",\"hate\",\".\"],\"reference\":[\"il\",\"ne\",\"d\\u00e9teste\",\"pas\",\".\"],\"greedy\":"
    "{\"output\":[\"chaises\"],\"ended\":1,\"weights\":[[0.2,0.2,0.2,0.2,0.2],[0.1,0.3,0.2,0.2,0.2]]},\"beam\":"
    "{\"output\":[\"l'enfant\",\"va\"],\"ended\":0,\"weights\":[[0.2,0.2,0.2,0.2,0.2],[0.5,0.1,0.1,0.2,0.1]]}}]}",
    "{\"epoch\":2.5,\"step\":24,\"sentences\":[{\"source\":[\"a\"],\"reference\":[\"b\"],\"greedy\":{\"output\":[],"
    "\"ended\":1,\"weights\":[]},\"beam\":{\"output\":[],\"ended\":1,\"weights\":[]},\"heads\":{\"layers\":1,"
    "\"heads\":2,\"cross\":[[[[1]],[[1]],[[1]]]],\"enc\":[[[[1]],[[1]],[[1]]]],\"dec\":[[[[1]],[[1]],[[1]]]]}}]}",
    (" {\"x\" : \"\\u003c/script\\u003e \\ud83d\\ude00 \\\"\\\\\\/\\b\\f\\n\\r\\t\", \"n\":-1.5e-3 ,\"m\":0,\"e\":2E+10,"
    "\"t\":true,\"f\":false,\"z\":null,\"o\":{},\"a\":[]}\r\n"),
    "{\"caf\xc3\xa9\":\"\xe2\x98\x83\xf0\x9f\x98\x80\"}",
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: json_seeds DIR\n");
        return 2;
    }
    char path[4096];
    for (size_t k = 0; k < sizeof lines / sizeof *lines; k++) {
        snprintf(path, sizeof path, "%s/line-%zu.json", argv[1], k);
        FILE *f = fopen(path, "wb");
        if (!f || fputs(lines[k], f) < 0 || fclose(f) != 0) return 1;
    }
    // An object nested as deep as the reader allows: {"a":[[...[1]...]]}.
    snprintf(path, sizeof path, "%s/deepest.json", argv[1]);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    fputs("{\"a\":", f);
    for (int i = 1; i < TS_JSON_MAX_DEPTH; i++) fputc('[', f);
    fputc('1', f);
    for (int i = 1; i < TS_JSON_MAX_DEPTH; i++) fputc(']', f);
    fputs("}\n", f);
    return fclose(f) != 0;
}
