// libFuzzer harness for the training options as a caller hands them over
// (Python's train(**options) and tinyseq_train: names and text values read
// through the options table, train/options.h) and what is made of them: the
// preset table's flags and the architecture's defaults filling what was not
// given (ts_train_options_finish), the rows a checkpoint keeps and compares
// on --resume, and config.txt, which `tinyseq train --config` reads back.
//
// An input is lines "name=value" (a name as Python spells it, "max_len", or
// as the flag does, "max-len", or config.txt's key). Beyond "no crash, no
// leak, no sanitizer report":
//   - a failure is TS_ERR_ARG with a message;
//   - options that finish hold only values their rows allow: numbers inside
//     their bounds (or the row's default, "not given"), named choices;
//   - the checkpoint's rows, saved, written, loaded and compared with the
//     same options, agree (a run can resume from itself);
//   - config.txt, read back as cli/cmd_train.c's --config reads it and
//     written again, is the same text (it repeats the run; it did not when a
//     row written only when given was 0 and the preset or --arch's
//     defaults filled it on the way back).
#include "ckpt/ckpt.h"
#include "tensor/status.h"
#include "train/options.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Every row's value is one it allows.
static void check_values(const ts_train_opts *o) {
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        const ts_setting *s = r->set;
        switch (r->kind) {
        case TS_OPTION_INT: {
            long v = ts_train_option_whole(o, r);
            if (s->lo < s->hi && (v < s->lo || v > s->hi) && v != (long)s->value) __builtin_trap();
            break;
        }
        case TS_OPTION_REAL: {
            double v = ts_train_option_real(o, r);
            if (!isfinite(v) || (s->lo < s->hi && (v < s->lo || v > s->hi) && v != s->value)) __builtin_trap();
            break;
        }
        case TS_OPTION_SWITCH: {
            long v = ts_train_option_whole(o, r);
            if (v != 0 && v != 1) __builtin_trap();
            break;
        }
        case TS_OPTION_CHOICE:
            if (!ts_train_option_choice(o, r)) __builtin_trap();
            break;
        case TS_OPTION_TEXT: break;
        }
    }
}

// The checkpoint's rows of o, saved, through the file's bytes and back, agree with o.
static void check_checkpoint(ts_train_opts *o) {
    ts_ckpt *ck = ts_ckpt_new(), *back = NULL;
    if (!ck) __builtin_trap();
    int rc = ts_train_options_save(ck, o, o->lr);
    if (rc != TS_OK) {
        // Only a text longer than a header value may not be saved (no such file opens: PATH_MAX).
        int long_text = 0;
        for (size_t i = 0; i < ts_train_options_count; i++)
            if (ts_train_options[i].kind == TS_OPTION_TEXT &&
                strlen(ts_train_option_text(o, &ts_train_options[i])) > TS_CKPT_MAX_VALUE)
                long_text = 1;
        if (rc != TS_ERR_ARG || !long_text) __builtin_trap();
        ts_ckpt_free(ck);
        return;
    }
    // The rows saved with the model (infer/load.c: data.max_len, data.normalisation by its name), as a
    // run's checkpoint has them.
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!(r->use & TS_OPTION_IN_MODEL)) continue;
        rc = r->kind == TS_OPTION_CHOICE ? ts_ckpt_set(ck, r->saved_as, ts_train_option_choice(o, r))
                                         : ts_ckpt_set_int(ck, r->saved_as, ts_train_option_whole(o, r));
        if (rc != TS_OK) __builtin_trap();
    }
    unsigned char *bytes;
    size_t n;
    if (ts_ckpt_save_mem(ck, &bytes, &n) != TS_OK || ts_ckpt_load_mem(bytes, n, NULL, &back) != TS_OK) __builtin_trap();
    const char *resume = o->resume;
    o->resume = "fuzz.ckpt";  // compare's messages name it
    if (ts_train_options_compare(ck, o) != TS_OK || ts_train_options_compare(back, o) != TS_OK) __builtin_trap();
    o->resume = resume;
    free(bytes);
    ts_ckpt_free(back);
    ts_ckpt_free(ck);
}

// o's config.txt lines, malloc'd.
static char *config_of(const ts_train_opts *o, size_t *n) {
    char *text = NULL;
    *n = 0;
    FILE *f = open_memstream(&text, n);
    if (!f) __builtin_trap();
    ts_train_options_write_config(f, o);
    fclose(f);
    return text;
}

// Reads config.txt's lines into *o as cli/cmd_train.c's apply_config does
// (then finishes o): "key = value", where a row's default spelled as
// config.txt spells it is no value given (an empty value, a TEXT row's
// `absent`, 0 of a switch or of a number whose flag's range excludes 0).
static int read_config(char *text, ts_train_opts *o, char default_out[TS_RUN_NAME_SIZE]) {
    int given[TS_TRAIN_OPTIONS_MAX] = {0};
    for (char *line = text, *next; line && *line; line = next) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        next = end ? end + 1 : NULL;
        char *eq = strstr(line, " = ");
        if (!eq) __builtin_trap();  // the writer writes nothing else
        *eq = '\0';
        const char *key = line, *value = eq + 3;
        const ts_train_option *r = ts_train_option_by_key(key);
        if (!r) __builtin_trap();
        int is_switch = r->kind == TS_OPTION_SWITCH;
        int unset_zero = r->kind == TS_OPTION_INT && r->set->value == 0 && r->set->lo > 0;
        if (!*value || ((unset_zero || is_switch) && !strcmp(value, "0")) ||
            (r->kind == TS_OPTION_TEXT && r->absent && !strcmp(value, r->absent)))
            continue;
        int rc = ts_train_option_set(o, r, key, value);
        if (rc) return rc;
        given[r - ts_train_options] = 1;
    }
    return ts_train_options_finish(o, given, default_out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);  // the values point into it
    memcpy(text, data, size);
    text[size] = '\0';
    ts_train_opts o = ts_train_defaults();
    int given[TS_TRAIN_OPTIONS_MAX] = {0}, rc = TS_OK;
    char default_out[TS_RUN_NAME_SIZE];
    for (char *line = text, *next; !rc && line; line = next) {
        char *end = memchr(line, '\n', size - (size_t)(line - text));
        if (end) *end = '\0';
        next = end ? end + 1 : NULL;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        const ts_train_option *r = ts_train_option_by_name(line);
        if (!r) continue;
        if (!(rc = ts_train_option_set(&o, r, line, eq + 1))) given[r - ts_train_options] = 1;
    }
    if (!rc) rc = ts_train_options_finish(&o, given, default_out);
    if (rc != TS_OK) {
        if (rc != TS_ERR_ARG || ts_last_error()[0] == '\0') __builtin_trap();
        free(text);
        return 0;
    }
    check_values(&o);
    rc = ts_train_options_check_arch(&o, given);
    if (rc != TS_OK && (rc != TS_ERR_ARG || ts_last_error()[0] == '\0')) __builtin_trap();
    check_checkpoint(&o);

    // config.txt spells a text row's default as an empty value or as its
    // `absent` ("corpus = toy"): a text given so (an empty path, which no run
    // opens; a file called toy) is not read back as given.
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        const char *value = r->kind == TS_OPTION_TEXT ? *(const char *const *)ts_train_option_field(&o, r) : NULL;
        if (value && (!*value || (r->absent && !strcmp(value, r->absent)))) {
            free(text);
            return 0;
        }
    }
    size_t n, n_again;
    char *config = config_of(&o, &n), *copy = strdup(config);
    ts_train_opts again = ts_train_defaults();
    char again_out[TS_RUN_NAME_SIZE];
    if (read_config(copy, &again, again_out) != TS_OK) __builtin_trap();
    char *config_again = config_of(&again, &n_again);
    if (n_again != n || memcmp(config, config_again, n)) __builtin_trap();
    free(config_again);
    free(copy);
    free(config);
    free(text);
    return 0;
}
