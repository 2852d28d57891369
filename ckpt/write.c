// Writing a checkpoint (format version 2): streams the payload to the file
// uncompressed (no second copy of the parameters); a sizing pass first
// computes every length and every tensor's aligned offset, so the prelude can
// declare the payload size up front and the tensor index can precede the
// data. Saving to a path goes through the atomic writer
// (tensor/atomic_write.h). Byte layout: docs/checkpoint.md.
#include "ckpt/container.h"
#include "ckpt/format.h"

#include "tensor/atomic_write.h"
#include "tensor/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>  // crc32_combine

// ---- writing: sizing pass ------------------------------------------------------------

static uint64_t head_body_size(const ts_ckpt *ck) {
    uint64_t n = 0;
    for (size_t i = 0; i < ck->n_entries; i++)
        n += strlen(ck->entries[i].key) + 1 + strlen(ck->entries[i].value) + 1;
    return n;
}

static uint64_t vocab_body_size(const ts_ckpt *ck) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_vocabs; i++) {
        const struct vocab *v = &ck->vocabs[i];
        n += 4 + strlen(v->name) + 4;
        for (size_t k = 0; k < v->pub.count; k++) n += 4 + strlen(v->tokens[k]);
    }
    return n;
}

// A tensor section's index: the count, then per tensor its name, dtype,
// ndim, shape and data offset.
static uint64_t tensor_index_size(const ts_ckpt *ck, int section) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_tensors[section]; i++) {
        const struct tensor *t = &ck->tensors[section][i];
        n += 4 + strlen(t->name) + 4 + 4 + 8 * (uint64_t)t->pub.ndim + 8;
    }
    return n;
}

static uint64_t tensor_bytes(const struct tensor *t) { return (uint64_t)ts_dtype_size(t->pub.dtype) * t->pub.size; }

// A tensor section's body, which starts at payload offset `start`: the
// index, then each tensor's data at the first aligned offset after what
// precedes it (zeros between). The index (emit_tensors) and the data walk
// the same sequence of offsets.
static uint64_t tensor_body_size(const ts_ckpt *ck, int section, uint64_t start) {
    uint64_t end = start + tensor_index_size(ck, section);
    for (size_t i = 0; i < ck->n_tensors[section]; i++)
        end = align_tensor(end) + tensor_bytes(&ck->tensors[section][i]);
    return end - start;
}

static uint64_t blob_body_size(const ts_ckpt *ck) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_blobs; i++)
        n += 4 + strlen(ck->blobs[i].name) + 8 + ck->blobs[i].n;
    return n;
}

// ---- writing: the sink --------------------------------------------------------------

// Serialised bytes go through `stage` (so tiny fields don't each cost a
// write) and the running CRCs, then to a file or memory.
struct sink {
    uint32_t crc_section, crc_payload;
    int in_section;          // between section_begin and section_end
    uint64_t section_bytes;  // emitted since section_begin
    uint64_t position;       // payload bytes emitted so far: the next byte's offset
    unsigned char stage[CHUNK];
    size_t staged;
    FILE *file;  // the file target, or NULL for memory:
    unsigned char *mem;
    size_t mem_len, mem_cap;
    int status; // first failure, TS_OK until then
};

static int sink_output(struct sink *s, const unsigned char *p, size_t n) {
    if (s->file) {  // the atomic writer names a failed write's cause
        return fwrite(p, 1, n, s->file) == n ? TS_OK : ts_fail(TS_ERR_IO, "checkpoint: write error");
    }
    if (n > s->mem_cap - s->mem_len) {
        size_t cap = s->mem_cap ? s->mem_cap : CHUNK;
        while (n > cap - s->mem_len) cap *= 2;
        unsigned char *grown = realloc(s->mem, cap);
        if (!grown) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
        s->mem = grown;
        s->mem_cap = cap;
    }
    memcpy(s->mem + s->mem_len, p, n);
    s->mem_len += n;
    return TS_OK;
}

static void sink_flush(struct sink *s) {
    if (s->status == TS_OK) s->status = sink_output(s, s->stage, s->staged);
    s->staged = 0;
}

static void emit(struct sink *s, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    s->position += n;
    while (n > 0 && s->status == TS_OK) {
        size_t piece = sizeof s->stage - s->staged;
        if (piece > n) piece = n;
        memcpy(s->stage + s->staged, p, piece);
        // Inside a section only its CRC: section_end folds it into the
        // payload's (crc32_combine), one pass over the bytes instead of two.
        if (s->in_section) {
            s->crc_section = ts_crc32(s->crc_section, p, piece);
            s->section_bytes += piece;
        } else {
            s->crc_payload = ts_crc32(s->crc_payload, p, piece);
        }
        s->staged += piece;
        p += piece;
        n -= piece;
        if (s->staged == sizeof s->stage) sink_flush(s);
    }
}

// Zeros up to payload offset `to` (alignment padding).
static void emit_zeros_to(struct sink *s, uint64_t to) {
    static const unsigned char zeros[TENSOR_ALIGN];
    while (s->position < to) emit(s, zeros, (size_t)(to - s->position < sizeof zeros ? to - s->position : sizeof zeros));
}

static void emit_u32(struct sink *s, uint32_t v) {
    unsigned char b[4];
    put_u32(b, v);
    emit(s, b, 4);
}

static void emit_u64(struct sink *s, uint64_t v) {
    unsigned char b[8];
    put_u64(b, v);
    emit(s, b, 8);
}

static void emit_name(struct sink *s, const char *name) {
    size_t n = strlen(name);
    emit_u32(s, (uint32_t)n);
    emit(s, name, n);
}

static void section_begin(struct sink *s, int tag, uint64_t body_len) {
    s->crc_section = 0;
    s->section_bytes = 0;
    s->in_section = 1;
    emit(s, SECTION_TAGS[tag], 4);
    emit_u64(s, body_len);
}

static void section_end(struct sink *s) {
    s->in_section = 0;
    s->crc_payload = (uint32_t)crc32_combine(s->crc_payload, s->crc_section, (z_off_t)s->section_bytes);
    emit_u32(s, s->crc_section); // itself covered by the payload CRC only
}

// A tensor section's body: the index, then the data, each tensor at its
// aligned offset (tensor_body_size's walk).
static void emit_tensors(struct sink *s, const ts_ckpt *ck, int section) {
    size_t n = ck->n_tensors[section];
    emit_u32(s, (uint32_t)n);
    uint64_t offset = s->position + tensor_index_size(ck, section) - 4;  // the index's end
    for (size_t i = 0; i < n; i++) {
        const struct tensor *t = &ck->tensors[section][i];
        emit_name(s, t->name);
        emit_u32(s, dtype_code(t->pub.dtype));
        emit_u32(s, (uint32_t)t->pub.ndim);
        for (int d = 0; d < t->pub.ndim; d++) emit_u64(s, t->pub.shape[d]);
        offset = align_tensor(offset);
        emit_u64(s, offset);
        offset += tensor_bytes(t);
    }
    for (size_t i = 0; i < n; i++) {
        const struct tensor *t = &ck->tensors[section][i];
        emit_zeros_to(s, align_tensor(s->position));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        emit(s, t->pub.data, (size_t)tensor_bytes(t));  // the file's byte order is this host's
#else
        size_t width = ts_dtype_size(t->pub.dtype);
        const unsigned char *values = t->pub.raw;
        unsigned char b[8 * 512];
        for (size_t k = 0; k < t->pub.size;) {
            size_t m = 0;
            for (; m < 512 && k < t->pub.size; m++, k++) {  // each value's bytes reversed
                for (size_t j = 0; j < width; j++) b[width * m + j] = values[width * k + width - 1 - j];
            }
            emit(s, b, width * m);
        }
#endif
    }
}

// Serialises the whole payload into the sink.
static int serialise(struct sink *s, const ts_ckpt *ck) {
    // Section i's body starts 12 bytes into its frame; tensor bodies depend
    // on where they start (alignment), so sizes are summed in file order.
    uint64_t body[SECTION_COUNT];
    uint64_t position = PRELUDE_SIZE;
    for (int sec = 0; sec < SECTION_COUNT; sec++) {
        uint64_t start = position + 12;
        body[sec] = sec == SEC_HEAD   ? head_body_size(ck)
                    : sec == SEC_VOCB ? vocab_body_size(ck)
                    : sec == SEC_PARM ? tensor_body_size(ck, TS_CKPT_PARAMS, start)
                    : sec == SEC_OPTM ? tensor_body_size(ck, TS_CKPT_OPTIM, start)
                                      : blob_body_size(ck);
        position += SECTION_OVERHEAD + body[sec];
    }
    uint64_t payload_len = position + TRAILER_SIZE - PRELUDE_SIZE;

    unsigned char prelude[PRELUDE_SIZE] = {0};
    memcpy(prelude, MAGIC, 8);
    put_u32(prelude + 8, TS_CKPT_VERSION);
    put_u32(prelude + 12, 0); // flags
    put_u64(prelude + 16, payload_len);
    put_u32(prelude + 24, 0); // reserved
    put_u32(prelude + 28, ts_crc32(0, prelude, 28));
    s->crc_payload = 0;
    emit(s, prelude, sizeof prelude);

    section_begin(s, SEC_HEAD, body[SEC_HEAD]);
    for (size_t i = 0; i < ck->n_entries; i++) {
        emit(s, ck->entries[i].key, strlen(ck->entries[i].key));
        emit(s, "=", 1);
        emit(s, ck->entries[i].value, strlen(ck->entries[i].value));
        emit(s, "\n", 1);
    }
    section_end(s);

    section_begin(s, SEC_VOCB, body[SEC_VOCB]);
    emit_u32(s, (uint32_t)ck->n_vocabs);
    for (size_t i = 0; i < ck->n_vocabs; i++) {
        const struct vocab *v = &ck->vocabs[i];
        emit_name(s, v->name);
        emit_u32(s, (uint32_t)v->pub.count);
        for (size_t k = 0; k < v->pub.count; k++) emit_name(s, v->tokens[k]);
    }
    section_end(s);

    section_begin(s, SEC_PARM, body[SEC_PARM]);
    emit_tensors(s, ck, TS_CKPT_PARAMS);
    section_end(s);
    section_begin(s, SEC_OPTM, body[SEC_OPTM]);
    emit_tensors(s, ck, TS_CKPT_OPTIM);
    section_end(s);

    section_begin(s, SEC_BLOB, body[SEC_BLOB]);
    emit_u32(s, (uint32_t)ck->n_blobs);
    for (size_t i = 0; i < ck->n_blobs; i++) {
        emit_name(s, ck->blobs[i].name);
        emit_u64(s, ck->blobs[i].n);
        emit(s, ck->blobs[i].bytes, ck->blobs[i].n);
    }
    section_end(s);

    emit_u32(s, s->crc_payload);
    sink_flush(s);
    if (s->status != TS_OK) return s->status;
    if (s->position != PRELUDE_SIZE + payload_len)
        return ts_fail(TS_ERR_ARG, "checkpoint: internal error, sizing pass disagrees");
    return TS_OK;
}

int ts_ckpt_save_mem(const ts_ckpt *ck, unsigned char **out, size_t *len) {
    if (!ck || !out || !len) return ts_fail(TS_ERR_ARG, "ts_ckpt_save_mem: NULL argument");
    struct sink *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    int rc = serialise(s, ck);
    if (rc == TS_OK) {
        *out = s->mem;
        *len = s->mem_len;
    } else {
        free(s->mem);
    }
    free(s);
    return rc;
}

static int fill_file(void *ctx, FILE *out) {
    const ts_ckpt *ck = ctx;
    struct sink *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    s->file = out;
    int rc = serialise(s, ck);
    free(s);
    return rc;
}

int ts_ckpt_save(const ts_ckpt *ck, const char *path) { return ts_ckpt_save_ex(ck, path, NULL); }

int ts_ckpt_save_ex(const ts_ckpt *ck, const char *path, const ts_ckpt_save_opts *opts) {
    if (!ck || !path || !*path) return ts_fail(TS_ERR_ARG, "ts_ckpt_save: NULL argument");
    return ts_write_atomic(path, fill_file, (void *)ck, opts);
}
