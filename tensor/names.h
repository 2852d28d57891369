// The names of a kind's values (an attention, a decoder, an optimizer, a
// dtype, ...), read both ways by one helper: every named choice of a flag,
// a config.txt line or a checkpoint field is parsed by ts_names_parse, so
// each kind writes only its name function.
#ifndef TS_NAMES_H
#define TS_NAMES_H

#include <stddef.h>

typedef struct {
    const char *what;                // what messages call the kind: "attention"
    int count;                       // the values 0 .. count - 1
    const char *(*name)(int value);  // a value's name (value in range)
    const char *alias;               // another name accepted for alias_value ("additive"), or NULL
    int alias_value;
} ts_names;

// The name of value; "?" out of range.
const char *ts_names_name(const ts_names *names, int value);

// The kind's names in words, "gru or lstm" ("a, b or c"; a lone name as
// it is), into buf (size bytes, cut short if it must); returns buf.
char *ts_names_list(const ts_names *names, char *buf, size_t size);

// TS_OK and *value for the kind's name `text`, else TS_ERR_ARG:
// "unknown WHAT 'text' (name0, name1, ...)".
int ts_names_parse(const ts_names *names, const char *text, int *value);

// A setting as users meet it: its flag, its config.txt key, what values it
// takes, its default and its help. Train's options table (train/options.c)
// has one per option; a field of the model's configuration has its own in
// its row of ts_model_fields (models/config.c), which the options table
// points to, so each is written once.
typedef struct {
    const char *flag;       // "max-len" for --max-len; NULL: no flag
    const char *key;        // its config.txt key; NULL: not written there
    double lo, hi;          // a number's accepted values
    double value;           // a number's or a switch's default
    const char *text;       // a named choice's or a text's default (a text's NULL: not given)
    const ts_names *names;  // a named choice's names; NULL otherwise
    const char *meta;       // usage: "N" in "--max-len N"
    const char *help;       // usage: lines split by '\n'; "{}" stands for the default
} ts_setting;

#endif
