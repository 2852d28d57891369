// One lookup for every kind's names (tensor/names.h).
#include "tensor/names.h"

#include "tensor/status.h"

#include <stdio.h>
#include <string.h>

const char *ts_names_name(const ts_names *n, int value) {
    return value >= 0 && value < n->count ? n->name(value) : "?";
}

char *ts_names_list(const ts_names *n, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->count && at < size; i++) {
        const char *joint = i == 0 ? "" : i == n->count - 1 ? " or " : ", ";
        int wrote = snprintf(buf + at, size - at, "%s%s", joint, n->name(i));
        at += wrote > 0 ? (size_t)wrote : 0;
    }
    return buf;
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
