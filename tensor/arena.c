#define _DEFAULT_SOURCE  // MAP_ANONYMOUS
#include "tensor/arena.h"

#include "tensor/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { ARENA_ALIGN = 64 };

// Blocks of at least ARENA_MAP bytes are mapped from the kernel directly: a
// page is resident once touched, and all of it goes back on free. From
// malloc, glibc serves blocks under 32 MB from its heap once a freed block
// has raised its threshold, and decoding batch after batch (two scratch
// arenas each) then spread over fresh heap pages, raising the peak RSS
// (docs/performance.md, "Measurements behind the code's constants").
#define ARENA_MAP ((size_t)1 << 20)

struct ts_arena {
    unsigned char *base;  // (capacity) bytes, ARENA_ALIGN-aligned
    size_t capacity;
    size_t used;
    size_t peak;
};

ts_arena *ts_arena_new(size_t capacity) {
    ts_arena *a = calloc(1, sizeof *a);
    if (!a) {
        ts_fail(TS_ERR_NOMEM, "arena: cannot allocate its header");
        return NULL;
    }
    capacity = (capacity + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (capacity == 0) capacity = ARENA_ALIGN;
    if (capacity >= ARENA_MAP) {
        void *p = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        a->base = p == MAP_FAILED ? NULL : p;  // page-aligned
    } else {
        a->base = aligned_alloc(ARENA_ALIGN, capacity);
    }
    if (!a->base) {
        free(a);
        ts_fail(TS_ERR_NOMEM, "arena: cannot reserve %zu bytes", capacity);
        return NULL;
    }
    a->capacity = capacity;
    return a;
}

void *ts_arena_alloc(ts_arena *a, size_t bytes) {
    size_t rounded = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (rounded < bytes || rounded > a->capacity - a->used) {
        ts_fail(TS_ERR_ARENA, "arena full: asked for %zu bytes with %zu of %zu left",
                bytes, a->capacity - a->used, a->capacity);
        return NULL;
    }
    void *p = a->base + a->used;
    a->used += rounded;
    if (a->used > a->peak) a->peak = a->used;
    return p;
}

void *ts_arena_calloc(ts_arena *a, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) {
        ts_fail(TS_ERR_NOMEM, "arena: %zu values of %zu bytes overflow a size", count, size);
        return NULL;
    }
    void *p = ts_arena_alloc(a, count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

double *ts_arena_zeros(ts_arena *a, size_t count) { return ts_arena_calloc(a, count, sizeof(double)); }

int ts_arena_grow(ts_arena **arena, const char *what) {
    size_t capacity = (*arena)->capacity;
    if (capacity >= TS_ARENA_MAX)
        return ts_fail(TS_ERR_ARENA, "%s needs more than %zu MiB of arena", what, TS_ARENA_MAX >> 20);
    size_t want = capacity > TS_ARENA_MAX / 2 ? TS_ARENA_MAX : 2 * capacity;
    ts_arena *bigger = ts_arena_new(want);
    if (!bigger)
        return ts_fail(TS_ERR_NOMEM, "out of memory: %s needs more than %zu MiB of arena, and %zu MiB cannot be had", what,
                       capacity >> 20, want >> 20);
    ts_arena_free(*arena);
    *arena = bigger;
    return TS_OK;
}

void ts_arena_reset(ts_arena *a) { a->used = 0; }
size_t ts_arena_used(const ts_arena *a) { return a->used; }
size_t ts_arena_peak(const ts_arena *a) { return a->peak; }
size_t ts_arena_capacity(const ts_arena *a) { return a->capacity; }

void ts_arena_free(ts_arena *a) {
    if (!a) return;
    if (a->capacity >= ARENA_MAP) munmap(a->base, a->capacity);
    else free(a->base);
    free(a);
}
