#include "tensor/parallel.h"

#include "tensor/kernels.h"

#include <pthread.h>

enum { TS_PARALLEL_MAX_PARTS = 16 };

int ts_parallel_parts(size_t elements, int max_parts) {
    int parts = ts_threads_asked();
    if (max_parts > 0 && parts > max_parts) parts = max_parts;
    if (parts > TS_PARALLEL_MAX_PARTS) parts = TS_PARALLEL_MAX_PARTS;
    return elements < TS_PARALLEL_MIN_ELEMENTS || parts < 1 ? 1 : parts;
}

typedef struct {
    ts_part_fn fn;
    void *arg;
    int part, parts;
} part_call;

static void *run_part(void *p) {
    part_call *c = p;
    c->fn(c->arg, c->part, c->parts);
    return NULL;
}

void ts_parallel_run(int parts, ts_part_fn fn, void *arg) {
    if (parts < 1) parts = 1;
    if (parts > TS_PARALLEL_MAX_PARTS) parts = TS_PARALLEL_MAX_PARTS;
    part_call calls[TS_PARALLEL_MAX_PARTS];
    pthread_t threads[TS_PARALLEL_MAX_PARTS];
    int started[TS_PARALLEL_MAX_PARTS] = {0};
    for (int p = 1; p < parts; p++) {
        calls[p] = (part_call){fn, arg, p, parts};
        started[p] = pthread_create(&threads[p], NULL, run_part, &calls[p]) == 0;
    }
    fn(arg, 0, parts);
    for (int p = 1; p < parts; p++) {
        if (started[p])
            pthread_join(threads[p], NULL);
        else
            fn(arg, p, parts);
    }
}

void ts_part_range(size_t n, int part, int parts, size_t *begin, size_t *end) {
    size_t base = n / (size_t)parts, extra = n % (size_t)parts, p = (size_t)part;
    *begin = p * base + (p < extra ? p : extra);
    *end = *begin + base + (p < extra);
}
