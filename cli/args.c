#include "cli/cli.h"

#include "tensor/status.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char inline_value_storage[4096];

void ts_args_init(ts_args *a, int argc, char **argv, const char *command) {
    a->argc = argc;
    a->argv = argv;
    a->index = 1;
    a->command = command;
    inline_value_storage[0] = '\0';
}

static const char *pending_inline; // value of "--name=value" awaiting ts_args_value

int ts_args_next(ts_args *a, const char **flag, const char **value) {
    pending_inline = NULL;
    if (a->index >= a->argc) return 0;
    const char *arg = a->argv[a->index++];
    if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0') {
        const char *eq = strchr(arg, '=');
        if (eq) {
            size_t n = (size_t)(eq - arg - 2);
            if (n >= sizeof inline_value_storage) n = sizeof inline_value_storage - 1;
            memcpy(inline_value_storage, arg + 2, n);
            inline_value_storage[n] = '\0';
            *flag = inline_value_storage;
            pending_inline = eq + 1;
        } else {
            *flag = arg + 2;
        }
        *value = NULL;
        return 1;
    }
    *flag = NULL;
    *value = arg;
    return 1;
}

int ts_args_switch(ts_args *a, const char *flag) {
    if (!pending_inline) return 0;
    ts_cli_error(a->command, 0, "--%s is a switch and takes no value, got '--%s=%s'", flag, flag, pending_inline);
    pending_inline = NULL;
    return -1;
}

const char *ts_args_value(ts_args *a, const char *flag) {
    if (pending_inline) {
        const char *v = pending_inline;
        pending_inline = NULL;
        return v;
    }
    if (a->index >= a->argc) {
        ts_cli_error(a->command, 0, "--%s needs a value", flag);
        return NULL;
    }
    return a->argv[a->index++];
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

int ts_unknown_flag(const char *command, const char *flag) {
    ts_cli_error(command, 0, "unknown option --%s (see %s --help)", flag, command);
    return TS_EXIT_USAGE;
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
