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

// A block of the arena; the arena chains them in the order they were made.
typedef struct block {
    unsigned char *base;  // (capacity) bytes, ARENA_ALIGN-aligned
    size_t capacity;
    struct block *next;
} block;

// The hot path reads only the first three fields: the current block's base,
// size and offset.
struct ts_arena {
    unsigned char *base;     // the current block's
    size_t capacity, used;   // the current block's size and offset
    block *first, *current;
    size_t total;            // every block's capacity, together
    size_t used_before;      // bytes used in the blocks before the current one
    size_t peak;             // the most in use at a block change or reset (ts_arena_peak adds now's)
};

// A block of `capacity` bytes (a multiple of ARENA_ALIGN), or NULL.
static block *block_new(size_t capacity) {
    block *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    if (capacity >= ARENA_MAP) {
        void *p = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        b->base = p == MAP_FAILED ? NULL : p;  // page-aligned
    } else {
        b->base = aligned_alloc(ARENA_ALIGN, capacity);
    }
    if (!b->base) {
        free(b);
        return NULL;
    }
    b->capacity = capacity;
    return b;
}

static void block_free(block *b) {
    if (b->capacity >= ARENA_MAP) munmap(b->base, b->capacity);
    else free(b->base);
    free(b);
}

static void use_block(ts_arena *a, block *b) {
    a->current = b;
    a->base = b->base;
    a->capacity = b->capacity;
    a->used = 0;
}

static void note_peak(ts_arena *a) {
    if (a->used_before + a->used > a->peak) a->peak = a->used_before + a->used;
}

ts_arena *ts_arena_new(size_t capacity) {
    ts_arena *a = calloc(1, sizeof *a);
    if (!a) {
        ts_fail(TS_ERR_NOMEM, "arena: cannot allocate its header");
        return NULL;
    }
    capacity = (capacity + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (capacity == 0) capacity = ARENA_ALIGN;
    if (!(a->first = block_new(capacity))) {
        free(a);
        ts_fail(TS_ERR_NOMEM, "arena: cannot reserve %zu bytes", capacity);
        return NULL;
    }
    use_block(a, a->first);
    a->total = capacity;
    return a;
}

// The slow path of ts_arena_alloc: `rounded` bytes (a request that
// overflowed a size aside) do not fit in the current block. The next block that holds them becomes current (blocks too small
// are passed over until the next reset); past the last one, a new block at
// least twice the current one's size is chained, up to TS_ARENA_MAX in all.
// So work that outgrows its arena goes on in more memory instead of failing
// and being redone; after a reset the blocks are reused in order.
__attribute__((noinline, cold)) static void *next_block(ts_arena *a, size_t rounded, size_t bytes) {
    if (rounded < bytes) {
        ts_fail(TS_ERR_ARENA, "arena: %zu bytes overflow a size", bytes);
        return NULL;
    }
    block *b = a->current;
    size_t used_before = a->used_before + a->used;
    while (b->next && b->next->capacity < rounded) b = b->next;
    if (!b->next) {
        size_t want = b->capacity > SIZE_MAX / 2 ? b->capacity : 2 * b->capacity;
        if (want < rounded) want = rounded;
        if (want > TS_ARENA_MAX - a->total) want = TS_ARENA_MAX - a->total;
        block *more = want >= rounded && a->total < TS_ARENA_MAX ? block_new(want) : NULL;
        if (!more) {
            ts_fail(TS_ERR_ARENA, "arena full: asked for %zu bytes with %zu of %zu left in all", bytes,
                    a->total - used_before, a->total);
            return NULL;
        }
        b->next = more;
        a->total += want;
    }
    note_peak(a);
    a->used_before = used_before;
    use_block(a, b->next);
    a->used = rounded;
    note_peak(a);
    return a->base;
}

void *ts_arena_alloc(ts_arena *a, size_t bytes) {
    size_t rounded = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (rounded > a->capacity - a->used || rounded < bytes) return next_block(a, rounded, bytes);
    void *p = a->base + a->used;
    a->used += rounded;
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
    size_t capacity = (*arena)->total;
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

void ts_arena_reset(ts_arena *a) {
    note_peak(a);
    a->used_before = 0;
    use_block(a, a->first);
}

size_t ts_arena_used(const ts_arena *a) { return a->used_before + a->used; }
size_t ts_arena_peak(const ts_arena *a) { return a->used_before + a->used > a->peak ? a->used_before + a->used : a->peak; }
size_t ts_arena_capacity(const ts_arena *a) { return a->total; }

void ts_arena_free(ts_arena *a) {
    if (!a) return;
    for (block *b = a->first, *next; b; b = next) {
        next = b->next;
        block_free(b);
    }
    free(a);
}
