// tinyseq translate batches its input (infer/translate.c), with beam search
// (the default) and greedy: the batched translations of a file equal
// one-sentence-at-a-time ones, in order, with blank and bad lines in their
// places.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

Test(translate_batch, a_file_translates_as_its_sentences_one_by_one, .timeout = 600) {
    char *dir = test_tmpdir();
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd,
             "%s train --toy-pairs 1200 --emb 24 --hidden 48 --epochs 3 --lr 0.01 --dev 40 --show 0 --out %s/run",
             TS_PROGRAM, dir);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    // A poor model, but with ~50 distinct outputs for the sentences below,
    // so order mistakes show. 140 sentences (two batches) of the toy
    // corpus's kind, a blank line and a line that is not UTF-8 among them.
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 140 --seed 7 | cut -f1 > %s/in.txt && "
             "sed -i '5s/.*//; 9s/.*/bad \\xff line/' %s/in.txt", TS_PROGRAM, dir, dir);
    cr_assert_eq(test_run(cmd, NULL), 0);
    // Beam search of the default width, then greedy (--beam 1).
    for (int greedy = 0; greedy <= 1; greedy++) {
        const char *search = greedy ? "--beam 1" : "", *name = greedy ? "greedy" : "beam search";
        snprintf(cmd, sizeof cmd,
                 "%s translate %s --model %s/run/best.ckpt < %s/in.txt > %s/batched.txt 2>/dev/null; echo $?",
                 TS_PROGRAM, search, dir, dir, dir);
        test_run(cmd, &out);
        cr_assert_eq(atoi(out), 1, "%s: a bad line makes the exit status 1", name);
        free(out);
        // One process per sentence: a batch of one each.
        snprintf(cmd, sizeof cmd,
                 "while IFS= read -r l; do %s translate %s --model %s/run/best.ckpt \"$l\" 2>/dev/null || true; done "
                 "< %s/in.txt > %s/single.txt",
                 TS_PROGRAM, search, dir, dir, dir);
        cr_assert_eq(test_run(cmd, NULL), 0);
        snprintf(cmd, sizeof cmd, "wc -l < %s/batched.txt; cmp %s/batched.txt %s/single.txt && echo same", dir, dir, dir);
        rc = test_run(cmd, &out);
        cr_assert(strstr(out, "140\n"), "%s: one output line per input line:\n%s", name, out);
        cr_assert(strstr(out, "same"), "%s: batched and one-by-one translations differ:\n%s", name, out);
        free(out);
        snprintf(cmd, sizeof cmd, "sed -n '5p;9p' %s/batched.txt | tr -d '\\n' | wc -c", dir);
        test_run(cmd, &out);
        cr_assert_eq(atoi(out), 0, "%s: blank and bad lines give blank lines", name);
        free(out);
    }
    free(dir);
}
