// A run directory held by one run at a time (issue 38: two `train` runs
// into one new --out both succeeded and mixed their metrics.csv rows).
//
// The lock is the file DIR/train.lock ("pid=1234\nhost=NAME\n", for the
// message a second run gets) held with flock(2) for as long as the run
// lasts: the kernel lets go of it when the process ends however it ends, so
// a run killed by SIGKILL or a crash leaves a file nobody holds, which the
// next run takes over. A file that names another host is not taken over
// (that host's run may be alive: flock does not reach across every network
// file system); the message says to delete it once that run is over.
#ifndef TS_TRAIN_RUNLOCK_H
#define TS_TRAIN_RUNLOCK_H

#define TS_RUNLOCK_NAME "train.lock"

typedef struct {
    int held;  // 0: nothing to release (a zeroed struct holds nothing)
    int fd;
    char path[4096];
} ts_runlock;

// Takes dir's lock into *lock. TS_OK; TS_ERR_IO when another live run
// holds it (a run-time condition, exit 1: the message names its pid and
// host and what to do) or naming the file when it cannot be made or read.
int ts_runlock_take(const char *dir, ts_runlock *lock);

// Deletes the lock file and lets go of it; nothing when not held.
void ts_runlock_release(ts_runlock *lock);

#endif
