// ts_crc32 (ckpt/ckpt.h): zlib's CRC-32 of any length, a large buffer's parts on the threads.
#include "ckpt/ckpt.h"

#include "tensor/parallel.h"

#include <zlib.h>

// zlib's crc32 takes a uInt length; feed huge buffers in pieces.
static uint32_t crc32_serial(uint32_t crc, const unsigned char *p, size_t n) {
    uLong c = crc;
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

// A large buffer (a checkpoint's weights) is cut into parts whose CRCs the
// threads compute at once and crc32_combine joins in order: the same value
// as one pass, which was most of a one-sentence translate's CPU time.
typedef struct {
    const unsigned char *bytes;
    size_t n;
    uint32_t crc[TS_PARALLEL_MAX_PARTS];  // (parts) each part's, from 0
} crc_parts;

static void crc_part(void *arg, int part, int parts) {
    crc_parts *c = arg;
    size_t first, end;
    ts_part_range(c->n, part, parts, &first, &end);
    c->crc[part] = crc32_serial(0, c->bytes + first, end - first);
}

uint32_t ts_crc32(uint32_t crc, const void *bytes, size_t n) {
    enum { BYTES_PER_PART = 1 << 20 };  // below this a part costs less than waking a thread
    if (n < 2 * (size_t)BYTES_PER_PART) return crc32_serial(crc, bytes, n);
    size_t most = n / BYTES_PER_PART;
    int parts = ts_parallel_parts(n, most < TS_PARALLEL_MAX_PARTS ? (int)most : TS_PARALLEL_MAX_PARTS);
    if (parts < 2) return crc32_serial(crc, bytes, n);
    crc_parts c = {.bytes = bytes, .n = n};
    ts_parallel_run(parts, crc_part, &c);
    uLong all = crc;
    for (int part = 0; part < parts; part++) {
        size_t first, end;
        ts_part_range(n, part, parts, &first, &end);
        all = crc32_combine(all, c.crc[part], (z_off_t)(end - first));
    }
    return (uint32_t)all;
}

