// Scoring translations: corpus BLEU (NLTK's and sacreBLEU's), chrF,
// perplexity and exact match. See score.h for the definitions.
#include "infer/score.h"

#include "tensor/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- BLEU ------------------------------------------------------------------

// One n-gram padded with zeros to the longest order, tagged with the side it
// came from, so that a plain qsort groups equal n-grams of one order together.
// BLEU counts token ids, chrF code points; both fit in int32.
enum { NGRAM_MAX = 6 };
_Static_assert((int)TS_BLEU_ORDER <= (int)NGRAM_MAX && (int)TS_CHRF_ORDER <= (int)NGRAM_MAX, "n-gram too long");

typedef struct {
    int32_t tok[NGRAM_MAX];
    int32_t from_ref;  // 0 hypothesis, 1 reference
} ngram;

static int ngram_cmp(const void *pa, const void *pb) {
    const ngram *a = pa, *b = pb;
    for (int k = 0; k < NGRAM_MAX; k++) {
        if (a->tok[k] != b->tok[k]) return a->tok[k] < b->tok[k] ? -1 : 1;
    }
    return 0;  // the tag is ignored: runs of equal n-grams mix both sides
}

static size_t fill_ngrams(ngram *out, const int32_t *seq, size_t len, int n, int from_ref) {
    if (len < (size_t)n) return 0;
    size_t count = len - (size_t)n + 1;
    for (size_t p = 0; p < count; p++) {
        memset(&out[p], 0, sizeof out[p]);
        memcpy(out[p].tok, seq + p, (size_t)n * sizeof *seq);
        out[p].from_ref = from_ref;
    }
    return count;
}

// Room for the n-grams of one hypothesis/reference pair: *grams is malloc'd
// (NULL when both are empty). what names the metric in the error.
static int alloc_ngrams(ngram **grams, size_t hyp_len, size_t ref_len, const char *what) {
    size_t cap = hyp_len + ref_len;
    *grams = NULL;
    if (cap == 0) return TS_OK;
    if (cap < hyp_len || cap > SIZE_MAX / sizeof **grams)
        return ts_fail(TS_ERR_NOMEM, "%s: sentence of %zu + %zu symbols is too long", what, hyp_len, ref_len);
    *grams = malloc(cap * sizeof **grams);
    if (!*grams) return ts_fail(TS_ERR_NOMEM, "%s: no memory for %zu n-grams", what, cap);
    return TS_OK;
}

// Counts the order-n n-grams of hyp and ref and their clipped matches: each
// distinct n-gram scores min(#hyp, #ref). grams has room for both.
static int64_t clipped_matches(ngram *grams, const int32_t *hyp, size_t hyp_len,
                               const int32_t *ref, size_t ref_len, int n,
                               int64_t *n_hyp, int64_t *n_ref) {
    size_t nh = fill_ngrams(grams, hyp, hyp_len, n, 0);
    size_t nr = fill_ngrams(grams + nh, ref, ref_len, n, 1);
    if (nh + nr > 0) qsort(grams, nh + nr, sizeof *grams, ngram_cmp);
    int64_t matched = 0;
    for (size_t p = 0; p < nh + nr;) {
        size_t q = p;
        int64_t in_hyp = 0, in_ref = 0;
        for (; q < nh + nr && ngram_cmp(&grams[p], &grams[q]) == 0; q++) {
            if (grams[q].from_ref) in_ref++;
            else in_hyp++;
        }
        matched += in_hyp < in_ref ? in_hyp : in_ref;
        p = q;
    }
    *n_hyp = (int64_t)nh;
    *n_ref = (int64_t)nr;
    return matched;
}

void ts_bleu_init(ts_bleu *acc) { memset(acc, 0, sizeof *acc); }

int ts_bleu_add(ts_bleu *acc, const int32_t *hyp, size_t hyp_len,
                const int32_t *ref, size_t ref_len) {
    int64_t matches[TS_BLEU_ORDER], totals[TS_BLEU_ORDER], ngrams[TS_BLEU_ORDER];
    ngram *grams;
    int rc = alloc_ngrams(&grams, hyp_len, ref_len, "bleu");
    if (rc != TS_OK) return rc;
    for (int n = 1; n <= TS_BLEU_ORDER; n++) {
        int64_t nh, nr;
        matches[n - 1] = clipped_matches(grams, hyp, hyp_len, ref, ref_len, n, &nh, &nr);
        // NLTK's max(1, count): an order the sentence is too short for still
        // adds 1 to the denominator.
        totals[n - 1] = nh > 0 ? nh : 1;
        ngrams[n - 1] = nh;
    }
    free(grams);
    for (int k = 0; k < TS_BLEU_ORDER; k++) {
        acc->matches[k] += matches[k];
        acc->totals[k] += totals[k];
        acc->ngrams[k] += ngrams[k];
    }
    acc->hyp_len += (int64_t)hyp_len;
    acc->ref_len += (int64_t)ref_len;
    acc->sentences++;
    return TS_OK;
}

void ts_bleu_merge(ts_bleu *into, const ts_bleu *from) {
    for (int k = 0; k < TS_BLEU_ORDER; k++) {
        into->matches[k] += from->matches[k];
        into->totals[k] += from->totals[k];
        into->ngrams[k] += from->ngrams[k];
    }
    into->hyp_len += from->hyp_len;
    into->ref_len += from->ref_len;
    into->sentences += from->sentences;
}

double ts_bleu_brevity_penalty(int64_t hyp_len, int64_t ref_len) {
    if (hyp_len > ref_len) return 1.0;
    if (hyp_len == 0) return 0.0;
    return exp(1.0 - (double)ref_len / (double)hyp_len);
}

double ts_bleu_score(const ts_bleu *acc) {
    double log_sum = 0.0;
    for (int k = 0; k < TS_BLEU_ORDER; k++) {
        if (acc->matches[k] == 0 || acc->totals[k] == 0) return 0.0;
        log_sum += 0.25 * log((double)acc->matches[k] / (double)acc->totals[k]);
    }
    return ts_bleu_brevity_penalty(acc->hyp_len, acc->ref_len) * exp(log_sum);
}

int ts_bleu_zero_order(const ts_bleu *acc) {
    for (int k = 0; k < TS_BLEU_ORDER; k++)
        if (acc->matches[k] == 0) return k + 1;
    return 0;
}

// ---- chrF ------------------------------------------------------------------

// Python's str.isspace() for the code points sacreBLEU's split() drops.
static int is_unicode_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point at s[i] (i < len) into *cp and its length in bytes. A byte
// that does not start a well-formed sequence is one code point,
// U+DC80..U+DCFF, as Python's surrogateescape reads it.
static size_t decode_at(const unsigned char *s, size_t len, size_t i, int32_t *cp) {
    unsigned c = s[i];
    int extra = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 ? (c <= 0xEF ? 2 : -1) : c >= 0xC2 ? 1 : c < 0x80 ? 0 : -1;
    int32_t v = extra > 0 ? (int32_t)(c & (0x3F >> extra)) : (int32_t)c;
    int ok = extra >= 0 && i + (size_t)extra < len;
    for (int k = 1; ok && k <= extra; k++) {
        if ((s[i + k] & 0xC0) != 0x80) ok = 0;
        else v = (v << 6) | (s[i + k] & 0x3F);
    }
    // Overlong three/four-byte forms, surrogates and values past U+10FFFF.
    if (ok && extra == 2 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ok = 0;
    if (ok && extra == 3 && (v < 0x10000 || v > 0x10FFFF)) ok = 0;
    *cp = ok ? v : 0xDC00 + (int32_t)c;
    return ok ? (size_t)extra + 1 : 1;
}

// Decodes UTF-8 into code points, dropping whitespace; returns the count.
// out needs room for len entries.
static size_t code_points(const char *text, size_t len, int32_t *out) {
    const unsigned char *s = (const unsigned char *)text;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int32_t cp;
        i += decode_at(s, len, i, &cp);
        if (!is_unicode_space(cp)) out[n++] = cp;
    }
    return n;
}

int ts_chrf_add(ts_chrf *acc, const char *hyp, size_t hyp_len, const char *ref, size_t ref_len) {
    int64_t counts[TS_CHRF_ORDER][3];
    size_t cap = hyp_len + ref_len;
    if (cap < hyp_len || cap > SIZE_MAX / sizeof(int32_t))
        return ts_fail(TS_ERR_NOMEM, "chrf: sentence of %zu + %zu bytes is too long", hyp_len, ref_len);
    int32_t *chars = malloc((cap ? cap : 1) * sizeof *chars);
    if (!chars) return ts_fail(TS_ERR_NOMEM, "chrf: no memory for %zu characters", cap);
    size_t nh = code_points(hyp, hyp_len, chars);
    size_t nr = code_points(ref, ref_len, chars + nh);
    ngram *grams;
    int rc = alloc_ngrams(&grams, nh, nr, "chrf");
    if (rc != TS_OK) {
        free(chars);
        return rc;
    }
    for (int n = 1; n <= TS_CHRF_ORDER; n++)
        counts[n - 1][2] = clipped_matches(grams, chars, nh, chars + nh, nr, n,
                                           &counts[n - 1][0], &counts[n - 1][1]);
    free(grams);
    free(chars);
    for (int k = 0; k < TS_CHRF_ORDER; k++) {
        acc->hyp[k] += counts[k][0];
        acc->ref[k] += counts[k][1];
        acc->matches[k] += counts[k][2];
    }
    acc->sentences++;
    return TS_OK;
}

double ts_chrf_score(const ts_chrf *acc) {
    // sacreBLEU 2.x without eps smoothing: average precision and recall over
    // the orders both sides have n-grams of, then F-beta of the averages.
    double precision = 0.0, recall = 0.0;
    int orders = 0;
    for (int k = 0; k < TS_CHRF_ORDER; k++) {
        if (acc->hyp[k] > 0 && acc->ref[k] > 0) {
            precision += (double)acc->matches[k] / (double)acc->hyp[k];
            recall += (double)acc->matches[k] / (double)acc->ref[k];
            orders++;
        }
    }
    if (orders == 0) return 0.0;
    precision /= orders;
    recall /= orders;
    if (precision + recall == 0.0) return 0.0;
    double b2 = (double)TS_CHRF_BETA * TS_CHRF_BETA;
    return (1 + b2) * precision * recall / (b2 * precision + recall);
}

// ---- BLEU on text as written (sacreBLEU) -------------------------------------

// The length of the whitespace code point at s[i] (Python's str.isspace), 0
// when s[i] starts anything else.
static size_t space_at(const unsigned char *s, size_t len, size_t i) {
    int32_t cp;
    size_t k = decode_at(s, len, i, &cp);
    return is_unicode_space(cp) ? k : 0;
}

// s[0..*n) with every non-overlapping `from` (left to right) replaced by
// `to`, in place: str.replace for a `to` no longer than `from`.
static void replace_all(char *s, size_t *n, const char *from, const char *to) {
    size_t lf = strlen(from), lt = strlen(to), w = 0;
    for (size_t r = 0; r < *n;) {
        if (r + lf <= *n && !memcmp(s + r, from, lf)) {
            memcpy(s + w, to, lt);
            w += lt;
            r += lf;
        } else {
            s[w++] = s[r++];
        }
    }
    *n = w;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

// 13a's first rule: the ASCII symbols [{-~[-` -&(-+:-@/] that get spaces around them.
static int is_13a_symbol(char c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
           (c >= ':' && c <= '@') || c == '/';
}

// The substitution rules after the first, each a pair of characters (a, b)
// re.sub rewrites as "a b " or " a b"; the text is read by bytes, which is
// the same here: every mark is ASCII, and a character of several bytes
// matches "not a digit" by its last byte before a mark and its first after
// one, while its other bytes can start no match.
typedef enum { PAIR_SPLIT_AFTER_FIRST, PAIR_SPLIT_BEFORE_FIRST } pair_rewrite;
typedef struct {
    int (*first)(char c), (*second)(char c);
    pair_rewrite rewrite;  // AFTER: "a b " (rules 2 and 4), BEFORE: " a b" (rule 3)
} pair_rule;

static int not_digit(char c) { return !is_digit(c); }
static int is_period_or_comma(char c) { return c == '.' || c == ','; }
static int is_dash(char c) { return c == '-'; }

static const pair_rule rules_13a[] = {
    {not_digit, is_period_or_comma, PAIR_SPLIT_AFTER_FIRST},   // ([^0-9])([\.,]) -> "\1 \2 "
    {is_period_or_comma, not_digit, PAIR_SPLIT_BEFORE_FIRST},  // ([\.,])([^0-9]) -> " \1 \2"
    {is_digit, is_dash, PAIR_SPLIT_AFTER_FIRST},               // ([0-9])(-)      -> "\1 \2 "
};

// One pair rule over in[0..n) into out (room for 2n: each match of two
// bytes writes four). Returns the new length.
static size_t apply_pair_rule(const pair_rule *rule, const char *in, size_t n, char *out) {
    size_t w = 0;
    for (size_t r = 0; r < n;) {
        if (r + 1 < n && rule->first(in[r]) && rule->second(in[r + 1])) {
            const char *form = rule->rewrite == PAIR_SPLIT_AFTER_FIRST ? "a b " : " a b";
            for (const char *f = form; *f; f++) out[w++] = *f == 'a' ? in[r] : *f == 'b' ? in[r + 1] : ' ';
            r += 2;  // the second character is consumed by the match
        } else {
            out[w++] = in[r++];
        }
    }
    return w;
}

int ts_tokenize_13a(const char *text, size_t len, char **tokens, size_t *n_tokens) {
    *tokens = NULL;
    if (n_tokens) *n_tokens = 0;
    const unsigned char *u = (const unsigned char *)text;
    // rstrip: the segment ends after its last code point that is not whitespace.
    size_t end = 0;
    for (size_t i = 0; i < len;) {
        size_t k = space_at(u, len, i);
        if (!k) {
            int32_t cp;
            k = decode_at(u, len, i, &cp);
            end = i + k;
        }
        i += k;
    }
    // Each pair rule at most doubles the text, the symbol rule triples it.
    size_t rules = sizeof rules_13a / sizeof rules_13a[0], growth = 3;
    for (size_t r = 0; r < rules; r++) growth *= 2;
    if (end > (SIZE_MAX - 3) / growth) return ts_fail(TS_ERR_NOMEM, "13a: a segment of %zu bytes is too long", end);
    size_t cap = (end + 2) * growth + 1;
    char *a = malloc(cap), *b = malloc(cap);
    if (!a || !b) {
        free(a);
        free(b);
        return ts_fail(TS_ERR_NOMEM, "13a: no memory for a segment of %zu bytes", end);
    }
    // The language-independent part, one str.replace after the other.
    size_t n = end;
    memcpy(a, text, n);
    static const char *const replaced[][2] = {{"<skipped>", ""}, {"-\n", ""}, {"\n", " "}, {"&quot;", "\""},
                                              {"&amp;", "&"},    {"&lt;", "<"}, {"&gt;", ">"}};
    for (size_t k = 0; k < sizeof replaced / sizeof replaced[0]; k++) replace_all(a, &n, replaced[k][0], replaced[k][1]);
    // " {} ".format(line), then the symbols spaced.
    size_t w = 0;
    b[w++] = ' ';
    for (size_t r = 0; r < n; r++) {
        if (is_13a_symbol(a[r])) {
            b[w++] = ' ';
            b[w++] = a[r];
            b[w++] = ' ';
        } else {
            b[w++] = a[r];
        }
    }
    b[w++] = ' ';
    n = w;
    for (size_t r = 0; r < rules; r++) {
        n = apply_pair_rule(&rules_13a[r], b, n, a);
        char *t = a;
        a = b;
        b = t;
    }
    // ' '.join(line.split()) into a.
    const unsigned char *v = (const unsigned char *)b;
    size_t count = 0;
    w = 0;
    for (size_t i = 0; i < n;) {
        size_t k = space_at(v, n, i);
        if (k) {
            i += k;
            continue;
        }
        if (count++) a[w++] = ' ';
        while (i < n && !space_at(v, n, i)) a[w++] = b[i++];
    }
    a[w] = '\0';
    free(b);
    *tokens = a;
    if (n_tokens) *n_tokens = count;
    return TS_OK;
}

// The tokens of text (split on whitespace) as ids within one sentence pair:
// equal tokens get equal ids, counting on from *next. words[0..*n) and
// ids[0..*n) are the tokens seen so far (both sides); room for all is the
// caller's. Returns how many tokens text had.
static size_t word_ids(const char *text, const char **words, size_t *lens, int32_t *ids, size_t *n) {
    const unsigned char *u = (const unsigned char *)text;
    size_t len = strlen(text), first = *n;
    for (size_t i = 0; i < len;) {
        size_t k = space_at(u, len, i);
        if (k) {
            i += k;
            continue;
        }
        size_t start = i;
        while (i < len && !space_at(u, len, i)) i++;
        int32_t id = (int32_t)*n;
        for (size_t j = 0; j < *n; j++)
            if (lens[j] == i - start && !memcmp(words[j], text + start, i - start)) {
                id = ids[j];
                break;
            }
        words[*n] = text + start;
        lens[*n] = i - start;
        ids[(*n)++] = id;
    }
    return *n - first;
}

int ts_bleu_add_words(ts_bleu *acc, const char *hyp, const char *ref) {
    // At most one token per two bytes, plus one.
    size_t cap = strlen(hyp) / 2 + strlen(ref) / 2 + 2;
    const char **words = malloc(cap * sizeof *words);
    size_t *lens = malloc(cap * sizeof *lens);
    int32_t *ids = malloc(cap * sizeof *ids);
    int rc = words && lens && ids ? TS_OK : ts_fail(TS_ERR_NOMEM, "bleu: no memory for %zu tokens", cap);
    if (!rc) {
        size_t n = 0;
        size_t hyp_len = word_ids(hyp, words, lens, ids, &n);
        size_t ref_len = word_ids(ref, words, lens, ids, &n);
        rc = ts_bleu_add(acc, ids, hyp_len, ids + hyp_len, ref_len);
    }
    free(words);
    free(lens);
    free(ids);
    return rc;
}

double ts_bleu_score_sacrebleu(const ts_bleu *acc) {
    int any = 0;
    for (int k = 0; k < TS_BLEU_ORDER; k++) any |= acc->matches[k] != 0;
    if (!any) return 0.0;
    // compute_bleu in percent, as sacreBLEU has it, then the fraction.
    double log_sum = 0.0, smooth = 1.0;
    for (int k = 0; k < TS_BLEU_ORDER; k++) {
        if (acc->ngrams[k] == 0) return 0.0;  // its log(0): the score underflows to 0
        double precision;
        if (acc->matches[k] == 0) {
            smooth *= 2;
            precision = 100.0 / (smooth * (double)acc->ngrams[k]);
        } else {
            precision = 100.0 * (double)acc->matches[k] / (double)acc->ngrams[k];
        }
        log_sum += log(precision);
    }
    return ts_bleu_brevity_penalty(acc->hyp_len, acc->ref_len) * exp(log_sum / TS_BLEU_ORDER) / 100.0;
}

// ---- perplexity and exact match --------------------------------------------

double ts_perplexity(double nll_sum, size_t tokens) {
    if (tokens == 0) return NAN;
    return exp(nll_sum / (double)tokens);
}

void ts_exact_match_add(ts_exact_match *acc, const int32_t *hyp, size_t hyp_len,
                        const int32_t *ref, size_t ref_len) {
    int same = hyp_len == ref_len &&
               (hyp_len == 0 || memcmp(hyp, ref, hyp_len * sizeof *hyp) == 0);
    acc->matched += same;
    acc->total++;
}

double ts_exact_match_score(const ts_exact_match *acc) {
    return acc->total > 0 ? (double)acc->matched / (double)acc->total : 0.0;
}
