// SentencePiece BPE (tokenizer.ggml.model = "llama"), following sentencepiece's bpe_model.cc:
// the text's characters are merged pairwise, always the adjacent pair whose concatenation is the
// vocabulary piece with the highest score (the leftmost among equals); pieces of type UNUSED are
// split back into the halves they were merged from, and characters that are no piece fall back
// to the byte tokens <0xXX> (or the unknown token when those are missing). User-defined pieces
// that hold spaces are matched whole in the escaped text before merging, as sentencepiece's
// prefix matcher does (Gemma's runs of 2..31 spaces).
#include <array>
#include <cstdint>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "io/tokenizer_unicode.h"
#include "io/tokenizer_vocab.h"

namespace snapkv::tokenizer_detail {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Whether merges may produce this piece (sentencepiece keeps control, unknown and byte pieces
// out of its piece table).
bool mergeable(TokenType t) {
  return t == TokenType::kNormal || t == TokenType::kUserDefined || t == TokenType::kUnused ||
         t == TokenType::kUndefined;
}

class SpmBackend final : public Backend {
 public:
  explicit SpmBackend(const Vocab& vocab) : v_(vocab) {
    for (int b = 0; b < 256; ++b) {
      const int32_t id = v_.find(fmt::format("<0x{:02X}>", b));
      byte_id_[b] = id >= 0 && v_.type[id] == TokenType::kByte ? id : -1;
    }
    // llama.cpp's converter stores these with real spaces; the text they must match here is
    // escaped, so they are known under their "▁" spelling (sentencepiece's).
    for (int32_t id = 0; id < v_.n(); ++id) {
      if (v_.type[id] != TokenType::kUserDefined) continue;
      if (v_.text[id].find(' ') == std::string::npos) continue;
      std::string escaped = spm_escape(v_.text[id]);
      escaped_user_.add(escaped, id, true);
      escaped_id_.emplace(std::move(escaped), id);
    }
  }

  void encode_fragment(std::string_view text, bool first_in_run,
                       std::vector<int32_t>& out) const override {
    std::string s;
    s.reserve(text.size() + 3 + text.size() / 4);
    if (v_.add_space_prefix && first_in_run) s += kSpace;
    s += spm_escape(text);
    Sequence session(*this, s);
    session.run(out);
  }

  std::string piece(int32_t id) const override {
    if (v_.type[id] == TokenType::kByte) {
      const int b = byte_of(id);
      if (b >= 0) return std::string(1, static_cast<char>(b));
    }
    if (v_.type[id] == TokenType::kControl || v_.type[id] == TokenType::kUnknown) {
      return v_.text[id];
    }
    return spaces(v_.text[id]);
  }

  std::string decode(std::span<const int32_t> ids) const override {
    // HF's decoder chain: ByteFallback (a run of byte tokens that is not valid UTF-8 gives one
    // U+FFFD per token), Fuse, Replace("▁", " "), Strip one leading space.
    std::string text;
    std::string run;
    size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (utf8_valid(run)) {
        text += run;
      } else {
        for (size_t k = 0; k < run_tokens; ++k) text += "\xEF\xBF\xBD";
      }
      run.clear();
      run_tokens = 0;
    };
    for (int32_t id : ids) {
      const int b = v_.type[id] == TokenType::kByte ? byte_of(id) : -1;
      if (b >= 0) {
        run += static_cast<char>(b);
        ++run_tokens;
        continue;
      }
      flush();
      text += v_.text[id];
    }
    flush();
    std::string out = spaces(utf8_lossy(text));
    if (v_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

 private:
  static std::string spaces(std::string_view t) {
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      if (t.substr(i, kSpace.size()) == kSpace) {
        out += ' ';
        i += kSpace.size();
      } else {
        out += t[i++];
      }
    }
    return out;
  }

  // The id of a piece of escaped text, or -1.
  int32_t lookup(std::string_view piece) const {
    const int32_t id = v_.find(piece);
    if (id >= 0 || escaped_id_.empty()) return id;
    auto it = escaped_id_.find(piece);
    return it == escaped_id_.end() ? -1 : it->second;
  }

  // The byte a <0xXX> token stands for, or -1 when its text is not of that form.
  int byte_of(int32_t id) const {
    const std::string& t = v_.text[id];
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }

  // The state of one encode: symbols over the escaped text, the merge agenda and the record
  // of which halves built each piece.
  class Sequence {
   public:
    Sequence(const SpmBackend& b, std::string_view s) : b_(b), s_(s) {}

    void run(std::vector<int32_t>& out) {
      auto add_symbol = [&](size_t start, size_t len) {
        const auto idx = static_cast<int32_t>(sym_.size());
        sym_.push_back(Symbol{start, len, idx - 1, -1});
        if (idx > 0) sym_[idx - 1].next = idx;
      };
      for (size_t i = 0; i < s_.size();) {
        // Characters up to the next user-defined piece, then that piece as one symbol.
        const auto m = b_.escaped_user_.empty() ? SpecialMatcher::Match{s_.size(), 0, -1}
                                                : b_.escaped_user_.find(s_, i, true);
        for (; i < m.pos; i += utf8_char_len(s_, i)) add_symbol(i, utf8_char_len(s_, i));
        if (m.len == 0) break;
        add_symbol(m.pos, m.len);
        i = m.pos + m.len;
      }
      for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym_.size()); ++i) add_bigram(i, i + 1);
      while (!agenda_.empty()) {
        const Bigram bg = agenda_.top();
        agenda_.pop();
        Symbol& l = sym_[bg.left];
        if (l.len == 0 || l.next != bg.right) continue;
        Symbol& r = sym_[bg.right];
        if (r.len == 0 || l.len + r.len != bg.len) continue;  // stale entry
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym_[r.next].prev = bg.left;
        if (l.prev >= 0) add_bigram(l.prev, bg.left);
        if (l.next >= 0) add_bigram(bg.left, l.next);
      }
      for (int32_t i = sym_.empty() ? -1 : 0; i >= 0; i = sym_[i].next) {
        resegment(s_.substr(sym_[i].start, sym_[i].len), out);
      }
    }

   private:
    struct Symbol {
      size_t start, len;
      int32_t prev, next;
    };
    struct Bigram {
      float score;
      int32_t left, right;
      size_t len;
      bool operator<(const Bigram& o) const {  // priority_queue: highest score, then leftmost
        return score != o.score ? score < o.score : left > o.left;
      }
    };

    void add_bigram(int32_t left, int32_t right) {
      const std::string_view piece = s_.substr(sym_[left].start, sym_[left].len + sym_[right].len);
      const int32_t id = b_.lookup(piece);
      if (id < 0 || !mergeable(b_.v_.type[id])) return;
      agenda_.push(Bigram{b_.v_.score[id], left, right, piece.size()});
      if (b_.v_.type[id] == TokenType::kUnused) {
        rev_merge_[piece] = {s_.substr(sym_[left].start, sym_[left].len),
                             s_.substr(sym_[right].start, sym_[right].len)};
      }
    }

    void resegment(std::string_view piece, std::vector<int32_t>& out) const {
      const int32_t id = b_.lookup(piece);
      if (id >= 0 && mergeable(b_.v_.type[id])) {
        auto it = rev_merge_.find(piece);
        if (b_.v_.type[id] != TokenType::kUnused || it == rev_merge_.end()) {
          out.push_back(id);
          return;
        }
        resegment(it->second.first, out);
        resegment(it->second.second, out);
        return;
      }
      // Not a piece (only ever a single character here): its bytes, or the unknown token.
      bool all_bytes = true;
      for (char c : piece) all_bytes = all_bytes && b_.byte_id_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        for (char c : piece) out.push_back(b_.byte_id_[static_cast<uint8_t>(c)]);
      } else if (b_.v_.unk >= 0) {
        out.push_back(b_.v_.unk);
      }
    }

    const SpmBackend& b_;
    std::string_view s_;
    std::vector<Symbol> sym_;
    std::priority_queue<Bigram> agenda_;
    std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>>
        rev_merge_;
  };

  const Vocab& v_;
  std::array<int32_t, 256> byte_id_{};
  SpecialMatcher escaped_user_;  // user-defined pieces with spaces, "▁"-spelled
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> escaped_id_;
};

}  // namespace

std::string spm_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += kSpace;
    } else {
      out += c;
    }
  }
  return out;
}

std::unique_ptr<Backend> make_spm_backend(const Vocab& vocab) {
  return std::make_unique<SpmBackend>(vocab);
}

}  // namespace snapkv::tokenizer_detail
