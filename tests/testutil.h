// Helpers shared by the Criterion tests.
#ifndef TS_TESTUTIL_H
#define TS_TESTUTIL_H

#include <stddef.h>

// Fails the current test unless |got[i] - want[i]| <= atol + rtol * |want[i]|
// for every i; the message names the first bad index and both values.
void assert_allclose(const double *got, const double *want, size_t n,
                     double atol, double rtol);

// Makes a fresh empty directory under /tmp and returns its path (static
// storage per call site is not needed: the string is malloc'd, never freed).
char *test_tmpdir(void);

// Writes `len` bytes to dir/name and returns the malloc'd full path.
char *test_write_file(const char *dir, const char *name, const void *bytes, size_t len);

// Runs `cmd` through /bin/sh, captures stdout+stderr (up to 1 MiB) into a
// malloc'd string stored in *output (may be NULL), and returns the exit status
// (or 128 + signal number when killed by a signal).
int test_run(const char *cmd, char **output);

// 1 when the ../shared folder beside the project exists (CI always has it).
int test_have_shared(void);

#endif
