// Subword units (data/subword.h): the one C++ unit of tinyseq, a thin wrapper
// over SentencePiece's C++ API. Every entry point catches C++ exceptions and
// turns them (and SentencePiece's statuses) into tinyseq status codes.
#include "data/subword.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistr.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

extern "C" {
#include "data/subword_proto.h"
#include "tensor/status.h"
#include "tensor/tokens.h"
}

// Exported by libsentencepiece but declared in no installed header: training
// logs every step to stderr otherwise, and the library never prints.
namespace sentencepiece {
namespace logging {
void SetMinLogLevel(int v);
}
}  // namespace sentencepiece

namespace spm = sentencepiece;

struct ts_subword {
    spm::SentencePieceProcessor processor;
    std::string bytes;  // header + serialized model, as ts_subword_bytes gives
};

namespace {

const char kMagic[4] = {'T', 'S', 'S', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 20;  // magic, version u32, payload length u64, CRC-32 u32

void put_le(std::string *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

uint32_t crc_of(const std::string &payload) {
    uLong c = crc32(0L, Z_NULL, 0);
    const Bytef *p = reinterpret_cast<const Bytef *>(payload.data());
    for (size_t left = payload.size(); left > 0;) {  // crc32 takes a uInt length
        uInt piece = left > (1u << 30) ? (1u << 30) : static_cast<uInt>(left);
        c = crc32(c, p, piece);
        p += piece;
        left -= piece;
    }
    return static_cast<uint32_t>(c);
}

std::string with_header(const std::string &payload) {
    std::string out(kMagic, sizeof kMagic);
    put_le(&out, kVersion, 4);
    put_le(&out, payload.size(), 8);
    put_le(&out, crc_of(payload), 4);
    return out + payload;
}

int check_utf8(const char *text, size_t len, const char *what) {
    const uint8_t *bad = u8_check(reinterpret_cast<const uint8_t *>(text), len);
    if (bad)
        return ts_fail(TS_ERR_FORMAT, "%sinvalid UTF-8 at byte %zu", what,
                       static_cast<size_t>(bad - reinterpret_cast<const uint8_t *>(text)) + 1);
    return TS_OK;
}

// The sentences SentencePiece trains on, straight from the caller's array.
class Sentences : public spm::SentenceIterator {
  public:
    Sentences(const char *const *s, size_t n) : s_(s), n_(n) { load(); }
    bool done() const override { return i_ >= n_; }
    void Next() override {
        i_++;
        load();
    }
    const std::string &value() const override { return current_; }
    spm::util::Status status() const override { return spm::util::Status(); }

  private:
    void load() {
        if (i_ < n_) current_.assign(s_[i_]);
    }
    const char *const *s_;
    size_t n_, i_ = 0;
    std::string current_;
};

// The distinct characters of n valid UTF-8 sentences as SentencePiece sees
// them: a space is its word mark U+2581, which starts every sentence.
size_t distinct_characters(const char *const *sentences, size_t n) {
    std::unordered_set<ucs4_t> seen = {0x2581};
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = reinterpret_cast<const uint8_t *>(sentences[i]);
        ucs4_t c;
        while ((s = u8_next(&c, s))) seen.insert(c == ' ' ? 0x2581 : c);
    }
    return seen.size();
}

// Loads a serialized SentencePiece model into sw: checked first to be the
// shape tinyseq writes (data/subword_proto.h), since SentencePiece trusts
// much of what a model says, then its specials as SentencePiece reads them.
int load_payload(ts_subword *sw, const std::string &payload) {
    int rc = ts_subword_check_proto(reinterpret_cast<const uint8_t *>(payload.data()), payload.size());
    if (rc) return rc;
    spm::util::Status st = sw->processor.LoadFromSerializedProto(payload);
    if (!st.ok())
        return ts_fail(TS_ERR_FORMAT, "SentencePiece refuses the model: %s", st.ToString().c_str());
    if (sw->processor.GetPieceSize() <= TS_N_SPECIALS + 256)
        return ts_fail(TS_ERR_FORMAT, "subword model has %d pieces, too few for byte fallback",
                       sw->processor.GetPieceSize());
    for (int id = 0; id < TS_N_SPECIALS; id++)
        if (sw->processor.IdToPiece(id) != ts_subword_specials[id])
            return ts_fail(TS_ERR_FORMAT, "subword model has '%s' at id %d, not %s",
                           sw->processor.IdToPiece(id).c_str(), id, ts_subword_specials[id]);
    if (!sw->processor.IsByte(TS_N_SPECIALS) || !sw->processor.IsByte(TS_N_SPECIALS + 255))
        return ts_fail(TS_ERR_FORMAT, "subword model has no byte fallback pieces at ids %d..%d",
                       TS_N_SPECIALS, TS_N_SPECIALS + 255);
    return TS_OK;
}

}  // namespace

extern "C" {

int ts_subword_compiled(void) { return 1; }

int ts_subword_train(const char *const *sentences, size_t n, const ts_subword_opts *opts,
                     ts_subword **out) {
    *out = nullptr;
    if (opts->vocab_size < TS_SUBWORD_MIN_VOCAB || opts->vocab_size > TS_SUBWORD_MAX_VOCAB)
        return ts_fail(TS_ERR_ARG, "subword vocabulary size %zu is outside %d..%d", opts->vocab_size,
                       TS_SUBWORD_MIN_VOCAB, TS_SUBWORD_MAX_VOCAB);
    const char *kind = ts_subword_kind_name(opts->kind);
    if (!kind) return ts_fail(TS_ERR_ARG, "unknown subword model kind %d", static_cast<int>(opts->kind));
    size_t n_text = 0;
    for (size_t i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "sentence %zu: ", i + 1);
        int rc = check_utf8(sentences[i], strlen(sentences[i]), what);
        if (rc) return rc;
        n_text += sentences[i][0] != '\0';
    }
    if (n_text == 0) return ts_fail(TS_ERR_ARG, "no sentence to learn subwords from");
    // Character coverage 1.0 makes every character a piece: say so in our
    // words before SentencePiece refuses with its own (which names its flags).
    size_t needed = TS_N_SPECIALS + 256 + distinct_characters(sentences, n);
    if (needed > opts->vocab_size)
        return ts_fail(TS_ERR_ARG, "a vocabulary of %zu pieces is too small for this text: %zu characters (a piece each, "
                       "the word mark U+2581 included) and the %d fixed ids (4 specials, 256 bytes) need at least %zu",
                       opts->vocab_size, needed - TS_N_SPECIALS - 256, TS_N_SPECIALS + 256, needed);
    try {
        // identity: the text is normalised already (NFKC would change it, and
        // decoding would no longer give back what was encoded). One thread and
        // a fixed seed: the same sentences give the same bytes.
        const std::unordered_map<std::string, std::string> spec = {
            {"model_type", kind},
            {"vocab_size", std::to_string(opts->vocab_size)},
            {"hard_vocab_limit", "false"},
            {"character_coverage", "1.0"},
            {"byte_fallback", "true"},
            {"normalization_rule_name", "identity"},
            {"num_threads", "1"},
            {"pad_id", "0"}, {"pad_piece", ts_subword_specials[TS_PAD]},
            {"bos_id", "1"}, {"bos_piece", ts_subword_specials[TS_SOS]},
            {"eos_id", "2"}, {"eos_piece", ts_subword_specials[TS_EOS]},
            {"unk_id", "3"}, {"unk_piece", ts_subword_specials[TS_UNK]},
        };
        spm::logging::SetMinLogLevel(2);  // errors come back as statuses
        spm::SetRandomGeneratorSeed(opts->seed);
        Sentences it(sentences, n);
        std::string payload;
        spm::util::Status st = spm::SentencePieceTrainer::Train(spec, &it, &payload);
        if (!st.ok())
            return ts_fail(TS_ERR_ARG, "cannot learn subwords: %s", st.ToString().c_str());
        std::unique_ptr<ts_subword> sw(new ts_subword);
        int rc = load_payload(sw.get(), payload);
        if (rc) return rc;
        sw->bytes = with_header(payload);
        *out = sw.release();
        return TS_OK;
    } catch (const std::bad_alloc &) {
        return ts_fail(TS_ERR_NOMEM, "out of memory learning subwords");
    } catch (const std::exception &e) {
        return ts_fail(TS_ERR_ARG, "cannot learn subwords: %s", e.what());
    }
}

const uint8_t *ts_subword_bytes(const ts_subword *sw, size_t *n) {
    *n = sw->bytes.size();
    return reinterpret_cast<const uint8_t *>(sw->bytes.data());
}

int ts_subword_load(const void *bytes, size_t n, ts_subword **out) {
    *out = nullptr;
    const unsigned char *p = static_cast<const unsigned char *>(bytes);
    if (n < kHeader || memcmp(p, kMagic, sizeof kMagic) != 0)
        return ts_fail(TS_ERR_FORMAT, "not a tinyseq subword model (no TSSP header)");
    if (get_le(p + 4, 4) != kVersion)
        return ts_fail(TS_ERR_FORMAT, "subword model version %u, this tinyseq reads %u",
                       static_cast<unsigned>(get_le(p + 4, 4)), kVersion);
    uint64_t length = get_le(p + 8, 8);
    if (length != n - kHeader)
        return ts_fail(TS_ERR_FORMAT, "subword model is %zu bytes, its header says %llu (truncated?)",
                       n - kHeader, static_cast<unsigned long long>(length));
    try {
        std::string payload(reinterpret_cast<const char *>(p + kHeader), n - kHeader);
        if (crc_of(payload) != get_le(p + 16, 4))
            return ts_fail(TS_ERR_FORMAT, "subword model is corrupt (CRC mismatch)");
        spm::logging::SetMinLogLevel(2);
        std::unique_ptr<ts_subword> sw(new ts_subword);
        int rc = load_payload(sw.get(), payload);
        if (rc) return rc;
        sw->bytes.assign(static_cast<const char *>(bytes), n);
        *out = sw.release();
        return TS_OK;
    } catch (const std::bad_alloc &) {
        return ts_fail(TS_ERR_NOMEM, "out of memory loading a subword model");
    } catch (const std::exception &e) {
        return ts_fail(TS_ERR_FORMAT, "SentencePiece refuses the model: %s", e.what());
    }
}

void ts_subword_free(ts_subword *sw) { delete sw; }

size_t ts_subword_size(const ts_subword *sw) {
    return static_cast<size_t>(sw->processor.GetPieceSize());
}

const char *ts_subword_piece(const ts_subword *sw, int32_t id) {
    if (id < 0 || id >= sw->processor.GetPieceSize()) return nullptr;
    return sw->processor.IdToPiece(id).c_str();
}

int ts_subword_encode(const ts_subword *sw, const char *text, size_t len, char **pieces,
                      int32_t **ids, size_t *n_pieces) {
    if (pieces) *pieces = nullptr;
    if (ids) *ids = nullptr;
    if (n_pieces) *n_pieces = 0;
    int rc = check_utf8(text, len, "");
    if (rc) return rc;
    try {
        std::vector<int> got;
        spm::util::Status st = sw->processor.Encode(std::string(text, len), &got);
        if (!st.ok()) return ts_fail(TS_ERR_FORMAT, "cannot encode: %s", st.ToString().c_str());
        std::string joined;
        for (size_t i = 0; pieces && i < got.size(); i++) {
            if (i) joined.push_back(' ');
            joined += sw->processor.IdToPiece(got[i]);
        }
        char *p = nullptr;
        int32_t *d = nullptr;
        if (pieces && !(p = static_cast<char *>(malloc(joined.size() + 1)))) throw std::bad_alloc();
        if (ids && !(d = static_cast<int32_t *>(malloc((got.size() + 1) * sizeof *d)))) {
            free(p);
            throw std::bad_alloc();
        }
        if (p) memcpy(p, joined.c_str(), joined.size() + 1);
        for (size_t i = 0; d && i < got.size(); i++) d[i] = got[i];
        if (pieces) *pieces = p;
        if (ids) *ids = d;
        if (n_pieces) *n_pieces = got.size();
        return TS_OK;
    } catch (const std::bad_alloc &) {
        return ts_fail(TS_ERR_NOMEM, "out of memory encoding subwords");
    }
}

int ts_subword_decode(const ts_subword *sw, const char *const *pieces, size_t n, char **text) {
    *text = nullptr;
    try {
        std::vector<std::string> kept;
        for (size_t i = 0; i < n; i++) {
            int id = sw->processor.PieceToId(pieces[i]);  // <unk>'s id for a piece it lacks
            if (id < TS_N_SPECIALS && sw->processor.IdToPiece(id) == pieces[i]) continue;
            kept.emplace_back(pieces[i]);
        }
        std::string out;
        spm::util::Status st = sw->processor.Decode(kept, &out);
        if (!st.ok()) return ts_fail(TS_ERR_FORMAT, "cannot decode: %s", st.ToString().c_str());
        char *t = static_cast<char *>(malloc(out.size() + 1));
        if (!t) throw std::bad_alloc();
        memcpy(t, out.c_str(), out.size() + 1);
        *text = t;
        return TS_OK;
    } catch (const std::bad_alloc &) {
        return ts_fail(TS_ERR_NOMEM, "out of memory decoding subwords");
    }
}

}  // extern "C"
