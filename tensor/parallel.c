#include "tensor/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

static int parts_asked = 1;  // ts_parallel_use's: tensor/threads.c's count

void ts_parallel_use(int parts) { parts_asked = parts > 1 ? parts : 1; }

int ts_parallel_parts(size_t elements, int max_parts) {
    int parts = parts_asked;
    if (max_parts > 0 && parts > max_parts) parts = max_parts;
    if (parts > TS_PARALLEL_MAX_PARTS) parts = TS_PARALLEL_MAX_PARTS;
    return elements < TS_PARALLEL_MIN_ELEMENTS || parts < 1 ? 1 : parts;
}

// One run at a time (`busy`): `call` counts runs; helper p (parts 1 ..
// started) does part p of each run that has one and counts `pending` down;
// the caller waits for 0.
//
// Waiting: both sides spin first, then sleep. Waking a sleeping thread costs
// tens of microseconds here (a futex wake, and an interrupt to the other
// core when it idles: in a virtual machine the hypervisor's too), and a
// training step makes about 120 runs with a little serial work between
// them. So a helper that has returned spins for the next run for up to
// HELPER_SPIN_NS (about OpenBLAS's own thread timeout, which
// tensor/blas_setup.c sets) and the caller for its helpers for up to
// CALLER_SPIN_NS. Past the first PAUSE_SPIN_NS each look yields the core:
// another thread queued on it (OpenBLAS's own worker in the products
// OpenBLAS splits itself, or another process) runs at once instead of after
// the spin (a helper spinning with pause alone made the GRU's step slower:
// OpenBLAS's worker shares its core; docs/performance.md). Then they sleep on condition
// variables. Helpers live until the process ends.
#define PAUSE_SPIN_NS 10000
#define CALLER_SPIN_NS 100000
#define HELPER_SPIN_NS 300000
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    int started;             // helpers running
    atomic_ulong call;       // runs so far; bumped under the lock
    atomic_int pending;      // helper parts of this run not yet returned
    ts_part_fn fn;           // this run's, written under the lock
    void *arg;
    int parts;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 1};

static atomic_flag busy = ATOMIC_FLAG_INIT;
static _Thread_local int in_part;

int ts_parallel_in_part(void) { return in_part; }

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done(arg) or limit_ns have passed (pausing, then yielding:
// above); returns done(arg).
static int spin_until(int (*done)(unsigned long), unsigned long arg, long long limit_ns) {
    long long start = 0, waited = 0;
    for (int i = 0;; i++) {
        if (done(arg)) return 1;
        if ((i & 63) == 63 || waited > PAUSE_SPIN_NS) {  // the clock now and then: a look is ~100 ns
            long long t = now_ns();
            if (!start) start = t;
            else if ((waited = t - start) > limit_ns) return done(arg);
        }
        if (waited > PAUSE_SPIN_NS) sched_yield();
        else cpu_relax();
    }
}

static int parts_returned(unsigned long unused) { return (void)unused, atomic_load(&pool.pending) == 0; }
static int run_after(unsigned long seen) { return atomic_load(&pool.call) != seen; }

typedef struct {
    int part;
    unsigned long seen;  // the last run this helper has looked at
} helper_start;

static void *helper_main(void *arg) {
    helper_start self = *(const helper_start *)arg;
    in_part = 1;  // a helper only ever runs parts
    for (;;) {
        spin_until(run_after, self.seen, HELPER_SPIN_NS);
        pthread_mutex_lock(&pool.lock);
        while (atomic_load(&pool.call) == self.seen) pthread_cond_wait(&pool.wake, &pool.lock);
        self.seen = atomic_load(&pool.call);
        ts_part_fn fn = pool.fn;
        void *fn_arg = pool.arg;
        int parts = pool.parts;
        pthread_mutex_unlock(&pool.lock);
        if (self.part >= parts) continue;  // a run of fewer parts
        fn(fn_arg, self.part, parts);
        if (atomic_fetch_sub(&pool.pending, 1) == 1) {  // the last: wake the caller if it sleeps
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

// Starts helpers until parts 1 .. parts - 1 have one; returns how many
// parts can run at once (1 + the helpers). Called holding `busy`.
static int start_helpers(int parts) {
    static helper_start starts[TS_PARALLEL_MAX_PARTS];  // each read by its helper
    while (pool.started < parts - 1) {
        helper_start *start = &starts[pool.started + 1];
        *start = (helper_start){pool.started + 1, atomic_load(&pool.call)};
        // Signals (cli/'s SIGINT handler) go to the program's threads, never to a helper.
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t thread;
        int rc = pthread_create(&thread, NULL, helper_main, start);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc) break;
        pthread_detach(thread);
        pool.started++;
    }
    return pool.started + 1;
}

// A child of fork() has no helpers: it starts its own.
static void after_fork_child(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = 0;
    atomic_store(&pool.pending, 0);
    atomic_flag_clear(&busy);
}
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void watch_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

// Every part on this thread, in order.
static void run_here(int parts, ts_part_fn fn, void *arg) {
    int outer = in_part;
    in_part = 1;
    for (int p = 0; p < parts; p++) fn(arg, p, parts);
    in_part = outer;
}

void ts_parallel_run(int parts, ts_part_fn fn, void *arg) {
    if (parts < 1) parts = 1;
    if (parts > TS_PARALLEL_MAX_PARTS) parts = TS_PARALLEL_MAX_PARTS;
    if (parts == 1 || in_part || atomic_flag_test_and_set(&busy)) {
        run_here(parts, fn, arg);
        return;
    }
    pthread_once(&fork_once, watch_fork);
    if (start_helpers(parts) < parts) {  // no thread for some part
        run_here(parts, fn, arg);
        atomic_flag_clear(&busy);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.arg = arg;
    pool.parts = parts;
    atomic_store(&pool.pending, parts - 1);
    atomic_fetch_add(&pool.call, 1);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_part = 1;
    fn(arg, 0, parts);
    in_part = 0;
    if (!spin_until(parts_returned, 0, CALLER_SPIN_NS)) {
        pthread_mutex_lock(&pool.lock);
        while (atomic_load(&pool.pending)) pthread_cond_wait(&pool.done, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
    }
    atomic_flag_clear(&busy);
}

void ts_part_range(size_t n, int part, int parts, size_t *begin, size_t *end) {
    size_t base = n / (size_t)parts, extra = n % (size_t)parts, p = (size_t)part;
    *begin = p * base + (p < extra ? p : extra);
    *end = *begin + base + (p < extra);
}
