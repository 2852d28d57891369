// A SentencePiece model checked field by field (data/subword_proto.h). The
// field numbers are those of SentencePiece's sentencepiece_model.proto.
#include "data/subword_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

#include "tensor/status.h"

const char *const ts_subword_specials[TS_N_SPECIALS] = {
    [TS_PAD] = "<pad>", [TS_SOS] = "<sos>", [TS_EOS] = "<eos>", [TS_UNK] = "<unk>"};

enum wire { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };

// SentencePiece::Type values.
enum piece_type { NORMAL = 1, UNKNOWN = 2, CONTROL = 3, BYTE = 6 };

// One field as read: its number, wire type and value or bytes.
typedef struct {
    uint32_t number;
    int wire;
    uint64_t value;        // VARINT, I64, I32 (the fixed-width bits, little-endian)
    const uint8_t *bytes;  // LEN: (size) bytes inside the message
    size_t size;
} field;

// The bytes of a message still to read.
typedef struct {
    const uint8_t *at, *end;
} reader;

static int read_varint(reader *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && r->at < r->end; shift += 7) {
        uint8_t b = *r->at++;
        if (shift == 63 && b > 1) return -1;  // more than 64 bits
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

// The next field of r into *f: 1, or 0 at the end of the message, or -1 when
// the bytes are no field (truncated, a group, a wire type protobuf has not).
static int next_field(reader *r, field *f) {
    if (r->at == r->end) return 0;
    uint64_t key;
    if (read_varint(r, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff) return -1;
    *f = (field){.number = (uint32_t)(key >> 3), .wire = (int)(key & 7)};
    size_t width = f->wire == I64 ? 8 : 4;
    uint64_t n;
    switch (f->wire) {
    case VARINT:
        return read_varint(r, &f->value) ? -1 : 1;
    case I64:
    case I32:
        if ((size_t)(r->end - r->at) < width) return -1;
        for (size_t i = 0; i < width; i++) f->value |= (uint64_t)r->at[i] << (8 * i);
        r->at += width;
        return 1;
    case LEN:
        if (read_varint(r, &n) || n > (uint64_t)(r->end - r->at)) return -1;
        f->bytes = r->at;
        f->size = (size_t)n;
        r->at += n;
        return 1;
    default:
        return -1;
    }
}

static int damaged(const char *where) {
    return ts_fail(TS_ERR_FORMAT, "subword model: %s: not protobuf (a field is cut short or of no wire type)", where);
}

// What a field of trainer_spec or normalizer_spec may hold.
enum rule {
    TRAINING,  // read only by training: any value of its wire type, repeated or not
    EQUALS,    // present once, the varint `value`
    DEFAULT,   // absent (SentencePiece's default, which tinyseq relies on) or the varint `value`
    ONE_TO,    // absent or a varint in 1..value
    TEXT,      // present once, the string `text` (a special's name when NULL: `value` is its id)
    EMPTY,     // absent or no bytes
    ABSENT,    // never written by tinyseq
};

typedef struct {
    uint32_t number;
    int wire;
    const char *name;
    enum rule rule;
    uint64_t value;
    const char *text;
} rule_row;

static const rule_row trainer_rows[] = {
    {1, LEN, "input", TRAINING, 0, 0},
    {2, LEN, "model_prefix", TRAINING, 0, 0},
    {3, VARINT, "model_type", ONE_TO, 2, 0},  // 1 unigram, 2 bpe (not word or char)
    {4, VARINT, "vocab_size", TRAINING, 0, 0},
    {5, LEN, "accept_language", TRAINING, 0, 0},
    {6, VARINT, "self_test_sample_size", TRAINING, 0, 0},
    {7, LEN, "input_format", TRAINING, 0, 0},
    {10, I32, "character_coverage", TRAINING, 0, 0},
    {11, VARINT, "input_sentence_size", TRAINING, 0, 0},
    {12, VARINT, "mining_sentence_size", TRAINING, 0, 0},
    {13, VARINT, "training_sentence_size", TRAINING, 0, 0},
    {14, VARINT, "seed_sentencepiece_size", TRAINING, 0, 0},
    {15, I32, "shrinking_factor", TRAINING, 0, 0},
    {16, VARINT, "num_threads", TRAINING, 0, 0},
    {17, VARINT, "num_sub_iterations", TRAINING, 0, 0},
    {18, VARINT, "max_sentence_length", TRAINING, 0, 0},
    {19, VARINT, "shuffle_input_sentence", TRAINING, 0, 0},
    {20, VARINT, "max_sentencepiece_length", TRAINING, 0, 0},
    {21, VARINT, "split_by_unicode_script", TRAINING, 0, 0},
    {22, VARINT, "split_by_whitespace", DEFAULT, 1, 0},
    {23, VARINT, "split_by_number", TRAINING, 0, 0},
    {24, VARINT, "treat_whitespace_as_suffix", DEFAULT, 0, 0},
    {25, VARINT, "split_digits", TRAINING, 0, 0},
    {26, VARINT, "allow_whitespace_only_pieces", DEFAULT, 0, 0},
    {30, LEN, "control_symbols", TRAINING, 0, 0},
    {31, LEN, "user_defined_symbols", TRAINING, 0, 0},
    {32, VARINT, "vocabulary_output_piece_score", TRAINING, 0, 0},
    {33, VARINT, "hard_vocab_limit", TRAINING, 0, 0},
    {34, VARINT, "use_all_vocab", TRAINING, 0, 0},
    {35, VARINT, "byte_fallback", EQUALS, 1, 0},
    {36, LEN, "required_chars", TRAINING, 0, 0},
    {40, VARINT, "unk_id", EQUALS, TS_UNK, 0},
    {41, VARINT, "bos_id", EQUALS, TS_SOS, 0},
    {42, VARINT, "eos_id", EQUALS, TS_EOS, 0},
    {43, VARINT, "pad_id", EQUALS, TS_PAD, 0},
    {44, LEN, "unk_surface", ABSENT, 0, 0},
    {45, LEN, "unk_piece", TEXT, TS_UNK, 0},
    {46, LEN, "bos_piece", TEXT, TS_SOS, 0},
    {47, LEN, "eos_piece", TEXT, TS_EOS, 0},
    {48, LEN, "pad_piece", TEXT, TS_PAD, 0},
    {49, VARINT, "train_extremely_large_corpus", TRAINING, 0, 0},
    {50, VARINT, "enable_differential_privacy", TRAINING, 0, 0},
    {51, I32, "differential_privacy_noise_level", TRAINING, 0, 0},
    {52, VARINT, "differential_privacy_clipping_threshold", TRAINING, 0, 0},
    {53, LEN, "pretokenization_delimiter", TRAINING, 0, 0},
    {54, LEN, "seed_sentencepieces_file", TRAINING, 0, 0},
};

_Static_assert(sizeof trainer_rows / sizeof *trainer_rows <= 64, "check_message counts up to 64 rows");

// The identity normalizer: no character map (the crash of issue 38), no rules.
static const rule_row normalizer_rows[] = {
    {1, LEN, "name", TEXT, 0, "identity"},
    {2, LEN, "precompiled_charsmap", EMPTY, 0, 0},
    {3, VARINT, "add_dummy_prefix", DEFAULT, 1, 0},
    {4, VARINT, "remove_extra_whitespaces", DEFAULT, 1, 0},
    {5, VARINT, "escape_whitespaces", DEFAULT, 1, 0},
    {6, LEN, "normalization_rule_tsv", ABSENT, 0, 0},
};

static const char *text_of(const rule_row *row) {
    return row->text ? row->text : ts_subword_specials[row->value];
}

// A LEN field's bytes quoted when short printable ASCII, else "...".
static const char *shown(const field *f, char buf[40]) {
    int printable = f->size <= 32;
    for (size_t i = 0; printable && i < f->size; i++) printable = f->bytes[i] >= 0x20 && f->bytes[i] < 0x7f;
    if (!printable) return "...";
    snprintf(buf, 40, "'%.*s'", (int)f->size, (const char *)f->bytes);
    return buf;
}

// Message `where` (bytes, size) checked against rows.
static int check_message(const char *where, const uint8_t *bytes, size_t size, const rule_row *rows, size_t n_rows) {
    unsigned char seen[64] = {0};  // (n_rows), n_rows <= 64
    reader r = {bytes, bytes + size};
    field f;
    int got;
    while ((got = next_field(&r, &f)) == 1) {
        size_t i = 0;
        while (i < n_rows && rows[i].number != f.number) i++;
        if (i == n_rows)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s: field %u is not one tinyseq writes", where, f.number);
        const rule_row *row = &rows[i];
        if (f.wire != row->wire)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s.%s has wire type %d, not %d", where, row->name, f.wire,
                           row->wire);
        if (seen[i] && row->rule != TRAINING)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s.%s is given twice", where, row->name);
        seen[i] = 1;
        int ok = 1;
        switch (row->rule) {
        case TRAINING:
            break;
        case EQUALS:
        case DEFAULT:
            ok = f.value == row->value;
            break;
        case ONE_TO:
            ok = f.value >= 1 && f.value <= row->value;
            break;
        case TEXT:
            ok = f.size == strlen(text_of(row)) && !memcmp(f.bytes, text_of(row), f.size);
            break;
        case EMPTY:
            ok = f.size == 0;
            break;
        case ABSENT:
            ok = 0;
            break;
        }
        if (ok) continue;
        if (row->wire == LEN)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s.%s is %s (%zu bytes), tinyseq writes %s", where, row->name,
                           shown(&f, (char[40]){0}), f.size,
                           row->rule == TEXT ? text_of(row) : row->rule == EMPTY ? "none" : "no such field");
        return ts_fail(TS_ERR_FORMAT, "subword model: %s.%s is %llu, tinyseq writes %s%llu", where, row->name,
                       (unsigned long long)f.value, row->rule == ONE_TO ? "1.." : "", (unsigned long long)row->value);
    }
    if (got < 0) return damaged(where);
    for (size_t i = 0; i < n_rows; i++)
        if (!seen[i] && (rows[i].rule == EQUALS || rows[i].rule == TEXT))
            return ts_fail(TS_ERR_FORMAT, "subword model: %s.%s is missing", where, rows[i].name);
    return TS_OK;
}

// The piece tinyseq writes at id (byte pieces spelled into buf), and its type.
static const char *expected_piece(size_t id, char buf[8], int *type) {
    if (id < TS_N_SPECIALS) {
        *type = id == TS_UNK ? UNKNOWN : CONTROL;
        return ts_subword_specials[id];
    }
    if (id < TS_N_SPECIALS + 256) {
        *type = BYTE;
        snprintf(buf, 8, "<0x%02X>", (unsigned)(id - TS_N_SPECIALS));
        return buf;
    }
    *type = NORMAL;
    return NULL;
}

// 1 when a learned piece's text is one tinyseq could have learned: UTF-8,
// no control characters, no space (SentencePiece spells it U+2581).
static int learned_text(const uint8_t *s, size_t n) {
    if (n == 0 || u8_check(s, n)) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

typedef struct {
    const uint8_t *bytes;
    size_t size;
} text;

static int text_order(const void *a, const void *b) {
    const text *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, x->size < y->size ? x->size : y->size);
    return c ? c : (x->size > y->size) - (x->size < y->size);
}

// Piece `id` (a SentencePiece message: piece = 1, score = 2, type = 3); its
// text into *out.
static int check_piece(size_t id, const uint8_t *bytes, size_t size, text *out) {
    char where[48], buf[8];
    snprintf(where, sizeof where, "piece %zu", id);
    int want_type, type = NORMAL, seen[4] = {0};
    const char *want = expected_piece(id, buf, &want_type);
    reader r = {bytes, bytes + size};
    field f;
    int got;
    while ((got = next_field(&r, &f)) == 1) {
        static const int wires[4] = {0, LEN, I32, VARINT};
        if (f.number < 1 || f.number > 3)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s: field %u is not one tinyseq writes", where, f.number);
        if (f.wire != wires[f.number] || seen[f.number]++)
            return ts_fail(TS_ERR_FORMAT, "subword model: %s: field %u is given twice or has wire type %d", where,
                           f.number, f.wire);
        if (f.number == 1) {
            *out = (text){f.bytes, f.size};
        } else if (f.number == 2) {
            uint32_t bits = (uint32_t)f.value;
            float score;
            memcpy(&score, &bits, sizeof score);
            if (!isfinite(score)) return ts_fail(TS_ERR_FORMAT, "subword model: %s has score %g", where, score);
        } else {
            type = f.value > 6 ? -1 : (int)f.value;
        }
    }
    if (got < 0) return damaged(where);
    if (!seen[1]) return ts_fail(TS_ERR_FORMAT, "subword model: %s has no text", where);
    if (want ? out->size != strlen(want) || memcmp(out->bytes, want, out->size) : !learned_text(out->bytes, out->size))
        return ts_fail(TS_ERR_FORMAT, "subword model: %s is %zu bytes that are not %s", where, out->size,
                       want ? want : "a learned piece (UTF-8, no control characters or spaces)");
    if (type != want_type)
        return ts_fail(TS_ERR_FORMAT, "subword model: %s has type %d, tinyseq writes %d", where, type, want_type);
    return TS_OK;
}

int ts_subword_check_proto(const uint8_t *bytes, size_t n) {
    text *pieces = NULL;  // (n_pieces) their texts, for the duplicate check
    size_t n_pieces = 0, cap = 0;
    int trainer = 0, normalizer = 0, rc = TS_OK;
    reader r = {bytes, bytes + n};
    field f;
    int got = 0;
    while (!rc && (got = next_field(&r, &f)) == 1) {
        if (f.number == 1 && f.wire == LEN) {
            if (n_pieces == TS_SUBWORD_MAX_VOCAB) {
                rc = ts_fail(TS_ERR_FORMAT, "subword model: more than %d pieces", TS_SUBWORD_MAX_VOCAB);
                break;
            }
            if (n_pieces == cap) {
                text *grown = realloc(pieces, (cap = cap ? 2 * cap : 512) * sizeof *pieces);
                if (!grown) {
                    rc = ts_fail(TS_ERR_NOMEM, "out of memory checking a subword model");
                    break;
                }
                pieces = grown;
            }
            rc = check_piece(n_pieces, f.bytes, f.size, &pieces[n_pieces]);
            n_pieces++;
        } else if ((f.number == 2 || f.number == 3) && f.wire == LEN) {
            int *count = f.number == 2 ? &trainer : &normalizer;
            const char *name = f.number == 2 ? "trainer_spec" : "normalizer_spec";
            if ((*count)++) rc = ts_fail(TS_ERR_FORMAT, "subword model: %s is given twice", name);
            else if (f.number == 2)
                rc = check_message(name, f.bytes, f.size, trainer_rows, sizeof trainer_rows / sizeof *trainer_rows);
            else
                rc = check_message(name, f.bytes, f.size, normalizer_rows,
                                   sizeof normalizer_rows / sizeof *normalizer_rows);
        } else {
            rc = ts_fail(TS_ERR_FORMAT, "subword model: field %u %s", f.number,
                         f.number == 4   ? "(self_test_data): tinyseq writes none"
                         : f.number == 5 ? "(denormalizer_spec): tinyseq writes none"
                                         : "is not one tinyseq writes");
        }
    }
    if (!rc && got < 0) rc = damaged("the model");
    if (!rc && (!trainer || !normalizer))
        rc = ts_fail(TS_ERR_FORMAT, "subword model: no %s", trainer ? "normalizer_spec" : "trainer_spec");
    if (!rc && n_pieces <= TS_N_SPECIALS + 256)
        rc = ts_fail(TS_ERR_FORMAT, "subword model has %zu pieces, too few for byte fallback", n_pieces);
    if (!rc) {
        qsort(pieces, n_pieces, sizeof *pieces, text_order);
        for (size_t i = 1; !rc && i < n_pieces; i++)
            if (!text_order(&pieces[i - 1], &pieces[i]))
                rc = ts_fail(TS_ERR_FORMAT, "subword model: the piece '%.*s' is there twice", (int)pieces[i].size,
                             (const char *)pieces[i].bytes);
    }
    free(pieces);
    return rc;
}
