// Loading a checkpoint: a version-2 file is mapped read-only and parsed in
// place, its tensors pointing into the mapping; a gzip file (version 1, or
// any payload gzip'd by hand) is inflated into one buffer bounded by the
// payload size the prelude declares (itself bounded by a cap: ckpt/inflate.c).
// Either way the bounded parser (parse.c) reads the payload, whose bytes then
// become the container's storage or are given back. Byte layout:
// docs/checkpoint.md.
#define _DEFAULT_SOURCE  // MAP_POPULATE
#include "ckpt/container.h"
#include "ckpt/format.h"
#include "ckpt/parse.h"

#include "tensor/status.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// Hands a parsed payload's bytes to the container when its tensors point
// into them (version 2), else releases them (version 1 copied its tensors;
// on failure there is no container).
static void settle_storage(ts_ckpt *ck, const unsigned char *p, size_t len, int mapped) {
    if (ck && get_u32(p + 8) >= 2) {
        ck->storage = p;
        ck->storage_len = len;
        ck->storage_mapped = mapped;
    } else {
        ts_ckpt_release_bytes(p, len, mapped);
    }
}

static uint64_t cap_of(const ts_ckpt_load_opts *opts) {
    return opts && opts->max_payload ? opts->max_payload : TS_CKPT_DEFAULT_MAX_PAYLOAD;
}

// A gzip file: inflated into one buffer, then parsed.
static int load_gzip(struct source *src, const ts_ckpt_load_opts *opts, ts_ckpt **out) {
    unsigned char *payload = NULL;
    size_t len = 0;
    unsigned char gzip_trailer[8];
    int rc = ts_ckpt_inflate(src, cap_of(opts), &payload, &len, gzip_trailer);
    if (rc != TS_OK) return rc;
    rc = ts_ckpt_parse_payload(payload, len, src->what, opts && opts->skip_training_state, gzip_trailer, out);
    settle_storage(*out, payload, len, 0);
    return rc;
}

// An uncompressed file's bytes p[0..len): exactly the payload its prelude
// declares. The bytes become the container's storage (settle_storage).
static int load_raw(const unsigned char *p, size_t len, int mapped, const ts_ckpt_load_opts *opts,
                    const char *what, ts_ckpt **out) {
    size_t total = 0;
    int rc = TS_OK;
    if (len < PRELUDE_SIZE && memcmp(p, MAGIC, len < 8 ? len : 8) == 0)
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated: %zu bytes, shorter than the %d-byte "
                     "prelude", what, len, PRELUDE_SIZE);
    else if (len < PRELUDE_SIZE || memcmp(p, MAGIC, 8) != 0)
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: bad magic (not a tinyseq checkpoint: neither "
                     "TSEQCKPT nor gzip)", what);
    else if (!(rc = ts_ckpt_check_prelude(p, cap_of(opts), what, &total)) && len != total)
        rc = len < total ? ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated: %zu of the %zu bytes "
                                   "its prelude declares", what, len, total)
                         : ts_fail(TS_ERR_FORMAT, "checkpoint %s: %zu trailing bytes after the "
                                   "checkpoint", what, len - total);
    if (!rc) rc = ts_ckpt_parse_payload(p, total, what, opts && opts->skip_training_state, NULL, out);
    settle_storage(*out, p, len, mapped);
    return rc;
}

static int is_gzip(const unsigned char *p, size_t len) { return len >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

const char *ts_ckpt_path(const ts_ckpt *ck) { return ck->path; }

int ts_ckpt_load_mem(const void *data, size_t len, const ts_ckpt_load_opts *opts,
                     ts_ckpt **out) {
    if (!out) return ts_fail(TS_ERR_ARG, "ts_ckpt_load_mem: NULL argument");
    *out = NULL;
    if (!data && len) return ts_fail(TS_ERR_ARG, "ts_ckpt_load_mem: NULL data");
    if (len == 0) return ts_fail(TS_ERR_FORMAT, "checkpoint <memory>: empty file");
    if (is_gzip(data, len)) {
        struct source src = {.mem = data, .mem_len = len, .what = "<memory>"};
        return load_gzip(&src, opts, out);
    }
    // A copy the container owns, aligned as malloc aligns (the offsets are
    // multiples of 64 from its start).
    unsigned char *copy = malloc(len);
    if (!copy) return ts_fail(TS_ERR_NOMEM, "checkpoint <memory>: out of memory");
    memcpy(copy, data, len);
    return load_raw(copy, len, 0, opts, "<memory>", out);
}

int ts_ckpt_load(const char *path, const ts_ckpt_load_opts *opts, ts_ckpt **out) {
    if (!out || !path) return ts_fail(TS_ERR_ARG, "ts_ckpt_load: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ts_fail(TS_ERR_IO, "cannot open checkpoint %s: %s", path, strerror(errno));
    struct stat st;
    unsigned char magic[2];
    ssize_t got = 0;
    int rc = TS_OK;
    if (fstat(fd, &st) != 0)
        rc = ts_fail(TS_ERR_IO, "cannot stat checkpoint %s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = ts_fail(TS_ERR_IO, "%s is a directory, not a checkpoint", path);
    else if ((got = pread(fd, magic, 2, 0)) < 0)
        rc = ts_fail(TS_ERR_IO, "cannot read checkpoint %s: %s", path, strerror(errno));
    else if (got == 0)
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: empty file", path);
    if (rc) {
        close(fd);
        return rc;
    }
    if (is_gzip(magic, (size_t)got) || !S_ISREG(st.st_mode)) {  // a pipe cannot be mapped: read it
        FILE *f = fdopen(fd, "rb");
        struct source src = {.file = f, .chunk = malloc(CHUNK), .what = path};
        if (!f || !src.chunk) rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", path);
        else if (is_gzip(magic, (size_t)got)) rc = load_gzip(&src, opts, out);
        else rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: not a regular file (a version-2 "
                          "checkpoint is mapped)", path);
        free(src.chunk);
        if (f) fclose(f);
        else close(fd);
    } else {
        // Read-only and private: the tensors point into it, and a write
        // through one faults instead of reaching the file.
        size_t len = (size_t)st.st_size;
        void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);  // the mapping keeps the file
        if (map == MAP_FAILED)
            rc = ts_fail(TS_ERR_IO, "cannot map checkpoint %s: %s", path, strerror(errno));
        else
            rc = load_raw(map, len, 1, opts, path, out);
    }
    if (rc == TS_OK && !((*out)->path = ts_ckpt_dup(path, strlen(path)))) {
        ts_ckpt_free(*out);
        *out = NULL;
        rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", path);
    }
    return rc;
}
