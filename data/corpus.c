#include "data/corpus.h"

#include "data/normalize.h"
#include "tensor/arena.h"
#include "tensor/status.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// ---- building ------------------------------------------------------------

// The arena's first block; it chains blocks twice as large as the corpus
// grows. Pairs are never removed one by one, so one arena per corpus saves
// a malloc per pair and frees everything at once.
enum { CORPUS_ARENA_START = 1 << 16 };

ts_corpus *ts_corpus_new(void) {
    ts_corpus *c = calloc(1, sizeof *c);
    if (c) c->arena = ts_arena_new(CORPUS_ARENA_START);
    if (!c || !c->arena) {
        free(c);
        ts_fail(TS_ERR_NOMEM, "out of memory allocating a corpus");
        return NULL;
    }
    return c;
}

void ts_corpus_free(ts_corpus *c) {
    if (!c) return;
    ts_arena_free(c->arena);
    free(c->pairs);
    free(c);
}

static size_t count_tokens(const char *s) {
    size_t n = 0;
    for (int in = 0; *s; s++) {
        if (*s == ' ') in = 0;
        else if (!in) in = 1, n++;
    }
    return n;
}

// Copies the space-separated tokens of `s` (strlen(s) + 1 bytes) to `text`
// as NUL-terminated strings and points toks[0 .. n - 1] at them.
static void store_tokens(char **toks, char *text, const char *s, size_t bytes) {
    memcpy(text, s, bytes);
    size_t k = 0;
    for (char *p = text; *p;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        toks[k++] = p;
        while (*p && *p != ' ') p++;
    }
}

static int link_cmp(const void *a, const void *b) {
    const ts_link *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    return (x->tgt > y->tgt) - (x->tgt < y->tgt);
}

int ts_corpus_add(ts_corpus *c, const char *src, const char *tgt,
                  const ts_link *links, size_t n_links) {
    size_t ns = count_tokens(src), nt = count_tokens(tgt);
    if (!ns || !nt) return ts_fail(TS_ERR_ARG, "empty %s side", ns ? "target" : "source");
    if (ns > INT32_MAX || nt > INT32_MAX) return ts_fail(TS_ERR_ARG, "sentence too long");
    int aligned = links != NULL;
    if (c->n_pairs && aligned != c->has_align)
        return ts_fail(TS_ERR_ARG, "a corpus is aligned throughout or not at all");
    for (size_t i = 0; i < n_links; i++) {
        int32_t s = links[i].src, t = links[i].tgt;
        if (t < 0 || (size_t)t >= nt || s < TS_UNALIGNED || (s >= 0 && (size_t)s >= ns))
            return ts_fail(TS_ERR_ARG, "alignment link %d-%d out of range for %zu-%zu tokens",
                           (int)s, (int)t, ns, nt);
    }
    if (c->n_pairs == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        ts_pair *p = realloc(c->pairs, cap * sizeof *p);
        if (!p) return ts_fail(TS_ERR_NOMEM, "out of memory growing a corpus");
        c->pairs = p;
        c->cap = cap;
    }
    // The links first: sort, drop duplicates and redundant TS_UNALIGNED
    // marks, then mark every target token that no link covers.
    ts_link *all = NULL;
    size_t m = 0;
    if (aligned) {
        unsigned char *covered = calloc(nt, 1);
        all = malloc((n_links + nt) * sizeof *all);
        if (!covered || !all) {
            free(covered);
            free(all);
            return ts_fail(TS_ERR_NOMEM, "out of memory storing an alignment");
        }
        size_t n = 0;
        for (size_t i = 0; i < n_links; i++)
            if (links[i].src != TS_UNALIGNED) {
                all[n++] = links[i];
                covered[links[i].tgt] = 1;
            }
        for (size_t j = 0; j < nt; j++)
            if (!covered[j]) all[n++] = (ts_link){TS_UNALIGNED, (int32_t)j};
        qsort(all, n, sizeof *all, link_cmp);
        for (size_t i = 0; i < n; i++)
            if (!m || link_cmp(&all[m - 1], &all[i])) all[m++] = all[i];
        free(covered);
    }
    // The pair in one block of the arena: (ns) and (nt) token pointers, (m)
    // links, then the two sides' text.
    size_t src_bytes = strlen(src) + 1, tgt_bytes = strlen(tgt) + 1;
    char **toks = ts_arena_alloc(c->arena, (ns + nt) * sizeof *toks + m * sizeof *all + src_bytes + tgt_bytes);
    if (!toks) {
        free(all);
        return ts_fail(TS_ERR_NOMEM, "out of memory storing a pair");
    }
    ts_pair *p = &c->pairs[c->n_pairs];
    memset(p, 0, sizeof *p);
    p->src = toks;
    p->tgt = toks + ns;
    ts_link *stored = (ts_link *)(toks + ns + nt);
    char *text = (char *)(stored + m);
    store_tokens(p->src, text, src, src_bytes);
    store_tokens(p->tgt, text + src_bytes, tgt, tgt_bytes);
    p->src_len = (int32_t)ns;
    p->tgt_len = (int32_t)nt;
    if (aligned) {
        memcpy(stored, all, m * sizeof *all);
        p->links = stored;
        p->n_links = (int32_t)m;
        free(all);
    }
    c->has_align = aligned;
    c->n_pairs++;
    return TS_OK;
}

static const char *arena_text(ts_arena *arena, const char *text) {
    size_t len = strlen(text);
    char *copy = ts_arena_alloc(arena, len + 1);
    return copy ? memcpy(copy, text, len + 1) : NULL;
}

int ts_corpus_set_text(ts_corpus *c, size_t i, const char *src_text, const char *tgt_text) {
    ts_pair *p = &c->pairs[i];
    if (src_text && !(p->src_text = arena_text(c->arena, src_text))) return ts_fail(TS_ERR_NOMEM, "out of memory storing a pair");
    if (tgt_text && !(p->tgt_text = arena_text(c->arena, tgt_text))) return ts_fail(TS_ERR_NOMEM, "out of memory storing a pair");
    return TS_OK;
}

int ts_pair_text(const ts_pair *p, enum ts_side side, char **text) {
    const char *kept = side == TS_SRC ? p->src_text : p->tgt_text;
    char *const *words = side == TS_SRC ? p->src : p->tgt;
    size_t n = (size_t)(side == TS_SRC ? p->src_len : p->tgt_len), len = 1;
    if (kept) {
        *text = strdup(kept);
        return *text ? TS_OK : ts_fail(TS_ERR_NOMEM, "out of memory for a sentence");
    }
    for (size_t k = 0; k < n; k++) len += strlen(words[k]) + 1;
    char *out = *text = malloc(len);
    if (!out) return ts_fail(TS_ERR_NOMEM, "out of memory for %zu bytes of text", len);
    for (size_t k = 0; k < n; k++) {
        size_t w = strlen(words[k]);
        if (k) *out++ = ' ';
        memcpy(out, words[k], w);
        out += w;
    }
    *out = '\0';
    return TS_OK;
}

// ---- filtering -------------------------------------------------------------

typedef struct {
    size_t max_len;
    char **prefix;       // (n_prefixes) normalised token strings
    size_t *prefix_len;  // (n_prefixes) token counts
    size_t n_prefixes;
} filter;

static void filter_free(filter *f) {
    for (size_t i = 0; i < f->n_prefixes; i++) free(f->prefix[i]);
    free(f->prefix);
    free(f->prefix_len);
    memset(f, 0, sizeof *f);
}

static int filter_init(filter *f, const ts_corpus_opts *opts) {
    memset(f, 0, sizeof *f);
    if (!opts) return TS_OK;
    f->max_len = opts->max_len;
    if (!opts->n_prefixes) return TS_OK;
    f->prefix = calloc(opts->n_prefixes, sizeof *f->prefix);
    f->prefix_len = calloc(opts->n_prefixes, sizeof *f->prefix_len);
    if (!f->prefix || !f->prefix_len) {
        filter_free(f);
        return ts_fail(TS_ERR_NOMEM, "out of memory");
    }
    f->n_prefixes = opts->n_prefixes;
    for (size_t i = 0; i < opts->n_prefixes; i++) {
        const char *p = opts->prefixes[i];
        int st = ts_normalize(p, strlen(p), &f->prefix[i], &f->prefix_len[i]);
        if (st == TS_OK && f->prefix_len[i] == 0) st = ts_fail(TS_ERR_ARG, "empty prefix");
        if (st != TS_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", ts_last_error());
            filter_free(f);
            return ts_fail(st, "source prefix '%s': %s", p, why);
        }
    }
    return TS_OK;
}

// Whether tokens[0..n) start with the space-separated tokens of `prefix`.
static int starts_with_tokens(char *const *tokens, size_t n, const char *prefix, size_t n_prefix) {
    if (n_prefix > n) return 0;
    for (size_t k = 0; k < n_prefix; k++) {
        size_t len = strcspn(prefix, " ");
        if (strlen(tokens[k]) != len || memcmp(tokens[k], prefix, len)) return 0;
        prefix += len + (prefix[len] == ' ');
    }
    return 1;
}

static int filter_keeps(const filter *f, char *const *src, size_t ns, size_t nt) {
    if (f->max_len && (ns > f->max_len || nt > f->max_len)) return 0;
    if (!f->n_prefixes) return 1;
    for (size_t i = 0; i < f->n_prefixes; i++)
        if (starts_with_tokens(src, ns, f->prefix[i], f->prefix_len[i])) return 1;
    return 0;
}

// The same test on a normalised token string (single spaces between tokens).
static int filter_keeps_text(const filter *f, const char *src, size_t ns, size_t nt) {
    if (f->max_len && (ns > f->max_len || nt > f->max_len)) return 0;
    if (!f->n_prefixes) return 1;
    for (size_t i = 0; i < f->n_prefixes; i++) {
        size_t len = strlen(f->prefix[i]);
        if (!strncmp(src, f->prefix[i], len) && (src[len] == ' ' || src[len] == '\0')) return 1;
    }
    return 0;
}

int ts_corpus_filter(ts_corpus *c, const ts_corpus_opts *opts) {
    filter f;
    int st = filter_init(&f, opts);
    if (st != TS_OK) return st;
    size_t kept = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        ts_pair *p = &c->pairs[i];
        if (filter_keeps(&f, p->src, (size_t)p->src_len, (size_t)p->tgt_len))
            c->pairs[kept++] = *p;
    }
    c->n_filtered += c->n_pairs - kept;
    c->n_pairs = kept;
    filter_free(&f);
    return TS_OK;
}

// ---- reading -----------------------------------------------------------------

// Reads one line into buf (capacity cap) without its end: "\n", "\r\n" or a
// lone "\r" (old Mac files, which would otherwise read as one line). Bytes
// beyond cap are counted but dropped, so memory stays bounded; *len is the
// full length. Returns 1 for a line, 0 at the end of the file, -1 on a read error.
static int read_line(FILE *f, char *buf, size_t cap, size_t *len) {
    size_t n = 0;
    int ch;
    while ((ch = getc_unlocked(f)) != EOF && ch != '\n' && ch != '\r') {
        if (n < cap) buf[n] = (char)ch;
        n++;
    }
    if (ch == '\r') {
        int next = getc_unlocked(f);
        if (next != '\n' && next != EOF) ungetc(next, f);
    }
    if (ch == EOF) {
        if (ferror(f)) return -1;
        if (n == 0) return 0;
    }
    *len = n;
    return 1;
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

// Normalises one line into the words *src / *tgt and, when norm keeps the
// text, its texts into text[0] / text[1] (else they stay NULL). Returns TS_OK
// or TS_ERR_FORMAT / TS_ERR_NOMEM with a message that does not yet name file:line.
static int parse_line(const char *line, size_t len, const ts_normalisation_kind *norm, char **src, size_t *ns,
                      char **tgt, size_t *nt, char *text[2]) {
    *src = *tgt = text[0] = text[1] = NULL;
    if (len > TS_LINE_MAX)
        return ts_fail(TS_ERR_FORMAT, "line longer than %d bytes", TS_LINE_MAX);
    const char *nul = memchr(line, '\0', len);
    if (nul) return ts_fail(TS_ERR_FORMAT, "NUL byte at byte %zu", (size_t)(nul - line) + 1);
    const char *tab = memchr(line, '\t', len);
    if (!tab) return ts_fail(TS_ERR_FORMAT, "no tab (expected source<TAB>target)");
    const char *t0 = tab + 1, *end = line + len;
    const char *t1 = memchr(t0, '\t', (size_t)(end - t0));
    if (!t1) t1 = end;
    static const char *const side_name[2] = {"source", "target"};
    const char *from[2] = {line, t0}, *to[2] = {tab, t1};
    char **out[2] = {src, tgt};
    size_t *count[2] = {ns, nt};
    for (int s = 0; s < 2; s++) {
        int st = ts_normalize(from[s], (size_t)(to[s] - from[s]), out[s], count[s]);
        if (st == TS_OK && *count[s] == 0) st = ts_fail(TS_ERR_FORMAT, "empty");
        if (st == TS_OK && norm->keeps_text) st = norm->apply(from[s], (size_t)(to[s] - from[s]), &text[s], NULL);
        if (st != TS_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", ts_last_error());
            free(*src);
            free(*tgt);
            free(text[0]);
            free(text[1]);
            *src = *tgt = text[0] = text[1] = NULL;
            if (st == TS_ERR_FORMAT && !strcmp(why, "empty"))
                return ts_fail(st, "empty %s side", side_name[s]);
            return ts_fail(st, "%s side: %s", side_name[s], why);
        }
    }
    return TS_OK;
}

int ts_corpus_read(const char *path, const ts_corpus_opts *opts, ts_corpus **out) {
    *out = NULL;
    if (opts && (opts->normalisation < 0 || opts->normalisation >= TS_NORM_COUNT))
        return ts_fail(TS_ERR_ARG, "normalisation %d does not exist", (int)opts->normalisation);
    FILE *f = fopen(path, "rb");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    filter flt;
    int st = filter_init(&flt, opts);
    if (st != TS_OK) {
        fclose(f);
        return st;
    }
    int skip_bad = opts && opts->skip_bad;
    const ts_normalisation_kind *norm = &ts_normalisations[opts ? opts->normalisation : TS_NORM_SPLIT];
    // Room for the longest line plus a BOM (3 bytes) and a '\r'; anything
    // longer is too long whatever it holds.
    size_t cap = TS_LINE_MAX + 4;
    char *line = malloc(cap);
    ts_corpus *c = ts_corpus_new();
    if (!line || !c) {
        st = ts_fail(TS_ERR_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    size_t lineno = 0, len, n_content = 0;
    int got;
    while ((got = read_line(f, line, cap, &len)) == 1) {
        lineno++;
        char *s = line;
        char *src = NULL, *tgt = NULL, *text[2] = {NULL, NULL};
        size_t ns, nt;
        if (len > cap) {
            n_content++;
            st = ts_fail(TS_ERR_FORMAT, "line longer than %d bytes", TS_LINE_MAX);
        } else {
            if (lineno == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) s += 3, len -= 3;
            if (len && s[len - 1] == '\r') len--;
            if (is_blank(s, len)) continue;
            n_content++;
            st = parse_line(s, len, norm, &src, &ns, &tgt, &nt, text);
        }
        if (st == TS_ERR_FORMAT && skip_bad) {
            if (c->n_bad == 0) snprintf(c->bad_why, sizeof c->bad_why, "%s", ts_last_error());
            if (c->n_bad < TS_CORPUS_BAD_NAMED) c->bad_lines[c->n_bad] = lineno;
            c->n_bad++;
            continue;
        }
        if (st != TS_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", ts_last_error());
            st = ts_fail(st, "%s:%zu: %s", path, lineno, why);
            goto done;
        }
        // Filter before storing: the arena never gives memory back.
        if (filter_keeps_text(&flt, src, ns, nt)) {
            st = ts_corpus_add(c, src, tgt, NULL, 0);
            if (!st) st = ts_corpus_set_text(c, c->n_pairs - 1, text[0], text[1]);
        } else {
            c->n_filtered++;
        }
        free(src);
        free(tgt);
        free(text[0]);
        free(text[1]);
        if (st != TS_OK) goto done;
    }
    c->n_lines = lineno;
    if (got < 0) {
        st = ts_fail(TS_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    } else if (n_content == 0) {
        st = ts_fail(TS_ERR_FORMAT, "'%s' is empty: no sentence pairs", path);
    } else if (c->n_bad == n_content) {
        st = ts_fail(TS_ERR_FORMAT, "'%s': all %zu lines are malformed", path, c->n_bad);
    } else {
        st = TS_OK;
    }
done:
    free(line);
    filter_free(&flt);
    fclose(f);
    if (st != TS_OK) {
        ts_corpus_free(c);
        return st;
    }
    *out = c;
    return TS_OK;
}

char *ts_corpus_skipped(const ts_corpus *c, char *buf, size_t n) {
    size_t used = 0, named = c->n_bad < TS_CORPUS_BAD_NAMED ? c->n_bad : TS_CORPUS_BAD_NAMED;
#define PUT(...) used += (size_t)snprintf(buf + used, used < n ? n - used : 0, __VA_ARGS__)
    if (n) buf[0] = '\0';
    if (c->n_bad == 1) {
        PUT("line %zu (%s)", c->bad_lines[0], c->bad_why);
        return buf;
    }
    for (size_t i = 0; i < named; i++)
        PUT("%s%zu", i == 0 ? "lines " : i + 1 == named && named == c->n_bad ? " and " : ", ", c->bad_lines[i]);
    if (c->n_bad > named) PUT(" and %zu more", c->n_bad - named);
    if (c->n_bad) PUT(" (line %zu: %s)", c->bad_lines[0], c->bad_why);
#undef PUT
    return buf;
}

// ---- writing -----------------------------------------------------------------

// One side: its text when the pair kept one, else its tokens joined by spaces.
static void write_side(FILE *f, const char *text, char *const *toks, int32_t n) {
    if (text) {
        fputs(text, f);
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        if (i) putc(' ', f);
        fputs(toks[i], f);
    }
}

int ts_corpus_write_tsv(const ts_corpus *c, FILE *f) { return ts_corpus_write_rows(c, NULL, c->n_pairs, f); }

int ts_corpus_write_rows(const ts_corpus *c, const size_t *rows, size_t n, FILE *f) {
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = &c->pairs[rows ? rows[i] : i];
        write_side(f, p->src_text, p->src, p->src_len);
        putc('\t', f);
        write_side(f, p->tgt_text, p->tgt, p->tgt_len);
        putc('\n', f);
    }
    if (fflush(f) || ferror(f)) return ts_fail(TS_ERR_IO, "cannot write the corpus: %s", strerror(errno));
    return TS_OK;
}

int ts_corpus_write_align(const ts_corpus *c, FILE *f) {
    if (!c->has_align) return ts_fail(TS_ERR_ARG, "the corpus has no gold alignments");
    for (size_t i = 0; i < c->n_pairs; i++) ts_pharaoh_write(f, c->pairs[i].links, (size_t)c->pairs[i].n_links);
    if (fflush(f) || ferror(f)) return ts_fail(TS_ERR_IO, "cannot write the alignments: %s", strerror(errno));
    return TS_OK;
}

// ---- splitting -----------------------------------------------------------------

static int size_cmp(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

int ts_corpus_split(const ts_corpus *c, gsl_rng *rng, size_t n_dev, size_t n_test,
                    ts_split *split) {
    memset(split, 0, sizeof *split);
    size_t n = c->n_pairs;
    if (n_dev > n || n_test > n - n_dev || n_dev + n_test == n)
        return ts_fail(TS_ERR_ARG, "cannot hold out %zu dev + %zu test pairs from %zu: "
                       "nothing would be left to train on", n_dev, n_test, n);
    size_t *order = malloc(n * sizeof *order);
    split->dev = malloc((n_dev ? n_dev : 1) * sizeof *split->dev);
    split->test = malloc((n_test ? n_test : 1) * sizeof *split->test);
    split->train = malloc((n - n_dev - n_test) * sizeof *split->train);
    if (!order || !split->dev || !split->test || !split->train) {
        free(order);
        ts_split_free(split);
        return ts_fail(TS_ERR_NOMEM, "out of memory splitting %zu pairs", n);
    }
    for (size_t i = 0; i < n; i++) order[i] = i;
    gsl_ran_shuffle(rng, order, n, sizeof *order);
    split->n_dev = n_dev;
    split->n_test = n_test;
    split->n_train = n - n_dev - n_test;
    memcpy(split->dev, order, n_dev * sizeof *order);
    memcpy(split->test, order + n_dev, n_test * sizeof *order);
    memcpy(split->train, order + n_dev + n_test, split->n_train * sizeof *order);
    free(order);
    qsort(split->dev, split->n_dev, sizeof *order, size_cmp);
    qsort(split->test, split->n_test, sizeof *order, size_cmp);
    qsort(split->train, split->n_train, sizeof *order, size_cmp);
    return TS_OK;
}

void ts_split_free(ts_split *split) {
    free(split->train);
    free(split->dev);
    free(split->test);
    memset(split, 0, sizeof *split);
}
