#define _XOPEN_SOURCE 700  // wcwidth
#include "testutil.h"

#include "tensor/dtype.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

void assert_allclose(const double *got, const double *want, size_t n,
                     double atol, double rtol) {
    for (size_t i = 0; i < n; i++) {
        double err = fabs(got[i] - want[i]);
        int ok = err <= atol + rtol * fabs(want[i]) || (got[i] == want[i]);
        if (!ok || isnan(got[i]) != isnan(want[i])) {
            cr_assert_fail("index %zu: got %.17g, want %.17g (|diff| %.3g, atol %.1g, rtol %.1g)",
                           i, got[i], want[i], err, atol, rtol);
        }
    }
}

char *test_tmpdir(void) {
    char *path = strdup("/tmp/tinyseq-test-XXXXXX");
    cr_assert_not_null(mkdtemp(path), "mkdtemp failed");
    return path;
}

char *test_write_file(const char *dir, const char *name, const void *bytes, size_t len) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    return path;
}

int test_run(const char *cmd, char **output) {
    size_t n = strlen(cmd) + 16;
    char *full = malloc(n);
    snprintf(full, n, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    cr_assert_not_null(p, "popen failed for %s", cmd);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, p)) > 0) len += got;
    buf[len] = '\0';
    int status = pclose(p);
    if (output) *output = buf;
    else free(buf);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

int test_have_shared(void) {
    struct stat st;
    return stat(TS_SHARED_DIR, &st) == 0 && S_ISDIR(st.st_mode);
}

void fixture_require(const char *file, const char *script) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/torch/%s", TS_SOURCE_DIR, file);
    if (access(path, R_OK) != 0)
        cr_skip_test("%s is absent: /usr/bin/python3 %s writes it (torch needed)", path, script);
}

double assert_close_at_scale(const char *name, const void *got, int dtype, const double *want, size_t n,
                             double tolerance) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        double value = dtype == TS_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
        if (!(fabs(value - want[i]) <= tolerance * scale))
            cr_assert_fail("%s[%zu]: got %.9g, want %.9g (|diff| %.3g > %.1g x the largest, %.3g)", name, i, value,
                           want[i], fabs(value - want[i]), tolerance, scale);
        if (scale > 0) worst = fmax(worst, fabs(value - want[i]) / scale);
    }
    return worst;
}

fixture fixture_load(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/torch/%s", TS_SOURCE_DIR, file);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open fixture %s", path);
    fixture fx = {0};
    char kind[16], name[96];
    int capacity = 0;
    while (fscanf(f, " %15s", kind) == 1) {
        if (kind[0] == '#') {  // a comment line
            int c;
            while ((c = fgetc(f)) != '\n' && c != EOF) {}
            continue;
        }
        if (fx.count == capacity) {
            capacity = capacity ? 2 * capacity : 32;
            fx.records = realloc(fx.records, (size_t)capacity * sizeof *fx.records);
        }
        fixture_record *r = &fx.records[fx.count++];
        memset(r, 0, sizeof *r);
        cr_assert_eq(fscanf(f, " %95s", name), 1, "%s: bad record", path);
        snprintf(r->name, sizeof r->name, "%s", name);
        if (!strcmp(kind, "ints")) {
            r->is_ints = 1;
            cr_assert_eq(fscanf(f, "%zu", &r->n), 1);
            r->ints = malloc((r->n ? r->n : 1) * sizeof(int));
            for (size_t i = 0; i < r->n; i++) cr_assert_eq(fscanf(f, "%d", &r->ints[i]), 1, "%s: %s", path, name);
        } else {
            cr_assert_str_eq(kind, "tensor", "%s: unknown record kind %s", path, kind);
            cr_assert_eq(fscanf(f, "%d", &r->ndim), 1);
            r->n = 1;
            for (int d = 0; d < r->ndim; d++) {
                cr_assert_eq(fscanf(f, "%d", &r->dims[d]), 1);
                r->n *= (size_t)r->dims[d];
            }
            r->values = malloc(r->n * sizeof(double));
            for (size_t i = 0; i < r->n; i++) cr_assert_eq(fscanf(f, "%lf", &r->values[i]), 1, "%s: %s", path, name);
        }
    }
    fclose(f);
    return fx;
}

const fixture_record *fixture_find(const fixture *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (!strcmp(f->records[i].name, name)) return &f->records[i];
    return NULL;
}

const fixture_record *fixture_get(const fixture *f, const char *name) {
    const fixture_record *r = fixture_find(f, name);
    cr_assert_not_null(r, "fixture has no record '%s'", name);
    return r;
}

void fixture_free(fixture *f) {
    for (int i = 0; i < f->count; i++) {
        free(f->records[i].values);
        free(f->records[i].ints);
    }
    free(f->records);
    f->records = NULL;
    f->count = 0;
}

char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n, "cannot read %s", path);
    text[n] = '\0';
    fclose(f);
    if (len) *len = (size_t)n;
    return text;
}

int test_runf(char **output, const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof cmd, "command longer than %zu bytes", sizeof cmd);
    return test_run(cmd, output);
}

int test_same_bytes(const char *a, const char *b) {
    size_t na, nb;
    char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
    int same = na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

ssize_t test_faulty_write(void *ctx, int fd, const void *buf, size_t n) {
    struct test_fault *f = ctx;
    if (f->max_piece && n > f->max_piece) n = f->max_piece;
    if (f->budget == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (n > f->budget) n = f->budget;
    f->budget -= n;
    return write(fd, buf, n);
}

int test_faulty_fsync(void *ctx, int fd) {
    struct test_fault *f = ctx;
    if (f->fail_fsync) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

int test_count_tmp_files(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

int test_widest_line(const char *text) {
    setlocale(LC_CTYPE, "C.UTF-8");  // wcwidth's widths are the locale's
    int widest = 0, at = 0;
    mbstate_t state = {0};
    for (const char *p = text; *p;) {
        if (*p == '\x1b') {  // an escape sequence: ESC [ parameters, then a letter
            for (p++; *p && !((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')); p++) {}
            if (*p) p++;
            continue;
        }
        if (*p == '\n') {
            at = 0;
            p++;
            continue;
        }
        wchar_t wc;
        size_t len = mbrtowc(&wc, p, strlen(p), &state);
        if (len == (size_t)-1 || len == (size_t)-2 || len == 0) {  // not UTF-8: a replacement column
            memset(&state, 0, sizeof state);
            len = 1;
            wc = L'?';
        }
        int cols = wcwidth(wc);
        at += cols < 0 ? 1 : cols;
        widest = at > widest ? at : widest;
        p += len;
    }
    return widest;
}

char *test_svg_text(const char *svg) {
    char *text = malloc(strlen(svg) + 1), *at = text;
    for (const char *p = svg; *p; p++) {
        if (*p == '<') {
            while (*p && *p != '>') p++;
            if (!*p) break;
        }
        char c = *p == '>' || *p == '\n' ? ' ' : *p;
        if (c != ' ' || (at > text && at[-1] != ' ')) *at++ = c;
    }
    *at = '\0';
    return text;
}
