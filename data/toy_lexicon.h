// Internal to data/: the toy language's words, which its grammar (toy.c)
// draws from and toy_lexicon.c lists: nouns with their gender and kind,
// verbs with their forms and kind, adjectives with their four French forms,
// and fixed phrases with their own links. The kinds decide which words a
// constituent may draw (a subject is animate, a location a place).
#ifndef TS_DATA_TOY_LEXICON_H
#define TS_DATA_TOY_LEXICON_H

#include <stddef.h>

enum { ANIMATE = 1, THING = 2, PLACE = 4 };

typedef struct {
    const char *en_sg, *en_pl, *fr_sg, *fr_pl;
    char gender;  // 'm' or 'f'
    int kind;     // ANIMATE, THING, THING | PLACE
} noun;

enum { TRANSITIVE, PREFERENCE, INTRANSITIVE, MOTION };

typedef struct {
    const char *en_3sg, *en_base, *particle;  // "looks" "look" "for"
    const char *fr_3sg, *fr_3pl, *fr_inf;
    int kind;
} verb;

typedef struct {
    const char *en;
    const char *fr[4];  // masculine, feminine, masculine plural, feminine plural
    int before_noun;
} adjective;

// A fixed phrase with its internal alignment ("source-target" pairs).
typedef struct {
    const char *en, *fr, *links;
} phrase;

extern const noun ts_toy_nouns[];
extern const size_t ts_toy_nouns_count;
extern const verb ts_toy_verbs[];
extern const size_t ts_toy_verbs_count;
extern const adjective ts_toy_adjectives[];
extern const size_t ts_toy_adjectives_count;
extern const phrase ts_toy_prepositions[];
extern const size_t ts_toy_prepositions_count;
extern const phrase ts_toy_time_phrases[];
extern const size_t ts_toy_time_phrases_count;
extern const phrase ts_toy_manners[];
extern const size_t ts_toy_manners_count;
extern const phrase ts_toy_frequencies[];  // English before the verb, French after
extern const size_t ts_toy_frequencies_count;

#endif
