#include "kv/context_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "ops/attention.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/hash.h"

namespace snapkv {
namespace {

constexpr char kMagic[8] = {'S', 'N', 'A', 'P', 'K', 'V', 'C', 'X'};
constexpr uint32_t kTagMeta = 0x4154454d;    // "META"
constexpr uint32_t kTagTokens = 0x534e4b54;  // "TKNS"
constexpr uint32_t kTagLogits = 0x53474f4c;  // "LOGS"
constexpr uint32_t kTagWindow = 0x444e4957;  // "WIND"
constexpr uint32_t kTagKv = 0x5659454b;      // "KEYV"
constexpr uint64_t kChecksumSeed = 0x534e4150;
// Limits that keep a corrupt count from asking for absurd memory before the checksum is reached.
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr uint32_t kMaxString = 1 << 16;
constexpr uint32_t kMaxSections = 1 << 16;

// --- writing ---

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = buf.size();
    buf.resize(at + sizeof v);
    std::memcpy(buf.data() + at, &v, sizeof v);
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = buf.size();
    buf.resize(at + n);
    std::memcpy(buf.data() + at, p, n);
  }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  std::vector<uint8_t> buf;
};

// Where the encoded file goes: an atomically written file or a buffer.
template <typename Out>
void write_section(Out& f, uint32_t tag, const std::vector<uint8_t>& payload) {
  Writer h;
  h.put(tag);
  h.put(uint32_t{0});
  h.put(static_cast<uint64_t>(payload.size()));
  h.put(context_section_checksum(payload.data(), payload.size()));
  f.write(h.buf.data(), h.buf.size());
  f.write(payload.data(), payload.size());
}

struct BufferOut {
  std::vector<uint8_t>& buf;
  void write(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf.insert(buf.end(), b, b + n);
  }
};

template <typename Out>
void encode(Out& f, const ContextMeta& meta, std::span<const int32_t> tokens, std::span<const float> logits,
            std::span<const WindowQueries> windows, const KvCache& kv) {
  if (!windows.empty() && windows.size() != static_cast<size_t>(kv.n_layer())) {
    fail(ErrorKind::kInternal, "context file: {} windows for {} layers", windows.size(), kv.n_layer());
  }
  Writer head;
  head.bytes(kMagic, sizeof kMagic);
  head.put(kContextFileVersion);
  head.put(static_cast<uint32_t>(3 + (windows.empty() ? 0 : 1) + kv.n_layer()));
  f.write(head.buf.data(), head.buf.size());

  Writer m;
  m.put(meta.model_fingerprint);
  m.put(meta.tokenizer_fingerprint);
  m.put(static_cast<uint32_t>(meta.kv_type));
  for (const int v : {meta.n_layer, meta.n_head_kv, meta.replicate, meta.head_dim, meta.n_head, meta.n_vocab}) {
    m.put(static_cast<int32_t>(v));
  }
  m.put(static_cast<uint32_t>(meta.pressed));
  m.put(static_cast<uint32_t>(meta.chat));
  m.put(static_cast<int64_t>(tokens.size()));
  m.str(meta.model_name);
  m.str(meta.press);
  m.str(meta.question_prefix);
  m.str(meta.question_suffix);
  write_section(f, kTagMeta, m.buf);

  Writer t;
  t.bytes(tokens.data(), tokens.size_bytes());
  write_section(f, kTagTokens, t.buf);
  Writer l;
  l.bytes(logits.data(), logits.size_bytes());
  write_section(f, kTagLogits, l.buf);
  if (!windows.empty()) {
    Writer w;
    for (const WindowQueries& wq : windows) {
      w.put(static_cast<uint32_t>(wq.pos.size()));
      w.bytes(wq.pos.data(), wq.pos.size() * 4);
      w.bytes(wq.q.data(), wq.q.size() * 4);
    }
    write_section(f, kTagWindow, w.buf);
  }
  const size_t row = kv.row_bytes();
  for (int il = 0; il < kv.n_layer(); ++il) {
    Writer k;
    for (const KvHeadView& h : kv.layer(il)) {
      k.put(static_cast<uint32_t>(h.n));
      k.bytes(h.pos, static_cast<size_t>(h.n) * 4);
      k.bytes(h.k, static_cast<size_t>(h.n) * row);
      k.bytes(h.v, static_cast<size_t>(h.n) * row);
    }
    write_section(f, kTagKv, k.buf);
  }
}

// --- reading ---

// Bounds-checked little-endian reads over one section's payload.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const std::string& label, const char* what)
      : p_(p), n_(n), label_(label), what_(what) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > n_ - at_) fail(ErrorKind::kBadFile, "{}: the {} section ends early (truncated or corrupt file)", label_, what_);
    const uint8_t* p = p_ + at_;
    at_ += n;
    return p;
  }
  std::string str() {
    const auto n = get<uint32_t>();
    if (n > kMaxString) fail(ErrorKind::kBadFile, "{}: a string of {} bytes in the {} section", label_, n, what_);
    const uint8_t* p = take(n);
    return {reinterpret_cast<const char*>(p), n};
  }
  // Count elements of `bytes` each, checked against what is left before any allocation.
  const uint8_t* array(uint64_t count, uint64_t bytes) {
    if (bytes != 0 && count > (n_ - at_) / bytes) take(n_ + 1);  // the error above
    return take(count * bytes);
  }
  void finish() const {
    if (at_ != n_) fail(ErrorKind::kBadFile, "{}: {} bytes left over in the {} section", label_, n_ - at_, what_);
  }

 private:
  const uint8_t* p_;
  size_t n_, at_ = 0;
  const std::string& label_;
  const char* what_;
};

int checked_int(int64_t v, int64_t lo, int64_t hi, const std::string& label, const char* name) {
  if (v < lo || v > hi) fail(ErrorKind::kBadFile, "{}: {} = {} is outside [{}, {}]", label, name, v, lo, hi);
  return static_cast<int>(v);
}

// Positions: ascending, within [0, n_tokens).
std::vector<int32_t> read_positions(Cursor& c, uint64_t n, int64_t n_tokens, const std::string& label) {
  const uint8_t* p = c.array(n, 4);  // checked before anything is allocated
  std::vector<int32_t> pos(n);
  if (n > 0) std::memcpy(pos.data(), p, n * 4);
  for (uint64_t i = 0; i < n; ++i) {
    if (pos[i] < 0 || pos[i] >= n_tokens || (i > 0 && pos[i] <= pos[i - 1])) {
      fail(ErrorKind::kBadFile, "{}: position {} is out of order or outside the {} tokens", label, pos[i], n_tokens);
    }
  }
  return pos;
}

}  // namespace

uint64_t context_section_checksum(const uint8_t* payload, size_t size) {
  return hash64(payload, size, kChecksumSeed);
}

size_t write_context_file(const std::string& path, const ContextMeta& meta, std::span<const int32_t> tokens,
                          std::span<const float> logits, std::span<const WindowQueries> windows,
                          const KvCache& kv) {
  AtomicFile f(path);
  encode(f, meta, tokens, logits, windows, kv);
  const size_t bytes = f.written();
  f.commit();
  return bytes;
}

std::vector<uint8_t> encode_context(const ContextMeta& meta, std::span<const int32_t> tokens,
                                    std::span<const float> logits, std::span<const WindowQueries> windows,
                                    const KvCache& kv) {
  std::vector<uint8_t> buf;
  BufferOut out{buf};
  encode(out, meta, tokens, logits, windows, kv);
  return buf;
}

std::unique_ptr<ContextFile> ContextFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::kBadFile, "{}: cannot open the context file: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::kBadFile, "{}: not a regular file", path);
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    fail(ErrorKind::kBadFile, "{}: the context file is empty", path);
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) fail(ErrorKind::kBadFile, "{}: mmap failed: {}", path, std::strerror(errno));
  std::unique_ptr<ContextFile> f(new ContextFile());
  f->label_ = path;
  f->base_ = static_cast<const uint8_t*>(p);
  f->size_ = size;
  f->mapped_ = true;
  f->parse_all();
  return f;
}

std::unique_ptr<ContextFile> ContextFile::parse(const uint8_t* data, size_t size, std::string label) {
  std::unique_ptr<ContextFile> f(new ContextFile());
  f->label_ = std::move(label);
  f->base_ = data;
  f->size_ = size;
  f->parse_all();
  return f;
}

ContextFile::~ContextFile() {
  if (mapped_) munmap(const_cast<uint8_t*>(base_), size_);
}

void ContextFile::parse_all() {
  const std::string& L = label_;
  Cursor file(base_, size_, L, "header");
  if (size_ < sizeof kMagic || std::memcmp(file.take(sizeof kMagic), kMagic, sizeof kMagic) != 0) {
    fail(ErrorKind::kBadFile, "{}: not a snapkv context file", L);
  }
  const auto version = file.get<uint32_t>();
  if (version != kContextFileVersion) {
    fail(ErrorKind::kBadFile, "{}: context file version {}; this build reads version {} (compress the document again)",
         L, version, kContextFileVersion);
  }
  const auto n_sections = file.get<uint32_t>();
  if (n_sections < 3 || n_sections > kMaxSections) fail(ErrorKind::kBadFile, "{}: {} sections", L, n_sections);
  // Each section: its header, then a payload whose checksum is checked before it is parsed.
  const auto next = [&](uint32_t want, const char* what) {
    const auto tag = file.get<uint32_t>();
    if (file.get<uint32_t>() != 0) fail(ErrorKind::kBadFile, "{}: the {} section's header is corrupt", L, what);
    const auto bytes = file.get<uint64_t>();
    const auto sum = file.get<uint64_t>();
    if (tag != want) fail(ErrorKind::kBadFile, "{}: expected the {} section, found tag {:#x}", L, what, tag);
    const uint8_t* p = file.array(bytes, 1);
    if (context_section_checksum(p, bytes) != sum) {
      fail(ErrorKind::kBadFile, "{}: the {} section's checksum does not match (corrupt file)", L, what);
    }
    return Cursor(p, bytes, L, what);
  };

  Cursor m = next(kTagMeta, "META");
  ContextMeta& meta = meta_;
  meta.model_fingerprint = m.get<uint64_t>();
  meta.tokenizer_fingerprint = m.get<uint64_t>();
  const auto kv_type = m.get<uint32_t>();
  if (kv_type > static_cast<uint32_t>(KvType::kBF16)) fail(ErrorKind::kBadFile, "{}: unknown KV type {}", L, kv_type);
  meta.kv_type = static_cast<KvType>(kv_type);
  meta.n_layer = checked_int(m.get<int32_t>(), 1, 4096, L, "n_layer");
  meta.n_head_kv = checked_int(m.get<int32_t>(), 1, 4096, L, "n_head_kv");
  meta.replicate = checked_int(m.get<int32_t>(), 1, 4096, L, "replicate");
  meta.head_dim = checked_int(m.get<int32_t>(), 1, kMaxDim, L, "head_dim");
  meta.n_head = checked_int(m.get<int32_t>(), 1, 4096, L, "n_head");
  meta.n_vocab = checked_int(m.get<int32_t>(), 1, kMaxVocab, L, "n_vocab");
  if (meta.n_head % meta.n_head_kv != 0 || meta.n_head_kv * meta.replicate > meta.n_head) {
    fail(ErrorKind::kBadFile, "{}: {} query heads, {} KV heads replicated {} times", L, meta.n_head, meta.n_head_kv,
         meta.replicate);
  }
  meta.pressed = m.get<uint32_t>() != 0;
  meta.chat = m.get<uint32_t>() != 0;
  const int64_t n_tokens = checked_int(m.get<int64_t>(), 1, kMaxTokens, L, "n_tokens");
  meta.model_name = m.str();
  meta.press = m.str();
  meta.question_prefix = m.str();
  meta.question_suffix = m.str();
  m.finish();

  Cursor t = next(kTagTokens, "TKNS");
  const uint8_t* ids = t.array(static_cast<uint64_t>(n_tokens), 4);
  tokens_.resize(static_cast<size_t>(n_tokens));
  std::memcpy(tokens_.data(), ids, tokens_.size() * 4);
  t.finish();
  for (const int32_t id : tokens_) {
    if (id < 0 || id >= meta.n_vocab) fail(ErrorKind::kBadFile, "{}: token id {} outside the vocabulary", L, id);
  }
  Cursor lg = next(kTagLogits, "LOGS");
  const uint8_t* first_logit = lg.array(static_cast<uint64_t>(meta.n_vocab), 4);
  logits_.resize(static_cast<size_t>(meta.n_vocab));
  std::memcpy(logits_.data(), first_logit, logits_.size() * 4);
  lg.finish();
  for (const float x : logits_) {
    if (std::isnan(x)) fail(ErrorKind::kBadFile, "{}: a logit is NaN", L);
  }

  const uint32_t n_layer = static_cast<uint32_t>(meta.n_layer);
  if (n_sections != 3 + n_layer && n_sections != 4 + n_layer) {
    fail(ErrorKind::kBadFile, "{}: {} sections for {} layers", L, n_sections, n_layer);
  }
  const uint64_t q_row = static_cast<uint64_t>(meta.n_head) * meta.head_dim;
  if (n_sections == 4 + n_layer) {
    Cursor w = next(kTagWindow, "WIND");
    windows_.resize(n_layer);
    for (WindowQueries& wq : windows_) {
      const auto n = w.get<uint32_t>();
      if (n > n_tokens) fail(ErrorKind::kBadFile, "{}: a window of {} queries over {} tokens", L, n, n_tokens);
      wq.pos = read_positions(w, n, n_tokens, L);
      const uint8_t* q = w.array(n * q_row, 4);
      wq.q.resize(n * q_row);
      if (n > 0) std::memcpy(wq.q.data(), q, n * q_row * 4);
    }
    w.finish();
  }
  const uint64_t row = static_cast<uint64_t>(meta.head_dim) * kv_type_size(meta.kv_type);
  const int n_stored = meta.n_head_kv * meta.replicate;
  layers_.resize(n_layer);
  for (auto& heads : layers_) {
    Cursor k = next(kTagKv, "KEYV");
    heads.resize(static_cast<size_t>(n_stored));
    for (HeadRows& h : heads) {
      const auto n = k.get<uint32_t>();
      if (n > n_tokens) fail(ErrorKind::kBadFile, "{}: a head of {} entries over {} tokens", L, n, n_tokens);
      if (!meta.pressed && n != n_tokens) fail(ErrorKind::kBadFile, "{}: a whole cache with a head of {} entries", L, n);
      h.pos = read_positions(k, n, n_tokens, L);
      h.keys = k.array(n, row);
      h.values = k.array(n, row);
    }
    k.finish();
  }
  if (file.take(0) != base_ + size_) fail(ErrorKind::kBadFile, "{}: bytes after the last section", L);
}

int64_t ContextFile::entries() const {
  int64_t n = 0;
  for (const auto& heads : layers_) {
    for (const HeadRows& h : heads) n += static_cast<int64_t>(h.pos.size());
  }
  return n;
}

KvCache ContextFile::cache(std::vector<int32_t> layer_windows) const {
  KvCache kv(meta_.n_layer, meta_.n_head_kv, meta_.head_dim, meta_.kv_type, meta_.replicate, std::move(layer_windows));
  for (int il = 0; il < meta_.n_layer; ++il) {
    const auto& heads = layers_[static_cast<size_t>(il)];
    std::vector<std::vector<int32_t>> pos;
    std::vector<const uint8_t*> keys, values;
    for (const HeadRows& h : heads) {
      pos.push_back(h.pos);
      keys.push_back(h.keys);
      values.push_back(h.values);
    }
    kv.set_layer(il, std::move(pos), keys, values);
  }
  return kv;
}

}  // namespace snapkv
