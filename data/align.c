// Pharaoh alignment lines: the one writer and the one parser.
#include "data/align.h"

#include "tensor/status.h"

#include <stdlib.h>

int ts_pharaoh_write(FILE *out, const ts_link *links, size_t n_links) {
    const char *sep = "";
    for (size_t k = 0; k < n_links; k++) {
        if (links[k].src == TS_UNALIGNED) continue;
        fprintf(out, "%s%d-%d", sep, (int)links[k].src, (int)links[k].tgt);
        sep = " ";
    }
    putc('\n', out);
    return ferror(out) ? ts_fail(TS_ERR_IO, "pharaoh: write error") : TS_OK;
}

// Parses "digits" at *p into a value in [0, INT32_MAX]; advances *p.
static int parse_index(const char **p, int32_t *out) {
    const char *s = *p;
    if (*s < '0' || *s > '9') return -1;
    int64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > INT32_MAX) return -1;
    }
    *out = (int32_t)v;
    *p = s;
    return 0;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int ts_pharaoh_parse(const char *line, ts_link **links, size_t *n_links) {
    *links = NULL;
    *n_links = 0;
    size_t cap = 0, n = 0, index = 0;
    ts_link *out = NULL;
    const char *p = line;
    for (;;) {
        while (is_space(*p)) p++;
        if (*p == '\0') break;
        const char *token = p;
        index++;
        ts_link link;
        int ok = parse_index(&p, &link.src) == 0 && *p == '-';
        if (ok) {
            p++;
            ok = parse_index(&p, &link.tgt) == 0 && (*p == '\0' || is_space(*p));
        }
        if (!ok) {
            size_t len = 0;
            while (token[len] && !is_space(token[len])) len++;
            free(out);
            return ts_fail(TS_ERR_FORMAT,
                           "pharaoh: link %zu \"%.*s\" is not i-j with i, j in [0, %d]",
                           index, (int)(len > 64 ? 64 : len), token, INT32_MAX);
        }
        if (n == cap) {
            size_t new_cap = cap ? 2 * cap : 16;
            ts_link *grown = realloc(out, new_cap * sizeof *out);
            if (!grown) {
                free(out);
                return ts_fail(TS_ERR_NOMEM, "pharaoh: no memory for %zu links", new_cap);
            }
            out = grown;
            cap = new_cap;
        }
        out[n++] = link;
    }
    *links = out;
    *n_links = n;
    return TS_OK;
}
