// niah: needle in a haystack (gkamradt/LLMTest_NeedleInAHaystack). A needle sentence is hidden
// at a depth of a haystack of Paul Graham essays; the model is asked
// about it and answers greedily. Scores: ROUGE-1 F(needle, answer) x 10 (as PyramidKV's HF
// variant), the share of the needle's content words in the answer, and whether the answer holds
// the needle's key phrase.
//
// The user message is "<document>\n{haystack with the needle}\n</document>\n\n{question}". The
// essay tokens are cut so the prompt holds the length minus the answer tokens (re-tokenizing at
// the two seams may move it by a few). The needle ("\n" + needle + "\n") goes after essay token
// int(n * depth / 100), moved back until the token before it ends with '.'; depth 100 appends it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "eval/fidelity.h"
#include "eval/metrics.h"
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr const char* kNeedle =
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.";
constexpr const char* kQuestion = "What is the best thing to do in San Francisco?";
constexpr const char* kNeedleAnswer = "eat a sandwich and sit in Dolores Park";
constexpr int kMaxTokens = 32;

// Lowercase, runs of whitespace as one space, trimmed.
std::string squeeze(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class NiahSuite : public Suite {
 public:
  explicit NiahSuite(const SuiteParams& p) : p_(p) {
    if (p_.lengths.empty()) p_.lengths = {1024, 2048, 4096, 7168};
    if (p_.depths.empty()) p_.depths = {0, 25, 50, 75, 100};
    if (p_.needle.empty()) p_.needle = kNeedle;
    if (p_.question.empty()) p_.question = kQuestion;
    if (p_.needle_answer.empty()) p_.needle_answer = p.needle.empty() ? kNeedleAnswer : p_.needle;
    if (!p_.tasks.empty()) fail(ErrorKind::kInvalidArgument, "niah has no tasks to choose (--tasks)");
    for (int d : p_.depths) {
      if (d < 0 || d > 100) fail(ErrorKind::kInvalidArgument, "depth {} is outside [0, 100] (in percent)", d);
    }
    for (int l : p_.lengths) {
      if (l < 128) fail(ErrorKind::kInvalidArgument, "length {} is too short (at least 128 tokens)", l);
      if (p_.n_ctx > 0 && l > p_.n_ctx) {
        fail(ErrorKind::kInvalidArgument, "length {} exceeds the model's context of {}", l, p_.n_ctx);
      }
    }
  }
  std::string name() const override { return "niah"; }
  std::string score_name() const override { return "ROUGE-1 F x10"; }
  double score_max() const override { return 10; }
  std::pair<std::string, std::string> heatmap() const override { return {"length", "depth"}; }

  std::vector<EvalCase> cases(const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) const override {
    const std::string haystack = read_paul_graham_essays(p_.data);
    const std::string needle_text = fmt::format("\n{}\n", p_.needle);
    std::vector<EvalCase> out;
    for (int length : p_.lengths) {
      EvalCase base = make_case(needle_text);
      const int64_t budget = std::max<int64_t>(0, length - kMaxTokens - prompt_tokens(base));
      std::vector<int32_t> hay = encode_prefix(tokenizer, haystack, budget + (tokenizer.add_bos() ? 1 : 0));
      if (tokenizer.add_bos() && !hay.empty() && hay.front() == tokenizer.bos_id()) hay.erase(hay.begin());
      if (static_cast<int64_t>(hay.size()) > budget) hay.resize(static_cast<size_t>(budget));
      const std::span<const int32_t> all(hay);
      const auto n = static_cast<int64_t>(hay.size());
      for (int depth : p_.depths) {
        int64_t at = depth >= 100 ? n : n * depth / 100;
        while (depth < 100 && at > 0) {
          const std::string piece = tokenizer.token_piece(hay[static_cast<size_t>(at - 1)]);
          if (!piece.empty() && piece.back() == '.') break;
          --at;
        }
        EvalCase c = make_case(tokenizer.decode(all.first(static_cast<size_t>(at))) + needle_text +
                               tokenizer.decode(all.subspan(static_cast<size_t>(at))));
        c.id = fmt::format("L{}_d{}", length, depth);
        c.meta = {{"length", length}, {"depth", depth}, {"needle_at", at}, {"haystack_tokens", n}};
        out.push_back(std::move(c));
        if (p_.limit > 0 && static_cast<int>(out.size()) >= p_.limit) return out;
      }
    }
    return out;
  }

  nlohmann::json score(const EvalCase&, std::string_view answer) const override {
    return {{"score", 10 * rouge1_f(p_.needle, answer)},
            {"needle_recall", needle_word_recall(p_.needle, answer)},
            {"substring", squeeze(answer).find(squeeze(p_.needle_answer)) != std::string::npos ? 1 : 0}};
  }

 private:
  EvalCase make_case(std::string doc) const {
    EvalCase c;
    c.context = fmt::format("<document>\n{}\n</document>", doc);
    c.question = p_.question;
    c.references = {p_.needle};
    c.max_tokens = kMaxTokens;
    c.stop_at_newline = true;
    return c;
  }

  SuiteParams p_;
};

}  // namespace

std::unique_ptr<Suite> make_niah_suite(const SuiteParams& params) { return std::make_unique<NiahSuite>(params); }

}  // namespace snapkv
