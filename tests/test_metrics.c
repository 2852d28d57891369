// Tests for infer/metrics: BLEU against NLTK fixtures, AER by hand, Pharaoh
// parsing, alignments and attention diagnostics.
#include "infer/alignment.h"
#include "infer/score.h"

#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(metrics);

// ---- BLEU against NLTK -----------------------------------------------------

// Reads "H ..."/"R ..." ids from a fixture line (after the tag).
static size_t parse_ids(const char *text, int32_t *ids, size_t cap) {
    size_t n = 0;
    char *end;
    for (;;) {
        while (*text == ' ') text++;
        if (*text == '\0' || *text == '\n') return n;
        long v = strtol(text, &end, 10);
        cr_assert(end != text, "bad id in fixture: %s", text);
        cr_assert(n < cap, "fixture sentence too long");
        ids[n++] = (int32_t)v;
        text = end;
    }
}

// Replays every case of a fixture file through ts_bleu and compares with the
// BLEU line NLTK wrote. Returns the number of cases checked.
static int check_bleu_fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", TS_SOURCE_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *line = NULL;
    size_t line_cap = 0;
    int32_t hyp[256], ref[256];
    size_t hyp_len = 0;
    int have_hyp = 0, cases = 0;
    char case_name[128] = "";
    ts_bleu acc;
    ts_bleu_init(&acc);
    while (getline(&line, &line_cap, f) > 0) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (strncmp(line, "CASE ", 5) == 0) {
            snprintf(case_name, sizeof case_name, "%s", line + 5);
            case_name[strcspn(case_name, "\n")] = '\0';
            ts_bleu_init(&acc);
        } else if (line[0] == 'H') {
            hyp_len = parse_ids(line + 1, hyp, 256);
            have_hyp = 1;
        } else if (line[0] == 'R') {
            cr_assert(have_hyp, "%s: R line without H", case_name);
            size_t ref_len = parse_ids(line + 1, ref, 256);
            cr_assert_eq(ts_bleu_add(&acc, hyp, hyp_len, ref, ref_len), TS_OK);
            have_hyp = 0;
        } else if (strncmp(line, "BLEU ", 5) == 0) {
            double want = strtod(line + 5, NULL);
            double got = ts_bleu_score(&acc);
            cr_assert(fabs(got - want) <= 1e-9, "%s %s: got %.17g, NLTK %.17g", name,
                      case_name, got, want);
            cr_assert(got >= 0.0 && got <= 1.0);
            cases++;
        } else {
            cr_assert_fail("%s: unexpected line %s", name, line);
        }
    }
    free(line);
    fclose(f);
    return cases;
}

Test(metrics, bleu_matches_nltk_on_edge_cases) {
    cr_assert_geq(check_bleu_fixture("bleu_edge.txt"), 15);
}

Test(metrics, bleu_matches_nltk_on_random_corpora) {
    cr_assert_geq(check_bleu_fixture("bleu_random.txt"), 40);
}

Test(metrics, bleu_of_empty_corpus_is_zero) {
    ts_bleu acc = {0};
    cr_assert_eq(ts_bleu_score(&acc), 0.0);
}

Test(metrics, bleu_buckets_merge_to_corpus_score) {
    // Two "length buckets" merged must give the score of the whole corpus.
    const int32_t a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 2, 3, 4, 6, 5};
    const int32_t c[] = {7, 8, 9, 10, 11}, d[] = {7, 8, 9, 10, 11, 12};
    ts_bleu whole = {0}, short_bucket = {0}, long_bucket = {0};
    cr_assert_eq(ts_bleu_add(&whole, a, 6, b, 6), TS_OK);
    cr_assert_eq(ts_bleu_add(&whole, c, 5, d, 6), TS_OK);
    cr_assert_eq(ts_bleu_add(&long_bucket, a, 6, b, 6), TS_OK);
    cr_assert_eq(ts_bleu_add(&short_bucket, c, 5, d, 6), TS_OK);
    ts_bleu_merge(&short_bucket, &long_bucket);
    cr_assert_eq(ts_bleu_score(&short_bucket), ts_bleu_score(&whole));
    cr_assert_eq(whole.sentences, 2);
}

Test(metrics, brevity_penalty_follows_the_paper) {
    cr_assert_eq(ts_bleu_brevity_penalty(10, 8), 1.0);
    cr_assert_eq(ts_bleu_brevity_penalty(8, 8), 1.0);
    cr_assert_eq(ts_bleu_brevity_penalty(0, 8), 0.0);
    cr_assert_float_eq(ts_bleu_brevity_penalty(4, 8), exp(-1.0), 1e-15);
}

// ---- chrF against sacreBLEU's definition --------------------------------------

// The text of a fixture line after its two-character tag, without the newline.
static const char *line_text(char *line, size_t *len) {
    *len = strcspn(line, "\n");
    line[*len] = '\0';
    if (*len < 2) return *len = 0, "";
    *len -= 2;
    return line + 2;
}

Test(metrics, chrf_matches_sacrebleu_definition_on_fixture) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/chrf.txt", TS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *line = NULL, *hyp = NULL;
    size_t line_cap = 0, hyp_len = 0;
    char case_name[128] = "";
    int cases = 0;
    ts_chrf acc = {0};
    while (getline(&line, &line_cap, f) > 0) {
        if (line[0] == '#') continue;
        size_t len;
        if (strncmp(line, "CASE ", 5) == 0) {
            snprintf(case_name, sizeof case_name, "%s", line + 5);
            case_name[strcspn(case_name, "\n")] = '\0';
            memset(&acc, 0, sizeof acc);
        } else if (line[0] == 'H') {
            const char *text = line_text(line, &len);
            free(hyp);
            hyp = strdup(text);
            hyp_len = len;
        } else if (line[0] == 'R') {
            cr_assert_not_null(hyp, "%s: R line without H", case_name);
            const char *text = line_text(line, &len);
            cr_assert_eq(ts_chrf_add(&acc, hyp, hyp_len, text, len), TS_OK);
            free(hyp);
            hyp = NULL;
        } else if (strncmp(line, "CHRF ", 5) == 0) {
            double want = strtod(line + 5, NULL), got = ts_chrf_score(&acc);
            cr_assert(fabs(got - want) <= 1e-12, "%s: got %.17g, fixture %.17g", case_name, got, want);
            cases++;
        } else {
            cr_assert_fail("unexpected fixture line %s", line);
        }
    }
    free(line);
    free(hyp);
    fclose(f);
    cr_assert_geq(cases, 50);
}

Test(metrics, chrf_counts_invalid_utf8_bytes_as_characters) {
    // "\xff" is no UTF-8: one character that matches only itself.
    ts_chrf acc = {0};
    cr_assert_eq(ts_chrf_add(&acc, "a\xff", 2, "a\xff", 2), TS_OK);
    cr_assert_eq(acc.hyp[0], 2);
    cr_assert_eq(acc.matches[1], 1);
    cr_assert_float_eq(ts_chrf_score(&acc), 1.0, 1e-15);
    ts_chrf other = {0};
    cr_assert_eq(ts_chrf_add(&other, "a\xfe", 2, "a\xff", 2), TS_OK);
    cr_assert_eq(other.matches[0], 1);
}

Test(metrics, bleu_zero_order_names_the_first_order_without_a_match) {
    // Targets of three tokens have no 4-grams: BLEU is 0 whatever the output.
    const int32_t t[] = {7, 8, 9};
    ts_bleu acc = {0};
    cr_assert_eq(ts_bleu_add(&acc, t, 3, t, 3), TS_OK);
    cr_assert_eq(ts_bleu_score(&acc), 0.0);
    cr_assert_eq(ts_bleu_zero_order(&acc), 4);
    const int32_t u[] = {1, 2, 3, 4, 5};
    ts_bleu good = {0};
    cr_assert_eq(ts_bleu_add(&good, u, 5, u, 5), TS_OK);
    cr_assert_eq(ts_bleu_zero_order(&good), 0);
    const int32_t v[] = {6, 6, 6, 6, 6};
    ts_bleu none = {0};
    cr_assert_eq(ts_bleu_add(&none, v, 5, u, 5), TS_OK);
    cr_assert_eq(ts_bleu_zero_order(&none), 1);
}

// ---- BLEU on text as written (sacreBLEU) -------------------------------------

// A fixture text after its tag, with \\ \n \t \r unescaped in place.
static char *unescape(char *line, size_t tag) {
    char *text = line + tag, *w = text;
    for (char *r = text; *r && *r != '\n'; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        r++;
        *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r == 'r' ? '\r' : *r;
    }
    *w = '\0';
    return text;
}

Test(metrics, tokenize_13a_and_sacrebleu_score_match_the_definition_on_fixture) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/sacrebleu_13a.txt", TS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *line = NULL, *segment = NULL, *hyp = NULL;
    size_t line_cap = 0;
    char case_name[128] = "";
    int segments = 0, cases = 0;
    ts_bleu acc = {0};
    while (getline(&line, &line_cap, f) > 0) {
        if (line[0] == '#') continue;
        if (!strncmp(line, "TOK ", 4)) {
            free(segment);
            segment = strdup(unescape(line, 4));
        } else if (!strncmp(line, "GOT ", 4)) {
            cr_assert_not_null(segment, "GOT without TOK");
            const char *want = unescape(line, 4);
            char *got;
            size_t n;
            cr_assert_eq(ts_tokenize_13a(segment, strlen(segment), &got, &n), TS_OK);
            cr_assert_str_eq(got, want, "13a of '%s'", segment);
            size_t words = 0;
            for (const char *w = want; *w; w++) words += (w == want || w[-1] == ' ') && *w != ' ';
            cr_assert_eq(n, words, "'%s': %zu tokens, the fixture %zu", segment, n, words);
            free(got);
            free(segment);
            segment = NULL;
            segments++;
        } else if (!strncmp(line, "CASE ", 5)) {
            snprintf(case_name, sizeof case_name, "%s", line + 5);
            case_name[strcspn(case_name, "\n")] = '\0';
            memset(&acc, 0, sizeof acc);
        } else if (line[0] == 'H') {
            free(hyp);
            hyp = strdup(unescape(line, 2));
        } else if (line[0] == 'R') {
            cr_assert_not_null(hyp, "%s: R line without H", case_name);
            const char *ref = unescape(line, 2);
            char *hyp_tokens, *ref_tokens;
            cr_assert_eq(ts_tokenize_13a(hyp, strlen(hyp), &hyp_tokens, NULL), TS_OK);
            cr_assert_eq(ts_tokenize_13a(ref, strlen(ref), &ref_tokens, NULL), TS_OK);
            cr_assert_eq(ts_bleu_add_words(&acc, hyp_tokens, ref_tokens), TS_OK);
            free(hyp_tokens);
            free(ref_tokens);
            free(hyp);
            hyp = NULL;
        } else if (!strncmp(line, "BLEU ", 5)) {
            double want = strtod(line + 5, NULL), got = ts_bleu_score_sacrebleu(&acc);
            cr_assert(fabs(got - want) <= 1e-12, "%s: got %.17g, fixture %.17g", case_name, got, want);
            cases++;
        } else {
            cr_assert_fail("unexpected fixture line %s", line);
        }
    }
    free(line);
    free(segment);
    free(hyp);
    fclose(f);
    cr_assert_geq(segments, 200);
    cr_assert_geq(cases, 35);
}

// sacreBLEU's own published test cases (its repository's test/test_sentence_bleu.py
// and test/test_bleu.py, sacreBLEU 2.x), each with one reference.
static double sacrebleu_of(const char *hyp, const char *ref, int tokenize, ts_bleu *acc) {
    memset(acc, 0, sizeof *acc);
    char *h = strdup(hyp), *r = strdup(ref);
    if (tokenize) {
        free(h);
        free(r);
        cr_assert_eq(ts_tokenize_13a(hyp, strlen(hyp), &h, NULL), TS_OK);
        cr_assert_eq(ts_tokenize_13a(ref, strlen(ref), &r, NULL), TS_OK);
    }
    cr_assert_eq(ts_bleu_add_words(acc, h, r), TS_OK);
    free(h);
    free(r);
    return ts_bleu_score_sacrebleu(acc);
}

Test(metrics, sacrebleu_score_matches_sacrebleus_published_examples) {
    ts_bleu acc;
    // test_sentence_bleu.py, issue #98: smoothing 'exp' with '13a' 8.493, with
    // tokenize 'none' 7.347 (13a splits the ';' off "alb;"); with smoothing
    // 'none' 0.0, since no 3-gram matches. Published to 1e-3 (of 100).
    const char *ref = "producţia de zahăr brut se exprimă în zahăr alb;";
    const char *sys = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";
    cr_assert(fabs(100 * sacrebleu_of(sys, ref, 1, &acc) - 8.493) < 1e-3, "13a: %.6f", 100 * ts_bleu_score_sacrebleu(&acc));
    cr_assert_eq(ts_bleu_zero_order(&acc), 3);
    cr_assert(fabs(100 * sacrebleu_of(sys, ref, 0, &acc) - 7.347) < 1e-3, "none: %.6f", 100 * ts_bleu_score_sacrebleu(&acc));
    // test_sentence_bleu.py, issue #141: no match at all is 0, not a smoothed score.
    cr_assert_eq(sacrebleu_of("this is a cat", "okay thanks", 1, &acc), 0.0);
    // test_bleu.py test_statistics (tokenize 'none'): counts [4, 2, 1, 0], totals [6, 5, 4, 3].
    sacrebleu_of("am I am a character sequence", "I am a symbol string sequence a a", 0, &acc);
    const int64_t counts[] = {4, 2, 1, 0}, totals[] = {6, 5, 4, 3};
    for (int k = 0; k < TS_BLEU_ORDER; k++) {
        cr_assert_eq(acc.matches[k], counts[k], "order %d", k + 1);
        cr_assert_eq(acc.ngrams[k], totals[k], "order %d", k + 1);
    }
    // test_bleu.py test_scoring: compute_bleu([9, 7, 5, 3], [10, 8, 6, 4], 11, 11) = 0.8375922397.
    ts_bleu stats = {.matches = {9, 7, 5, 3}, .ngrams = {10, 8, 6, 4}, .hyp_len = 11, .ref_len = 11};
    cr_assert(fabs(ts_bleu_score_sacrebleu(&stats) - 0.8375922397) < 1e-10);
    // test_bleu.py test_raw_bleu: a perfect match is 1.
    cr_assert(fabs(sacrebleu_of("this is a test", "this is a test", 1, &acc) - 1.0) < 1e-15);
}

// ---- perplexity and exact match --------------------------------------------

Test(metrics, perplexity_is_exp_of_mean_cross_entropy) {
    cr_assert_float_eq(ts_perplexity(3 * log(5.0), 3), 5.0, 1e-12);
    cr_assert_eq(ts_perplexity(0.0, 10), 1.0);
    cr_assert(isnan(ts_perplexity(1.0, 0)));
}

Test(metrics, exact_match_counts_identical_sentences) {
    const int32_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
    ts_exact_match acc = {0};
    cr_assert_eq(ts_exact_match_score(&acc), 0.0);
    ts_exact_match_add(&acc, a, 3, a, 3);
    ts_exact_match_add(&acc, a, 3, b, 3);
    ts_exact_match_add(&acc, a, 2, a, 3);  // a prefix is not a match
    ts_exact_match_add(&acc, NULL, 0, NULL, 0);
    cr_assert_eq(acc.matched, 2);
    cr_assert_eq(acc.total, 4);
    cr_assert_eq(ts_exact_match_score(&acc), 0.5);
}

// ---- AER -------------------------------------------------------------------

static const ts_link s1_pred[] = {{0, 0}, {1, 1}, {2, 2}};
static const ts_link s1_gold[] = {{0, 0}, {1, 1}, {2, 1}};
static const ts_link s2_pred[] = {{0, 0}, {1, 2}};
static const ts_link s2_gold[] = {{0, 0}, {1, 1}, {2, 2}};

Test(metrics, aer_matches_hand_computed_values) {
    // S1: A = {0-0, 1-1, 2-2}, G = {0-0, 1-1, 2-1}: |A∩G| = 2, |A| = |G| = 3,
    //     AER = 1 - 2*2/(3+3) = 1/3.
    cr_assert_float_eq(ts_aer(s1_pred, 3, s1_gold, 3), 1.0 / 3.0, 1e-15);
    // S2: A = {0-0, 1-2}, G = {0-0, 1-1, 2-2}: |A∩G| = 1, AER = 1 - 2/(2+3) = 0.6.
    cr_assert_float_eq(ts_aer(s2_pred, 2, s2_gold, 3), 0.6, 1e-15);
    // Identical sets: 1 - 2*3/6 = 0. Disjoint: 1 - 0 = 1.
    cr_assert_eq(ts_aer(s1_gold, 3, s1_gold, 3), 0.0);
    const ts_link other[] = {{5, 5}};
    cr_assert_eq(ts_aer(other, 1, s1_gold, 3), 1.0);
}

Test(metrics, aer_treats_links_as_sets) {
    // A = {0-0, 0-0, 1-1} is the set {0-0, 1-1}; G = {0-0}:
    // |A∩G| = 1, |A| = 2, |G| = 1, AER = 1 - 2/3 = 1/3.
    const ts_link pred[] = {{0, 0}, {0, 0}, {1, 1}}, gold[] = {{0, 0}};
    cr_assert_float_eq(ts_aer(pred, 3, gold, 1), 1.0 / 3.0, 1e-15);
}

Test(metrics, aer_of_empty_sets) {
    cr_assert_eq(ts_aer(NULL, 0, NULL, 0), 0.0);
    cr_assert_eq(ts_aer(NULL, 0, s1_gold, 3), 1.0);
    cr_assert_eq(ts_aer(s1_pred, 3, NULL, 0), 1.0);
}

Test(metrics, corpus_aer_sums_counts_over_sentences) {
    // S1 + S2: |A∩G| = 2 + 1 = 3, |A| = 3 + 2 = 5, |G| = 3 + 3 = 6,
    // AER = 1 - 2*3/(5+6) = 5/11 (not the mean of 1/3 and 0.6).
    ts_aer_acc acc = {0};
    cr_assert_eq(ts_aer_score(&acc), 0.0);
    ts_aer_add(&acc, s1_pred, 3, s1_gold, 3);
    ts_aer_add(&acc, s2_pred, 2, s2_gold, 3);
    cr_assert_float_eq(ts_aer_score(&acc), 5.0 / 11.0, 1e-15);
}

// ---- Pharaoh parsing -------------------------------------------------------

Test(metrics, pharaoh_parses_links) {
    ts_link *links;
    size_t n;
    cr_assert_eq(ts_pharaoh_parse("0-0 1-2\t2-1  10-3\n", &links, &n), TS_OK);
    cr_assert_eq(n, 4);
    const int want[4][2] = {{0, 0}, {1, 2}, {2, 1}, {10, 3}};
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(links[k].src, want[k][0]);
        cr_assert_eq(links[k].tgt, want[k][1]);
    }
    free(links);
    cr_assert_eq(ts_pharaoh_parse("   \n", &links, &n), TS_OK);
    cr_assert_eq(n, 0);
    cr_assert_null(links);
    cr_assert_eq(ts_pharaoh_parse("2147483647-0", &links, &n), TS_OK);
    cr_assert_eq(links[0].src, 2147483647);
    free(links);
}

static const char *const bad_lines[][2] = {
    {"0-0 1-x", "\"1-x\""},     {"0-0 1-", "\"1-\""},
    {"-1-2", "\"-1-2\""},       {"0-0 1--2 3-3", "\"1--2\""},
    {"0:1", "\"0:1\""},         {"1-2-3", "\"1-2-3\""},
    {"12", "\"12\""},           {"0-0 2147483648-1", "\"2147483648-1\""},
    {"0-0, 1-1", "\"0-0,\""},   {"a-b", "\"a-b\""},
};

Test(metrics, pharaoh_rejects_malformed_tokens_by_name) {
    for (size_t k = 0; k < sizeof bad_lines / sizeof bad_lines[0]; k++) {
        ts_link *links = (ts_link *)1;
        size_t n = 99;
        ts_clear_error();
        int status = ts_pharaoh_parse(bad_lines[k][0], &links, &n);
        cr_assert_eq(status, TS_ERR_FORMAT, "line \"%s\" gave %d", bad_lines[k][0], status);
        cr_assert_null(links);
        cr_assert_eq(n, 0);
        cr_assert_not_null(strstr(ts_last_error(), bad_lines[k][1]),
                           "message \"%s\" does not name %s", ts_last_error(), bad_lines[k][1]);
    }
}

// ---- alignments from attention ----------------------------------------------

// T = 4 (3 words + <eos>), S = 4 (3 words + <eos>).
static const double attn[4 * 4] = {
    0.70, 0.10, 0.10, 0.10,
    0.05, 0.15, 0.75, 0.05,
    0.20, 0.40, 0.40, 0.00,  // a tie: the lowest source position wins
    0.10, 0.10, 0.10, 0.70,  // <eos> attends to <eos>
};

Test(metrics, argmax_alignment_takes_each_rows_maximum) {
    ts_link links[4];
    size_t n;
    cr_assert_eq(ts_align_argmax(attn, 4, 4, 0, links, &n), TS_OK);
    cr_assert_eq(n, 4);
    const int want_src[4] = {0, 2, 1, 3};
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(links[j].src, want_src[j], "row %d", j);
        cr_assert_eq(links[j].tgt, j);
    }
}

Test(metrics, argmax_alignment_can_skip_eos) {
    ts_link links[4];
    size_t n;
    // Without the <eos> column, row 3's maximum among the words is column 0.
    cr_assert_eq(ts_align_argmax(attn, 4, 4, TS_ALIGN_SKIP_EOS, links, &n), TS_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(links[2].src, 1);
    double only_eos[2] = {1.0, 1.0};  // T = 2, S = 1: nothing but <eos> to attend
    cr_assert_eq(ts_align_argmax(only_eos, 2, 1, TS_ALIGN_SKIP_EOS, links, &n), TS_OK);
    cr_assert_eq(n, 0);
}

Test(metrics, argmax_alignment_rejects_nan) {
    double w[2 * 2] = {0.5, 0.5, NAN, 1.0};
    ts_link links[2];
    size_t n = 7;
    cr_assert_eq(ts_align_argmax(w, 2, 2, 0, links, &n), TS_ERR_NUMERIC);
    cr_assert_eq(n, 0);
    cr_assert_not_null(strstr(ts_last_error(), "[1][0]"), "%s", ts_last_error());
    cr_assert_eq(ts_align_argmax(w, 2, 2, 4, links, &n), TS_ERR_ARG);
}

Test(metrics, diagonal_baseline_rounds_and_clamps) {
    ts_link links[8];
    size_t n;
    // T = 4, S = 6: j * 6/4 = 0, 1.5, 3, 4.5 -> 0, 2, 3, 5.
    cr_assert_eq(ts_align_diagonal(4, 6, 0, links, &n), TS_OK);
    cr_assert_eq(n, 4);
    const int want[4] = {0, 2, 3, 5};
    for (int j = 0; j < 4; j++) cr_assert_eq(links[j].src, want[j], "j = %d", j);
    // Skipping <eos>: T = 3, S = 5: 0, 5/3 = 1.67, 10/3 = 3.33 -> 0, 2, 3.
    cr_assert_eq(ts_align_diagonal(4, 6, TS_ALIGN_SKIP_EOS, links, &n), TS_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(links[1].src, 2);
    cr_assert_eq(links[2].src, 3);
    // T = 4, S = 1: 0.75 rounds to 1, clamped to S - 1 = 0.
    cr_assert_eq(ts_align_diagonal(4, 1, 0, links, &n), TS_OK);
    cr_assert_eq(links[3].src, 0);
}

// ---- attention diagnostics -------------------------------------------------

Test(metrics, entropy_of_uniform_rows_is_log_s) {
    double w[3 * 5];
    for (int k = 0; k < 15; k++) w[k] = 0.2;
    cr_assert_float_eq(ts_attn_entropy(w, 3, 5), log(5.0), 1e-14);
    double one_hot[2 * 3] = {1, 0, 0, 0, 0, 1};
    cr_assert_eq(ts_attn_entropy(one_hot, 2, 3), 0.0);
    cr_assert(isnan(ts_attn_entropy(w, 0, 5)));
}

Test(metrics, pad_mass_sums_weight_on_masked_columns) {
    const double w[2 * 3] = {0.5, 0.3, 0.2, 0.1, 0.1, 0.8};
    const double mask[3] = {1, 1, 0};
    // rows put 0.2 and 0.8 on the padding column: mean 0.5.
    cr_assert_float_eq(ts_attn_pad_mass(w, 2, 3, mask), 0.5, 1e-15);
    const double no_pad[3] = {1, 1, 1};
    cr_assert_eq(ts_attn_pad_mass(w, 2, 3, no_pad), 0.0);
}

// attend --words: a source word's pieces' columns add up, an output word's
// pieces' rows average, so merged rows are still distributions.
Test(metrics, attention_over_pieces_merges_into_words) {
    // Output pieces "▁le", "s" (word 0), "▁chat" (1), <eos> (2); source
    // pieces "▁the" (0), "▁ca", "t" (1), "▁." (2).
    const double w[4 * 4] = {
        0.50, 0.25, 0.25, 0.00,  //
        0.10, 0.30, 0.20, 0.40,  //
        0.00, 0.60, 0.30, 0.10,  //
        0.25, 0.25, 0.25, 0.25,
    };
    const int32_t rows[4] = {0, 0, 1, 2}, cols[4] = {0, 1, 1, 2};
    double out[3 * 3];
    ts_attn_merge(w, 4, 4, rows, 3, cols, 3, out);
    const double want[3 * 3] = {
        (0.50 + 0.10) / 2, (0.25 + 0.25 + 0.30 + 0.20) / 2, (0.00 + 0.40) / 2,  //
        0.00, 0.90, 0.10,                                                        //
        0.25, 0.50, 0.25,
    };
    assert_allclose(out, want, 9, 1e-15, 0);
    for (int r = 0; r < 3; r++) {
        double sum = out[3 * r] + out[3 * r + 1] + out[3 * r + 2];
        cr_assert_float_eq(sum, 1.0, 1e-15, "row %d sums to %.17g", r, sum);
    }
}

// The Jensen-Shannon divergence's identities: 0 for equal rows, symmetric,
// at most ln 2, reached by rows with disjoint support; and a value by hand.
Test(metrics, js_divergence_is_zero_for_equal_rows_symmetric_and_at_most_ln_2) {
    const double p[] = {0.5, 0.25, 0.25, 0.0}, q[] = {0.1, 0.2, 0.3, 0.4}, left[] = {0.5, 0.5, 0.0, 0.0},
                 right[] = {0.0, 0.0, 0.3, 0.7};
    cr_assert_eq(ts_js_divergence(p, p, 4), 0.0);
    cr_assert_eq(ts_js_divergence(q, q, 4), 0.0);
    cr_assert_eq(ts_js_divergence(p, q, 4), ts_js_divergence(q, p, 4));
    cr_assert(ts_js_divergence(p, q, 4) > 0.0 && ts_js_divergence(p, q, 4) <= log(2.0));
    cr_assert(fabs(ts_js_divergence(left, right, 4) - log(2.0)) < 1e-15, "%.17g", ts_js_divergence(left, right, 4));
    // (1, 0) against (0.5, 0.5): m = (0.75, 0.25); 0.5 ln(1 / 0.75) + 0.5 (0.5 ln(0.5 / 0.75) + 0.5 ln(0.5 / 0.25))
    const double one[] = {1.0, 0.0}, half[] = {0.5, 0.5};
    double want = 0.5 * log(1 / 0.75) + 0.25 * log(0.5 / 0.75) + 0.25 * log(2.0);
    cr_assert(fabs(ts_js_divergence(one, half, 2) - want) < 1e-15, "%.17g vs %.17g", ts_js_divergence(one, half, 2), want);
}

Test(metrics, agreement_counts_rows_with_the_same_argmax) {
    const double a[] = {0.7, 0.3, 0.2, 0.8, 0.5, 0.5}, b[] = {0.6, 0.4, 0.9, 0.1, 0.5, 0.5};  // (3, 2)
    ts_agreement_acc acc = {0};
    ts_agreement_add(&acc, a, b, 3, 2);
    cr_assert_eq(acc.rows, 3);
    cr_assert_eq(acc.same, 2);  // rows 0 and 2 (a tie goes to the first column in both)
    double js = ts_js_divergence(a, b, 2) + ts_js_divergence(a + 2, b + 2, 2);
    cr_assert(fabs(acc.js - js) < 1e-15);
}
