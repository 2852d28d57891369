// Gold alignments from a Pharaoh file (see gold.h).
#include "data/gold.h"

#include "tensor/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

void ts_gold_free(ts_gold *g) {
    for (size_t i = 0; g->links && i < g->n; i++) free(g->links[i]);
    free(g->links);
    free(g->counts);
    memset(g, 0, sizeof *g);
}

int ts_gold_read(const char *path, const char *corpus_name, const ts_corpus *c, ts_gold *g) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "r");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = c->n_pairs + 1;  // enough for a matching file; grows when the file is longer
    g->links = calloc(cap, sizeof *g->links);
    g->counts = calloc(cap, sizeof *g->counts);
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    int rc = g->links && g->counts ? TS_OK : ts_fail(TS_ERR_NOMEM, "out of memory");
    while (!rc && (got = getline(&line, &line_cap, f)) >= 0) {
        size_t len = (size_t)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        line[len] = '\0';
        size_t k = g->n;
        if (memchr(line, '\0', len)) {  // the parser would stop there: what follows would go unread
            rc = ts_fail(TS_ERR_FORMAT, "%s:%zu: a NUL byte", path, k + 1);
            break;
        }
        if (k >= cap) {
            // Longer than the corpus: keep counting for the message, drop the links.
            g->n++;
            continue;
        }
        ts_link *links;
        size_t n_links;
        if ((rc = ts_pharaoh_parse(line, &links, &n_links))) {
            rc = ts_fail(rc, "%s:%zu: %s", path, k + 1, ts_last_error());
            break;
        }
        g->links[k] = links;
        g->counts[k] = (int32_t)n_links;
        g->n++;
        if (k >= c->n_pairs) continue;
        const ts_pair *p = &c->pairs[k];
        for (size_t i = 0; i < n_links; i++)
            if (links[i].src >= p->src_len || links[i].tgt >= p->tgt_len) {
                rc = ts_fail(TS_ERR_FORMAT, "%s:%zu: link %d-%d is outside the pair (%d source, %d target tokens)",
                             path, k + 1, links[i].src, links[i].tgt, p->src_len, p->tgt_len);
                break;
            }
    }
    if (!rc && ferror(f)) rc = ts_fail(TS_ERR_IO, "cannot read '%s'", path);
    free(line);
    fclose(f);
    // The first line that has no partner: the gold's next line, or its first past the pairs.
    if (!rc && g->n != c->n_pairs)
        rc = ts_fail(TS_ERR_FORMAT, "%s:%zu: %s: '%s' has %zu lines but '%s' has %zu sentence pairs: they must correspond "
                     "line by line", path, (g->n < c->n_pairs ? g->n : c->n_pairs) + 1,
                     g->n < c->n_pairs ? "missing (the file ends before the pairs do)" : "one line past the last pair",
                     path, g->n, corpus_name, c->n_pairs);
    if (rc) {
        if (g->n > cap) g->n = cap;
        ts_gold_free(g);
    }
    return rc;
}
