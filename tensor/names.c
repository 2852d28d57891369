// One lookup for every kind's names (tensor/names.h).
#include "tensor/names.h"

#include "tensor/status.h"

#include <stdio.h>
#include <string.h>

const char *ts_names_name(const ts_names *n, int value) {
    return value >= 0 && value < n->count ? n->name(value) : "?";
}

int ts_names_parse(const ts_names *n, const char *text, int *value) {
    char list[256] = "";
    for (int i = 0; i < n->count; i++) {
        if (!strcmp(text, n->name(i))) return *value = i, TS_OK;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", n->name(i));
    }
    if (n->alias && !strcmp(text, n->alias)) return *value = n->alias_value, TS_OK;
    return ts_fail(TS_ERR_ARG, "unknown %s '%s' (%s)", n->what, text, list);
}
