// The step arena: a bump allocator for everything one training step makes.
//
// Allocation bumps an offset; ts_arena_reset() rewinds it, so the next step
// reuses the same memory with no malloc or free per op. Blocks are reserved
// at their full capacity; Linux commits their pages only when first touched,
// so an unused capacity costs address space, not memory. An allocation that
// does not fit in the current block goes to the next one, a new block at
// least twice as large chained at the end when there is none (up to
// TS_ARENA_MAX in all): work that outgrows its first guess goes on instead
// of failing and being redone, and after a reset the blocks are reused in order.
#ifndef TS_ARENA_H
#define TS_ARENA_H

#include <stddef.h>

typedef struct ts_arena ts_arena;

// An arena of `capacity` bytes. NULL (with ts_last_error set) when the block
// cannot be reserved.
ts_arena *ts_arena_new(size_t capacity);

// `bytes` bytes aligned to 64, uninitialised. NULL when no block can be had
// for them within TS_ARENA_MAX (or the kernel refuses one): status
// TS_ERR_ARENA with a message giving the request and the space left.
void *ts_arena_alloc(ts_arena *arena, size_t bytes);

// `count` doubles set to zero, or NULL as ts_arena_alloc. Checks count * 8 for overflow.
double *ts_arena_zeros(ts_arena *arena, size_t count);

// `count` elements of `size` bytes set to zero (a float64 or float32
// buffer), or NULL as ts_arena_alloc. Checks count * size for overflow.
void *ts_arena_calloc(ts_arena *arena, size_t count, size_t size);

// Forgets every allocation; the memory is reused by the next ones.
void ts_arena_reset(ts_arena *arena);

// The most an arena holds in all its blocks: the one bound on what one piece of
// work (a training step, a dev evaluation, a sentence, a decoding step) may
// ask for. Pages are committed only when touched, so this is address space.
#define TS_ARENA_MAX ((size_t)16 << 30)

// Replaces *arena by an empty one twice as large (at most TS_ARENA_MAX) and
// frees the old one: for work that failed with TS_ERR_ARENA and is redone
// from the start (the same work gives the same bits in any arena). `what`
// names the work for the message. TS_OK; TS_ERR_ARENA ("<what> needs more
// than N MiB of arena") when *arena is at TS_ARENA_MAX already; TS_ERR_NOMEM
// when the larger block cannot be had (then *arena is unchanged).
int ts_arena_grow(ts_arena **arena, const char *what);

size_t ts_arena_used(const ts_arena *arena);      // bytes in use now
size_t ts_arena_peak(const ts_arena *arena);      // most bytes ever in use
size_t ts_arena_capacity(const ts_arena *arena);

void ts_arena_free(ts_arena *arena);

#endif
