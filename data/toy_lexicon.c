// The toy language's words (data/toy_lexicon.h): English and French forms,
// genders, kinds and fixed phrases with their links, which the grammar
// (toy.c) draws from. A word added here changes the corpus every seed gives.
#include "data/toy_lexicon.h"

#include <stddef.h>

const noun ts_toy_nouns[] = {
    {"cat", "cats", "chat", "chats", 'm', ANIMATE},
    {"dog", "dogs", "chien", "chiens", 'm', ANIMATE},
    {"boy", "boys", "garçon", "garçons", 'm', ANIMATE},
    {"man", "men", "homme", "hommes", 'm', ANIMATE},
    {"bird", "birds", "oiseau", "oiseaux", 'm', ANIMATE},
    {"horse", "horses", "cheval", "chevaux", 'm', ANIMATE},
    {"doctor", "doctors", "médecin", "médecins", 'm', ANIMATE},
    {"teacher", "teachers", "professeur", "professeurs", 'm', ANIMATE},
    {"neighbour", "neighbours", "voisin", "voisins", 'm', ANIMATE},
    {"brother", "brothers", "frère", "frères", 'm', ANIMATE},
    {"child", "children", "enfant", "enfants", 'm', ANIMATE},
    {"friend", "friends", "ami", "amis", 'm', ANIMATE},
    {"student", "students", "étudiant", "étudiants", 'm', ANIMATE},
    {"woman", "women", "femme", "femmes", 'f', ANIMATE},
    {"girl", "girls", "fille", "filles", 'f', ANIMATE},
    {"mouse", "mice", "souris", "souris", 'f', ANIMATE},
    {"cow", "cows", "vache", "vaches", 'f', ANIMATE},
    {"mother", "mothers", "mère", "mères", 'f', ANIMATE},
    {"sister", "sisters", "sœur", "sœurs", 'f', ANIMATE},
    {"book", "books", "livre", "livres", 'm', THING},
    {"tree", "trees", "arbre", "arbres", 'm', THING},
    {"bicycle", "bicycles", "vélo", "vélos", 'm', THING},
    {"boat", "boats", "bateau", "bateaux", 'm', THING},
    {"cake", "cakes", "gâteau", "gâteaux", 'm', THING},
    {"computer", "computers", "ordinateur", "ordinateurs", 'm', THING},
    {"letter", "letters", "lettre", "lettres", 'f', THING},
    {"flower", "flowers", "fleur", "fleurs", 'f', THING},
    {"apple", "apples", "pomme", "pommes", 'f', THING},
    {"chair", "chairs", "chaise", "chaises", 'f', THING},
    {"door", "doors", "porte", "portes", 'f', THING},
    {"window", "windows", "fenêtre", "fenêtres", 'f', THING},
    {"garden", "gardens", "jardin", "jardins", 'm', THING | PLACE},
    {"market", "markets", "marché", "marchés", 'm', THING | PLACE},
    {"bed", "beds", "lit", "lits", 'm', THING | PLACE},
    {"house", "houses", "maison", "maisons", 'f', THING | PLACE},
    {"table", "tables", "table", "tables", 'f', THING | PLACE},
    {"car", "cars", "voiture", "voitures", 'f', THING | PLACE},
    {"city", "cities", "ville", "villes", 'f', THING | PLACE},
    {"street", "streets", "rue", "rues", 'f', THING | PLACE},
    {"school", "schools", "école", "écoles", 'f', THING | PLACE},
    {"church", "churches", "église", "églises", 'f', THING | PLACE},
    {"forest", "forests", "forêt", "forêts", 'f', THING | PLACE},
    {"river", "rivers", "rivière", "rivières", 'f', THING | PLACE},
};
const size_t ts_toy_nouns_count = sizeof ts_toy_nouns / sizeof ts_toy_nouns[0];

const verb ts_toy_verbs[] = {
    {"sees", "see", NULL, "voit", "voient", "voir", TRANSITIVE},
    {"likes", "like", NULL, "aime", "aiment", "aimer", PREFERENCE},
    {"loves", "love", NULL, "adore", "adorent", "adorer", PREFERENCE},
    {"hates", "hate", NULL, "déteste", "détestent", "détester", PREFERENCE},
    {"watches", "watch", NULL, "regarde", "regardent", "regarder", TRANSITIVE},
    {"finds", "find", NULL, "trouve", "trouvent", "trouver", TRANSITIVE},
    {"wants", "want", NULL, "veut", "veulent", "vouloir", TRANSITIVE},
    {"takes", "take", NULL, "prend", "prennent", "prendre", TRANSITIVE},
    {"buys", "buy", NULL, "achète", "achètent", "acheter", TRANSITIVE},
    {"sells", "sell", NULL, "vend", "vendent", "vendre", TRANSITIVE},
    {"draws", "draw", NULL, "dessine", "dessinent", "dessiner", TRANSITIVE},
    {"follows", "follow", NULL, "suit", "suivent", "suivre", TRANSITIVE},
    {"knows", "know", NULL, "connaît", "connaissent", "connaître", TRANSITIVE},
    {"carries", "carry", NULL, "porte", "portent", "porter", TRANSITIVE},
    {"opens", "open", NULL, "ouvre", "ouvrent", "ouvrir", TRANSITIVE},
    {"visits", "visit", NULL, "visite", "visitent", "visiter", TRANSITIVE},
    {"looks", "look", "for", "cherche", "cherchent", "chercher", TRANSITIVE},
    {"waits", "wait", "for", "attend", "attendent", "attendre", TRANSITIVE},
    {"listens", "listen", "to", "écoute", "écoutent", "écouter", TRANSITIVE},
    {"sleeps", "sleep", NULL, "dort", "dorment", "dormir", INTRANSITIVE},
    {"runs", "run", NULL, "court", "courent", "courir", INTRANSITIVE},
    {"sings", "sing", NULL, "chante", "chantent", "chanter", INTRANSITIVE},
    {"works", "work", NULL, "travaille", "travaillent", "travailler", INTRANSITIVE},
    {"swims", "swim", NULL, "nage", "nagent", "nager", INTRANSITIVE},
    {"goes", "go", NULL, "va", "vont", "aller", MOTION},
};
const size_t ts_toy_verbs_count = sizeof ts_toy_verbs / sizeof ts_toy_verbs[0];

const adjective ts_toy_adjectives[] = {
    {"small", {"petit", "petite", "petits", "petites"}, 1},
    {"big", {"grand", "grande", "grands", "grandes"}, 1},
    {"good", {"bon", "bonne", "bons", "bonnes"}, 1},
    {"young", {"jeune", "jeune", "jeunes", "jeunes"}, 1},
    {"old", {"vieux", "vieille", "vieux", "vieilles"}, 1},
    {"beautiful", {"beau", "belle", "beaux", "belles"}, 1},
    {"new", {"nouveau", "nouvelle", "nouveaux", "nouvelles"}, 1},
    {"black", {"noir", "noire", "noirs", "noires"}, 0},
    {"white", {"blanc", "blanche", "blancs", "blanches"}, 0},
    {"red", {"rouge", "rouge", "rouges", "rouges"}, 0},
    {"green", {"vert", "verte", "verts", "vertes"}, 0},
    {"blue", {"bleu", "bleue", "bleus", "bleues"}, 0},
    {"happy", {"heureux", "heureuse", "heureux", "heureuses"}, 0},
    {"sad", {"triste", "triste", "tristes", "tristes"}, 0},
    {"tired", {"fatigué", "fatiguée", "fatigués", "fatiguées"}, 0},
    {"strong", {"fort", "forte", "forts", "fortes"}, 0},
    {"rich", {"riche", "riche", "riches", "riches"}, 0},
    {"heavy", {"lourd", "lourde", "lourds", "lourdes"}, 0},
};
const size_t ts_toy_adjectives_count = sizeof ts_toy_adjectives / sizeof ts_toy_adjectives[0];

const phrase ts_toy_prepositions[] = {
    {"in", "dans", "0-0"},
    {"on", "sur", "0-0"},
    {"under", "sous", "0-0"},
    {"with", "avec", "0-0"},
    {"behind", "derrière", "0-0"},
    {"near", "près de", "0-0 0-1"},
    {"in front of", "devant", "0-0 1-0 2-0"},
    {"next to", "à côté de", "0-0 0-1 1-2"},
};
const size_t ts_toy_prepositions_count = sizeof ts_toy_prepositions / sizeof ts_toy_prepositions[0];
const phrase ts_toy_time_phrases[] = {
    {"today", "aujourd'hui", "0-0"},
    {"tomorrow", "demain", "0-0"},
    {"tomorrow morning", "demain matin", "0-0 1-1"},
    {"every day", "tous les jours", "0-0 0-1 1-2"},
    {"every morning", "tous les matins", "0-0 0-1 1-2"},
    {"in the evening", "le soir", "1-0 2-1"},
    {"right now", "maintenant", "0-0 1-0"},
};
const size_t ts_toy_time_phrases_count = sizeof ts_toy_time_phrases / sizeof ts_toy_time_phrases[0];
const phrase ts_toy_manners[] = {
    {"quickly", "vite", "0-0"},
    {"well", "bien", "0-0"},
    {"a lot", "beaucoup", "0-0 1-0"},
};
const size_t ts_toy_manners_count = sizeof ts_toy_manners / sizeof ts_toy_manners[0];
const phrase ts_toy_frequencies[] = {  // English before the verb, French after
    {"often", "souvent", "0-0"},
    {"always", "toujours", "0-0"},
    {"sometimes", "parfois", "0-0"},
};
const size_t ts_toy_frequencies_count = sizeof ts_toy_frequencies / sizeof ts_toy_frequencies[0];
