// Tests for tensor/atomic_write: the one writer every file tinyseq writes goes
// through. Whatever fails (create, write, fsync, rename, the content's own
// writer), the old file stays as it was and no temporary file is left.
#include "tensor/atomic_write.h"
#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char OLD[] = "the old content\n";

// `n` bytes of a pattern: more than one stdio buffer when n is large, so
// writes happen both inside fill and at the final flush.
struct content {
    size_t n;
    int status;  // what fill returns
};

static int fill_pattern(void *ctx, FILE *out) {
    const struct content *c = ctx;
    for (size_t i = 0; i < c->n; i++) putc('a' + (int)(i % 26), out);
    return c->status ? ts_fail(c->status, "the content's own failure") : TS_OK;
}

static void assert_pattern(const char *path, size_t n) {
    size_t len;
    char *got = test_read_file(path, &len);
    cr_assert_eq(len, n, "%s holds %zu bytes, want %zu", path, len, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(got[i], 'a' + (int)(i % 26), "byte %zu", i);
    free(got);
}

static void assert_old(const char *path) {
    size_t len;
    char *got = test_read_file(path, &len);
    cr_assert(len == sizeof OLD - 1 && !memcmp(got, OLD, len), "%s changed: %s", path, got);
    free(got);
}

static void assert_fails_with(int rc, int want, const char *needle) {
    cr_assert_eq(rc, want, "status %d, want %d: %s", rc, want, ts_last_error());
    cr_assert(strstr(ts_last_error(), needle), "message lacks '%s': %s", needle, ts_last_error());
}

Test(atomic_write, writes_the_whole_file_as_an_ordinary_file) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    struct content c = {100000, TS_OK};
    cr_assert_eq(ts_write_atomic(path, fill_pattern, &c, NULL), TS_OK, "%s", ts_last_error());
    assert_pattern(path, c.n);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
    cr_assert_eq(test_count_tmp_files(dir), 0);
}

Test(atomic_write, short_writes_still_write_every_byte) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    struct content c = {20000, TS_OK};
    struct test_fault f = {.budget = SIZE_MAX, .max_piece = 7};
    ts_write_hooks hooks = {test_faulty_write, NULL, &f};
    cr_assert_eq(ts_write_atomic(path, fill_pattern, &c, &hooks), TS_OK, "%s", ts_last_error());
    assert_pattern(path, c.n);
}

// A full disk at the first byte, inside fill, and at the final flush; small
// content fails only at the flush.
Test(atomic_write, failed_write_keeps_the_old_file_and_names_the_cause) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    size_t sizes[] = {10, 100000}, budgets[] = {0, 1, 5000, 99999};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < 4; k++) {
            if (budgets[k] >= sizes[i]) continue;
            struct content c = {sizes[i], TS_OK};
            struct test_fault f = {.budget = budgets[k]};
            ts_write_hooks hooks = {test_faulty_write, test_faulty_fsync, &f};
            assert_fails_with(ts_write_atomic(path, fill_pattern, &c, &hooks), TS_ERR_IO, strerror(ENOSPC));
            cr_assert(strstr(ts_last_error(), path), "%s", ts_last_error());
            assert_old(path);
            cr_assert_eq(test_count_tmp_files(dir), 0, "size %zu budget %zu", sizes[i], budgets[k]);
        }
}

Test(atomic_write, failed_fsync_keeps_the_old_file) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    struct content c = {1000, TS_OK};
    struct test_fault f = {.budget = SIZE_MAX, .fail_fsync = 1};
    ts_write_hooks hooks = {test_faulty_write, test_faulty_fsync, &f};
    assert_fails_with(ts_write_atomic(path, fill_pattern, &c, &hooks), TS_ERR_IO, "fsync");
    cr_assert(strstr(ts_last_error(), strerror(EIO)), "%s", ts_last_error());
    assert_old(path);
    cr_assert_eq(test_count_tmp_files(dir), 0);
}

// A real write(2) failure, no hook: past the file size limit write fails with
// EFBIG (SIGXFSZ ignored, as the program does).
Test(atomic_write, write_past_the_file_size_limit_keeps_the_old_file) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 3000, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct content c = {100000, TS_OK};
    int rc = ts_write_atomic(path, fill_pattern, &c, NULL);
    lim.rlim_cur = RLIM_INFINITY;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    assert_fails_with(rc, TS_ERR_IO, strerror(EFBIG));
    assert_old(path);
    cr_assert_eq(test_count_tmp_files(dir), 0);
}

// The content's writer fails for its own reason: its status and message come
// back unchanged, and nothing is replaced.
Test(atomic_write, failing_content_keeps_its_message_and_the_old_file) {
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    struct content c = {100000, TS_ERR_FORMAT};
    assert_fails_with(ts_write_atomic(path, fill_pattern, &c, NULL), TS_ERR_FORMAT, "the content's own failure");
    assert_old(path);
    cr_assert_eq(test_count_tmp_files(dir), 0);
}

Test(atomic_write, missing_directory_and_failed_rename_are_io_errors) {
    char *dir = test_tmpdir(), missing[4200];
    snprintf(missing, sizeof missing, "%s/missing/f.txt", dir);
    struct content c = {10, TS_OK};
    assert_fails_with(ts_write_atomic(missing, fill_pattern, &c, NULL), TS_ERR_IO, strerror(ENOENT));
    cr_assert(strstr(ts_last_error(), missing), "%s", ts_last_error());
    // The target is a non-empty directory: the rename fails.
    char target[4200];
    snprintf(target, sizeof target, "%s/taken", dir);
    cr_assert_eq(mkdir(target, 0755), 0);
    free(test_write_file(target, "keep", "x", 1));
    assert_fails_with(ts_write_atomic(target, fill_pattern, &c, NULL), TS_ERR_IO, "rename");
    cr_assert_eq(test_count_tmp_files(dir), 0);
}

Test(atomic_write, unwritable_directory_keeps_the_old_file) {
    if (geteuid() == 0) cr_skip_test("root writes into a read-only directory anyway");
    char *dir = test_tmpdir(), *path = test_write_file(dir, "f.txt", OLD, sizeof OLD - 1);
    cr_assert_eq(chmod(dir, 0555), 0);
    struct content c = {10, TS_OK};
    int rc = ts_write_atomic(path, fill_pattern, &c, NULL);
    chmod(dir, 0755);
    assert_fails_with(rc, TS_ERR_IO, strerror(EACCES));
    assert_old(path);
    cr_assert_eq(test_count_tmp_files(dir), 0);
}
