// The flag-table parser shared by the subcommands (cli/cli.h) and the
// messages they print.
#include "cli/cli.h"

#include "tensor/status.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// The table's row for argument `arg`, or NULL. A long flag "--name" or
// "--name=value" (then *inline_value points past the '='); a row whose name
// starts with '-' matches only itself.
static const ts_flag *find_flag(const ts_cli_spec *spec, const char *arg, const char **inline_value) {
    *inline_value = NULL;
    int is_long = !strncmp(arg, "--", 2);
    const char *name = is_long ? arg + 2 : arg;
    const char *eq = is_long ? strchr(name, '=') : NULL;
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t i = 0; i < spec->n_flags; i++) {
        const ts_flag *f = &spec->flags[i];
        if ((f->name[0] == '-') == is_long) continue;
        if (strlen(f->name) == n && !strncmp(f->name, name, n)) {
            if (eq) *inline_value = eq + 1;
            return f;
        }
    }
    return NULL;
}

// What a row's flag looks like on the command line: "--name" or "-o".
static const char *dashes(const ts_flag *f) { return f->name[0] == '-' ? "" : "--"; }

// Takes one flag (and its value from argv[*i + 1] when it needs one):
// -1, or the exit status after a message.
static int take_flag(const ts_cli_spec *spec, const ts_flag *f, const char *inline_value, int argc, char **argv,
                     int *i) {
    const char *cmd = spec->command;
    if (f->given) *f->given = 1;
    if (f->kind == TS_FLAG_SWITCH) {
        if (inline_value) {
            ts_cli_error(cmd, 0, "--%s is a switch and takes no value, got '--%s=%s'", f->name, f->name, inline_value);
            return TS_EXIT_USAGE;
        }
        *(int *)f->target = 1;
        return -1;
    }
    const char *value = inline_value;
    if (!value) {
        if (*i + 1 >= argc) {
            ts_cli_error(cmd, 0, "%s%s needs a value", dashes(f), f->name);
            return TS_EXIT_USAGE;
        }
        value = argv[++*i];
    }
    switch (f->kind) {
    case TS_FLAG_INT:
        return ts_parse_int(cmd, f->name, value, (long)f->lo, (long)f->hi, f->target) ? TS_EXIT_USAGE : -1;
    case TS_FLAG_DOUBLE:
        return ts_parse_double(cmd, f->name, value, f->lo, f->hi, f->target) ? TS_EXIT_USAGE : -1;
    case TS_FLAG_STRING:
        *(const char **)f->target = value;
        return -1;
    case TS_FLAG_CHOICE:
        return f->choose(cmd, f->name, value, f->target);
    case TS_FLAG_SWITCH:
        break;
    }
    return -1;
}

// The edit distance between a[0..n) and b, counting a swap of two neighbours
// as one edit ("--lenght" is one from "--length"); stops counting past 3.
static size_t edit_distance(const char *a, size_t n, const char *b) {
    size_t m = strlen(b);
    if (n > 40 || m > 40) return 4;
    size_t d[41][41];
    for (size_t i = 0; i <= n; i++) d[i][0] = i;
    for (size_t j = 0; j <= m; j++) d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

int ts_cli_nearest(const char *word, size_t n, const char *(*name_of)(const void *table, size_t i), const void *table,
                   size_t count) {
    int best = -1, prefixed = -1, n_prefixed = 0;
    size_t best_distance = n <= 2 ? 1 : n <= 4 ? 2 : 3;  // more than this many edits is another word
    for (size_t i = 0; i < count; i++) {
        const char *name = name_of(table, i);
        if (!name) continue;
        if (n >= 3 && !strncmp(name, word, n)) {
            prefixed = (int)i;
            n_prefixed++;
        }
        size_t d = edit_distance(word, n, name);
        if (d < best_distance) {
            best = (int)i;
            best_distance = d;
        }
    }
    return n_prefixed == 1 ? prefixed : best;
}

// The i-th long flag's name of a spec (NULL for "-o": matched as spelled).
static const char *long_flag_name(const void *spec, size_t i) {
    const ts_flag *f = &((const ts_cli_spec *)spec)->flags[i];
    return f->name[0] == '-' ? NULL : f->name;
}

// The long flag a mistyped name[0..n) most likely meant, or NULL.
static const ts_flag *nearest_flag(const ts_cli_spec *spec, const char *name, size_t n) {
    int i = ts_cli_nearest(name, n, long_flag_name, spec, spec->n_flags);
    return i < 0 ? NULL : &spec->flags[i];
}

// "unknown option -x": the message for an option that no row takes, with the
// flag it most likely meant.
static int unknown_option(const ts_cli_spec *spec, const char *dashes_given, const char *name, size_t n) {
    const ts_flag *near = nearest_flag(spec, name, n);
    if (near)
        ts_cli_error(spec->command, 0, "unknown option %s%.*s: did you mean --%s? (see %s --help)", dashes_given, (int)n,
                     name, near->name, spec->command);
    else
        ts_cli_error(spec->command, 0, "unknown option %s%.*s (see %s --help)", dashes_given, (int)n, name, spec->command);
    return TS_EXIT_USAGE;
}

static int print_help(const ts_cli_spec *spec) {
    if (spec->usage) fputs(spec->usage, stdout);
    else spec->help(stdout);
    return TS_EXIT_OK;
}

// 1 for a word like "-h" or "-epochs" (a dash, then a letter, no space): an
// option, never a positional ("-", "-5" and "- a" are positionals).
static int looks_like_short_option(const char *arg) {
    return arg[0] == '-' && ((arg[1] >= 'a' && arg[1] <= 'z') || (arg[1] >= 'A' && arg[1] <= 'Z')) &&
           !strpbrk(arg, " \t\n");
}

int ts_cli_parse(const ts_cli_spec *spec, int argc, char **argv) {
    const char *cmd = spec->command;
    int options_ended = 0;  // after "--" every argument is positional
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_ended && !strcmp(arg, "--")) {
            options_ended = 1;
            continue;
        }
        int is_flag = !options_ended && !strncmp(arg, "--", 2) && arg[2] != '\0';
        const char *inline_value;
        const ts_flag *f = options_ended ? NULL : find_flag(spec, arg, &inline_value);
        if (!f && is_flag) {
            size_t n = strcspn(arg + 2, "=");
            if (n == 4 && !strncmp(arg + 2, "help", 4)) return print_help(spec);
            return unknown_option(spec, "--", arg + 2, n);
        }
        if (!f && !options_ended && looks_like_short_option(arg)) {
            if (!strcmp(arg, "-h")) return print_help(spec);
            return unknown_option(spec, "-", arg + 1, strcspn(arg + 1, "="));
        }
        int rc;
        if (f) {
            rc = take_flag(spec, f, inline_value, argc, argv, &i);
        } else if (spec->positional) {
            rc = spec->positional(spec->context, cmd, arg);
        } else {
            ts_cli_error(cmd, 0, "unexpected argument '%s' (see %s --help)", arg, cmd);
            rc = TS_EXIT_USAGE;
        }
        if (rc >= 0) return rc;
    }
    return -1;
}

int ts_parse_int(const char *command, const char *flag, const char *text,
                 long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0') {
        ts_cli_error(command, 0, "--%s expects a whole number, got '%s'", flag, text);
        return -1;
    }
    if (v < lo || v > hi) {
        ts_cli_error(command, 0, "--%s must be between %ld and %ld, got %ld", flag, lo, hi, v);
        return -1;
    }
    *out = v;
    return 0;
}

int ts_parse_double(const char *command, const char *flag, const char *text,
                    double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v)) {
        ts_cli_error(command, 0, "--%s expects a number, got '%s'", flag, text);
        return -1;
    }
    if (v < lo || v > hi) {
        ts_cli_error(command, 0, "--%s must be between %g and %g, got %g", flag, lo, hi, v);
        return -1;
    }
    *out = v;
    return 0;
}

void ts_cli_error(const char *command, int with_lib_error, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (with_lib_error && ts_last_error()[0]) fprintf(stderr, ": %s", ts_last_error());
    fputc('\n', stderr);
}
