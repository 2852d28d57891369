#include "cli/common.h"

#include "cli/cli.h"
#include "models/explain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *ts_cli_program = "tinyseq";

int ts_cli_open_session(const char *command, const char *model_path, const char *missing, ts_length_penalty lp,
                        long *beam, ts_session *s) {
    if (!model_path || missing) {
        ts_cli_error(command, 0, "%s is required (see %s --help)", model_path ? missing : "--model CKPT", command);
        return TS_EXIT_USAGE;
    }
    if (lp.gnmt && ts_beam_width((int)*beam) == 1)
        ts_cli_error(command, 0, "warning: --length-penalty ranks beam search's outputs; with greedy decoding "
                                 "(--beam 1) it changes nothing: leave --beam at its default " TS_CLI_QUOTE(TS_BEAM_DEFAULT) " or give K > 1");
    if (ts_session_open(s, model_path)) {  // inference only: the weights stay in the file's mapping
        ts_cli_error(command, 1, "cannot load the model");
        ts_cli_checkpoint_hint(command, "--model", model_path, "best.ckpt");
        return TS_EXIT_FAIL;
    }
    int width = (int)*beam;
    if (ts_session_search(s, &width, lp)) {  // the flags' bounds: a usage error had it been outside
        ts_cli_error(command, 1, "the search");
        ts_session_free(s);
        return TS_EXIT_USAGE;
    }
    *beam = width;
    return -1;
}

int ts_cli_checkpoint_hint(const char *command, const char *flag, const char *path, const char *name) {
    char inside[4200];
    struct stat st;
    snprintf(inside, sizeof inside, "%s/%s", path, name);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || stat(inside, &st) != 0) return 0;  // not a run directory
    fprintf(stderr, "%s: did you mean %s%s%s?\n", command, flag, *flag ? " " : "", inside);
    return 1;
}

// words[0..n) for the shell, joined as one quoted argument.
static void print_quoted(const char *const *words, int n) {
    fputc('\'', stderr);
    for (int i = 0; i < n; i++) {
        if (i) fputc(' ', stderr);
        for (const char *c = words[i]; *c; c++)
            if (*c == '\'') fputs("'\\''", stderr);
            else fputc(*c, stderr);
    }
    fputc('\'', stderr);
}

int ts_cli_model_hint(const char *command, const char *const *words, int n) {
    struct stat st;
    if (n < 1 || stat(words[0], &st) != 0) return 0;
    char best[4200];
    snprintf(best, sizeof best, "%s/best.ckpt", words[0]);
    int dir = S_ISDIR(st.st_mode);
    const char *model = dir && stat(best, &st) == 0 ? best : words[0];
    fprintf(stderr, "%s: '%s' is a %s, not a sentence: the model goes after --model:\n  %s --model %s", command,
            words[0], dir ? "directory" : "file", command, model);
    int one_word_each = 1;  // typed unquoted: one sentence; else each argument is one
    for (int i = 1; i < n; i++) one_word_each &= !strpbrk(words[i], " \t");
    for (int i = 1; i < n; i += one_word_each ? n : 1) {
        fputc(' ', stderr);
        print_quoted(words + i, one_word_each ? n - 1 : 1);
    }
    fputc('\n', stderr);
    return 1;
}

int ts_cli_check_output(const char *command, const char *what, const char *path, int force, int stdout_ok) {
    struct stat st;
    if (!strcmp(path, "-")) {
        if (stdout_ok) return -1;
        ts_cli_error(command, 0, "%s cannot go to standard output ('-'); name a file", what);
        return TS_EXIT_USAGE;
    }
    if (force || stat(path, &st) != 0) return -1;
    ts_cli_error(command, 0, "'%s' exists; pass --force to replace it", path);
    return TS_EXIT_FAIL;
}

char *ts_cli_read_stream(FILE *f, size_t limit, size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0 && (n += got) == cap) {
        char *bigger = cap < limit ? realloc(buf, 2 * cap + 1) : NULL;
        if (!bigger) {
            free(buf);
            errno = cap < limit ? ENOMEM : EFBIG;
        }
        buf = bigger;
        cap *= 2;
    }
    if (!buf || ferror(f)) {
        int why = errno;  // the read's (EISDIR for a directory), or the size's
        free(buf);
        errno = why;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int ts_cli_quote_hint(const char *command, const char *why, const char *const *words, int n) {
    fprintf(stderr, "%s: %s; quote the sentence to give it whole:\n  %s --model CKPT ", command, why, command);
    print_quoted(words, n);
    fputc('\n', stderr);
    return TS_EXIT_USAGE;
}

int ts_cli_choose_explain(const char *command, const char *flag, const char *value, void *target) {
    int method = ts_explain_parse(value);
    if (method < 0) {
        ts_cli_error(command, 0, "--%s expects grad (gradient x input) or ig (integrated gradients), got '%s'", flag, value);
        return TS_EXIT_USAGE;
    }
    *(int *)target = method;
    return -1;
}
