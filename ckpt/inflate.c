// Inflating a gzip checkpoint (version 1, or any payload gzip'd by hand)
// into one buffer bounded by the payload size its prelude declares (itself
// bounded by a cap), the prelude checked as soon as it arrives; and the
// prelude's check, which a mapped file's raw payload shares (ckpt/read.c).
#include "ckpt/ckpt.h"  // ts_crc32
#include "ckpt/format.h"

#include "tensor/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// Next compressed bytes into *p/*n; *n == 0 at end of input.
static int source_next(struct source *src, const unsigned char **p, size_t *n) {
    if (!src->file) {
        *p = src->mem;
        *n = src->mem_len;
        src->mem_len = 0;
    } else {
        *p = src->chunk;
        *n = fread(src->chunk, 1, CHUNK, src->file);
        if (*n == 0 && ferror(src->file))
            return ts_fail(TS_ERR_IO, "cannot read checkpoint %s: %s", src->what,
                           strerror(errno));
    }
    src->consumed += *n;
    return TS_OK;
}

// Checks the 32-byte prelude; on success *total is the whole payload size.
int ts_ckpt_check_prelude(const unsigned char *p, uint64_t cap, const char *what,
                         size_t *total) {
    if (memcmp(p, MAGIC, 8) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: bad magic (not a tinyseq checkpoint)",
                       what);
    uint32_t version = get_u32(p + 8);
    if (version != 1 && version != 2)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: format version %u, this build reads "
                       "versions 1 and 2", what, version);
    if (CRC_CHECKED && get_u32(p + 28) != ts_crc32(0, p, 28))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: prelude CRC mismatch", what);
    if (get_u32(p + 12) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: unknown flags 0x%x", what, get_u32(p + 12));
    if (get_u32(p + 24) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: reserved prelude field is not 0", what);
    uint64_t payload_len = get_u64(p + 16);
    uint64_t min = SECTION_COUNT * SECTION_OVERHEAD + 4 * 4 + TRAILER_SIZE;
    if (payload_len < min)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: declared payload of %llu bytes is "
                       "shorter than the %llu-byte minimum", what,
                       (unsigned long long)payload_len, (unsigned long long)min);
    if (payload_len > cap || payload_len > SIZE_MAX - PRELUDE_SIZE)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: declared payload of %llu bytes exceeds "
                       "the limit of %llu bytes", what, (unsigned long long)payload_len,
                       (unsigned long long)cap);
    *total = PRELUDE_SIZE + (size_t)payload_len;
    return TS_OK;
}

// The last 8 bytes of the compressed input seen so far: at the end, gzip's
// trailer (CRC-32 and size of the payload).
static void keep_tail(unsigned char tail[8], const unsigned char *p, size_t n) {
    if (n >= 8) {
        memcpy(tail, p + n - 8, 8);
    } else if (n > 0) {
        memmove(tail, tail + n, 8 - n);
        memcpy(tail + 8 - n, p, n);
    }
}

// Inflates the single gzip member into *out (malloc'd, *len bytes), checking
// the prelude as soon as it arrives and never holding more than the declared
// size, then rejecting anything after the member. zlib does not check gzip's
// CRC and size: the caller does, from the CRCs it computes anyway, with the
// trailer left in gzip_trailer (one pass over the payload fewer).
int ts_ckpt_inflate(struct source *src, uint64_t cap, unsigned char **out,
                           size_t *len, unsigned char gzip_trailer[8]) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, GZIP_WINDOW) != Z_OK)
        return ts_fail(TS_ERR_NOMEM, "checkpoint %s: inflateInit2 failed", src->what);
    inflateValidate(&z, 0);  // gzip's CRC and size: see parse_payload
    memset(gzip_trailer, 0, 8);
    size_t have = 0, buf_cap = PRELUDE_SIZE, total = 0; // total known after the prelude
    unsigned char *buf = malloc(buf_cap);
    unsigned char extra;
    int at_eof = 0, rc = TS_OK;
    if (!buf) {
        rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", src->what);
        goto done;
    }
    for (;;) {
        if (z.avail_in == 0 && !at_eof) {
            const unsigned char *p;
            size_t n;
            if ((rc = source_next(src, &p, &n)) != TS_OK) goto done;
            // uInt is 32 bits: a memory source over 4 GiB is fed in pieces.
            if (n > UINT_MAX) {
                src->mem = p + UINT_MAX;
                src->mem_len = n - UINT_MAX;
                n = UINT_MAX;
            }
            z.next_in = (unsigned char *)p;
            z.avail_in = (uInt)n;
            at_eof = n == 0;
        }
        int past_end = total && have == total;
        if (past_end) {
            z.next_out = &extra; // any byte landing here is one too many
            z.avail_out = 1;
        } else {
            size_t want = total ? total : PRELUDE_SIZE;
            if (have == buf_cap) {
                // Grow with the bytes actually inflated, not the declared
                // size, so a lying prelude costs no memory.
                size_t grown = buf_cap <= want / 2 ? buf_cap * 2 : want;
                if (grown < ((size_t)1 << 20))
                    grown = want < ((size_t)1 << 20) ? want : ((size_t)1 << 20);
                unsigned char *bigger = realloc(buf, grown);
                if (!bigger) {
                    rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", src->what);
                    goto done;
                }
                buf = bigger;
                buf_cap = grown;
            }
            size_t room = (total ? buf_cap : PRELUDE_SIZE) - have;
            z.next_out = buf + have;
            z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        }
        uInt before = z.avail_out, in_before = z.avail_in;
        const unsigned char *in = z.next_in;
        int ret = inflate(&z, Z_NO_FLUSH);
        keep_tail(gzip_trailer, in, in_before - z.avail_in);
        size_t produced = before - z.avail_out;
        if (past_end && produced) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: payload is longer than its declared "
                         "%zu bytes", src->what, total - PRELUDE_SIZE);
            goto done;
        }
        have += produced;
        if (!total && have == PRELUDE_SIZE) {
            if ((rc = ts_ckpt_check_prelude(buf, cap, src->what, &total)) != TS_OK) goto done;
        }
        if (ret == Z_STREAM_END) break;
        if (ret == Z_DATA_ERROR) {
            if (have == 0 && z.msg &&
                (strstr(z.msg, "header") || strstr(z.msg, "compression method")))
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: not a gzip file (%s)", src->what,
                             z.msg);
            else
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data: %s", src->what,
                             z.msg ? z.msg : "?");
            goto done;
        }
        if (ret == Z_MEM_ERROR) {
            rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory in inflate", src->what);
            goto done;
        }
        if (ret == Z_NEED_DICT || ret == Z_STREAM_ERROR) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data", src->what);
            goto done;
        }
        // Z_BUF_ERROR: no progress possible, so the input has run out.
        if (ret == Z_BUF_ERROR && z.avail_in == 0 && at_eof) {
            if (src->consumed == 0)
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: empty file", src->what);
            else
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated: the gzip stream ends "
                             "early (after %zu payload bytes)", src->what, have);
            goto done;
        }
    }
    if (have < PRELUDE_SIZE || have < total) {
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated payload: the stream ends after "
                     "%zu of %zu bytes", src->what, have, total ? total : (size_t)PRELUDE_SIZE);
        goto done;
    }
    // Exactly one gzip member and nothing after it.
    if (z.avail_in == 0 && !at_eof) {
        const unsigned char *p;
        size_t n;
        if ((rc = source_next(src, &p, &n)) != TS_OK) goto done;
        z.avail_in = n > UINT_MAX ? UINT_MAX : (uInt)n;
    }
    if (z.avail_in != 0) {
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: trailing bytes after the gzip stream",
                     src->what);
        goto done;
    }
done:
    inflateEnd(&z);
    if (rc != TS_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = have;
    return TS_OK;
}

