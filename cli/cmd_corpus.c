// tinyseq corpus: write the toy corpus, or read a TSV corpus and report on it.
#include "cli/cli.h"
#include "cli/common.h"

#include "data/corpus.h"
#include "data/normalize.h"
#include "data/toy.h"
#include "data/vocab.h"
#include "tensor/status.h"

#include <errno.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

static const char *const command = "tinyseq corpus";

static void help(FILE *out) {
    fprintf(out,
            "usage: tinyseq corpus --toy [--n N] [--seed S] [--align FILE [--force]]\n"
            "       tinyseq corpus --stats FILE [--max-len N] [--min-count N] [--prefix P]... [--skip-bad]\n"
            "       tinyseq corpus --normalize FILE [--max-len N] [--prefix P]... [--skip-bad]\n"
            "\n"
            "  --toy            write the synthetic toy corpus as TSV (source<TAB>target) to stdout\n"
            "  --n N            toy pairs to write (default %d)\n"
            "  --seed S         toy generator seed, gsl_rng mt19937 (default %d); same seed, same bytes\n"
            "  --align FILE     also write the toy corpus's gold alignments to FILE, one line per\n"
            "                   pair, Pharaoh format (source-target, 0-based token indices)\n"
            "  --force          replace an existing --align FILE (otherwise that is an error)\n"
            "  --stats FILE     read a TSV corpus and print pair counts, vocabulary sizes, lengths\n"
            "  --normalize FILE read a TSV corpus and write its normalised pairs to stdout\n"
            "  --max-len N      keep pairs with 1..N tokens on both sides (default: no limit)\n"
            "  --min-count N    --stats: vocabulary words need N occurrences (default 1)\n"
            "  --prefix P       keep pairs whose source starts with the words P (repeatable)\n"
            "  --skip-bad       skip malformed lines, naming them, instead of stopping at the first\n"
            "\n"
            "Exit status: 0 ok, 1 unreadable or malformed input or failed write, 2 usage error.\n",
            TS_TOY_PAIRS, TS_TOY_SEED);
}

// Pairs generated and written at a time: the output streams, so memory stays
// that of one chunk however large --n is. The generator draws pair after pair
// from one rng, so the chunks together are the same bytes as one corpus.
enum { TOY_CHUNK = 4096 };

static int run_toy(long n, long seed, const char *align_path) {
    // Open the alignment file first, so a bad path fails before any output.
    FILE *align = NULL;
    if (align_path && !(align = fopen(align_path, "w"))) {
        ts_cli_error(command, 0, "cannot create '%s': %s", align_path, strerror(errno));
        return TS_EXIT_FAIL;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int code = TS_EXIT_OK;
    if (!rng) {
        ts_cli_error(command, 0, "out of memory");
        code = TS_EXIT_FAIL;
    } else {
        gsl_rng_set(rng, (unsigned long)seed);
    }
    for (long done = 0; code == TS_EXIT_OK && done < n; done += TOY_CHUNK) {
        ts_corpus *c = NULL;
        size_t count = n - done < TOY_CHUNK ? (size_t)(n - done) : TOY_CHUNK;
        if (ts_toy_generate(rng, count, &c) != TS_OK) {
            ts_cli_error(command, 1, "cannot generate the toy corpus");
            code = TS_EXIT_FAIL;
        } else if (ts_corpus_write_tsv(c, stdout) != TS_OK) {
            ts_cli_error(command, 1, "writing stdout");
            code = TS_EXIT_FAIL;
        } else if (align && ts_corpus_write_align(c, align) != TS_OK) {
            ts_cli_error(command, 1, "writing '%s'", align_path);
            code = TS_EXIT_FAIL;
        }
        ts_corpus_free(c);
    }
    if (rng) gsl_rng_free(rng);
    if (align && fclose(align) != 0 && code == TS_EXIT_OK) {
        ts_cli_error(command, 0, "cannot write '%s': %s", align_path, strerror(errno));
        code = TS_EXIT_FAIL;
    }
    return code;
}

static void print_stats(const char *path, const ts_corpus *c, const ts_corpus_opts *opts,
                        long min_count, const ts_vocab *src, const ts_vocab *tgt) {
    size_t src_tokens = 0, tgt_tokens = 0, src_max = 0, tgt_max = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        src_tokens += (size_t)p->src_len;
        tgt_tokens += (size_t)p->tgt_len;
        if ((size_t)p->src_len > src_max) src_max = (size_t)p->src_len;
        if ((size_t)p->tgt_len > tgt_max) tgt_max = (size_t)p->tgt_len;
    }
    double n = c->n_pairs ? (double)c->n_pairs : 1.0;
    printf("file: %s\n", path);
    printf("lines: %zu\n", c->n_lines);
    char skipped[512];
    printf("bad lines skipped: %zu%s%s\n", c->n_bad, c->n_bad ? ", " : "", ts_corpus_skipped(c, skipped, sizeof skipped));
    printf("pairs filtered out: %zu (max-len %zu, %zu prefixes)\n", c->n_filtered, opts->max_len,
           opts->n_prefixes);
    printf("pairs: %zu\n", c->n_pairs);
    printf("source vocab: %zu (specials included, min-count %ld)\n", ts_vocab_size(src), min_count);
    printf("target vocab: %zu\n", ts_vocab_size(tgt));
    printf("source tokens: %zu (mean %.2f, max %zu)\n", src_tokens, (double)src_tokens / n, src_max);
    printf("target tokens: %zu (mean %.2f, max %zu)\n", tgt_tokens, (double)tgt_tokens / n, tgt_max);
}

static int run_read(const char *path, const ts_corpus_opts *opts, long min_count, int stats) {
    ts_corpus *c;
    if (ts_corpus_read(path, opts, &c) != TS_OK) {
        ts_cli_error(command, 0, "%s", ts_last_error());
        return TS_EXIT_FAIL;
    }
    int code = TS_EXIT_OK;
    if (stats) {
        ts_vocab *src = NULL, *tgt = NULL;
        if (ts_vocab_build(c, TS_SRC, NULL, 0, (size_t)min_count, &src) != TS_OK ||
            ts_vocab_build(c, TS_TGT, NULL, 0, (size_t)min_count, &tgt) != TS_OK) {
            ts_cli_error(command, 1, "building the vocabularies");
            code = TS_EXIT_FAIL;
        } else {
            print_stats(path, c, opts, min_count, src, tgt);
            if (fflush(stdout) || ferror(stdout)) {
                ts_cli_error(command, 0, "cannot write stdout: %s", strerror(errno));
                code = TS_EXIT_FAIL;
            }
        }
        ts_vocab_free(src);
        ts_vocab_free(tgt);
    } else if (ts_corpus_write_tsv(c, stdout) != TS_OK) {
        ts_cli_error(command, 1, "writing stdout");
        code = TS_EXIT_FAIL;
    }
    char skipped[512];
    if (code == TS_EXIT_OK && c->n_bad)
        fprintf(stderr, "%s: skipped %zu malformed line%s of '%s': %s\n", command, c->n_bad,
                c->n_bad == 1 ? "" : "s", path, ts_corpus_skipped(c, skipped, sizeof skipped));
    ts_corpus_free(c);
    return code;
}

// A --prefix must keep at least one word after normalisation: an empty one
// is a usage error, not a problem with the corpus.
typedef struct {
    const char **items;  // (argc)
    size_t n;
} prefix_list;

// --prefix P: P must have words once normalised.
static int take_prefix(const char *cmd, const char *flag, const char *text, void *target) {
    char *tokens;
    size_t n;
    int rc = ts_normalize(text, strlen(text), &tokens, &n);
    if (rc) {
        ts_cli_error(cmd, 0, "--%s '%s': %s", flag, text, ts_last_error());
        return TS_EXIT_USAGE;
    }
    free(tokens);
    if (n == 0) {
        ts_cli_error(cmd, 0, "--%s '%s' has no words", flag, text);
        return TS_EXIT_USAGE;
    }
    prefix_list *list = target;
    list->items[list->n++] = text;
    return -1;
}

int ts_cmd_corpus(int argc, char **argv) {
    int toy = 0;
    long n = TS_TOY_PAIRS, seed = TS_TOY_SEED, max_len = 0, min_count = 1;
    const char *align_path = NULL, *stats_path = NULL, *normalize_path = NULL;
    // Each --prefix P, in order (argv outlives them): at most one per argument.
    prefix_list prefixes = {malloc((size_t)argc * sizeof(const char *)), 0};
    int skip_bad = 0, force = 0;
    if (!prefixes.items) {
        ts_cli_error(command, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    const ts_flag flags[] = {
        TS_SWITCH("toy", &toy),
        TS_INT("n", &n, 1, 100000000L),
        TS_INT("seed", &seed, 0, 4294967295L),
        TS_STRING("align", &align_path),
        TS_STRING("stats", &stats_path),
        TS_STRING("normalize", &normalize_path),
        TS_INT("max-len", &max_len, 0, 100000000L),
        TS_INT("min-count", &min_count, 1, 100000000L),
        TS_CHOICE("prefix", &prefixes, take_prefix),
        TS_SWITCH("skip-bad", &skip_bad),
        TS_SWITCH("force", &force),
    };
    ts_cli_spec spec = {.command = command, .help = help, .flags = flags, .n_flags = sizeof flags / sizeof flags[0]};
    int code = ts_cli_parse(&spec, argc, argv);
    if (code < 0 && toy + !!stats_path + !!normalize_path != 1) {
        ts_cli_error(command, 0, "give exactly one of --toy, --stats FILE, --normalize FILE "
                                 "(see %s --help)", command);
        code = TS_EXIT_USAGE;
    }
    if (code < 0 && align_path && !toy) {
        ts_cli_error(command, 0, "--align goes with --toy");
        code = TS_EXIT_USAGE;
    }
    // Standard output holds the corpus: the alignments need a file of their own.
    if (code < 0 && align_path) code = ts_cli_check_output(command, "the alignments (the corpus goes there)", align_path, force, 0);
    if (code < 0 && toy) {
        code = run_toy(n, seed, align_path);
    } else if (code < 0) {
        ts_corpus_opts opts = {.max_len = (size_t)max_len, .prefixes = prefixes.items, .n_prefixes = prefixes.n,
                               .skip_bad = skip_bad};
        code = run_read(stats_path ? stats_path : normalize_path, &opts, min_count, !!stats_path);
    }
    free(prefixes.items);
    return code;
}
