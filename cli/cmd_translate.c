// tinyseq translate: a checkpoint's translations of the arguments, or of
// stdin line by line, one output line per input line.
#include "cli/cli.h"
#include "cli/common.h"

#include "data/normalize.h"
#include "infer/load.h"
#include "infer/translate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: tinyseq translate --model CKPT [--beam K] [SENTENCE ...]\n"
    "\n"
    "Translates each SENTENCE, or else every line of standard input (LF, CRLF\n"
    "or CR line ends), and prints one line of output tokens (separated by\n"
    "spaces) per input; at a terminal it asks for lines and answers each one\n"
    "as it is typed (Ctrl-D ends). Input is normalised as in training\n"
    "(lowercase, NFC, punctuation split off); words the model has never seen\n"
    "become <unk> (named on standard error). A subword model (train --subword)\n"
    "spells any text in its pieces and prints words, never <unk>. A blank input\n"
    "line gives a blank output line.\n"
    "\n"
    "  --model CKPT   checkpoint written by tinyseq train (required)\n"
    "  --beam K       beam width, 1.." TS_CLI_QUOTE(TS_BEAM_MAX) " (default " TS_CLI_QUOTE(TS_BEAM_DEFAULT) "; 0: the default too; 1: greedy);\n"
    "                 up to 128 lines of the arguments, a pipe or a file decode\n"
    "                 together, several times faster each\n"
    "  --length-penalty A  beam search ranks finished outputs by GNMT's log-probability /\n"
    "                 ((5 + |y|) / 6)^A, A in [0, 100] (default: log-probability / |y|;\n"
    "                 |y| counts <eos>); larger A favours longer outputs\n"
    "\n"
    "An input that is not valid UTF-8, or longer than 1000 tokens, gives a\n"
    "message naming its line (or argument) and a blank output line; the next\n"
    "ones are still translated and the exit status is then 1. Several SENTENCE\n"
    "arguments of one word each are refused (exit 2) as a sentence typed without\n"
    "quotes; one word per line on standard input translates words one by one.\n";

static const char *cmd = "tinyseq translate";

// The arena starts here and doubles (up to the cap) whenever a sentence needs
// more: one long sentence should not make every short one pay.
// The SENTENCE arguments, in order (argv outlives them).
typedef struct {
    const char **items;  // (argc)
    int n;
} sentence_list;

static int take_sentence(void *context, const char *command, const char *arg) {
    (void)command;
    sentence_list *list = context;
    list->items[list->n++] = arg;
    return -1;
}

// Writes the text of output ids[0..n) (words; a subword model's pieces
// joined into words), then a newline.
static int print_tokens(const ts_translator *t, const int *ids, int n) {
    char *text;
    int rc = ts_translator_text(t, ids, n, &text);
    if (rc) return rc;
    rc = puts(text) < 0 ? ts_fail(TS_ERR_IO, "cannot write") : TS_OK;
    free(text);
    return rc;
}

// Names on stderr the words of `source` (normalised, space-joined) that the
// model reads as <unk> (a subword model spells every word).
static void note_unknown_words(const ts_translator *t, const char *source, const char *where, long number) {
    if (t->src_sw) return;
    char *unknown = ts_unknown_words(t->src_vocab, source);
    if (unknown)  // cut: a 1 MB word should not become a 1 MB message
        fprintf(stderr, "%s: %s %ld: unknown words, read as <unk>: %.300s%s\n", cmd, where, number, unknown,
                strlen(unknown) > 300 ? " ..." : "");
    free(unknown);
}

// The line of an input that gives nothing to decode, once encoding said
// rc (its message in why): 0 for a blank line, 1 after a bad input (message,
// blank line), -1 on a failure that should stop the command (message).
static int print_unencoded(int rc, const char *why, const char *where, long number) {
    if (rc) fprintf(stderr, "%s: %s %ld: %s\n", cmd, where, number, why);
    if (rc && rc != TS_ERR_FORMAT) return -1;
    return putchar('\n') == EOF ? -1 : rc ? 1 : 0;
}

// text[0..len) encoded once into *src (normalised, then its ids): 0 with
// src->len >= 1 (its unknown words named), else print_unencoded's status.
static int encode(ts_translator *t, const char *text, size_t len, const char *where, long number, ts_source *src) {
    int rc = ts_source_encode(t, text, len, src);
    if (rc || src->len == 0) return print_unencoded(rc, ts_last_error(), where, number);
    note_unknown_words(t, src->units, where, number);
    return 0;
}

// Translates text[0..len) and prints its line (a terminal's, answered as it
// is typed). Returns as encode does.
static int translate_one(ts_translator *t, ts_ctx *ctx, const char *text, size_t len, int beam,
                         const char *where, long number) {
    ts_source src;
    int rc = encode(t, text, len, where, number, &src);
    if (rc || src.len == 0) return rc;
    ts_hypothesis h;
    rc = ts_translate_source(t, ctx, &src, beam, &h);
    ts_source_free(&src);
    if (rc) {  // this input only (too large): say so and go on with the next
        ts_cli_error(cmd, 1, "%s %ld", where, number);
        return putchar('\n') == EOF ? -1 : 1;
    }
    rc = print_tokens(t, h.tokens, h.len);
    ts_hypothesis_free(&h);
    if (rc) {
        ts_cli_error(cmd, 1, "%s %ld", where, number);
        return -1;
    }
    return 0;
}

// Up to BATCH sentences translate at once (infer/translate.h): lines wait
// here, encoded, until the batch is full, the input ends, or a line that is
// blank or bad must be printed after them.
enum { BATCH = 128 };
typedef struct {
    ts_source src[BATCH];
    int n;
    int beam;  // the search's width (1: greedy)
} pending;

// Translates and prints the pending sentences, in order. 0, or -1 after a
// failure (message printed).
static int flush(pending *p, ts_translator *t, ts_ctx *ctx) {
    if (p->n == 0) return 0;
    ts_hypothesis h[BATCH];
    int rc = ts_translate_sources(t, ctx, p->src, p->n, p->beam, h);
    for (int i = 0; i < p->n; i++) {
        if (!rc) rc = print_tokens(t, h[i].tokens, h[i].len);
        ts_hypothesis_free(&h[i]);
        ts_source_free(&p->src[i]);
    }
    p->n = 0;
    if (rc) ts_cli_error(cmd, 1, "translating a batch");
    return rc ? -1 : 0;
}

// Queues a sentence for the batch, encoded once; a blank or bad one prints
// its line (and message) after what is queued.
static int submit(pending *p, ts_translator *t, ts_ctx *ctx, const char *text, size_t len, const char *where,
                  long number) {
    ts_source src;
    int rc = ts_source_encode(t, text, len, &src);
    if (rc || src.len == 0) {  // its line comes after the queued ones
        char why[4096];
        snprintf(why, sizeof why, "%s", rc ? ts_last_error() : "");
        return flush(p, t, ctx) ? -1 : print_unencoded(rc, why, where, number);
    }
    note_unknown_words(t, src.units, where, number);  // named as it is queued, before the batch's lines
    p->src[p->n] = src;
    return ++p->n == BATCH ? flush(p, t, ctx) : 0;
}

int ts_cmd_translate(int argc, char **argv) {
    const char *model_path = NULL;
    long beam = TS_BEAM_DEFAULT;
    ts_length_penalty lp = {0, 0.0};
    // Positional arguments are the sentences; argv outlives this function.
    const char **sentences = malloc((size_t)argc * sizeof *sentences);
    if (!sentences) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    const ts_flag flags[] = {
        TS_STRING("model", &model_path),
        TS_INT("beam", &beam, 0, TS_BEAM_MAX),
        {.name = "length-penalty", .kind = TS_FLAG_DOUBLE, .target = &lp.alpha, .lo = 0, .hi = 100, .given = &lp.gnmt},
    };
    sentence_list list = {sentences, 0};
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0],
                        .positional = take_sentence, .context = &list};
    int parsed = ts_cli_parse(&spec, argc, argv);
    int n_sentences = list.n;
    // "translate --model M the small cat ." is one sentence typed unquoted,
    // not four one-word ones.
    int one_word_each = n_sentences > 1;
    for (int i = 0; one_word_each && i < n_sentences; i++) one_word_each = !strpbrk(sentences[i], " \t");
    if (parsed < 0 && !model_path && ts_cli_model_hint(cmd, sentences, n_sentences)) parsed = TS_EXIT_USAGE;
    if (parsed < 0 && one_word_each) {
        char why[128];
        snprintf(why, sizeof why, "%d SENTENCE arguments of one word each", n_sentences);
        parsed = ts_cli_quote_hint(cmd, why, sentences, n_sentences);
    }
    ts_session s;
    if (parsed < 0) parsed = ts_cli_open_session(cmd, model_path, NULL, lp, &beam, &s);
    if (parsed >= 0) {
        free(sentences);
        return parsed;
    }
    ts_translator *t = &s.t;
    ts_ctx *ctx = &s.ctx;
    ctx->keep_scratch = 1;  // batch after batch decodes in the pages the first one touched
    int bad = 0, failed = 0;
    pending batch = {.n = 0, .beam = (int)beam};
    if (n_sentences > 0) {
        for (int i = 0; !failed && i < n_sentences; i++) {
            int r = submit(&batch, t, ctx, sentences[i], strlen(sentences[i]), "argument", i + 1);
            bad |= r == 1;
            failed |= r < 0;
        }
    } else {
        // At a terminal each line is answered as it is typed (a batch would
        // wait for 128 lines); from a pipe or a file lines go in batches.
        int typed = isatty(STDIN_FILENO);
        if (typed) fprintf(stderr, "%s: type a sentence and press Enter; Ctrl-D ends\n> ", cmd);
        char *line = NULL;
        size_t cap = 0;
        ssize_t got;
        long line_no = 0;
        while (!failed && (got = getline(&line, &cap, stdin)) >= 0) {
            size_t len = (size_t)got;
            if (len > 0 && line[len - 1] == '\n') len--;
            if (len > 0 && line[len - 1] == '\r') len--;
            // A lone CR ends a line too (old Mac files), as in the corpus reader.
            for (size_t start = 0; !failed;) {
                size_t end = start;
                while (end < len && line[end] != '\r') end++;
                line[end] = '\0';
                line_no++;
                int r = !typed ? submit(&batch, t, ctx, line + start, end - start, "line", line_no)
                               : translate_one(t, ctx, line + start, end - start, (int)beam, "line", line_no);
                bad |= r == 1;
                failed |= r < 0;
                if (end >= len) break;
                start = end + 1;
            }
            if (typed && fflush(stdout) != EOF) fputs("> ", stderr);
        }
        if (typed) fputc('\n', stderr);  // the line Ctrl-D left open
        if (!failed && ferror(stdin)) {
            ts_cli_error(cmd, 0, "cannot read standard input");
            failed = 1;
        }
        free(line);
    }
    if (!failed) failed = flush(&batch, t, ctx) < 0;
    for (int i = 0; i < batch.n; i++) ts_source_free(&batch.src[i]);
    if (fflush(stdout) == EOF && !failed) {
        ts_cli_error(cmd, 0, "cannot write the translations");
        failed = 1;
    }
    ts_session_free(&s);
    free(sentences);
    return failed || bad ? TS_EXIT_FAIL : TS_EXIT_OK;
}
