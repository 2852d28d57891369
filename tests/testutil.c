#include "testutil.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
