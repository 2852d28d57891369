// The run directory's lock (train/runlock.h).
#include "train/runlock.h"

#include "tensor/status.h"
#include "tensor/atomic_write.h"  // ts_path_join

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

// The holder a lock file names: pid and host (a host name's characters
// only, since it is printed), or pid 0 when the file is not one a run wrote
// (empty: a run killed between creating and writing it).
typedef struct {
    long pid;
    char host[256];
} holder;

static holder read_holder(int fd) {
    holder h = {0, ""};
    char text[512];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0 || memchr(text, '\0', (size_t)n)) return h;
    text[n] = '\0';
    char host[256];
    long pid;
    int used = 0;
    if (sscanf(text, "pid=%ld\nhost=%255[^\n]\n%n", &pid, host, &used) == 2 && used == n && pid > 0 &&
        strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_") == strlen(host)) {
        h.pid = pid;
        snprintf(h.host, sizeof h.host, "%s", host);
    }
    return h;
}

static void this_host(char host[256]) {
    if (gethostname(host, 256) != 0) snprintf(host, 256, "unknown");
    host[255] = '\0';
}

// 1 when process pid is alive on this host (kill(pid, 0): EPERM is alive too).
static int alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

int ts_runlock_take(const char *dir, ts_runlock *lock) {
    lock->held = 0;
    int rc = ts_path_join(lock->path, sizeof lock->path, dir, TS_RUNLOCK_NAME);
    if (rc) return rc;
    char host[256];
    this_host(host);
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(lock->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return ts_fail(TS_ERR_IO, "cannot open '%s': %s", lock->path, strerror(errno));
        int locked = flock(fd, LOCK_EX | LOCK_NB) == 0, why = errno;
        holder h = read_holder(fd);
        int other_host = h.pid > 0 && strcmp(h.host, host) != 0, busy;
        if (locked) busy = other_host;  // nobody here holds it; another host's run may be alive
        else if (why == EWOULDBLOCK) busy = 1;
        else busy = other_host || (h.pid > 0 && h.pid != getpid() && alive(h.pid));  // no flock here: the pid decides
        if (busy) {
            close(fd);
            if (h.pid <= 0)
                return ts_fail(TS_ERR_IO, "--out %s is in use by another run (it holds %s): wait for it to end, or "
                               "choose another --out", dir, lock->path);
            return ts_fail(TS_ERR_IO, "--out %s is in use by another run (pid %ld on %s): wait for it to end, or "
                           "choose another --out%s%s", dir, h.pid, other_host ? h.host : "this host",
                           other_host ? "; if that run is over, delete " : "", other_host ? lock->path : "");
        }
        // The path may have been released (deleted) between open and flock: hold the file that is there.
        struct stat opened, there;
        if (fstat(fd, &opened) != 0 || stat(lock->path, &there) != 0 || opened.st_ino != there.st_ino ||
            opened.st_dev != there.st_dev) {
            close(fd);
            continue;
        }
        char text[512];
        int n = snprintf(text, sizeof text, "pid=%ld\nhost=%s\n", (long)getpid(), host);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
            int err = errno;
            close(fd);
            return ts_fail(TS_ERR_IO, "cannot write '%s': %s", lock->path, strerror(err));
        }
        lock->fd = fd;
        lock->held = 1;
        return TS_OK;
    }
    return ts_fail(TS_ERR_IO, "cannot take '%s': it keeps being replaced", lock->path);
}

void ts_runlock_release(ts_runlock *lock) {
    if (!lock->held) return;
    unlink(lock->path);  // while still held: a run waiting on this file retries on the new one
    close(lock->fd);
    lock->held = 0;
}
