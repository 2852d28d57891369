// Helpers shared by the Criterion tests.
#ifndef TS_TESTUTIL_H
#define TS_TESTUTIL_H

#include <stddef.h>
#include <sys/types.h>

// Fails the current test unless |got[i] - want[i]| <= atol + rtol * |want[i]|
// for every i; the message names the first bad index and both values.
void assert_allclose(const double *got, const double *want, size_t n,
                     double atol, double rtol);

// Makes a fresh empty directory under /tmp and returns its path (static
// storage per call site is not needed: the string is malloc'd, never freed).
char *test_tmpdir(void);

// Writes `len` bytes to dir/name and returns the malloc'd full path.
char *test_write_file(const char *dir, const char *name, const void *bytes, size_t len);

// The whole of a file, NUL-terminated and malloc'd; *len (may be NULL) gets
// its size. Fails the test when it cannot be read.
char *test_read_file(const char *path, size_t *len);

// 1 when files a and b hold the same bytes (both must be readable).
int test_same_bytes(const char *a, const char *b);

// Runs `cmd` through /bin/sh, captures stdout+stderr (up to 1 MiB) into a
// malloc'd string stored in *output (may be NULL), and returns the exit status
// (or 128 + signal number when killed by a signal).
int test_run(const char *cmd, char **output);

// test_run of a printf-formatted command (up to 8 KiB).
int test_runf(char **output, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Stand-ins for write(2) and fsync(2) (ts_write_hooks, ts_ckpt_save_opts)
// that inject failures; ctx is a struct test_fault.
struct test_fault {
    size_t budget;     // bytes that may still be written; then ENOSPC
    int fail_fsync;    // nonzero: fsync fails with EIO
    size_t max_piece;  // short writes of at most this many bytes (0: any)
};
ssize_t test_faulty_write(void *ctx, int fd, const void *buf, size_t n);
int test_faulty_fsync(void *ctx, int fd);

// Files in dir whose name holds ".tmp-" (the atomic writer's temporary
// files): 0 after every save, failed or not.
int test_count_tmp_files(const char *dir);

// The display columns of text's widest line as a terminal shows it: UTF-8
// decoded, wide characters two columns, combining ones none, escape
// sequences (ESC [ ... letter) none.
int test_widest_line(const char *text);

// An SVG's text as one line (malloc'd): its tags and line breaks as single
// spaces, so a title that wraps over several <text> lines reads as written.
char *test_svg_text(const char *svg);

// 1 when the ../shared folder beside the project exists (CI always has it).
int test_have_shared(void);

// Skips the current test in a build without SentencePiece (the caller
// includes data/subword.h and criterion).
#define NEEDS_SPM()                                                                           \
    do {                                                                                      \
        if (!ts_subword_compiled())                                                           \
            cr_skip_test("this build has no SentencePiece (cmake found none, or -DTS_SPM=OFF): " \
                         "scripts/setup.sh installs libsentencepiece-dev");                   \
    } while (0)


#endif

// ---- fixtures written by tools/make_torch_fixtures.py (docs/fixtures.md) ----
typedef struct {
    char name[96];
    int is_ints;
    int ndim, dims[3];
    size_t n;
    double *values;  // (n) for tensors
    int *ints;       // (n) for ints
} fixture_record;

typedef struct {
    fixture_record *records;
    int count;
} fixture;

// Reads TS_SOURCE_DIR "/tests/fixtures/torch/" file; fails the test if unreadable.
fixture fixture_load(const char *file);
// Skips the current test, naming the script that writes it, when fixture
// `file` is absent (they are committed: a tree without one says so).
void fixture_require(const char *file, const char *script);
// Fails the test unless |got[i] - want[i]| <= tolerance * max_j |want[j]|
// for every i < n, got holding n values of `dtype` (TS_F64, TS_F32): a
// tensor compared at the scale of its largest value, as float32's rounding
// follows the sums a value came from, not the value. The message names
// `name`, the first bad index and both values. Returns the largest
// |got[i] - want[i]| / max_j |want[j]| (0 for an all-zero want).
double assert_close_at_scale(const char *name, const void *got, int dtype, const double *want, size_t n,
                             double tolerance);
// The record called `name`; fails the test if absent.
const fixture_record *fixture_get(const fixture *f, const char *name);
// The record or NULL.
const fixture_record *fixture_find(const fixture *f, const char *name);
void fixture_free(fixture *f);
