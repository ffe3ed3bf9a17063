// Byte-level BPE (tokenizer.ggml.model = "gpt2"), following HF `tokenizers`' BPE model:
// every byte of a pre-token becomes the one-character token of its GPT-2 image, then the
// adjacent pair with the lowest merge rank is merged (the leftmost among equals) until no pair
// has a merge.
#include <algorithm>
#include <array>
#include <functional>
#include <cstdint>
#include <unordered_map>

#include "io/gguf.h"
#include "io/tokenizer_pretok.h"
#include "io/tokenizer_unicode.h"
#include "io/tokenizer_vocab.h"
#include "util/error.h"

namespace snapkv::tokenizer_detail {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}

class BpeBackend final : public Backend {
 public:
  BpeBackend(const Vocab& vocab, const GgufFile& gguf) : v_(vocab), pre_(vocab.pre) {
    const auto& table = byte_level_table();
    for (int b = 0; b < 256; ++b) byte_id_[b] = v_.find(table.byte_to_utf8[b]);

    if (!gguf.has("tokenizer.ggml.merges")) {
      fail(ErrorKind::kBadFile, "{}: tokenizer.ggml.merges is missing (needed by a \"gpt2\" "
           "tokenizer)", gguf.path());
    }
    const auto& merges = gguf.get_string_array("tokenizer.ggml.merges");
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const std::string_view m = merges[rank];
      const size_t sp = m.find(' ', 1);  // the left part may itself be a lone space
      if (sp == std::string_view::npos) continue;
      const std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
      const int32_t a = v_.find(left), b = v_.find(right);
      std::string joined;
      joined.reserve(left.size() + right.size());
      joined.append(left).append(right);
      const int32_t ab = v_.find(joined);
      // Merges whose parts or result are missing from the vocabulary can never apply.
      if (a < 0 || b < 0 || ab < 0) continue;
      // HF builds its merge map from the list in order, so a repeated pair keeps its last rank.
      merges_[pair_key(a, b)] = Merge{static_cast<int32_t>(rank), ab};
    }
  }

  void encode_fragment(std::string_view text, bool /*first_in_run*/,
                       std::vector<int32_t>& out) const override {
    std::vector<std::string_view> pieces;
    pre_.split(text, pieces);
    Work w;
    for (std::string_view piece : pieces) encode_piece(piece, w, out);
  }

  std::string piece(int32_t id) const override {
    const std::string& t = v_.text[id];
    const auto& table = byte_level_table();
    std::string bytes;
    bytes.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      size_t len = 0;
      bool valid = false;
      const uint32_t cp = utf8_decode(t, i, &len, &valid);
      if (!valid || cp >= std::size(table.cp_to_byte) || table.cp_to_byte[cp] < 0) {
        return t;  // not a byte-level string (e.g. an added token): its text as it stands
      }
      bytes += static_cast<char>(table.cp_to_byte[cp]);
      i += len;
    }
    return bytes;
  }

  std::string decode(std::span<const int32_t> ids) const override {
    std::string bytes;
    for (int32_t id : ids) bytes += piece(id);
    return utf8_lossy(bytes);
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  struct Symbol {
    int32_t id;
    int32_t prev, next;
  };
  struct Candidate {
    int32_t rank, pos, id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  // Scratch buffers reused across the pieces of one call.
  struct Work {
    std::string mapped;
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
  };

  const Merge* find_merge(int32_t a, int32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }

  void push_candidate(Work& w, int32_t pos) const {
    const Symbol& s = w.symbols[pos];
    if (s.next < 0) return;
    if (const Merge* m = find_merge(s.id, w.symbols[s.next].id)) {
      w.heap.push_back(Candidate{m->rank, pos, m->id});
      std::push_heap(w.heap.begin(), w.heap.end(), std::greater<>());
    }
  }

  void encode_piece(std::string_view piece, Work& w, std::vector<int32_t>& out) const {
    if (pre_.ignore_merges()) {
      const auto& table = byte_level_table();
      w.mapped.clear();
      for (char c : piece) w.mapped += table.byte_to_utf8[static_cast<uint8_t>(c)];
      const int32_t id = v_.find(w.mapped);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    // One symbol per byte. A byte without a token becomes the unknown token, consecutive ones
    // fused into one (HF's fuse_unk); without an unknown token it is dropped.
    w.symbols.clear();
    bool prev_unknown = false;
    for (char c : piece) {
      const int32_t id = byte_id_[static_cast<uint8_t>(c)];
      if (id < 0) {
        if (v_.unk >= 0 && !prev_unknown) w.symbols.push_back(Symbol{v_.unk, 0, 0});
        prev_unknown = true;
        continue;
      }
      prev_unknown = false;
      w.symbols.push_back(Symbol{id, 0, 0});
    }
    const auto n = static_cast<int32_t>(w.symbols.size());
    for (int32_t i = 0; i < n; ++i) {
      w.symbols[i].prev = i - 1;
      w.symbols[i].next = i + 1 < n ? i + 1 : -1;
    }
    w.heap.clear();
    for (int32_t i = 0; i + 1 < n; ++i) push_candidate(w, i);

    while (!w.heap.empty()) {
      std::pop_heap(w.heap.begin(), w.heap.end(), std::greater<>());
      const Candidate c = w.heap.back();
      w.heap.pop_back();
      Symbol& left = w.symbols[c.pos];
      if (left.id < 0 || left.next < 0) continue;  // merged away, or now last
      Symbol& right = w.symbols[left.next];
      const Merge* m = find_merge(left.id, right.id);
      if (m == nullptr || m->id != c.id) continue;  // a neighbour changed since it was queued
      left.id = c.id;
      right.id = -1;
      left.next = right.next;
      if (right.next >= 0) w.symbols[right.next].prev = c.pos;
      if (left.prev >= 0) push_candidate(w, left.prev);
      push_candidate(w, c.pos);
    }
    for (int32_t i = 0; i >= 0 && i < n; i = w.symbols[i].next) out.push_back(w.symbols[i].id);
  }

  const Vocab& v_;
  PreTokenizer pre_;
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace

std::unique_ptr<Backend> make_bpe_backend(const Vocab& vocab, const GgufFile& gguf) {
  return std::make_unique<BpeBackend>(vocab, gguf);
}

}  // namespace snapkv::tokenizer_detail
