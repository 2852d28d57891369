// Writing a file all or nothing: every file tinyseq writes (checkpoints,
// .npz, run files, figures, the report) goes through ts_write_atomic, so a
// crash, a full disk or a failed write never leaves a half file at a path.
// And the two path helpers every writer of a directory uses (join, mkdir -p).
#ifndef TS_ATOMIC_WRITE_H
#define TS_ATOMIC_WRITE_H

#include <stdio.h>
#include <sys/types.h>

// Writes the content of the file to `out`; returns TS_OK or a status with
// its message (ts_fail). A write error on `out` needs no check here: the
// writer sees it and names its cause.
typedef int (*ts_write_fill)(void *ctx, FILE *out);

// Stand-ins for write(2) and fsync(2) with the same contract, so a test can
// inject a short write, a full disk or a failing fsync; NULL members (or a
// NULL pointer) mean the real calls.
typedef struct ts_write_hooks {
    ssize_t (*write)(void *ctx, int fd, const void *buf, size_t n);
    int (*fsync)(void *ctx, int fd);
    void *ctx;
} ts_write_hooks;

// Writes `path` atomically: fill(ctx, out) writes into a new temporary file
// "<path>.tmp-XXXXXX" in the same directory (mode 0644), which is flushed,
// fsync'd, closed and renamed over `path`; then the directory is fsync'd so
// the rename itself survives a power loss.
// Errors: fill's own status and message; TS_ERR_IO naming `path`, the step
// and strerror for a failed create, write, fsync, close or rename. Then the
// temporary file is removed and an existing `path` is untouched. If only the
// directory fsync fails, the new file is in place but the status is still
// TS_ERR_IO (it may not survive a power loss). TS_ERR_NOMEM.
int ts_write_atomic(const char *path, ts_write_fill fill, void *ctx, const ts_write_hooks *hooks);

// buf = dir/name; TS_ERR_ARG when it does not fit in n bytes.
int ts_path_join(char *buf, size_t n, const char *dir, const char *name);

// mkdir -p path; TS_ERR_IO naming the directory that cannot be made.
int ts_make_dirs(const char *path);

#endif
