// RULER (Hsieh et al. 2024; NVIDIA/RULER @ c3f5e3b), its 11 synthetic tasks: niah_single_1..3,
// niah_multikey_1..3, niah_multivalue, niah_multiquery, vt, cwe and fwe, generated as RULER's
// Python generators make them (ours are in ruler_tasks.cpp), at each length
// (max_seq_length: prompt tokens plus tokens_to_generate), scored with string_match_all.
//
// Sizing follows RULER: per (task, length) a probe case's haystack is binary-searched until its
// prompt, as the runner renders it (chat template and answer prefix included), plus the answer
// budget fits the length; every case is then made with that size and, if it does not fit (its
// keys, needles or positions differ), shrunk until it does.
//
// Deviations from RULER (exact byte-identity with its Python generator is not a goal; its RNG
// cannot be reproduced):
//   - All randomness comes from EvalRng, one stream per (task, length, index) derived from the
//     seed, so a case is the same whatever --limit; random.Random(seed) shuffles use a fresh
//     stream of the seed, so like RULER's they repeat one permutation per list length.
//   - NLTK's sent_tokenize is replaced by a splitter on words ending in '.', '!' or '?' (closing
//     quotes and brackets allowed), minus a few abbreviations and single-letter initials.
//   - A case that does not fit is shrunk by a galloping then binary search to the largest size
//     that fits, not by RULER's fixed steps (500 essay words, 25 lines), so cases stay close to
//     the length. fwe's num_words is binary-searched once per length instead of grown in steps
//     of max_len/32, and, like every task, checked per case.
//   - niah keys within a case are distinct, and distractor needles never reuse a queried key;
//     vt's variables are distinct and never "VAR", and the example's renamed variables never
//     collide with old ones (RULER's str.replace chain could).
//   - cwe never uses english_words.json (not available): at most the 8169 wonderwords words,
//     which caps cwe near 64K tokens.
//   - A length too short for a task's smallest case is an error (RULER silently overflows).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "eval/rng.h"
#include "eval/suites/ruler_tasks.h"
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr int kDefaultSamples = 500;  // RULER's num_samples

// RULER's postprocess: strip, every character in [\x00-\x1f] becomes '\n', strip again.
std::string ruler_postprocess(std::string_view pred) {
  const auto strip = [](std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\v\f\x1c\x1d\x1e\x1f";  // Python's ASCII whitespace
    const size_t b = s.find_first_not_of(kSpace);
    if (b == std::string_view::npos) return std::string_view();
    return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
  };
  std::string out(strip(pred));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = '\n';
  }
  return std::string(strip(out));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Makes cases of one (task, length): the generator's text in an EvalCase, and its fit.
class CaseMaker {
 public:
  CaseMaker(const RulerTask& task, const RulerData& data, const RulerGenContext& ctx, const PromptTokens& prompt_tokens)
      : task_(task), data_(data), ctx_(ctx), prompt_tokens_(prompt_tokens) {}

  EvalCase make(uint64_t seed, int64_t size, int index) const {
    RulerText text = generate_ruler_case(task_, data_, ctx_, seed, size);
    EvalCase c;
    c.id = fmt::format("{}/L{}/i{:04d}", task_.name, ctx_.length, index);
    c.meta = {{"task", task_.name}, {"length", ctx_.length}, {"index", index}};
    if (text.depth >= 0) c.meta["depth"] = text.depth;
    c.context = std::move(text.context);
    c.separator = std::string(1, '\n');  // (not = "\n": GCC 12 -Wrestrict false positive)
    c.question = std::move(text.question);
    c.answer_prefix = std::move(text.answer_prefix);
    c.chat = true;
    c.references = std::move(text.references);
    c.max_tokens = task_.max_tokens;
    c.stop_at_newline = false;
    return c;
  }
  int64_t tokens(const EvalCase& c) const { return prompt_tokens_(c) + task_.max_tokens; }
  bool fits(const EvalCase& c) const { return tokens(c) <= ctx_.length; }

  // The largest size in [good, bad) whose case fits, given that `good` fits and `bad` does not.
  int64_t bisect(uint64_t seed, int64_t good, int64_t bad, int index, EvalCase* best) const {
    while (bad - good > 1) {
      const int64_t mid = good + (bad - good) / 2;
      EvalCase c = make(seed, mid, index);
      if (fits(c)) {
        good = mid;
        *best = std::move(c);
      } else {
        bad = mid;
      }
    }
    return good;
  }

  [[noreturn]] void too_short(const EvalCase& smallest) const {
    fail(ErrorKind::kInvalidArgument,
         "ruler: length {} is too short for task {}: its smallest case takes {} prompt tokens plus {} to generate",
         ctx_.length, task_.name, tokens(smallest) - task_.max_tokens, task_.max_tokens);
  }

  // RULER's search, once per (task, length) on a probe case: the range estimated from the tokens
  // per unit at one step (x3 for slack), then a binary search for the largest size that fits.
  int64_t probe_size(uint64_t seed) const {
    const int64_t lo = ruler_min_size(task_), cap = ruler_max_size(task_, data_);
    const int64_t step = std::clamp(ruler_incremental(task_, ctx_.length), lo, cap);
    EvalCase c = make(seed, step, -1);
    const double per_unit = static_cast<double>(tokens(c)) / static_cast<double>(step);
    int64_t hi = std::min(cap, std::max(static_cast<int64_t>(ctx_.length / per_unit * 3), 2 * step));
    if (fits(c)) {
      // The estimate counts the fixed part (template, examples) per unit, so it can fall short:
      // then the range doubles until its top no longer fits (RULER would stop at the estimate).
      int64_t good = step;
      for (EvalCase top = make(seed, hi, -1); fits(top); top = make(seed, hi, -1)) {
        if (hi == cap) return cap;
        good = hi;
        hi = std::min(cap, hi * 2);
      }
      return bisect(seed, good, hi, -1, &c);
    }
    EvalCase smallest = make(seed, lo, -1);
    if (!fits(smallest)) too_short(smallest);
    return bisect(seed, lo, step, -1, &smallest);
  }

  // One case at the probe's size; if it does not fit, sizes below are tried at doubling distances,
  // then the gap is bisected.
  EvalCase sized_case(uint64_t seed, int64_t size, int index) const {
    EvalCase c = make(seed, size, index);
    if (fits(c)) return c;
    const int64_t lo = ruler_min_size(task_);
    int64_t bad = size;
    for (int64_t dist = 1;; dist *= 2) {
      const int64_t s = std::max(lo, size - dist);
      EvalCase smaller = make(seed, s, index);
      if (fits(smaller)) {
        bisect(seed, s, bad, index, &smaller);
        return smaller;
      }
      if (s == lo) too_short(smaller);
      bad = s;
    }
  }

 private:
  const RulerTask& task_;
  const RulerData& data_;
  const RulerGenContext& ctx_;
  const PromptTokens& prompt_tokens_;
};

class RulerSuite final : public Suite {
 public:
  RulerSuite(const SuiteParams& params, std::vector<const RulerTask*> tasks, std::vector<int> lengths)
      : params_(params), tasks_(std::move(tasks)), lengths_(std::move(lengths)) {}

  std::string name() const override { return "ruler"; }
  std::string score_name() const override { return "string match all %"; }
  double score_max() const override { return 100; }
  std::pair<std::string, std::string> heatmap() const override { return {}; }

  std::vector<EvalCase> cases(const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) const override {
    const RulerData& d = data();
    VtExample vt_example;
    if (std::any_of(tasks_.begin(), tasks_.end(),
                    [](const RulerTask* t) { return t->kind == RulerKind::kVariableTracking; })) {
      vt_example = make_vt_example(params_.seed, [&](std::string_view text) {
        return static_cast<int64_t>(tokenizer.encode(text, /*add_bos=*/false, /*parse_special=*/false).size());
      });
    }
    const int n = params_.limit > 0 ? params_.limit : kDefaultSamples;
    std::vector<EvalCase> out;
    for (const RulerTask* task : tasks_) {
      for (const int length : lengths_) {
        const RulerGenContext ctx{params_.seed, length, &vt_example};
        const CaseMaker maker(*task, d, ctx, prompt_tokens);
        const std::string label = fmt::format("{}/L{}", task->name, length);
        const int64_t size = maker.probe_size(EvalRng::derive(params_.seed, label + "/probe"));
        for (int i = 0; i < n; ++i) {
          out.push_back(maker.sized_case(EvalRng::derive(params_.seed, fmt::format("{}/i{}", label, i)), size, i));
        }
      }
    }
    return out;
  }

  // string_match_all: the share of references found (case-insensitively) in the answer, x100.
  nlohmann::json score(const EvalCase& c, std::string_view answer) const override {
    const std::string pred = lower(ruler_postprocess(answer));
    int matched = 0;
    for (const std::string& ref : c.references) {
      if (pred.find(lower(ref)) != std::string::npos) ++matched;
    }
    const auto n = static_cast<int>(c.references.size());
    const double value = n > 0 ? 100.0 * matched / n : 0.0;
    return {{"score", value}, {"matched", matched}, {"refs", n}};
  }

 private:
  // The data is read on first use, so that making the suite (e.g. to list it) stays cheap.
  const RulerData& data() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!data_) data_ = std::make_unique<RulerData>(load_ruler_data(params_.data));
    return *data_;
  }

  SuiteParams params_;
  std::vector<const RulerTask*> tasks_;
  std::vector<int> lengths_;
  mutable std::mutex mu_;
  mutable std::unique_ptr<RulerData> data_;
};

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const RulerTask& t : ruler_tasks()) names.emplace_back(t.name);
  return names;
}

}  // namespace

std::unique_ptr<Suite> make_ruler_suite(const SuiteParams& params) {
  std::vector<const RulerTask*> tasks;
  for (const std::string& name : params.tasks) {
    const RulerTask* t = find_ruler_task(name);
    if (t == nullptr)
      fail(ErrorKind::kInvalidArgument, "ruler: unknown task '{}' (known: {})", name, fmt::join(task_names(), ", "));
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  }
  if (tasks.empty()) {
    for (const RulerTask& t : ruler_tasks()) tasks.push_back(&t);
  }
  std::vector<int> lengths = params.lengths.empty() ? std::vector<int>{4096, 8192} : params.lengths;
  for (const int length : lengths) {
    if (length <= 0) fail(ErrorKind::kInvalidArgument, "ruler: length {} must be positive (tokens)", length);
    if (params.n_ctx > 0 && length > params.n_ctx) {
      fail(ErrorKind::kInvalidArgument,
           "ruler: length {} exceeds the model's context of {} tokens (prompt plus answer must fit); "
           "choose lengths up to {}",
           length, params.n_ctx, params.n_ctx);
    }
  }
  if (params.limit < 0)
    fail(ErrorKind::kInvalidArgument, "ruler: limit {} must be >= 0 (0: {} per task and length)", params.limit,
         kDefaultSamples);
  return std::make_unique<RulerSuite>(params, std::move(tasks), std::move(lengths));
}

}  // namespace snapkv
