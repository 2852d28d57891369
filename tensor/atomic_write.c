// The one atomic file writer: temporary file in the same directory, write,
// fsync, rename, fsync of the directory.
#define _GNU_SOURCE  // fopencookie: every byte of the stream passes one write loop (and a test's hook)
#include "tensor/atomic_write.h"

#include "tensor/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The temporary file behind the stream handed to fill.
struct target {
    int fd;
    const ts_write_hooks *hooks;
    int write_errno;  // the first failed write's reason; 0 until then
};

// Writes all n bytes or records why not. A short count tells stdio the
// stream failed; after the first failure nothing more is tried.
static ssize_t target_write(void *cookie, const char *buf, size_t n) {
    struct target *t = cookie;
    for (size_t done = 0; done < n && !t->write_errno;) {
        ssize_t w = t->hooks && t->hooks->write ? t->hooks->write(t->hooks->ctx, t->fd, buf + done, n - done)
                                                : write(t->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) t->write_errno = w < 0 ? errno : EIO;  // write(2) returning 0 for n > 0: no progress
        else done += (size_t)w;
    }
    return t->write_errno ? 0 : (ssize_t)n;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

// Everything after the temporary file exists: fill, flush, fsync, close,
// rename. Returns the status; on failure the caller removes `tmp`.
static int write_and_rename(const char *path, const char *tmp, struct target *t, ts_write_fill fill, void *ctx) {
    const char *step = "write";
    FILE *out = fopencookie(t, "w", (cookie_io_functions_t){.write = target_write});
    if (!out) return ts_fail(TS_ERR_NOMEM, "cannot write %s: out of memory", path);
    int rc = fill(ctx, out);
    int flushed = fflush(out);
    fclose(out);  // the cookie has no close: the descriptor stays open for fsync
    if (t->write_errno) {
        errno = t->write_errno;
        goto io_failed;
    }
    if (rc) return rc;
    if (flushed != 0) {  // a stream error that is not a write's (cannot happen today)
        errno = EIO;
        goto io_failed;
    }
    step = "fsync";
    if ((t->hooks && t->hooks->fsync ? t->hooks->fsync(t->hooks->ctx, t->fd) : fsync(t->fd)) != 0) goto io_failed;
    step = "close";
    int closed = close(t->fd);
    t->fd = -1;
    if (closed != 0) goto io_failed;
    step = "rename";
    if (rename(tmp, path) != 0) goto io_failed;
    return TS_OK;
io_failed:
    return ts_fail(TS_ERR_IO, "cannot write %s: %s %s: %s", path, step, tmp, strerror(errno));
}

int ts_write_atomic(const char *path, ts_write_fill fill, void *ctx, const ts_write_hooks *hooks) {
    if (!path || !*path || !fill) return ts_fail(TS_ERR_ARG, "ts_write_atomic: NULL argument");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp-XXXXXX");
    char *dir = dir_of(path);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        return ts_fail(TS_ERR_NOMEM, "cannot write %s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
    int rc = TS_OK;
    struct target t = {.fd = mkstemp(tmp), .hooks = hooks};
    if (t.fd < 0) {
        rc = ts_fail(TS_ERR_IO, "cannot write %s: cannot create a temporary file in %s: %s", path, dir,
                     strerror(errno));
        goto done;
    }
    // mkstemp makes 0600; what tinyseq writes are ordinary files.
    if (fchmod(t.fd, 0644) != 0)
        rc = ts_fail(TS_ERR_IO, "cannot write %s: fchmod %s: %s", path, tmp, strerror(errno));
    if (!rc) rc = write_and_rename(path, tmp, &t, fill, ctx);
    if (rc) {
        if (t.fd >= 0) close(t.fd);
        unlink(tmp);
        goto done;
    }
    // The rename is only durable once the directory entry is on disk.
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL))
        rc = ts_fail(TS_ERR_IO, "%s was renamed into place but fsync of directory %s failed: %s", path, dir,
                     strerror(errno));
    if (dfd >= 0) close(dfd);
done:
    free(tmp);
    free(dir);
    return rc;
}

int ts_path_join(char *buf, size_t n, const char *dir, const char *name) {
    if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n) return ts_fail(TS_ERR_ARG, "path too long: %s/%s", dir, name);
    return TS_OK;
}

// mkdir -p
int ts_make_dirs(const char *path) {
    char buf[4096];
    if (strlen(path) >= sizeof buf) return ts_fail(TS_ERR_ARG, "output path too long");
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return ts_fail(TS_ERR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
            *p = saved;
            if (!saved) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return ts_fail(TS_ERR_IO, "'%s' is not a directory", path);
    return TS_OK;
}
