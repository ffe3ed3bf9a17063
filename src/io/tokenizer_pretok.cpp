#include "io/tokenizer_pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

#include "util/error.h"

namespace snapkv::tokenizer_detail {

namespace {

// Unicode White_Space, the set Oniguruma's \s matches (and so HF's pre-tokenizers).
constexpr std::string_view kWhiteSpace =
    R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F})"
    R"(\x{205F}\x{3000})";

constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDigit = R"(\p{N})";

struct PreRule {
  std::string_view name;
  std::array<std::string_view, 2> stages;  // empty = unused
  bool ignore_merges;
};

constexpr PreRule kRules[] = {
    {"smollm", {kDigit, kGpt2}, false},
    {"starcoder", {kDigit, kGpt2}, false},
    {"refact", {kDigit, kGpt2}, false},
    {"command-r", {kDigit, kGpt2}, false},
    {"codeshell", {kDigit, kGpt2}, false},
    {"exaone", {kDigit, kGpt2}, false},
    {"minerva-7b", {kDigit, kGpt2}, false},
    {"llama-bpe", {kLlama3, {}}, true},
    {"llama3", {kLlama3, {}}, true},
    {"llama-v3", {kLlama3, {}}, true},
    {"falcon3", {kLlama3, {}}, true},
    {"qwen2", {kQwen2, {}}, false},
    {"deepseek-r1-qwen", {kQwen2, {}}, false},
    {"gpt-2", {kGpt2, {}}, false},
    {"phi-2", {kGpt2, {}}, false},
    {"mpt", {kGpt2, {}}, false},
    {"olmo", {kGpt2, {}}, false},
    {"jais", {kGpt2, {}}, false},
    {"default", {kGpt2, {}}, false},
};

}  // namespace

std::string expand_whitespace_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size() * 2);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpace;
        } else {
          out += '[';
          out += kWhiteSpace;
          out += ']';
        }
      } else if (e == 'S') {
        if (in_class) fail(ErrorKind::kInternal, "\\S inside a character class: {}", p);
        out += "[^";
        out += kWhiteSpace;
        out += ']';
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' or '^]' right after '[' is literal; the patterns here never use that form.
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

// One compiled pattern. Matching is thread-safe: match data and the JIT stack are per thread.
class Regex {
 public:
  explicit Regex(std::string_view pattern) {
    const std::string expanded = expand_whitespace_classes(pattern);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_off,
                          nullptr);
    if (code_ == nullptr) {
      std::array<PCRE2_UCHAR, 256> msg{};
      pcre2_get_error_message(err, msg.data(), msg.size());
      fail(ErrorKind::kInternal, "pre-tokenizer regex does not compile at {}: {} ({})", err_off,
           reinterpret_cast<const char*>(msg.data()), expanded);
    }
    // Without JIT (not built in, or no executable memory) the interpreter gives the same
    // matches, only slower.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the pieces of `text`: matches and the gaps between them.
  void split(std::string_view text, std::vector<std::string_view>& out) const {
    PerThread& t = per_thread();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t gap_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      int rc = pcre2_match(code_, subject, text.size(), pos, 0, t.match, t.context);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_JIT, t.match, t.context);
      }
      if (rc < 0) break;  // no further match (or a resource limit): the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(t.match);
      const size_t ms = ov[0], me = ov[1];
      if (me <= ms) {  // an empty match: never produced by the patterns here; step past it
        pos = ms + 1;
        continue;
      }
      if (ms > gap_start) out.push_back(text.substr(gap_start, ms - gap_start));
      out.push_back(text.substr(ms, me - ms));
      gap_start = pos = me;
    }
    if (gap_start < text.size()) out.push_back(text.substr(gap_start));
  }

 private:
  struct PerThread {
    pcre2_match_data* match = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* stack = nullptr;
    PerThread() {
      match = pcre2_match_data_create(1, nullptr);
      context = pcre2_match_context_create(nullptr);
      stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
      if (stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~PerThread() {
      pcre2_jit_stack_free(stack);
      pcre2_match_context_free(context);
      pcre2_match_data_free(match);
    }
  };
  static PerThread& per_thread() {
    thread_local PerThread t;
    if (t.match == nullptr || t.context == nullptr) fail(ErrorKind::kInternal, "out of memory");
    return t;
  }

  pcre2_code* code_ = nullptr;
};

bool PreTokenizer::is_known(std::string_view pre_name) {
  for (const auto& r : kRules) {
    if (r.name == pre_name) return true;
  }
  return false;
}

PreTokenizer::PreTokenizer(std::string_view pre_name) {
  const PreRule* rule = nullptr;
  for (const auto& r : kRules) {
    if (r.name == pre_name) rule = &r;
  }
  if (rule == nullptr) {
    known_ = false;
    rule = &kRules[std::size(kRules) - 1];  // "default": GPT-2
  }
  ignore_merges_ = rule->ignore_merges;
  for (std::string_view s : rule->stages) {
    if (!s.empty()) stages_.push_back(std::make_unique<Regex>(s));
  }
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  std::vector<std::string_view> cur{text}, next;
  for (const auto& stage : stages_) {
    next.clear();
    for (std::string_view piece : cur) stage->split(piece, next);
    cur.swap(next);
  }
  out.insert(out.end(), cur.begin(), cur.end());
}

}  // namespace snapkv::tokenizer_detail
