// The toy corpus: a synthetic English -> French-like language with gold word
// alignments, small enough for a GRU to learn in minutes, built so that a
// model needs attention to translate it:
//   - gendered determiners and agreement: the -> le / la / les, a -> un / une,
//     adjectives agree (petit petite petits petites), even across a relative
//     clause ("the girls that see the dog are happy" -> "... sont heureuses");
//   - most adjectives follow the noun (black cat -> chat noir), a few stay in
//     front as in French (petit, grand, bon, jeune, vieux, beau, nouveau);
//   - negation around the verb: "does not see" -> "ne voit pas", "never sees"
//     -> "ne voit jamais"; adverbs move after the verb ("often sees" ->
//     "voit souvent");
//   - many-to-one and one-to-many phrases: "a lot of" -> "beaucoup de",
//     "in front of" -> "devant", "looks for" -> "cherche", "cannot see" ->
//     "ne peut pas voir", "next to" -> "à côté de", "every day" -> "tous les
//     jours"; contractions ("near the cat" -> "près du chat", "to the
//     market" -> "au marché") and elision ("l'homme", "n'aime", "qu'il");
//   - "that" becomes "qui" or "que" depending on the clause;
//   - a target token with no source: "likes cats" -> "aime les chats", where
//     "les" is explicitly unaligned.
// Sentences have TS_TOY_MIN_LEN..TS_TOY_MAX_LEN tokens on each side (most 5-15,
// a tail past 20 from relative clauses and "and" / "but"), lowercase, with the
// final "." as a token: already normalised. About 200 English and 300 French
// word types.
#ifndef TS_TOY_H
#define TS_TOY_H

#include "data/corpus.h"

#include <gsl/gsl_rng.h>
#include <stddef.h>

#define TS_TOY_MIN_LEN 3
#define TS_TOY_MAX_LEN 25

// Suggested defaults for training without --corpus: gsl_rng_mt19937 seeded
// with TS_TOY_SEED, TS_TOY_PAIRS pairs.
#define TS_TOY_SEED 1
#define TS_TOY_PAIRS 15000

// Generates n sentence pairs, drawing only from `rng`, so the same generator
// type and seed give the same corpus, byte for byte. Pairs are drawn one
// after the other: calls for a and then b pairs on the same rng give the
// pairs of one call for a + b (tinyseq corpus --toy streams in chunks so). The corpus has gold
// alignments (has_align = 1): ts_pair.links maps source to target tokens and
// marks target tokens without a source as {TS_UNALIGNED, j}.
// Returns TS_OK and the corpus in *out (free with ts_corpus_free), or
// TS_ERR_NOMEM with *out = NULL.
int ts_toy_generate(gsl_rng *rng, size_t n, ts_corpus **out);

#endif
