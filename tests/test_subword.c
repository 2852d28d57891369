// data/subword.h: SentencePiece models learned in memory, their bytes, and
// text <-> pieces. Every test but the last needs a build with SentencePiece.
#include "crafted_subword.h"
#include "data/corpus.h"
#include "data/subword.h"
#include "data/toy.h"
#include "data/vocab.h"
#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

TestSuite(subword);

// French sentences with accents and elisions, beside the toy corpus's.
static const char *const french[] = {
    "l'été dernier , nous sommes allés à la mer .",
    "ça ne fait rien , je reviendrai demain .",
    "où est la bibliothèque ?",
    "il a reçu une lettre de sa sœur .",
    "c'est un garçon très âgé .",
};
#define N_FRENCH (sizeof french / sizeof *french)

// The target sides of 1,000 toy pairs (seed 1) followed by the French lines,
// each as one normalised string; *n gets their number. Freed by free_sentences.
static char **toy_sentences(size_t *n) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    ts_corpus *c;
    cr_assert_eq(ts_toy_generate(rng, 1000, &c), TS_OK, "%s", ts_last_error());
    gsl_rng_free(rng);
    char **s = calloc(c->n_pairs + N_FRENCH, sizeof *s);
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        size_t len = 0;
        for (int32_t t = 0; t < p->tgt_len; t++) len += strlen(p->tgt[t]) + 1;
        s[i] = calloc(len + 1, 1);
        for (int32_t t = 0; t < p->tgt_len; t++) {
            if (t) strcat(s[i], " ");
            strcat(s[i], p->tgt[t]);
        }
    }
    for (size_t i = 0; i < N_FRENCH; i++) s[c->n_pairs + i] = strdup(french[i]);
    *n = c->n_pairs + N_FRENCH;
    ts_corpus_free(c);
    return s;
}

static void free_sentences(char **s, size_t n) {
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

static ts_subword *toy_model_of(enum ts_subword_kind kind, size_t vocab_size) {
    size_t n;
    char **s = toy_sentences(&n);
    ts_subword *sw;
    int rc = ts_subword_train((const char *const *)s, n,
                              &(ts_subword_opts){.kind = kind, .vocab_size = vocab_size, .seed = 1}, &sw);
    cr_assert_eq(rc, TS_OK, "training: %s", ts_last_error());
    free_sentences(s, n);
    return sw;
}

static ts_subword *toy_model(size_t vocab_size) { return toy_model_of(TS_SUBWORD_UNIGRAM, vocab_size); }

// Encodes text, checks no piece is <unk> and the ids spell the pieces, and
// returns the decoded text (malloc'd).
static char *round_trip(const ts_subword *sw, const char *text) {
    char *pieces;
    int32_t *ids;
    size_t n;
    cr_assert_eq(ts_subword_encode(sw, text, strlen(text), &pieces, &ids, &n), TS_OK,
                 "encoding '%s': %s", text, ts_last_error());
    const char **split = calloc(n + 1, sizeof *split);
    char *save = NULL, *copy = strdup(pieces);
    size_t k = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) split[k++] = tok;
    cr_assert_eq(k, n, "'%s' gives %zu ids but %zu pieces '%s'", text, n, k, pieces);
    for (size_t i = 0; i < n; i++) {
        cr_assert_neq(ids[i], TS_UNK, "'%s' has <unk> at piece %zu: '%s'", text, i, pieces);
        cr_assert_str_eq(ts_subword_piece(sw, ids[i]), split[i], "'%s': id %d", text, ids[i]);
    }
    char *back;
    cr_assert_eq(ts_subword_decode(sw, split, n, &back), TS_OK, "%s", ts_last_error());
    free(split);
    free(copy);
    free(pieces);
    free(ids);
    return back;
}

Test(subword, text_round_trips_through_pieces) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    const char *texts[] = {
        "le petit chat ne mange pas .",
        "l'homme qu'elle aime cherche des chats tous les jours .",
        "où est la bibliothèque ?",
        "a b c",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *back = round_trip(sw, texts[i]);
        cr_assert_str_eq(back, texts[i]);
        free(back);
    }
    // Frequent toy words are single pieces: the model learned something.
    char *pieces;
    size_t n;
    cr_assert_eq(ts_subword_encode(sw, "le chat", 7, &pieces, NULL, &n), TS_OK);
    cr_assert_str_eq(pieces, "\xe2\x96\x81le \xe2\x96\x81" "chat");
    cr_assert_eq(n, 2);
    free(pieces);
    ts_subword_free(sw);
}

Test(subword, unseen_characters_encode_without_unk) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    // None of these characters is in the training text: byte pieces spell them.
    const char *texts[] = {"☃ 日本語 ß", "zqxw ǅ ∑ 🙂", "\x01\x7f", "<unk> <eos>"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *back = round_trip(sw, texts[i]);
        cr_assert_str_eq(back, texts[i]);
        free(back);
    }
    ts_subword_free(sw);
}

Test(subword, empty_line_stays_empty) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    char *pieces, *text;
    int32_t *ids;
    size_t n = 99;
    cr_assert_eq(ts_subword_encode(sw, "", 0, &pieces, &ids, &n), TS_OK, "%s", ts_last_error());
    cr_assert_str_eq(pieces, "");
    cr_assert_eq(n, 0);
    free(pieces);
    free(ids);
    cr_assert_eq(ts_subword_encode(sw, "   ", 3, &pieces, NULL, &n), TS_OK);
    cr_assert_str_eq(pieces, "");
    free(pieces);
    cr_assert_eq(ts_subword_decode(sw, NULL, 0, &text), TS_OK);
    cr_assert_str_eq(text, "");
    free(text);
    ts_subword_free(sw);
}

// What does not round trip, as data/subword.h says: extra spaces, and U+2581.
Test(subword, extra_spaces_and_the_word_mark_come_back_as_one_space) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    const char *in[] = {"le  chat ", " le chat", "le\xe2\x96\x81" "chat", "le\tchat"};
    const char *want[] = {"le chat", "le chat", "le chat", "le\tchat"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        char *back = round_trip(sw, in[i]);
        cr_assert_str_eq(back, want[i], "case %zu", i);
        free(back);
    }
    ts_subword_free(sw);
}

Test(subword, specials_are_dropped_when_decoding) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    const char *pieces[] = {"<sos>", "\xe2\x96\x81le", "<unk>", "\xe2\x96\x81" "chat", "<eos>", "<pad>"};
    char *text;
    cr_assert_eq(ts_subword_decode(sw, pieces, 6, &text), TS_OK);
    cr_assert_str_eq(text, "le chat");
    free(text);
    ts_subword_free(sw);
}

Test(subword, invalid_utf8_is_refused_naming_the_byte) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    char *pieces = (char *)"x";
    cr_assert_eq(ts_subword_encode(sw, "ab\xc3(", 4, &pieces, NULL, NULL), TS_ERR_FORMAT);
    cr_assert_null(pieces);
    cr_assert(strstr(ts_last_error(), "invalid UTF-8 at byte 3"), "%s", ts_last_error());
    const char *bad[] = {"fine", "\xff"};
    ts_subword *none = sw;
    cr_assert_eq(ts_subword_train(bad, 2, &(ts_subword_opts){.vocab_size = 400}, &none), TS_ERR_FORMAT);
    cr_assert_null(none);
    cr_assert(strstr(ts_last_error(), "sentence 2: invalid UTF-8 at byte 1"), "%s", ts_last_error());
    ts_subword_free(sw);
}

Test(subword, bad_vocabulary_sizes_are_refused) {
    NEEDS_SPM();
    const char *one[] = {"a b c"};
    ts_subword *sw;
    cr_assert_eq(ts_subword_train(one, 1, &(ts_subword_opts){.vocab_size = 10}, &sw), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "outside 300.."), "%s", ts_last_error());
    const char *empty[] = {"", ""};
    cr_assert_eq(ts_subword_train(empty, 2, &(ts_subword_opts){.vocab_size = 400}, &sw), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "no sentence"), "%s", ts_last_error());
    // More distinct characters than the vocabulary has room for.
    char wide[4 * 200 + 1] = "";
    for (int c = 0; c < 200; c++) {  // U+0400.. Cyrillic, 2 bytes each, space apart
        char ch[4] = {(char)(0xd0 + (0x400 + c) / 64 - 16), (char)(0x80 | ((0x400 + c) % 64)), ' ', 0};
        strcat(wide, ch);
    }
    const char *wide_s[] = {wide};
    cr_assert_eq(ts_subword_train(wide_s, 1, &(ts_subword_opts){.vocab_size = 300}, &sw), TS_ERR_ARG,
                 "%s", ts_last_error());
    cr_assert_null(sw);
    // Named in tinyseq's words, with both counts: 200 letters and the word mark,
    // after the 260 fixed ids.
    cr_assert(strstr(ts_last_error(), "300 pieces is too small") && strstr(ts_last_error(), "201 characters") &&
                  strstr(ts_last_error(), "at least 461"), "%s", ts_last_error());
    // One piece fewer than needed is refused, exactly enough is learned.
    cr_assert_eq(ts_subword_train(wide_s, 1, &(ts_subword_opts){.vocab_size = 460}, &sw), TS_ERR_ARG);
    cr_assert_eq(ts_subword_train(wide_s, 1, &(ts_subword_opts){.vocab_size = 461}, &sw), TS_OK, "%s", ts_last_error());
    ts_subword_free(sw);
}

Test(subword, same_sentences_give_the_same_model_bytes) {
    NEEDS_SPM();
    ts_subword *a = toy_model(400), *b = toy_model(400);
    size_t na, nb;
    const uint8_t *ba = ts_subword_bytes(a, &na), *bb = ts_subword_bytes(b, &nb);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(ba, bb, na) == 0, "two trainings on the same sentences differ");
    // Loading the bytes gives a model with the same bytes and the same pieces.
    ts_subword *c;
    cr_assert_eq(ts_subword_load(ba, na, &c), TS_OK, "%s", ts_last_error());
    size_t nc;
    const uint8_t *bc = ts_subword_bytes(c, &nc);
    cr_assert(nc == na && memcmp(bc, ba, na) == 0);
    cr_assert_eq(ts_subword_size(c), ts_subword_size(a));
    for (size_t i = 0; i < ts_subword_size(a); i++)
        cr_assert_str_eq(ts_subword_piece(c, (int32_t)i), ts_subword_piece(a, (int32_t)i));
    ts_subword_free(a);
    ts_subword_free(b);
    ts_subword_free(c);
}

Test(subword, bpe_models_round_trip_and_repeat_too) {
    NEEDS_SPM();
    ts_subword *a = toy_model_of(TS_SUBWORD_BPE, 400), *b = toy_model_of(TS_SUBWORD_BPE, 400);
    ts_subword *uni = toy_model(400);
    size_t na, nb, nu;
    const uint8_t *ba = ts_subword_bytes(a, &na), *bb = ts_subword_bytes(b, &nb);
    const uint8_t *bu = ts_subword_bytes(uni, &nu);
    cr_assert(na == nb && memcmp(ba, bb, na) == 0, "two BPE trainings on the same sentences differ");
    cr_assert(na != nu || memcmp(ba, bu, na) != 0, "the BPE model is the unigram one");
    const char *texts[] = {"l'homme qu'elle aime cherche des chats .", "☃ 日本語 ß", ""};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *back = round_trip(a, texts[i]);
        cr_assert_str_eq(back, texts[i]);
        free(back);
    }
    ts_subword_free(a);
    ts_subword_free(b);
    ts_subword_free(uni);
    const char *one[] = {"a b c"};
    ts_subword *sw;
    cr_assert_eq(ts_subword_train(one, 1, &(ts_subword_opts){.kind = TS_SUBWORD_KIND_COUNT, .vocab_size = 400}, &sw),
                 TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "unknown subword model kind"), "%s", ts_last_error());
    cr_assert_str_eq(ts_subword_kind_name(TS_SUBWORD_BPE), "bpe");
    cr_assert_null(ts_subword_kind_name(TS_SUBWORD_KIND_COUNT));
}

Test(subword, corrupt_or_truncated_bytes_are_refused) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    size_t n;
    const uint8_t *good = ts_subword_bytes(sw, &n);
    uint8_t *bytes = malloc(n);
    ts_subword *got;
    for (size_t len = 0; len < n; len++) {  // every truncation
        memcpy(bytes, good, len);
        got = sw;
        cr_assert_eq(ts_subword_load(bytes, len, &got), TS_ERR_FORMAT, "cut to %zu of %zu bytes", len, n);
        cr_assert_null(got);
    }
    for (size_t at = 0; at < n; at += 7) {  // one flipped bit, header and payload
        memcpy(bytes, good, n);
        bytes[at] ^= (uint8_t)(1u << (at % 8));
        cr_assert_eq(ts_subword_load(bytes, n, &got), TS_ERR_FORMAT, "bit flipped at byte %zu", at);
    }
    // Trailing bytes are refused too: the header's length must match.
    uint8_t *longer = malloc(n + 1);
    memcpy(longer, good, n);
    longer[n] = 0;
    cr_assert_eq(ts_subword_load(longer, n + 1, &got), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "truncated"), "%s", ts_last_error());
    free(longer);
    free(bytes);
    ts_subword_free(sw);
}

Test(subword, vocabulary_ids_are_the_model_ids) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400);
    ts_vocab *v;
    cr_assert_eq(ts_subword_vocab(sw, &v), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_vocab_size(v), ts_subword_size(sw));
    cr_assert_str_eq(ts_vocab_word(v, TS_PAD), "<pad>");
    cr_assert_str_eq(ts_vocab_word(v, TS_UNK), "<unk>");
    cr_assert_str_eq(ts_subword_piece(sw, TS_N_SPECIALS), "<0x00>");
    cr_assert_str_eq(ts_subword_piece(sw, TS_N_SPECIALS + 255), "<0xFF>");
    cr_assert_null(ts_subword_piece(sw, (int32_t)ts_subword_size(sw)));
    cr_assert_null(ts_subword_piece(sw, -1));
    int32_t *ids;
    char *pieces;
    size_t n;
    const char *text = "la bibliothèque ☃";
    cr_assert_eq(ts_subword_encode(sw, text, strlen(text), &pieces, &ids, &n), TS_OK);
    char *save = NULL;
    size_t i = 0;
    for (char *tok = strtok_r(pieces, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++)
        cr_assert_eq(ts_vocab_id(v, tok), ids[i], "piece '%s'", tok);
    cr_assert_eq(i, n);
    free(pieces);
    free(ids);
    ts_vocab_free(v);
    ts_subword_free(sw);
}

// Hostile models whose header is right (length, CRC) but whose content is no
// model tinyseq writes (issue 38: `nmt_nfkc` with a 4-byte character map made
// SentencePiece segfault on encoding) are refused, naming the field; the
// same edit that leaves the field as it was loads and encodes.
Test(subword, crafted_models_are_refused_naming_the_field) {
    NEEDS_SPM();
    ts_subword *sw = toy_model(400), *got;
    size_t n, len;
    const uint8_t *bytes = ts_subword_bytes(sw, &n);
    uint8_t *same = crafted_subword(bytes, n, 3, 0, "\x0a\x08identity\x12\x00", 12, &len);
    cr_assert(len == n && !memcmp(same, bytes, n), "rewriting the normalizer as it is changed the bytes");
    free(same);
    for (size_t i = 0; i < crafted_subword_count; i++) {
        const crafted_case *c = &crafted_subword_cases[i];
        uint8_t *crafted = crafted_subword(bytes, n, c->field, c->occurrence, c->content, c->len, &len);
        got = NULL;
        int rc = ts_subword_load(crafted, len, &got);
        if (rc == TS_OK) {  // what SentencePiece would do with it (old tinyseq: a SIGSEGV for case 0)
            char *pieces;
            if (ts_subword_encode(got, "the cat .", 9, &pieces, NULL, NULL) == TS_OK) free(pieces);
            ts_subword_free(got);
        }
        cr_expect_eq(rc, TS_ERR_FORMAT, "%s: loaded", c->what);
        cr_expect(rc == TS_OK || strstr(ts_last_error(), c->says), "%s: the message does not say '%s': %s", c->what,
                  c->says, ts_last_error());
        free(crafted);
    }
    ts_subword_free(sw);
}

// The piece -> word map needs no model, so it runs in every build.
Test(subword, pieces_map_to_the_words_decoding_makes) {
    const char *pieces[] = {"\xe2\x96\x81l'", "homme", "\xe2\x96\x81", "<0xE2>", "<0x98>", "<0x83>",
                            "\xe2\x96\x81.", "s"};
    int32_t word_of[8];
    cr_assert_eq(ts_subword_words(pieces, 8, word_of), 3);
    const int32_t want[8] = {0, 0, 1, 1, 1, 1, 2, 2};
    for (int i = 0; i < 8; i++) cr_assert_eq(word_of[i], want[i], "piece %d", i);
    // A first piece without the mark still opens word 0.
    const char *tail[] = {"mme", "\xe2\x96\x81" "a"};
    cr_assert_eq(ts_subword_words(tail, 2, word_of), 2);
    cr_assert_eq(word_of[0], 0);
    cr_assert_eq(word_of[1], 1);
    cr_assert_eq(ts_subword_words(NULL, 0, word_of), 0);
}

Test(subword, a_build_without_sentencepiece_says_so) {
    if (ts_subword_compiled()) cr_skip_test("this build has SentencePiece: the refusal belongs to -DTS_SPM=OFF");
    const char *one[] = {"a b c"};
    ts_subword *sw = (ts_subword *)one;
    cr_assert_eq(ts_subword_train(one, 1, &(ts_subword_opts){.vocab_size = 400}, &sw), TS_ERR_ARG);
    cr_assert_null(sw);
    cr_assert(strstr(ts_last_error(), "TS_SPM=OFF"), "%s", ts_last_error());
    cr_assert_eq(ts_subword_load("TSSP", 4, &sw), TS_ERR_ARG);
}
