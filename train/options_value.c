// A row of the training options table (train/options.h) in ts_train_opts:
// its field read as a number, a text or a choice's name, set from text as
// its --flag, --config's line or a preset gives it, formatted as config.txt
// and the checkpoint write it, its help for usage; the defaults; rows found
// by flag and by config.txt key.
#include "train/options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ts_format_exact(char buf[32], double x) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, 32, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return buf;
}

void *ts_train_option_field(ts_train_opts *o, const ts_train_option *r) { return (char *)o + r->offset; }

const void *ts_train_option_field_of(const ts_train_opts *o, const ts_train_option *r) { return (const char *)o + r->offset; }

long ts_train_option_whole(const ts_train_opts *o, const ts_train_option *r) {
    return r->size == sizeof(long) ? *(const long *)ts_train_option_field_of(o, r) : *(const int *)ts_train_option_field_of(o, r);
}

const char *ts_train_option_choice(const ts_train_opts *o, const ts_train_option *r) {
    return ts_names_name(r->set->names, *(const int *)ts_train_option_field_of(o, r));
}

// A CHOICE row's value (an int-sized enum) by its name.
static int choose(ts_train_opts *o, const ts_train_option *r, const char *name) {
    return ts_names_parse(r->set->names, name, (int *)ts_train_option_field(o, r));
}

double ts_train_option_real(const ts_train_opts *o, const ts_train_option *r) { return *(const double *)ts_train_option_field_of(o, r); }

const char *ts_train_option_text(const ts_train_opts *o, const ts_train_option *r) {
    const char *value = *(const char *const *)ts_train_option_field_of(o, r);
    return value ? value : r->absent ? r->absent : "";
}

void ts_train_option_set_whole(ts_train_opts *o, const ts_train_option *r, long v) {
    if (r->size == sizeof(long)) *(long *)ts_train_option_field(o, r) = v;
    else *(int *)ts_train_option_field(o, r) = (int)v;
}

ts_train_opts ts_train_defaults(void) {
    ts_train_opts o = {.out = stdout, .log = stderr};
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (r->use & TS_OPTION_NOW) continue;  // the --lr row has the default
        switch (r->kind) {
        case TS_OPTION_INT:
        case TS_OPTION_SWITCH: ts_train_option_set_whole(&o, r, (long)r->set->value); break;
        case TS_OPTION_REAL: *(double *)ts_train_option_field(&o, r) = r->set->value; break;
        case TS_OPTION_TEXT: *(const char **)ts_train_option_field(&o, r) = r->set->text; break;
        case TS_OPTION_CHOICE: choose(&o, r, r->set->text); break;  // the table's own names: cannot fail
        }
    }
    return o;
}

int ts_train_option_takes_file(const ts_train_option *r) {
    return r->set->flag && r + 1 < ts_train_options + ts_train_options_count && r[1].set->flag &&
           !strcmp(r[1].set->flag, r->set->flag);
}

int ts_train_option_set(ts_train_opts *o, const ts_train_option *r, const char *name, const char *text) {
    void *field = ts_train_option_field(o, r);
    char *end;
    errno = 0;
    switch (r->kind) {
    case TS_OPTION_INT: {
        long v = strtol(text, &end, 10);
        if (end == text || *end || errno) {
            if (ts_train_option_takes_file(r)) {  // --dev FILE
                *(const char **)ts_train_option_field(o, r + 1) = text;
                ts_train_option_set_whole(o, r, 0);
                return TS_OK;
            }
            return ts_fail(TS_ERR_ARG, "%s expects a whole number, got '%s'", name, text);
        }
        if (v < r->set->lo || v > r->set->hi)
            return ts_fail(TS_ERR_ARG, "%s is %ld, outside %.0f..%.0f", name, v, r->set->lo, r->set->hi);
        ts_train_option_set_whole(o, r, v);
        if (ts_train_option_takes_file(r)) *(const char **)ts_train_option_field(o, r + 1) = NULL;
        return TS_OK;
    }
    case TS_OPTION_REAL: {
        double v = strtod(text, &end);
        if (end == text || *end || !isfinite(v))
            return ts_fail(TS_ERR_ARG, "%s expects a number, got '%s'", name, text);
        if (v < r->set->lo || v > r->set->hi) return ts_fail(TS_ERR_ARG, "%s is %g, outside %g..%g", name, v, r->set->lo, r->set->hi);
        *(double *)field = v;
        return TS_OK;
    }
    case TS_OPTION_TEXT: *(const char **)field = text; return TS_OK;
    case TS_OPTION_SWITCH:
        if (strcmp(text, "0") && strcmp(text, "1")) return ts_fail(TS_ERR_ARG, "%s is 0 or 1, got '%s'", name, text);
        *(int *)field = text[0] == '1';
        return TS_OK;
    case TS_OPTION_CHOICE: {
        int rc = choose(o, r, text);
        return rc ? ts_fail(rc, "%s: %s", name, ts_last_error()) : TS_OK;
    }
    }
    return ts_fail(TS_ERR_ARG, "%s: an option of unknown kind", name);
}

const ts_train_option *ts_train_option_by_flag(const char *flag) {
    for (size_t i = 0; i < ts_train_options_count; i++)
        if (ts_train_options[i].set->flag && !strcmp(ts_train_options[i].set->flag, flag)) return &ts_train_options[i];
    return NULL;
}

const ts_train_option *ts_train_option_by_key(const char *key) {
    for (size_t i = 0; i < ts_train_options_count; i++)
        if (ts_train_options[i].set->key && ts_train_options[i].set->flag && !strcmp(ts_train_options[i].set->key, key))
            return &ts_train_options[i];
    return NULL;
}

const ts_train_option *ts_train_option_by_name(const char *name) {
    char flag[64];
    size_t n = strlen(name);
    if (n >= sizeof flag) return NULL;
    for (size_t i = 0; i <= n; i++) flag[i] = name[i] == '_' ? '-' : name[i];
    const ts_train_option *r = ts_train_option_by_flag(flag);
    return r ? r : ts_train_option_by_key(name);
}

const char *ts_train_option_label(const ts_train_option *r, char buf[64]) {
    if (!r->set->flag) return r->name;
    snprintf(buf, 64, "--%s", r->set->flag);
    return buf;
}

const char *ts_train_option_format(const ts_train_opts *o, const ts_train_option *r, char buf[32]) {
    switch (r->kind) {
    case TS_OPTION_INT:
    case TS_OPTION_SWITCH: snprintf(buf, 32, "%ld", ts_train_option_whole(o, r)); return buf;
    case TS_OPTION_REAL: return ts_format_exact(buf, ts_train_option_real(o, r));
    case TS_OPTION_TEXT: return ts_train_option_text(o, r);
    case TS_OPTION_CHOICE: return ts_train_option_choice(o, r);
    }
    return "";
}

void ts_train_option_help(FILE *f, const ts_train_option *r, const ts_train_opts *o, const char *newline) {
    char number[32], names[256];
    for (const char *p = r->set->help; *p; p++) {
        if (!strncmp(p, "{}", 2)) {
            fputs(ts_train_option_format(o, r, number), f);
            p++;
        } else if (!strncmp(p, "{names}", 7) && r->set->names) {
            fputs(ts_names_list(r->set->names, names, sizeof names), f);
            p += 6;
        } else if (*p == '\n') {
            fputs(newline, f);
        } else {
            fputc(*p, f);
        }
    }
}
