// data/: normalisation, the TSV reader and its errors, vocabularies, splits,
// batches. The toy generator and the corpus command are in test_toy.c.
#include "data/batch.h"
#include "data/corpus.h"
#include "data/normalize.h"
#include "data/toy.h"
#include "data/vocab.h"
#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(data);

#define TATOEBA TS_SHARED_DIR "/data/tatoeba-eng-fra.tsv"

// ---- normalisation ----------------------------------------------------------------

static void assert_normalizes(const char *in, const char *want, size_t want_tokens) {
    char *got;
    size_t n;
    cr_assert_eq(ts_normalize(in, strlen(in), &got, &n), TS_OK, "'%s': %s", in, ts_last_error());
    cr_assert_str_eq(got, want, "normalising '%s'", in);
    cr_assert_eq(n, want_tokens, "'%s' gives %zu tokens, want %zu", in, n, want_tokens);
    free(got);
}

Test(data, normalize_lowercases_accented_capitals) {
    assert_normalizes("ÉTÉ À Paris", "été à paris", 3);
    assert_normalizes("ÇA ŒUVRE Ê", "ça œuvre ê", 3);
    assert_normalizes("ΟΔΟΣ", "οδος", 1);  // full case mapping: final sigma
}

Test(data, normalize_composes_decomposed_input_to_nfc) {
    // "E" + U+0301 COMBINING ACUTE, "e" + U+0300: precomposed é / è after NFC.
    assert_normalizes("E\xCC\x81t\x65\xCC\x81", "\xC3\xA9t\xC3\xA9", 1);
    assert_normalizes("tre\xCC\x80s", "tr\xC3\xA8s", 1);
}

Test(data, normalize_splits_punctuation_from_words) {
    assert_normalizes("Hello, world! How are you? Yes; no: maybe.",
                      "hello , world ! how are you ? yes ; no : maybe .", 14);
    assert_normalizes("Wait...", "wait . . .", 4);
    assert_normalizes("  spaced \t out  ", "spaced out", 2);
}

Test(data, normalize_turns_french_no_break_spaces_into_spaces) {
    assert_normalizes("Au feu\xC2\xA0!", "au feu !", 3);             // U+00A0
    assert_normalizes("Courez\xE2\x80\xAF!", "courez !", 2);          // U+202F
    assert_normalizes("Quoi\xE2\x80\xAF?Rien", "quoi ? rien", 3);
    assert_normalizes("Note\xC2\xA0: oui", "note : oui", 3);
}

Test(data, normalize_keeps_apostrophes_inside_tokens) {
    assert_normalizes("J'ai vu l'homme.", "j'ai vu l'homme .", 4);
    assert_normalizes("Aujourd\xE2\x80\x99hui", "aujourd\xE2\x80\x99hui", 1);  // U+2019 kept
    assert_normalizes("I'm here.", "i'm here .", 3);
}

Test(data, normalize_of_nothing_is_no_tokens) {
    assert_normalizes("", "", 0);
    assert_normalizes(" \xC2\xA0 ", "", 0);
}

Test(data, normalize_rejects_invalid_utf8_and_nul) {
    char *out = (char *)1;
    cr_assert_eq(ts_normalize("ab\xFF", 3, &out, NULL), TS_ERR_FORMAT);
    cr_assert_null(out);
    cr_assert(strstr(ts_last_error(), "invalid UTF-8 at byte 3"), "%s", ts_last_error());
    cr_assert_eq(ts_normalize("\xC3", 1, &out, NULL), TS_ERR_FORMAT);  // truncated sequence
    cr_assert_eq(ts_normalize("a\0b", 3, &out, NULL), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "NUL byte at byte 2"), "%s", ts_last_error());
}

// ---- reading: good input ------------------------------------------------------------

static ts_corpus *read_text(const char *text, size_t len, const ts_corpus_opts *opts, int *status,
                            char **path_out) {
    char *dir = test_tmpdir();
    char *path = test_write_file(dir, "pairs.tsv", text, len);
    ts_corpus *c = NULL;
    *status = ts_corpus_read(path, opts, &c);
    if (path_out) *path_out = path;
    else free(path);
    free(dir);
    return c;
}

static void assert_side(char *const *tokens, int32_t n, const char *want) {
    char joined[512] = "";
    for (int32_t i = 0; i < n; i++) {
        if (i) strcat(joined, " ");
        strcat(joined, tokens[i]);
    }
    cr_assert_str_eq(joined, want);
}

// Pairs live in the corpus's arena, one block each: 3000 aligned pairs of
// 1-6 tokens (some 500 KiB: the arena chains several blocks) read back whole,
// tokens and links, after the last one is added; the links sorted, without
// duplicates, uncovered target tokens marked TS_UNALIGNED.
Test(data, pairs_added_past_the_first_block_keep_their_tokens_and_links) {
    enum { PAIRS = 3000 };
    ts_corpus *c = ts_corpus_new();
    cr_assert_not_null(c);
    char src[256], tgt[256];
    for (int i = 0; i < PAIRS; i++) {
        int ns = 1 + i % 6, nt = 1 + (i / 6) % 6, len = 0;
        for (int k = 0; k < ns; k++) len += sprintf(src + len, "%s  s%d_%d", k ? "" : " ", i, k);  // extra spaces
        len = 0;
        for (int k = 0; k < nt; k++) len += sprintf(tgt + len, k ? " t%d_%d" : "t%d_%d", i, k);
        // Target k < min(ns, nt) from source k, given twice and backwards; the rest uncovered.
        ts_link links[24];
        size_t n = 0;
        for (int k = (ns < nt ? ns : nt) - 1; k >= 0; k--) links[n++] = (ts_link){k, k}, links[n++] = (ts_link){k, k};
        cr_assert_eq(ts_corpus_add(c, src, tgt, links, n), TS_OK, "pair %d: %s", i, ts_last_error());
    }
    cr_assert_eq(c->n_pairs, PAIRS);
    for (int i = 0; i < PAIRS; i++) {
        const ts_pair *p = &c->pairs[i];
        int ns = 1 + i % 6, nt = 1 + (i / 6) % 6, both = ns < nt ? ns : nt;
        cr_assert_eq(p->src_len, ns, "pair %d", i);
        cr_assert_eq(p->tgt_len, nt, "pair %d", i);
        char want[32];
        for (int k = 0; k < ns; k++) {
            snprintf(want, sizeof want, "s%d_%d", i, k);
            cr_assert_str_eq(p->src[k], want);
        }
        for (int k = 0; k < nt; k++) {
            snprintf(want, sizeof want, "t%d_%d", i, k);
            cr_assert_str_eq(p->tgt[k], want);
        }
        cr_assert_eq(p->n_links, nt, "pair %d: one link per target token", i);
        for (int k = 0; k < nt; k++) {  // (src, tgt) order: the TS_UNALIGNED (-1) marks first
            const ts_link *l = &p->links[k];
            int unaligned = nt - both;
            if (k < unaligned) cr_assert(l->src == TS_UNALIGNED && l->tgt == both + k, "pair %d link %d", i, k);
            else cr_assert(l->src == k - unaligned && l->tgt == k - unaligned, "pair %d link %d", i, k);
        }
    }
    ts_corpus_free(c);
}

Test(data, read_ignores_a_third_column) {
    const char text[] = "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"
                        "Who?\tQui\xC2\xA0?\n";
    int st;
    ts_corpus *c = read_text(text, sizeof text - 1, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 2);
    assert_side(c->pairs[0].src, c->pairs[0].src_len, "go .");
    assert_side(c->pairs[0].tgt, c->pairs[0].tgt_len, "va !");
    assert_side(c->pairs[1].tgt, c->pairs[1].tgt_len, "qui ?");
    cr_assert_eq(c->has_align, 0);
    cr_assert_null(c->pairs[0].links);
    ts_corpus_free(c);
}

Test(data, read_accepts_bom_and_crlf) {
    const char text[] = "\xEF\xBB\xBFHi.\tSalut.\r\nGo!\tVa !\r\n";
    int st;
    ts_corpus *c = read_text(text, sizeof text - 1, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 2);
    cr_assert_str_eq(c->pairs[0].src[0], "hi");  // no BOM glued to the first word
    assert_side(c->pairs[0].tgt, c->pairs[0].tgt_len, "salut .");
    assert_side(c->pairs[1].tgt, c->pairs[1].tgt_len, "va !");  // no '\r' token
    ts_corpus_free(c);
}

// Old Mac files end lines with a lone CR: 50 pairs must read as 50 pairs,
// not as one line whose first two fields become one pair.
Test(data, read_accepts_lone_cr_line_ends_and_mixes) {
    char text[4096] = "";
    for (int i = 0; i < 50; i++) snprintf(text + strlen(text), sizeof text - strlen(text), "w%d a\tv%d b\r", i, i);
    int st;
    ts_corpus *c = read_text(text, strlen(text), NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 50);
    cr_assert_eq(c->n_lines, 50);
    assert_side(c->pairs[49].src, c->pairs[49].src_len, "w49 a");
    assert_side(c->pairs[49].tgt, c->pairs[49].tgt_len, "v49 b");
    ts_corpus_free(c);
    // LF, CRLF and CR mixed; an error names the right line of a CR file.
    const char mixed[] = "a\tb\nc\td\r\ne\tf\rg\th";
    c = read_text(mixed, sizeof mixed - 1, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 4);
    assert_side(c->pairs[2].src, c->pairs[2].src_len, "e");
    ts_corpus_free(c);
    const char bad[] = "a\tb\rc\td\rno tab\re\tf\r";
    c = read_text(bad, sizeof bad - 1, NULL, &st, NULL);
    cr_assert_eq(st, TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "pairs.tsv:3: no tab"), "%s", ts_last_error());
}

Test(data, read_skips_blank_lines_but_counts_them_in_line_numbers) {
    const char text[] = "a\tb\n\n   \n\r\nc\td\n";
    int st;
    ts_corpus *c = read_text(text, sizeof text - 1, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 2);
    cr_assert_eq(c->n_lines, 5);
    ts_corpus_free(c);

    const char bad[] = "a\tb\n\n\nno tab here\n";
    char *path;
    c = read_text(bad, sizeof bad - 1, NULL, &st, &path);
    cr_assert_eq(st, TS_ERR_FORMAT);
    char want[512];
    snprintf(want, sizeof want, "%s:4: no tab", path);
    cr_assert(strstr(ts_last_error(), want), "'%s' lacks '%s'", ts_last_error(), want);
    free(path);
}

Test(data, read_accepts_a_line_of_exactly_the_limit) {
    size_t len = TS_LINE_MAX;  // "aaa...a\tb" without the newline
    char *text = malloc(len + 3);
    memset(text, 'a', len - 2);
    memcpy(text + len - 2, "\tb\r\n", 4);  // plus CR LF, which do not count
    int st;
    ts_corpus *c = read_text(text, len + 2, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 1);
    cr_assert_eq(strlen(c->pairs[0].src[0]), TS_LINE_MAX - 2);
    ts_corpus_free(c);
    // With a BOM in front, still accepted: the BOM does not count.
    char *bom = malloc(len + 6);
    memcpy(bom, "\xEF\xBB\xBF", 3);
    memcpy(bom + 3, text, len + 2);
    c = read_text(bom, len + 5, NULL, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    ts_corpus_free(c);
    // One byte more is too long.
    memcpy(bom + 3, "b", 1);
    memcpy(bom + 4, text, len + 2);
    c = read_text(bom, len + 6, NULL, &st, NULL);
    cr_assert_eq(st, TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), ":1: line longer than"), "%s", ts_last_error());
    free(bom);
    free(text);
}

Test(data, read_filters_by_length_and_source_prefix) {
    const char text[] = "I am here.\tJe suis là.\n"
                        "I amuse you.\tJe t'amuse.\n"
                        "He is tall.\tIl est grand.\n"
                        "I am a very very very long sentence indeed.\tCourt.\n"
                        "She runs.\tElle court.\n";
    const char *prefixes[] = {"I am", "HE IS"};
    ts_corpus_opts opts = {.max_len = 6, .prefixes = prefixes, .n_prefixes = 2};
    int st;
    ts_corpus *c = read_text(text, sizeof text - 1, &opts, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_pairs, 2, "kept %zu", c->n_pairs);
    assert_side(c->pairs[0].src, c->pairs[0].src_len, "i am here .");
    assert_side(c->pairs[1].src, c->pairs[1].src_len, "he is tall .");
    cr_assert_eq(c->n_filtered, 3);
    // The same filter applied afterwards to an unfiltered corpus.
    ts_corpus *all = read_text(text, sizeof text - 1, NULL, &st, NULL);
    cr_assert_eq(ts_corpus_filter(all, &opts), TS_OK);
    cr_assert_eq(all->n_pairs, 2);
    assert_side(all->pairs[1].src, all->pairs[1].src_len, "he is tall .");
    ts_corpus_free(all);
    ts_corpus_free(c);
}

// ---- reading: one test per bad-input class -------------------------------------------

// Reads `text`, expects status `want` and a message containing "<path>:<line>: <what>".
static void assert_bad_line(const char *text, size_t len, int line, const char *what) {
    char *path;
    int st;
    ts_corpus *c = read_text(text, len, NULL, &st, &path);
    cr_assert_eq(st, TS_ERR_FORMAT, "status %d (%s)", st, ts_last_error());
    cr_assert_null(c);
    char want[512];
    snprintf(want, sizeof want, "%s:%d: %s", path, line, what);
    cr_assert(strstr(ts_last_error(), want), "message '%s' lacks '%s'", ts_last_error(), want);
    // With skip_bad the same line is skipped and counted.
    ts_corpus_opts skip = {.skip_bad = 1};
    c = read_text(text, len, &skip, &st, NULL);
    cr_assert_eq(st, TS_OK, "skip_bad: %s", ts_last_error());
    cr_assert_eq(c->n_bad, 1);
    cr_assert_eq(c->n_pairs, 2);
    // ... and named by number, with what was wrong (issue 47).
    char skipped[512];
    snprintf(want, sizeof want, "line %d (", line);
    ts_corpus_skipped(c, skipped, sizeof skipped);
    cr_assert(!strncmp(skipped, want, strlen(want)) && strstr(skipped, what), "'%s' lacks '%s' and '%s'", skipped, want, what);
    ts_corpus_free(c);
    free(path);
}

Test(data, bad_line_without_tab) {
    const char text[] = "Go.\tVa !\nno tab at all\nHi.\tSalut.\n";
    assert_bad_line(text, sizeof text - 1, 2, "no tab");
}

Test(data, bad_line_with_empty_side) {
    const char t1[] = "Go.\tVa !\n \tVide\nHi.\tSalut.\n";
    assert_bad_line(t1, sizeof t1 - 1, 2, "empty source side");
    const char t2[] = "Go.\tVa !\nHi.\tSalut.\nEmpty\t\xC2\xA0\t3rd\n";
    assert_bad_line(t2, sizeof t2 - 1, 3, "empty target side");
}

Test(data, bad_line_with_invalid_utf8) {
    const char text[] = "Go.\tVa !\nHi.\tSa\xC3\x28lut\nHi.\tSalut.\n";
    assert_bad_line(text, sizeof text - 1, 2, "target side: invalid UTF-8 at byte 3");
}

Test(data, bad_line_with_nul_byte) {
    const char text[] = "Go.\tVa !\nH\0i.\tSalut.\nHi.\tSalut.\n";
    assert_bad_line(text, sizeof text - 1, 2, "NUL byte at byte 2");
}

Test(data, bad_line_too_long) {
    size_t long_len = 3 * TS_LINE_MAX;  // read with bounded memory, then rejected
    const char head[] = "Go.\tVa !\n", tail[] = "\tx\nHi.\tSalut.\n";
    size_t len = strlen(head) + long_len + strlen(tail);
    char *text = malloc(len);
    memcpy(text, head, strlen(head));
    memset(text + strlen(head), 'a', long_len);
    memcpy(text + strlen(head) + long_len, tail, strlen(tail));
    char what[64];
    snprintf(what, sizeof what, "line longer than %d bytes", TS_LINE_MAX);
    assert_bad_line(text, len, 2, what);
    free(text);
}

Test(data, missing_file_is_an_io_error) {
    ts_corpus *c = (ts_corpus *)1;
    cr_assert_eq(ts_corpus_read("/nonexistent/dir/pairs.tsv", NULL, &c), TS_ERR_IO);
    cr_assert_null(c);
    cr_assert(strstr(ts_last_error(), "cannot open '/nonexistent/dir/pairs.tsv'"), "%s",
              ts_last_error());
    cr_assert(strstr(ts_last_error(), "No such file"), "%s", ts_last_error());
}

Test(data, empty_file_is_an_error) {
    int st;
    char *path;
    cr_assert_null(read_text("", 0, NULL, &st, &path));
    cr_assert_eq(st, TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), path) && strstr(ts_last_error(), "is empty"), "%s",
              ts_last_error());
    free(path);
    cr_assert_null(read_text("\xEF\xBB\xBF\r\n\n", 6, NULL, &st, NULL));  // BOM and blanks only
    cr_assert_eq(st, TS_ERR_FORMAT);
}

Test(data, unreadable_file_is_an_io_error) {
    // A directory opens but cannot be read, as root too.
    char *dir = test_tmpdir();
    ts_corpus *c;
    cr_assert_eq(ts_corpus_read(dir, NULL, &c), TS_ERR_IO);
    cr_assert_null(c);
    cr_assert(strstr(ts_last_error(), dir) && strstr(ts_last_error(), "Is a directory"), "%s",
              ts_last_error());
    // chmod 000 only stops a non-root reader.
    char *path = test_write_file(dir, "locked.tsv", "a\tb\n", 4);
    cr_assert_eq(chmod(path, 0), 0);
    if (geteuid() == 0) {
        cr_log_info("running as root: chmod 000 does not stop reading, that check is skipped");
    } else {
        cr_assert_eq(ts_corpus_read(path, NULL, &c), TS_ERR_IO);
        cr_assert(strstr(ts_last_error(), "Permission denied"), "%s", ts_last_error());
    }
    free(path);
    free(dir);
}

Test(data, skip_bad_counts_every_bad_class_and_fails_when_nothing_is_left) {
    const char text[] = "no tab\n\tempty\nbad\xFF\tx\nnul\0\tx\nGood.\tBien.\n";
    ts_corpus_opts skip = {.skip_bad = 1};
    int st;
    ts_corpus *c = read_text(text, sizeof text - 1, &skip, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_eq(c->n_bad, 4);
    cr_assert_eq(c->n_pairs, 1);
    char skipped[512];
    cr_assert_str_eq(ts_corpus_skipped(c, skipped, sizeof skipped),
                     "lines 1, 2, 3 and 4 (line 1: no tab (expected source<TAB>target))");
    ts_corpus_free(c);
    // Past five, the rest are counted.
    const char many[] = "a\nb\nc\nGood.\tBien.\nd\ne\nf\ng\n";
    c = read_text(many, sizeof many - 1, &skip, &st, NULL);
    cr_assert_eq(st, TS_OK, "%s", ts_last_error());
    cr_assert_str_eq(ts_corpus_skipped(c, skipped, sizeof skipped),
                     "lines 1, 2, 3, 5, 6 and 2 more (line 1: no tab (expected source<TAB>target))");
    ts_corpus_free(c);
    const char none[] = "no tab\n\tempty\n";
    cr_assert_null(read_text(none, sizeof none - 1, &skip, &st, NULL));
    cr_assert_eq(st, TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "all 2 lines are malformed"), "%s", ts_last_error());
}

// ---- the text as written ("nfc") ----------------------------------------------------

static void assert_nfc(const char *in, const char *want, size_t want_parts) {
    char *got;
    size_t n;
    cr_assert_eq(ts_normalize_nfc(in, strlen(in), &got, &n), TS_OK, "'%s': %s", in, ts_last_error());
    cr_assert_str_eq(got, want, "nfc of '%s'", in);
    cr_assert_eq(n, want_parts, "'%s' gives %zu parts, want %zu", in, n, want_parts);
    free(got);
}

Test(data, nfc_keeps_case_and_punctuation_and_composes) {
    assert_nfc("I want to go home.", "I want to go home.", 5);
    assert_nfc("E\xCC\x81t\xC3\xA9 \xC3\x80 Paris, non\xE2\x80\xAF?", "\xC3\x89t\xC3\xA9 \xC3\x80 Paris, non ?", 5);
    assert_nfc("  Au\tfeu\xC2\xA0\xC2\xA0!  ", "Au feu !", 3);  // white space runs: one space, ends trimmed
    assert_nfc("J'ai vu l\xE2\x80\x99homme.", "J'ai vu l\xE2\x80\x99homme.", 3);
    assert_nfc(" \xC2\xA0 ", "", 0);
    char *out = (char *)1;
    cr_assert_eq(ts_normalize_nfc("ab\xFF", 3, &out, NULL), TS_ERR_FORMAT);
    cr_assert_null(out);
    cr_assert(strstr(ts_last_error(), "invalid UTF-8 at byte 3"), "%s", ts_last_error());
    cr_assert_eq(ts_normalize_nfc("a\0b", 3, &out, NULL), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "NUL byte at byte 2"), "%s", ts_last_error());
}

Test(data, normalisations_are_one_table_read_by_name) {
    int v;
    cr_assert_eq(ts_names_parse(&ts_normalisation_names, "nfc", &v), TS_OK);
    cr_assert_eq(v, TS_NORM_NFC);
    cr_assert(ts_normalisations[TS_NORM_NFC].keeps_text && !ts_normalisations[TS_NORM_SPLIT].keeps_text);
    cr_assert_str_eq(ts_normalisations[TS_NORM_SPLIT].name, "nfc-lowercase-punct-split");  // every checkpoint's so far
    cr_assert_eq(ts_names_parse(&ts_normalisation_names, "lowercase", &v), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "nfc-lowercase-punct-split") && strstr(ts_last_error(), "nfc"), "%s", ts_last_error());
}

// A corpus read for a model of the text as written keeps each side's text
// beside the same words, filters by the words (so it keeps the same pairs),
// and writes the text back.
Test(data, a_corpus_read_as_written_keeps_the_text_beside_the_same_words) {
    const char tsv[] = "Hello, World!\tBonjour, le Monde\xC2\xA0!\nI want to go home.\tJe veux rentrer.\n"
                       "One two three four five six.\tUn.\n";
    int status;
    char *path;
    ts_corpus *text = read_text(tsv, strlen(tsv), &(ts_corpus_opts){.max_len = 6, .normalisation = TS_NORM_NFC}, &status, &path);
    cr_assert_eq(status, TS_OK, "%s", ts_last_error());
    ts_corpus *words;
    cr_assert_eq(ts_corpus_read(path, &(ts_corpus_opts){.max_len = 6}, &words), TS_OK);
    // "One two three four five six." is 7 words with its ".": out under both.
    cr_assert_eq(text->n_pairs, 2);
    cr_assert_eq(words->n_pairs, 2);
    cr_assert_eq(text->n_filtered, 1);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(text->pairs[i].src_len, words->pairs[i].src_len);
        for (int k = 0; k < text->pairs[i].src_len; k++) cr_assert_str_eq(text->pairs[i].src[k], words->pairs[i].src[k]);
        cr_assert_null(words->pairs[i].src_text);
    }
    cr_assert_str_eq(text->pairs[0].src_text, "Hello, World!");
    cr_assert_str_eq(text->pairs[0].tgt_text, "Bonjour, le Monde !");
    assert_side(text->pairs[0].tgt, text->pairs[0].tgt_len, "bonjour , le monde !");
    char *side;
    cr_assert_eq(ts_pair_text(&text->pairs[1], TS_TGT, &side), TS_OK);
    cr_assert_str_eq(side, "Je veux rentrer.");
    free(side);
    cr_assert_eq(ts_pair_text(&words->pairs[1], TS_TGT, &side), TS_OK);
    cr_assert_str_eq(side, "je veux rentrer .");
    free(side);
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    cr_assert_eq(ts_corpus_write_tsv(text, f), TS_OK);
    fclose(f);
    cr_assert_str_eq(out, "Hello, World!\tBonjour, le Monde !\nI want to go home.\tJe veux rentrer.\n");
    free(out);
    ts_corpus_free(words);
    ts_corpus_free(text);
    free(path);
}

// ---- the Tatoeba file --------------------------------------------------------------------

Test(data, tatoeba_pair_count_is_stable) {
    if (!test_have_shared()) cr_skip_test("../shared absent: the Tatoeba file lives there");
    ts_corpus_opts opts = {.max_len = 10};
    ts_corpus *c;
    cr_assert_eq(ts_corpus_read(TATOEBA, &opts, &c), TS_OK, "%s", ts_last_error());
    cr_log_info("tatoeba-eng-fra.tsv: %zu lines, %zu pairs with max-len 10, %zu filtered, %zu bad",
                c->n_lines, c->n_pairs, c->n_filtered, c->n_bad);
    // torch_ref.py keeps 17,054 (16,554 train + 500 dev). We also split ':'
    // (5 pairs, times such as "3:30") and ';' (none in the file) and apply NFC
    // (the file is NFC already); no pair crosses the length limit because of
    // that, so the count is the same.
    cr_assert_eq(c->n_lines, 17065);
    cr_assert_eq(c->n_pairs, 17054);
    cr_assert_eq(c->n_filtered, 11);
    cr_assert_eq(c->n_bad, 0);
    // Read as written (the subword presets), the same pairs: the filter counts the words.
    ts_corpus *text;
    cr_assert_eq(ts_corpus_read(TATOEBA, &(ts_corpus_opts){.max_len = 10, .normalisation = TS_NORM_NFC}, &text), TS_OK);
    cr_assert_eq(text->n_pairs, 17054);
    cr_assert_str_eq(text->pairs[0].src_text, "Go.");
    ts_corpus_free(text);
    // Vocabularies over all kept pairs, ids as Python's Counter + sort by
    // (-count, word) gives on the same tokens.
    ts_vocab *src, *tgt;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &src), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &tgt), TS_OK);
    cr_assert_eq(ts_vocab_size(src), 3266);
    cr_assert_eq(ts_vocab_size(tgt), 6637);
    const char *src_first[] = {".", "i", "?", "you", "it", "a", "is", "i'm"};
    const char *tgt_first[] = {".", "je", "?", "!", "pas", "il", "suis", "vous"};
    for (int i = 0; i < 8; i++) {
        cr_assert_str_eq(ts_vocab_word(src, TS_N_SPECIALS + i), src_first[i]);
        cr_assert_str_eq(ts_vocab_word(tgt, TS_N_SPECIALS + i), tgt_first[i]);
    }
    cr_assert_eq(ts_vocab_count(src, TS_N_SPECIALS), 14315);
    cr_assert_str_eq(ts_vocab_word(tgt, ts_vocab_id(tgt, "\"au")), "\"au");
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    ts_corpus_free(c);
}

// ---- vocabularies ------------------------------------------------------------------------

static ts_corpus *small_corpus(void) {
    ts_corpus *c = ts_corpus_new();
    cr_assert_eq(ts_corpus_add(c, "b a c", "x", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "a b", "y x", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "a d <unk>", "x z", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "only_in_dev", "w", NULL, 0), TS_OK);
    return c;
}

Test(data, vocab_orders_specials_then_count_then_bytes) {
    ts_corpus *c = small_corpus();
    size_t train[] = {0, 1, 2};
    ts_vocab *v;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, train, 3, 1, &v), TS_OK);
    const char *want[] = {"<pad>", "<sos>", "<eos>", "<unk>", "a", "b", "c", "d"};
    cr_assert_eq(ts_vocab_size(v), 8);
    for (int32_t i = 0; i < 8; i++) cr_assert_str_eq(ts_vocab_word(v, i), want[i]);
    cr_assert_null(ts_vocab_word(v, 8));
    cr_assert_null(ts_vocab_word(v, -1));
    cr_assert_eq(ts_vocab_id(v, "a"), 4);
    cr_assert_eq(ts_vocab_id(v, "d"), 7);
    cr_assert_eq(ts_vocab_count(v, 4), 3);
    // Built from the training rows only; specials in text are not words.
    cr_assert_eq(ts_vocab_id(v, "only_in_dev"), TS_UNK);
    cr_assert_eq(ts_vocab_id(v, "<unk>"), TS_UNK);
    cr_assert_eq(ts_vocab_id(v, "<pad>"), TS_UNK);
    cr_assert_eq(ts_vocab_id(v, "A"), TS_UNK);
    ts_vocab_free(v);
    // min_count 2 drops c and d.
    cr_assert_eq(ts_vocab_build(c, TS_SRC, train, 3, 2, &v), TS_OK);
    cr_assert_eq(ts_vocab_size(v), 6);
    cr_assert_eq(ts_vocab_id(v, "c"), TS_UNK);
    ts_vocab_free(v);
    ts_corpus_free(c);
}

Test(data, vocab_encodes_and_decodes) {
    ts_corpus *c = small_corpus();
    ts_vocab *v;
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &v), TS_OK);  // x=4 w y z
    char *toks[] = {"x", "y", "nope", "z"};
    int32_t ids[4];
    ts_vocab_encode(v, toks, 4, ids);
    cr_assert_eq(ids[0], 4);
    cr_assert_eq(ids[2], TS_UNK);
    int32_t seq[] = {TS_SOS, ids[0], TS_PAD, ids[1], ids[2], ids[3], TS_EOS, ids[0]};
    char out[64];
    size_t need = ts_vocab_decode(v, seq, 8, out, sizeof out);
    cr_assert_str_eq(out, "x y <unk> z");
    cr_assert_eq(need, strlen("x y <unk> z"));
    char tiny[5];
    cr_assert_eq(ts_vocab_decode(v, seq, 8, tiny, sizeof tiny), need);  // cut short, like snprintf
    cr_assert_str_eq(tiny, "x y ");
    ts_vocab_free(v);
    ts_corpus_free(c);
}

Test(data, vocab_round_trips_through_its_word_list) {
    ts_corpus *c = small_corpus();
    ts_vocab *v, *back;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &v), TS_OK);
    const char *words[16];
    for (size_t i = 0; i < ts_vocab_size(v); i++) words[i] = ts_vocab_word(v, (int32_t)i);
    cr_assert_eq(ts_vocab_from_words(words, ts_vocab_size(v), &back), TS_OK, "%s", ts_last_error());
    for (size_t i = 0; i < ts_vocab_size(v); i++)
        cr_assert_eq(ts_vocab_id(back, words[i]), i < TS_N_SPECIALS ? TS_UNK : (int32_t)i);
    ts_vocab_free(back);
    const char *no_specials[] = {"a", "b", "c", "d", "e"};
    cr_assert_eq(ts_vocab_from_words(no_specials, 5, &back), TS_ERR_FORMAT);
    cr_assert_null(back);
    const char *dup[] = {"<pad>", "<sos>", "<eos>", "<unk>", "a", "a"};
    cr_assert_eq(ts_vocab_from_words(dup, 6, &back), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "duplicate"), "%s", ts_last_error());
    ts_vocab_free(v);
    ts_corpus_free(c);
}

// ---- splits --------------------------------------------------------------------------------

static gsl_rng *rng_seeded(unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

static ts_corpus *toy(size_t n, unsigned long seed) {
    gsl_rng *r = rng_seeded(seed);
    ts_corpus *c;
    cr_assert_eq(ts_toy_generate(r, n, &c), TS_OK, "%s", ts_last_error());
    gsl_rng_free(r);
    return c;
}

static void split_with_seed(const ts_corpus *c, unsigned long seed, ts_split *s) {
    gsl_rng *r = rng_seeded(seed);
    cr_assert_eq(ts_corpus_split(c, r, 100, 50, s), TS_OK, "%s", ts_last_error());
    gsl_rng_free(r);
}

Test(data, split_is_reproducible_disjoint_and_complete) {
    ts_corpus *c = toy(1000, 3);
    ts_split a, b, other;
    split_with_seed(c, 7, &a);
    split_with_seed(c, 7, &b);
    split_with_seed(c, 8, &other);
    cr_assert_eq(a.n_dev, 100);
    cr_assert_eq(a.n_test, 50);
    cr_assert_eq(a.n_train, 850);
    cr_assert_arr_eq(a.dev, b.dev, a.n_dev * sizeof(size_t));
    cr_assert_arr_eq(a.test, b.test, a.n_test * sizeof(size_t));
    cr_assert_arr_eq(a.train, b.train, a.n_train * sizeof(size_t));
    cr_assert(memcmp(a.dev, other.dev, a.n_dev * sizeof(size_t)), "seeds 7 and 8 gave one split");
    unsigned char seen[1000] = {0};
    for (size_t i = 0; i < a.n_train; i++) seen[a.train[i]]++;
    for (size_t i = 0; i < a.n_dev; i++) seen[a.dev[i]]++;
    for (size_t i = 0; i < a.n_test; i++) seen[a.test[i]]++;
    for (size_t i = 0; i < 1000; i++) cr_assert_eq(seen[i], 1, "row %zu in %d parts", i, seen[i]);
    ts_split_free(&a);
    ts_split_free(&b);
    ts_split_free(&other);
    gsl_rng *r = rng_seeded(1);
    cr_assert_eq(ts_corpus_split(c, r, 600, 400, &a), TS_ERR_ARG);
    cr_assert_null(a.train);
    gsl_rng_free(r);
    ts_corpus_free(c);
}

// ---- batches -------------------------------------------------------------------------------

static const ts_batcher_opts plain_opts = {.batch_size = 4};

Test(data, batch_is_time_major_padded_and_masked) {
    ts_corpus *c = ts_corpus_new();
    cr_assert_eq(ts_corpus_add(c, "a b c", "x y", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "a", "x y z w", NULL, 0), TS_OK);
    cr_assert_eq(ts_corpus_add(c, "b c", "z", NULL, 0), TS_OK);
    ts_vocab *sv, *tv;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &sv), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &tv), TS_OK);
    ts_batcher *b;
    cr_assert_eq(ts_batcher_new(c, NULL, 0, sv, tv, &plain_opts, &b), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_batcher_count(b), 1);
    const ts_batch *x = ts_batcher_next(b);
    cr_assert_not_null(x);
    cr_assert_eq(x->B, 3);
    cr_assert_eq(x->S, 3);
    cr_assert_eq(x->T, 5);  // longest target 4, + <sos>/<eos>
    int32_t a = ts_vocab_id(sv, "a"), bb = ts_vocab_id(sv, "b"), cc = ts_vocab_id(sv, "c");
    // src (S, B): column 0 "a b c", column 1 "a", column 2 "b c".
    int32_t want_src[3][3] = {{a, a, bb}, {bb, TS_PAD, cc}, {cc, TS_PAD, TS_PAD}};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) cr_assert_eq(x->src[s * 3 + k], want_src[s][k], "src[%d][%d]", s, k);
    int32_t X = ts_vocab_id(tv, "x"), Y = ts_vocab_id(tv, "y"), Z = ts_vocab_id(tv, "z"),
            W = ts_vocab_id(tv, "w");
    int32_t want_in[5][3] = {{TS_SOS, TS_SOS, TS_SOS}, {X, X, Z}, {Y, Y, TS_PAD},
                             {TS_PAD, Z, TS_PAD}, {TS_PAD, W, TS_PAD}};
    int32_t want_out[5][3] = {{X, X, Z}, {Y, Y, TS_EOS}, {TS_EOS, Z, TS_PAD},
                              {TS_PAD, W, TS_PAD}, {TS_PAD, TS_EOS, TS_PAD}};
    for (int t = 0; t < 5; t++)
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(x->tgt_in[t * 3 + k], want_in[t][k], "tgt_in[%d][%d]", t, k);
            cr_assert_eq(x->tgt_out[t * 3 + k], want_out[t][k], "tgt_out[%d][%d]", t, k);
        }
    int32_t want_src_len[] = {3, 1, 2}, want_tgt_len[] = {3, 5, 2};
    cr_assert_arr_eq(x->src_len, want_src_len, sizeof want_src_len);
    cr_assert_arr_eq(x->tgt_len, want_tgt_len, sizeof want_tgt_len);
    cr_assert_eq(x->rows[1], 1);
    cr_assert_null(ts_batcher_next(b));
    ts_batcher_free(b);
    ts_vocab_free(sv);
    ts_vocab_free(tv);
    ts_corpus_free(c);
}

typedef struct {
    ts_corpus *c;
    ts_vocab *sv, *tv;
} toy_data;

static toy_data toy_data_new(size_t n) {
    toy_data d = {toy(n, 5), NULL, NULL};
    cr_assert_eq(ts_vocab_build(d.c, TS_SRC, NULL, 0, 1, &d.sv), TS_OK);
    cr_assert_eq(ts_vocab_build(d.c, TS_TGT, NULL, 0, 1, &d.tv), TS_OK);
    return d;
}

static void toy_data_free(toy_data *d) {
    ts_vocab_free(d->sv);
    ts_vocab_free(d->tv);
    ts_corpus_free(d->c);
}

// Checks one epoch: each row once, shapes and masks consistent with the
// corpus; returns the padded slots (source + target) over the epoch.
static size_t check_epoch(ts_batcher *b, const toy_data *d, size_t batch_size, size_t n_rows) {
    unsigned char *seen = calloc(n_rows, 1);
    size_t padding = 0, batches = 0;
    for (const ts_batch *x; (x = ts_batcher_next(b)); batches++) {
        cr_assert(x->B >= 1 && (size_t)x->B <= batch_size);
        size_t real_tgt = 0;
        for (int32_t k = 0; k < x->B; k++) {
            const ts_pair *p = &d->c->pairs[x->rows[k]];
            cr_assert_eq(seen[x->rows[k]]++, 0, "row %zu twice", x->rows[k]);
            cr_assert_eq(x->src_len[k], p->src_len);
            cr_assert_eq(x->tgt_len[k], p->tgt_len + 1);
            cr_assert_eq(x->src[(size_t)(p->src_len - 1) * x->B + k], ts_vocab_id(d->sv, p->src[p->src_len - 1]));
            cr_assert_eq(x->tgt_out[(size_t)p->tgt_len * x->B + k], TS_EOS);
            for (int32_t s = p->src_len; s < x->S; s++) cr_assert_eq(x->src[(size_t)s * x->B + k], TS_PAD);
            real_tgt += (size_t)p->tgt_len + 1;
        }
        size_t real_src = 0;
        for (int32_t k = 0; k < x->B; k++) real_src += (size_t)x->src_len[k];
        padding += (size_t)x->S * (size_t)x->B - real_src + (size_t)x->T * (size_t)x->B - real_tgt;
    }
    cr_assert_eq(batches, ts_batcher_count(b));
    for (size_t i = 0; i < n_rows; i++) cr_assert_eq(seen[i], 1, "row %zu missing", i);
    free(seen);
    return padding;
}

Test(data, bucketing_reduces_padding) {
    toy_data d = toy_data_new(3000);
    ts_batcher_opts plain = {.batch_size = 32}, bucketed = {.batch_size = 32, .bucket_batches = 50};
    ts_batcher *p, *q;
    cr_assert_eq(ts_batcher_new(d.c, NULL, 0, d.sv, d.tv, &plain, &p), TS_OK);
    cr_assert_eq(ts_batcher_new(d.c, NULL, 0, d.sv, d.tv, &bucketed, &q), TS_OK);
    gsl_rng *r = rng_seeded(11);
    ts_batcher_epoch(p, r);
    ts_batcher_epoch(q, r);
    size_t pad_plain = check_epoch(p, &d, 32, 3000), pad_bucketed = check_epoch(q, &d, 32, 3000);
    cr_log_info("padding slots per epoch: %zu shuffled, %zu bucketed", pad_plain, pad_bucketed);
    cr_assert_lt(pad_bucketed * 4, pad_plain, "bucketing saved too little: %zu vs %zu",
                 pad_bucketed, pad_plain);
    gsl_rng_free(r);
    ts_batcher_free(p);
    ts_batcher_free(q);
    toy_data_free(&d);
}

// The sequence of batch rows of two epochs, for comparing runs.
static void epoch_rows(ts_batcher *b, unsigned long seed, size_t *rows, size_t n) {
    gsl_rng *r = rng_seeded(seed);
    size_t k = 0;
    for (int e = 0; e < 2; e++) {
        ts_batcher_epoch(b, r);
        for (const ts_batch *x; (x = ts_batcher_next(b));)
            for (int32_t j = 0; j < x->B; j++) {
                cr_assert_lt(k, n);
                rows[k++] = x->rows[j];
            }
    }
    cr_assert_eq(k, n);
    gsl_rng_free(r);
}

Test(data, same_seed_gives_same_batches) {
    toy_data d = toy_data_new(500);
    size_t rows[250];
    for (size_t i = 0; i < 250; i++) rows[i] = 2 * i;  // a subset, e.g. a training split
    ts_batcher_opts opts = {.batch_size = 16, .bucket_batches = 4};
    ts_batcher *b;
    cr_assert_eq(ts_batcher_new(d.c, rows, 250, d.sv, d.tv, &opts, &b), TS_OK);
    size_t first[500], again[500], other[500];
    epoch_rows(b, 21, first, 500);
    epoch_rows(b, 21, again, 500);
    epoch_rows(b, 22, other, 500);
    cr_assert_arr_eq(first, again, sizeof first);
    cr_assert(memcmp(first, other, sizeof first), "seeds 21 and 22 gave the same batches");
    cr_assert(memcmp(first, first + 250, 250 * sizeof(size_t)), "two epochs in the same order");
    for (size_t i = 0; i < 500; i++) cr_assert_eq(first[i] % 2, 0, "row %zu is not ours", first[i]);
    // Random access gives the batches next() gave.
    gsl_rng *r = rng_seeded(21);
    ts_batcher_epoch(b, r);
    const ts_batch *x = ts_batcher_get(b, 0);
    cr_assert_eq(x->rows[0], first[0]);
    cr_assert_null(ts_batcher_get(b, ts_batcher_count(b)));
    gsl_rng_free(r);
    ts_batcher_free(b);
    toy_data_free(&d);
}

Test(data, unshuffled_epoch_keeps_row_order_and_last_batch_is_short) {
    toy_data d = toy_data_new(10);
    ts_batcher *b;
    cr_assert_eq(ts_batcher_new(d.c, NULL, 0, d.sv, d.tv, &plain_opts, &b), TS_OK);
    cr_assert_eq(ts_batcher_count(b), 3);
    size_t row = 0;
    for (const ts_batch *x; (x = ts_batcher_next(b));)
        for (int32_t j = 0; j < x->B; j++) cr_assert_eq(x->rows[j], row++);
    cr_assert_eq(ts_batcher_get(b, 2)->B, 2);
    ts_batcher_free(b);
    ts_batcher_opts zero = {.batch_size = 0};
    cr_assert_eq(ts_batcher_new(d.c, NULL, 0, d.sv, d.tv, &zero, &b), TS_ERR_ARG);
    size_t bad_row = 10;
    cr_assert_eq(ts_batcher_new(d.c, &bad_row, 1, d.sv, d.tv, &plain_opts, &b), TS_ERR_ARG);
    cr_assert_null(b);
    toy_data_free(&d);
}
