#include "data/vocab.h"

#include "tensor/status.h"

#include <stdlib.h>
#include <string.h>

static const char *const specials[TS_N_SPECIALS] = {"<pad>", "<sos>", "<eos>", "<unk>"};

struct ts_vocab {
    char **words;    // (n) id -> word, owned
    size_t *counts;  // (n)
    size_t n;
    int32_t *slots;  // (mask + 1) open addressing: an id, or -1 when empty
    size_t mask;
};

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int is_special(const char *w) {
    for (int i = 0; i < TS_N_SPECIALS; i++)
        if (!strcmp(w, specials[i])) return 1;
    return 0;
}

void ts_vocab_free(ts_vocab *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) free(v->words[i]);
    free(v->words);
    free(v->counts);
    free(v->slots);
    free(v);
}

// Makes a vocabulary of the specials followed by `words` (n_words, no
// specials among them) with their counts (NULL: zeros).
static int vocab_make(const char *const *words, const size_t *counts, size_t n_words,
                      ts_vocab **out) {
    *out = NULL;
    ts_vocab *v = calloc(1, sizeof *v);
    size_t n = n_words + TS_N_SPECIALS;
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;  // load factor <= 1/2
    if (v) {
        v->words = calloc(n, sizeof *v->words);
        v->counts = calloc(n, sizeof *v->counts);
        v->slots = malloc(cap * sizeof *v->slots);
    }
    if (!v || !v->words || !v->counts || !v->slots || n > INT32_MAX) {
        ts_vocab_free(v);
        return ts_fail(TS_ERR_NOMEM, "out of memory building a vocabulary of %zu words", n);
    }
    v->mask = cap - 1;
    memset(v->slots, 0xff, cap * sizeof *v->slots);
    for (size_t i = 0; i < n; i++) {
        const char *w = i < TS_N_SPECIALS ? specials[i] : words[i - TS_N_SPECIALS];
        v->words[i] = strdup(w);
        v->n = i + 1;
        if (!v->words[i]) {
            ts_vocab_free(v);
            return ts_fail(TS_ERR_NOMEM, "out of memory building a vocabulary");
        }
        if (i >= TS_N_SPECIALS && counts) v->counts[i] = counts[i - TS_N_SPECIALS];
        if (i < TS_N_SPECIALS) continue;  // specials are not looked up by name
        size_t h = (size_t)fnv1a(w) & v->mask;
        while (v->slots[h] >= 0) {
            if (!strcmp(v->words[v->slots[h]], w)) {
                ts_vocab_free(v);
                return ts_fail(TS_ERR_FORMAT, "duplicate vocabulary word '%s'", w);
            }
            h = (h + 1) & v->mask;
        }
        v->slots[h] = (int32_t)i;
    }
    *out = v;
    return TS_OK;
}

// ---- counting --------------------------------------------------------------

typedef struct {
    const char *word;  // points into the corpus
    size_t count;
} word_count;

typedef struct {
    word_count *slots;  // word == NULL: empty
    size_t mask, used;
} counter;

static int counter_add(counter *c, const char *w) {
    if (2 * (c->used + 1) > c->mask + 1) {
        size_t cap = 2 * (c->mask + 1);
        word_count *slots = calloc(cap, sizeof *slots);
        if (!slots) return TS_ERR_NOMEM;
        for (size_t i = 0; i <= c->mask; i++) {
            if (!c->slots[i].word) continue;
            size_t h = (size_t)fnv1a(c->slots[i].word) & (cap - 1);
            while (slots[h].word) h = (h + 1) & (cap - 1);
            slots[h] = c->slots[i];
        }
        free(c->slots);
        c->slots = slots;
        c->mask = cap - 1;
    }
    size_t h = (size_t)fnv1a(w) & c->mask;
    while (c->slots[h].word && strcmp(c->slots[h].word, w)) h = (h + 1) & c->mask;
    if (!c->slots[h].word) {
        c->slots[h].word = w;
        c->used++;
    }
    c->slots[h].count++;
    return TS_OK;
}

static int by_count_then_bytes(const void *a, const void *b) {
    const word_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

int ts_vocab_build(const ts_corpus *c, enum ts_side side, const size_t *rows, size_t n_rows,
                   size_t min_count, ts_vocab **out) {
    *out = NULL;
    if (!rows) n_rows = c->n_pairs;
    counter cnt = {calloc(1024, sizeof(word_count)), 1023, 0};
    if (!cnt.slots) return ts_fail(TS_ERR_NOMEM, "out of memory counting words");
    int st = TS_OK;
    for (size_t r = 0; r < n_rows && st == TS_OK; r++) {
        size_t row = rows ? rows[r] : r;
        if (row >= c->n_pairs) {
            st = ts_fail(TS_ERR_ARG, "row %zu out of range (corpus has %zu pairs)", row, c->n_pairs);
            break;
        }
        const ts_pair *p = &c->pairs[row];
        char **toks = side == TS_SRC ? p->src : p->tgt;
        int32_t n = side == TS_SRC ? p->src_len : p->tgt_len;
        for (int32_t i = 0; i < n && st == TS_OK; i++)
            if (!is_special(toks[i]) && counter_add(&cnt, toks[i]) != TS_OK)
                st = ts_fail(TS_ERR_NOMEM, "out of memory counting words");
    }
    if (st != TS_OK) {
        free(cnt.slots);
        return st;
    }
    // Compact in place, keep the frequent words, sort into id order.
    size_t n = 0;
    for (size_t i = 0; i <= cnt.mask; i++)
        if (cnt.slots[i].word && cnt.slots[i].count >= min_count) cnt.slots[n++] = cnt.slots[i];
    qsort(cnt.slots, n, sizeof *cnt.slots, by_count_then_bytes);
    const char **words = malloc((n ? n : 1) * sizeof *words);
    size_t *counts = malloc((n ? n : 1) * sizeof *counts);
    if (!words || !counts) {
        st = ts_fail(TS_ERR_NOMEM, "out of memory building a vocabulary");
    } else {
        for (size_t i = 0; i < n; i++) {
            words[i] = cnt.slots[i].word;
            counts[i] = cnt.slots[i].count;
        }
        st = vocab_make(words, counts, n, out);
    }
    free(words);
    free(counts);
    free(cnt.slots);
    return st;
}

int ts_vocab_from_words(const char *const *words, size_t n, ts_vocab **out) {
    *out = NULL;
    if (n < TS_N_SPECIALS)
        return ts_fail(TS_ERR_FORMAT, "a vocabulary needs at least the %d specials", TS_N_SPECIALS);
    for (size_t i = 0; i < n; i++) {
        if (i < TS_N_SPECIALS && strcmp(words[i], specials[i]))
            return ts_fail(TS_ERR_FORMAT, "vocabulary id %zu is '%s', expected '%s'", i, words[i],
                           specials[i]);
        if (i >= TS_N_SPECIALS && (!words[i][0] || strchr(words[i], ' ') || is_special(words[i])))
            return ts_fail(TS_ERR_FORMAT, "vocabulary id %zu: bad word '%s'", i, words[i]);
    }
    return vocab_make(words + TS_N_SPECIALS, NULL, n - TS_N_SPECIALS, out);
}

size_t ts_vocab_size(const ts_vocab *v) { return v->n; }

int32_t ts_vocab_id(const ts_vocab *v, const char *word) {
    size_t h = (size_t)fnv1a(word) & v->mask;
    for (int32_t id; (id = v->slots[h]) >= 0; h = (h + 1) & v->mask)
        if (!strcmp(v->words[id], word)) return id;
    return TS_UNK;
}

const char *ts_vocab_word(const ts_vocab *v, int32_t id) {
    return id >= 0 && (size_t)id < v->n ? v->words[id] : NULL;
}

size_t ts_vocab_count(const ts_vocab *v, int32_t id) {
    return id >= 0 && (size_t)id < v->n ? v->counts[id] : 0;
}

void ts_vocab_encode(const ts_vocab *v, char *const *tokens, size_t n, int32_t *ids) {
    for (size_t i = 0; i < n; i++) ids[i] = ts_vocab_id(v, tokens[i]);
}

size_t ts_vocab_decode(const ts_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap) {
    size_t len = 0;
    for (size_t i = 0; i < n && ids[i] != TS_EOS; i++) {
        if (ids[i] == TS_PAD || ids[i] == TS_SOS) continue;
        const char *w = ts_vocab_word(v, ids[i]);
        if (!w) w = specials[TS_UNK];
        if (len) {
            if (len + 1 < cap) out[len] = ' ';
            len++;
        }
        size_t k = strlen(w);
        if (len < cap) memcpy(out + len, w, len + k < cap ? k : cap - 1 - len);
        len += k;
    }
    if (cap) out[len < cap ? len : cap - 1] = '\0';
    return len;
}
