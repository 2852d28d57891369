// JSON results of the C API (see json.h).
#include "api/json.h"

#include "tensor/status.h"

#include <math.h>
#include <stdlib.h>

int api_text_open(api_text *t) {
    t->text = NULL;
    t->len = 0;
    t->f = open_memstream(&t->text, &t->len);
    return t->f ? TS_OK : ts_fail(TS_ERR_NOMEM, "cannot open a memory stream");
}

int api_text_close(api_text *t, int status, char **out) {
    if (out) *out = NULL;
    // ferror: a memory stream fails only when it cannot grow.
    int failed = ferror(t->f);
    if (fclose(t->f) != 0 || failed) {
        if (!status) status = ts_fail(TS_ERR_NOMEM, "out of memory writing the result");
    }
    if (status || !out) {
        free(t->text);
        return status;
    }
    *out = t->text;
    return TS_OK;
}

void api_json_number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}
