// data/toy.c: the synthetic corpus and its gold alignments, and the
// `tinyseq corpus` command that writes it.
#include "data/corpus.h"
#include "data/toy.h"
#include "data/vocab.h"
#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

TestSuite(toy);

static ts_corpus *generate(size_t n, unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    ts_corpus *c;
    cr_assert_eq(ts_toy_generate(r, n, &c), TS_OK, "%s", ts_last_error());
    gsl_rng_free(r);
    cr_assert_eq(c->n_pairs, n);
    cr_assert(c->has_align);
    return c;
}

// The corpus's TSV and Pharaoh text, malloc'd.
static char *as_text(const ts_corpus *c) {
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_corpus_write_tsv(c, f), TS_OK);
    cr_assert_eq(ts_corpus_write_align(c, f), TS_OK);
    fclose(f);
    return buf;
}

static int has_link(const ts_pair *p, int32_t i, int32_t j) {
    for (int32_t k = 0; k < p->n_links; k++)
        if (p->links[k].src == i && p->links[k].tgt == j) return 1;
    return 0;
}

Test(toy, same_seed_same_bytes_different_seed_differs) {
    ts_corpus *a = generate(300, 1), *b = generate(300, 1), *c = generate(300, 2);
    char *ta = as_text(a), *tb = as_text(b), *tc = as_text(c);
    cr_assert_str_eq(ta, tb);
    cr_assert_str_neq(ta, tc);
    free(ta);
    free(tb);
    free(tc);
    ts_corpus_free(a);
    ts_corpus_free(b);
    ts_corpus_free(c);
}

Test(toy, every_target_token_is_aligned_or_explicitly_unaligned) {
    ts_corpus *c = generate(3000, 4);
    size_t unaligned = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        int covered[TS_TOY_MAX_LEN] = {0}, marked[TS_TOY_MAX_LEN] = {0};
        for (int32_t k = 0; k < p->n_links; k++) {
            ts_link l = p->links[k];
            cr_assert(l.tgt >= 0 && l.tgt < p->tgt_len, "pair %zu: target %d out of range", i, l.tgt);
            cr_assert(l.src == TS_UNALIGNED || (l.src >= 0 && l.src < p->src_len),
                      "pair %zu: source %d out of range", i, l.src);
            if (l.src == TS_UNALIGNED) marked[l.tgt]++;
            else covered[l.tgt]++;
            if (k) cr_assert(p->links[k - 1].src < l.src ||
                             (p->links[k - 1].src == l.src && p->links[k - 1].tgt < l.tgt),
                             "pair %zu: links not sorted and unique", i);
        }
        for (int32_t j = 0; j < p->tgt_len; j++) {
            cr_assert(covered[j] || marked[j], "pair %zu: target token %d '%s' neither aligned nor "
                      "marked unaligned", i, j, p->tgt[j]);
            cr_assert(!(covered[j] && marked[j]), "pair %zu: target %d both aligned and unaligned", i, j);
            unaligned += marked[j] > 0;
        }
    }
    cr_log_info("explicitly unaligned target tokens in 3000 pairs: %zu", unaligned);
    cr_assert_gt(unaligned, 0, "the bare-plural article 'les' should be unaligned somewhere");
    ts_corpus_free(c);
}

Test(toy, lengths_span_three_to_twenty_five_with_a_long_tail) {
    ts_corpus *c = generate(5000, 6);
    int32_t min = 1000, max = 0;
    size_t long_ones = 0, mid = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        int32_t lo = p->src_len < p->tgt_len ? p->src_len : p->tgt_len;
        int32_t hi = p->src_len > p->tgt_len ? p->src_len : p->tgt_len;
        if (lo < min) min = lo;
        if (hi > max) max = hi;
        long_ones += p->tgt_len >= 20;
        mid += p->tgt_len >= 4 && p->tgt_len <= 15;
        cr_assert_str_eq(p->src[p->src_len - 1], ".");
        cr_assert_str_eq(p->tgt[p->tgt_len - 1], ".");
    }
    cr_log_info("toy lengths %d..%d, %zu of 5000 targets >= 20 tokens, %zu in 4..15", min, max,
                long_ones, mid);
    cr_assert_geq(min, TS_TOY_MIN_LEN);
    cr_assert_leq(max, TS_TOY_MAX_LEN);
    cr_assert_geq(max, 24);
    cr_assert_gt(long_ones, 50);
    cr_assert_gt(mid, 5000 * 3 / 4, "most sentences should have 4..15 tokens");
    ts_corpus_free(c);
}

Test(toy, vocabulary_stays_modest) {
    ts_corpus *c = generate(20000, 1);
    ts_vocab *sv, *tv;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &sv), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &tv), TS_OK);
    cr_log_info("toy vocab over 20000 pairs: %zu source, %zu target (specials included)",
                ts_vocab_size(sv), ts_vocab_size(tv));
    cr_assert(ts_vocab_size(sv) >= 150 && ts_vocab_size(sv) <= 300);
    cr_assert(ts_vocab_size(tv) >= 200 && ts_vocab_size(tv) <= 350);
    ts_vocab_free(sv);
    ts_vocab_free(tv);
    ts_corpus_free(c);
}

// Index of `word` in tokens, or -1.
static int32_t find(char *const *tokens, int32_t n, const char *word) {
    for (int32_t i = 0; i < n; i++)
        if (!strcmp(tokens[i], word)) return i;
    return -1;
}

Test(toy, has_the_reorderings_attention_must_learn) {
    ts_corpus *c = generate(2000, 8);
    size_t adj_after_noun = 0, ne_pas = 0, many_to_one = 0, one_to_many = 0, qui = 0, que = 0,
           elided = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        // "black cat" -> "chat noir": crossing links between neighbours.
        int32_t e = find(p->src, p->src_len, "black");
        if (e >= 0 && e + 1 < p->src_len)
            for (int32_t j = 1; j < p->tgt_len; j++)
                if (has_link(p, e, j) && has_link(p, e + 1, j - 1)) adj_after_noun++;
        // "does not see" -> "ne voit pas": "not" aligned to both sides of the verb.
        e = find(p->src, p->src_len, "not");
        int32_t ne = find(p->tgt, p->tgt_len, "ne"), pas = find(p->tgt, p->tgt_len, "pas");
        if (e >= 0 && ne >= 0 && pas == ne + 2 && has_link(p, e, ne) && has_link(p, e, pas) &&
            has_link(p, e + 1, ne + 1))
            ne_pas++;
        // "a lot of" -> "beaucoup de": three source tokens, one target token.
        e = find(p->src, p->src_len, "lot");
        int32_t bc = find(p->tgt, p->tgt_len, "beaucoup");
        if (e >= 1 && bc >= 0 && has_link(p, e - 1, bc) && has_link(p, e, bc)) many_to_one++;
        // "cannot" -> "ne peut pas" / "ne peuvent pas".
        e = find(p->src, p->src_len, "cannot");
        if (e >= 0 && ne >= 0 && has_link(p, e, ne) && has_link(p, e, ne + 1) && has_link(p, e, ne + 2))
            one_to_many++;
        qui += find(p->tgt, p->tgt_len, "qui") >= 0;
        que += find(p->tgt, p->tgt_len, "que") >= 0 || find(p->tgt, p->tgt_len, "qu'il") >= 0;
        for (int32_t j = 0; j < p->tgt_len; j++) elided += !strncmp(p->tgt[j], "l'", 2);
    }
    cr_log_info("in 2000 pairs: %zu black-X crossings, %zu ne-V-pas, %zu 'a lot of', %zu 'cannot', "
                "%zu qui, %zu que, %zu l' tokens",
                adj_after_noun, ne_pas, many_to_one, one_to_many, qui, que, elided);
    cr_assert_gt(adj_after_noun, 0);
    cr_assert_gt(ne_pas, 0);
    cr_assert_gt(many_to_one, 0);
    cr_assert_gt(one_to_many, 0);
    cr_assert_gt(qui, 0);
    cr_assert_gt(que, 0);
    cr_assert_gt(elided, 0);
    ts_corpus_free(c);
}

Test(toy, agreement_follows_gender_and_number) {
    ts_corpus *c = generate(2000, 9);
    size_t checked = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        for (int32_t k = 0; k + 1 < p->src_len; k++) {
            if (strcmp(p->src[k], "the")) continue;
            const char *want = !strcmp(p->src[k + 1], "girl") ? "la"
                             : !strcmp(p->src[k + 1], "dog") ? "le"
                             : !strcmp(p->src[k + 1], "girls") ? "les" : NULL;
            if (!want) continue;
            for (int32_t l = 0; l < p->n_links; l++)
                if (p->links[l].src == k) {
                    cr_assert_str_eq(p->tgt[p->links[l].tgt], want, "pair %zu: the %s", i, p->src[k + 1]);
                    checked++;
                }
        }
    }
    cr_assert_gt(checked, 10);
    ts_corpus_free(c);
}

// ---- the command -----------------------------------------------------------------------

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(toy, corpus_command_is_deterministic) {
    char *dir = test_tmpdir();
    char cmd[1024];
    for (int run = 0; run < 2; run++) {
        snprintf(cmd, sizeof cmd, "%s corpus --toy --n 5 --seed 1 --align %s/a%d.txt > %s/t%d.tsv",
                 TS_PROGRAM, dir, run, dir, run);
        char *out;
        cr_assert_eq(test_run(cmd, &out), 0, "%s: %s", cmd, out);
        free(out);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/t0.tsv", dir);
    char *t0 = read_all(path);
    snprintf(path, sizeof path, "%s/t1.tsv", dir);
    char *t1 = read_all(path);
    snprintf(path, sizeof path, "%s/a0.txt", dir);
    char *a0 = read_all(path);
    snprintf(path, sizeof path, "%s/a1.txt", dir);
    char *a1 = read_all(path);
    cr_assert_str_eq(t0, t1);
    cr_assert_str_eq(a0, a1);
    size_t lines_t = 0, lines_a = 0;
    for (char *s = t0; *s; s++) lines_t += *s == '\n';
    for (char *s = a0; *s; s++) lines_a += *s == '\n';
    cr_assert_eq(lines_t, 5);
    cr_assert_eq(lines_a, 5);
    // The command writes what the library generates.
    ts_corpus *c = generate(5, 1);
    char *lib = as_text(c);
    cr_assert_eq(strncmp(lib, t0, strlen(t0)), 0);
    cr_assert_str_eq(lib + strlen(t0), a0);
    free(lib);
    ts_corpus_free(c);
    free(t0);
    free(t1);
    free(a0);
    free(a1);
    free(dir);
}

Test(toy, corpus_command_reports_usage_and_io_errors) {
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "%s corpus --toy --bogus", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 2);
    cr_assert(strstr(out, "unknown option --bogus"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n zero", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 2);
    cr_assert(strstr(out, "--n"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s corpus", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "%s corpus --help", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 0);
    cr_assert(strstr(out, "--toy"), "%s", out);
    free(out);
    // Braces: stdout to /dev/null, stderr still to test_run.
    snprintf(cmd, sizeof cmd, "{ %s corpus --toy --n 3 --align /nonexistent/dir/a.txt > /dev/null; }",
             TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 1);
    cr_assert(strstr(out, "/nonexistent/dir/a.txt"), "%s", out);
    free(out);
    // An empty --prefix is the flag's fault: exit 2 naming it, before any file is read.
    snprintf(cmd, sizeof cmd, "%s corpus --stats /nonexistent/pairs.tsv --prefix ''", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 2, "%s", out);
    cr_assert(strstr(out, "--prefix '' has no words"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s corpus --stats /nonexistent/pairs.tsv", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, &out), 1);
    cr_assert(strstr(out, "cannot open '/nonexistent/pairs.tsv'"), "%s", out);
    free(out);
}

Test(toy, corpus_command_reads_and_skips_bad_lines) {
    char *dir = test_tmpdir();
    const char text[] = "Go.\tVa\xE2\x80\xAF!\nno tab\nHi.\tSalut.\n";
    char *path = test_write_file(dir, "p.tsv", text, sizeof text - 1);
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "%s corpus --normalize %s", TS_PROGRAM, path);
    cr_assert_eq(test_run(cmd, &out), 1);
    cr_assert(strstr(out, ":2: no tab"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s corpus --normalize %s --skip-bad", TS_PROGRAM, path);
    cr_assert_eq(test_run(cmd, &out), 0);
    cr_assert(strstr(out, "go .\tva !\nhi .\tsalut .\n"), "%s", out);
    cr_assert(strstr(out, "skipped 1 malformed line"), "%s", out);
    free(out);
    // Old Mac line ends: three lines, not one.
    char *cr_path = test_write_file(dir, "mac.tsv", "a\tb\rc\td\re\tf\r", 12);
    snprintf(cmd, sizeof cmd, "%s corpus --stats %s", TS_PROGRAM, cr_path);
    cr_assert_eq(test_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "lines: 3\n") && strstr(out, "pairs: 3\n"), "%s", out);
    free(out);
    free(cr_path);
    snprintf(cmd, sizeof cmd, "%s corpus --stats %s --skip-bad --max-len 2", TS_PROGRAM, path);
    cr_assert_eq(test_run(cmd, &out), 0);
    cr_assert(strstr(out, "pairs: 2\n"), "%s", out);
    free(out);
    free(path);
    free(dir);
}

// corpus --toy streams: it writes chunk after chunk of pairs drawn from one
// rng, which must give the bytes of one corpus of the same size, and memory
// must stay that of a chunk (measured as the child's peak resident size).
Test(toy, corpus_command_streams_the_same_bytes_in_bounded_memory) {
    char *dir = test_tmpdir(), cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 9000 --seed 3 --align %s/a.txt > %s/t.tsv", TS_PROGRAM, dir, dir);
    cr_assert_eq(test_run(cmd, &out), 0, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/t.tsv", dir);
    char *tsv = read_all(path);
    snprintf(path, sizeof path, "%s/a.txt", dir);
    char *align = read_all(path);
    ts_corpus *c = generate(9000, 3);
    char *lib = as_text(c);
    cr_assert_eq(strlen(lib), strlen(tsv) + strlen(align));
    cr_assert_eq(strncmp(lib, tsv, strlen(tsv)), 0, "the TSV is one corpus's");
    cr_assert_str_eq(lib + strlen(tsv), align);
    free(lib);
    ts_corpus_free(c);
    free(tsv);
    free(align);
    free(dir);

#ifdef __SANITIZE_ADDRESS__
    // AddressSanitizer's quarantine and shadow memory swamp the figure.
    cr_log_info("sanitizer build: peak memory not measured");
    return;
#endif
    snprintf(cmd, sizeof cmd, "%s corpus --toy --n 200000 > /dev/null", TS_PROGRAM);
    cr_assert_eq(test_run(cmd, NULL), 0);
    struct rusage after;  // the largest child waited for: the program
    getrusage(RUSAGE_CHILDREN, &after);
    // Held in memory, 200,000 pairs take about 80 MB; a chunk, a few.
    cr_assert_lt(after.ru_maxrss, 40 * 1024, "peak resident size %ld KiB", after.ru_maxrss);
}
