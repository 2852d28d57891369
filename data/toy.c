// The toy corpus generator: see data/toy.h for the language it makes.
//
// A sentence is built constituent by constituent, each emitting its English
// tokens, its French tokens and the links between them, so reorderings inside
// a constituent (noun-adjective, ne ... pas, adverb after the verb) come with
// their alignment. French contraction and elision run last as merges of
// adjacent tokens, which merge their links too. The words it draws from:
// toy_lexicon.c.
#include "data/toy.h"
#include "data/toy_lexicon.h"

#include "tensor/status.h"

#include <assert.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// ---- a sentence under construction -----------------------------------------

enum { MAX_TOKENS = 64, MAX_LINKS = 256, WORD_BYTES = 40 };

typedef struct {
    char en[MAX_TOKENS][WORD_BYTES];
    char fr[MAX_TOKENS][WORD_BYTES];
    int n_en, n_fr;
    ts_link links[MAX_LINKS];
    int n_links;
    int overflow;  // too many tokens or links: the sentence is drawn again
} sentence;

typedef struct {
    int fem, plural;
} agreement;

static int agr_index(agreement a) { return a.fem + 2 * a.plural; }

static int emit(sentence *s, int french, const char *word) {
    int *n = french ? &s->n_fr : &s->n_en;
    if (*n >= MAX_TOKENS || strlen(word) >= WORD_BYTES) {
        s->overflow = 1;
        return 0;
    }
    snprintf(french ? s->fr[*n] : s->en[*n], WORD_BYTES, "%s", word);
    return (*n)++;
}
static int en(sentence *s, const char *word) { return emit(s, 0, word); }
static int fr(sentence *s, const char *word) { return emit(s, 1, word); }

static void link(sentence *s, int i, int j) {
    if (s->n_links >= MAX_LINKS) {
        s->overflow = 1;
        return;
    }
    s->links[s->n_links++] = (ts_link){i, j};
}

// Emits a fixed phrase: its words on both sides and its links.
static void emit_phrase(sentence *s, const phrase *p) {
    int e0 = s->n_en, f0 = s->n_fr;
    char word[WORD_BYTES];
    for (int side = 0; side < 2; side++) {
        const char *w = side ? p->fr : p->en;
        while (*w) {
            size_t len = strcspn(w, " ");
            snprintf(word, sizeof word, "%.*s", (int)len, w);
            emit(s, side, word);
            w += len + (w[len] == ' ');
        }
    }
    for (const char *l = p->links; *l;) {
        int i, j, used;
        if (sscanf(l, "%d-%d%n", &i, &j, &used) != 2) break;
        link(s, e0 + i, f0 + j);
        l += used + (l[used] == ' ');
    }
}

// ---- random choices --------------------------------------------------------------

static int chance(gsl_rng *r, double p) { return gsl_rng_uniform(r) < p; }
static size_t pick(gsl_rng *r, size_t n) { return (size_t)gsl_rng_uniform_int(r, n); }

static const noun *pick_noun(gsl_rng *r, int kinds) {
    for (;;) {
        const noun *n = &ts_toy_nouns[pick(r, ts_toy_nouns_count)];
        if (n->kind & kinds) return n;
    }
}

static const verb *pick_verb(gsl_rng *r, int kind) {
    for (;;) {
        const verb *v = &ts_toy_verbs[pick(r, ts_toy_verbs_count)];
        int k = v->kind == PREFERENCE ? TRANSITIVE : v->kind;
        if (k == kind) return v;
    }
}

// ---- constituents ------------------------------------------------------------------

enum np_role { SUBJECT, OBJECT, PREFERRED, LOCATION };

static void verb_phrase(gsl_rng *r, sentence *s, agreement subj, int allow_relative);

// A noun phrase. English: det adj* noun; French: det pre-adj* noun post-adj*.
// PREFERRED objects may be bare plurals ("likes cats" -> "aime les chats"),
// whose French article has no source word.
static agreement noun_phrase(gsl_rng *r, sentence *s, enum np_role role, int allow_relative) {
    const noun *n = pick_noun(r, role == SUBJECT ? ANIMATE : role == LOCATION ? PLACE
                                                                              : ANIMATE | THING);
    agreement a = {n->gender == 'f', chance(r, 0.35)};
    int bare = role == PREFERRED && chance(r, 0.4);
    if (bare) a.plural = 1;
    // Determiner: English words, French words, links.
    const char *det_en = "the", *det_fr;
    static const char *const the[4] = {"le", "la", "les", "les"};
    static const char *const a_one[4] = {"un", "une", "des", "des"};
    static const char *const this[4] = {"ce", "cette", "ces", "ces"};
    static const char *const my[4] = {"mon", "ma", "mes", "mes"};
    int k = agr_index(a);
    det_fr = the[k];
    double u = gsl_rng_uniform(r);
    if (!a.plural) {
        if (u < 0.25) det_en = "a", det_fr = a_one[k];
        else if (u < 0.35) det_en = "this", det_fr = this[k];
        else if (u < 0.5) det_en = "my", det_fr = my[k];
    } else if (role != LOCATION) {
        if (u < 0.15) det_en = "some", det_fr = "des";
        else if (u < 0.25) det_en = "these", det_fr = this[k];
        else if (u < 0.35) det_en = "my", det_fr = my[k];
        else if (u < 0.42) det_en = "two", det_fr = "deux";
        else if (u < 0.48) det_en = "three", det_fr = "trois";
        else if (u < 0.58 && role != SUBJECT) det_fr = NULL;  // "a lot of"
    }
    // Adjectives: 0 (70%), 1 (24%) or 2 (6%), distinct.
    int n_adj = 0, adj[2];
    double v = gsl_rng_uniform(r);
    if (v < 0.30) n_adj = v < 0.06 && role != LOCATION ? 2 : 1;
    for (int i = 0; i < n_adj; i++) {
        do adj[i] = (int)pick(r, ts_toy_adjectives_count);
        while (i && adj[i] == adj[0]);
    }
    // English side.
    int e_det[3], n_det = 0, e_adj[2], e_noun;
    if (!bare && det_fr) {
        e_det[n_det++] = en(s, det_en);
    } else if (!bare) {
        e_det[n_det++] = en(s, "a");
        e_det[n_det++] = en(s, "lot");
        e_det[n_det++] = en(s, "of");
    }
    for (int i = 0; i < n_adj; i++) e_adj[i] = en(s, ts_toy_adjectives[adj[i]].en);
    e_noun = en(s, a.plural ? n->en_pl : n->en_sg);
    // French side.
    if (bare) {
        fr(s, "les");  // explicitly unaligned: English has no article here
    } else if (!det_fr) {  // "a lot of" -> "beaucoup de"
        int f = fr(s, "beaucoup");
        link(s, e_det[0], f);
        link(s, e_det[1], f);
        link(s, e_det[2], fr(s, "de"));
    } else {
        int f = fr(s, det_fr);
        for (int i = 0; i < n_det; i++) link(s, e_det[i], f);
    }
    for (int i = 0; i < n_adj; i++)
        if (ts_toy_adjectives[adj[i]].before_noun) link(s, e_adj[i], fr(s, ts_toy_adjectives[adj[i]].fr[k]));
    link(s, e_noun, fr(s, a.plural ? n->fr_pl : n->fr_sg));
    for (int i = 0; i < n_adj; i++)
        if (!ts_toy_adjectives[adj[i]].before_noun) link(s, e_adj[i], fr(s, ts_toy_adjectives[adj[i]].fr[k]));

    // A relative clause: "that" is "qui" when it is the clause's subject and
    // "que" when it is the object, which only the words after it tell.
    if (allow_relative && role != LOCATION && chance(r, 0.14)) {
        int e = en(s, "that");
        if (chance(r, 0.55)) {
            link(s, e, fr(s, "qui"));
            verb_phrase(r, s, a, 0);
        } else {
            link(s, e, fr(s, "que"));
            agreement inner;
            if (chance(r, 0.3)) {
                static const char *const pro_en[3] = {"he", "she", "they"};
                static const char *const pro_fr[3] = {"il", "elle", "ils"};
                size_t p = pick(r, 3);
                link(s, en(s, pro_en[p]), fr(s, pro_fr[p]));
                inner = (agreement){p == 1, p == 2};
            } else {
                inner = noun_phrase(r, s, SUBJECT, 0);
            }
            const verb *vb = pick_verb(r, TRANSITIVE);
            int ev = en(s, inner.plural ? vb->en_base : vb->en_3sg);
            int f = fr(s, inner.plural ? vb->fr_3pl : vb->fr_3sg);
            link(s, ev, f);
            if (vb->particle) link(s, en(s, vb->particle), f);
        }
    }
    return a;
}

static agreement subject(gsl_rng *r, sentence *s, int allow_relative) {
    if (chance(r, 0.2)) {
        static const char *const pro_en[3] = {"he", "she", "they"};
        static const char *const pro_fr[3] = {"il", "elle", "ils"};
        size_t p = pick(r, 3);
        link(s, en(s, pro_en[p]), fr(s, pro_fr[p]));
        return (agreement){p == 1, p == 2};
    }
    return noun_phrase(r, s, SUBJECT, allow_relative);
}

static void location(gsl_rng *r, sentence *s) {
    emit_phrase(s, &ts_toy_prepositions[pick(r, ts_toy_prepositions_count)]);
    noun_phrase(r, s, LOCATION, 0);
}

// "is (not) (very) small" -> "est / n'est pas (très) petit", the adjective
// agreeing with the subject.
static void copula(gsl_rng *r, sentence *s, agreement subj) {
    int ev = en(s, subj.plural ? "are" : "is");
    const char *fv = subj.plural ? "sont" : "est";
    if (chance(r, 0.25)) {
        int not = en(s, "not");
        link(s, not, fr(s, "ne"));
        link(s, ev, fr(s, fv));
        link(s, not, fr(s, "pas"));
    } else {
        link(s, ev, fr(s, fv));
    }
    if (chance(r, 0.2)) link(s, en(s, "very"), fr(s, "très"));
    const adjective *adj = &ts_toy_adjectives[pick(r, ts_toy_adjectives_count)];
    link(s, en(s, adj->en), fr(s, adj->fr[agr_index(subj)]));
}

enum mode { PLAIN, FREQUENCY, NEGATED, NEVER, CANNOT };

// The verb group with its negation or modality, e.g. "does not look for" ->
// "ne cherche pas", "cannot see" -> "ne peut pas voir".
static void verb_group(gsl_rng *r, sentence *s, const verb *vb, agreement subj, enum mode m) {
    const char *en_finite = subj.plural ? vb->en_base : vb->en_3sg;
    const char *fr_finite = subj.plural ? vb->fr_3pl : vb->fr_3sg;
    int e, f;
    switch (m) {
    case PLAIN:
        e = en(s, en_finite);
        link(s, e, f = fr(s, fr_finite));
        break;
    case FREQUENCY: {
        const phrase *p = &ts_toy_frequencies[pick(r, ts_toy_frequencies_count)];
        int ea = en(s, p->en);
        e = en(s, en_finite);
        link(s, e, f = fr(s, fr_finite));
        link(s, ea, fr(s, p->fr));
        break;
    }
    case NEGATED: {
        int does = en(s, subj.plural ? "do" : "does"), not = en(s, "not");
        e = en(s, vb->en_base);
        link(s, not, fr(s, "ne"));
        f = fr(s, fr_finite);
        link(s, does, f);
        link(s, e, f);
        link(s, not, fr(s, "pas"));
        break;
    }
    case NEVER: {
        int never = en(s, "never");
        e = en(s, en_finite);
        link(s, never, fr(s, "ne"));
        link(s, e, f = fr(s, fr_finite));
        link(s, never, fr(s, "jamais"));
        break;
    }
    case CANNOT: {
        int cannot = en(s, "cannot");
        e = en(s, vb->en_base);
        link(s, cannot, fr(s, "ne"));
        link(s, cannot, fr(s, subj.plural ? "peuvent" : "peut"));
        link(s, cannot, fr(s, "pas"));
        link(s, e, f = fr(s, vb->fr_inf));
        break;
    }
    }
    if (vb->particle) link(s, en(s, vb->particle), f);
}

// Verb, object and modifiers of a clause whose subject agrees as `subj`.
static void verb_phrase(gsl_rng *r, sentence *s, agreement subj, int allow_relative) {
    double u = gsl_rng_uniform(r);
    if (u < 0.12) {
        copula(r, s, subj);
        return;
    }
    int kind = u < 0.72 ? TRANSITIVE : u < 0.92 ? INTRANSITIVE : MOTION;
    const verb *vb = pick_verb(r, kind);
    double w = gsl_rng_uniform(r);
    enum mode m = w < 0.62 ? PLAIN : w < 0.72 ? FREQUENCY : w < 0.86 ? NEGATED
                : w < 0.92 ? NEVER : CANNOT;
    verb_group(r, s, vb, subj, m);
    if (kind == TRANSITIVE) {
        noun_phrase(r, s, vb->kind == PREFERENCE ? PREFERRED : OBJECT, allow_relative);
        if (chance(r, 0.15)) location(r, s);
    } else if (kind == MOTION) {  // "goes to the market" -> "va au marché"
        link(s, en(s, "to"), fr(s, "à"));
        noun_phrase(r, s, LOCATION, 0);
    } else {
        if (m == PLAIN && chance(r, 0.35)) emit_phrase(s, &ts_toy_manners[pick(r, ts_toy_manners_count)]);
        if (chance(r, 0.4)) location(r, s);
    }
}

static void clause(gsl_rng *r, sentence *s) {
    agreement subj = subject(r, s, 1);
    verb_phrase(r, s, subj, 1);
    if (chance(r, 0.15)) emit_phrase(s, &ts_toy_time_phrases[pick(r, ts_toy_time_phrases_count)]);
}

// ---- French contraction and elision ----------------------------------------------

// Merges French tokens i and i+1 into `word` at i, moving their links.
static void merge(sentence *s, int i, const char *word) {
    size_t len = strlen(word);
    assert(len < WORD_BYTES && "lexicon words are short: an elided pair always fits");
    memcpy(s->fr[i], word, len + 1);
    for (int k = i + 1; k + 1 < s->n_fr; k++) memcpy(s->fr[k], s->fr[k + 1], WORD_BYTES);
    s->n_fr--;
    for (int l = 0; l < s->n_links; l++)
        if (s->links[l].tgt > i) s->links[l].tgt--;
}

// Vowel (or mute h) at the start of a French word: é è ê â î ô are two bytes
// starting with 0xC3.
static int starts_with_vowel(const char *w) {
    return strchr("aeiouh", w[0]) || (unsigned char)w[0] == 0xC3;
}

static void elide_and_contract(sentence *s) {
    char word[2 * WORD_BYTES];  // room for "qu'" + a word, checked by merge
    // le / la before a vowel first ("de l'homme", not "du homme").
    for (int i = 0; i + 1 < s->n_fr; i++)
        if ((!strcmp(s->fr[i], "le") || !strcmp(s->fr[i], "la")) && starts_with_vowel(s->fr[i + 1])) {
            snprintf(word, sizeof word, "l'%s", s->fr[i + 1]);
            merge(s, i, word);
        }
    static const char *const contractions[][3] = {
        {"de", "le", "du"}, {"de", "les", "des"}, {"à", "le", "au"}, {"à", "les", "aux"}};
    for (int i = 0; i + 1 < s->n_fr; i++)
        for (size_t c = 0; c < COUNT(contractions); c++)
            if (!strcmp(s->fr[i], contractions[c][0]) && !strcmp(s->fr[i + 1], contractions[c][1])) {
                merge(s, i, contractions[c][2]);
                break;
            }
    for (int i = 0; i + 1 < s->n_fr; i++) {
        if (!starts_with_vowel(s->fr[i + 1])) continue;
        const char *w = s->fr[i];
        if (!strcmp(w, "de") || !strcmp(w, "ne") || !strcmp(w, "que")) {
            snprintf(word, sizeof word, "%s'%s", !strcmp(w, "que") ? "qu" : w[0] == 'd' ? "d" : "n",
                     s->fr[i + 1]);
            merge(s, i, word);
        } else if (!strcmp(w, "ma")) {
            snprintf(s->fr[i], WORD_BYTES, "mon");
        } else if (!strcmp(w, "ce")) {
            snprintf(s->fr[i], WORD_BYTES, "cet");
        }
    }
}

// ---- the corpus ----------------------------------------------------------------------

static void join(char *out, size_t cap, char words[][WORD_BYTES], int n) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "", words[i]);
}

int ts_toy_generate(gsl_rng *rng, size_t n, ts_corpus **out) {
    *out = NULL;
    ts_corpus *c = ts_corpus_new();
    if (!c) return TS_ERR_NOMEM;
    sentence *s = malloc(sizeof *s);
    char *src = malloc(MAX_TOKENS * WORD_BYTES), *tgt = malloc(MAX_TOKENS * WORD_BYTES);
    int st = s && src && tgt ? TS_OK : ts_fail(TS_ERR_NOMEM, "out of memory generating the toy corpus");
    while (st == TS_OK && c->n_pairs < n) {
        memset(s, 0, sizeof *s);
        clause(rng, s);
        if (chance(rng, 0.22)) {
            static const char *const conj[2][2] = {{"and", "et"}, {"but", "mais"}};
            size_t k = chance(rng, 0.7) ? 0 : 1;
            link(s, en(s, conj[k][0]), fr(s, conj[k][1]));
            clause(rng, s);
        }
        link(s, en(s, "."), fr(s, "."));
        if (s->overflow) continue;
        elide_and_contract(s);
        if (s->n_en < TS_TOY_MIN_LEN || s->n_en > TS_TOY_MAX_LEN || s->n_fr < TS_TOY_MIN_LEN ||
            s->n_fr > TS_TOY_MAX_LEN)
            continue;  // drawn again: lengths stay in range
        join(src, MAX_TOKENS * WORD_BYTES, s->en, s->n_en);
        join(tgt, MAX_TOKENS * WORD_BYTES, s->fr, s->n_fr);
        st = ts_corpus_add(c, src, tgt, s->links, (size_t)s->n_links);
    }
    free(s);
    free(src);
    free(tgt);
    if (st != TS_OK) {
        ts_corpus_free(c);
        return st;
    }
    *out = c;
    return TS_OK;
}
