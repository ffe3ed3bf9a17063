// longeval_lines: LongEval "lines" retrieval (LongChat's LRT-NL). The
// prompt is a record of lines "line {adjective-noun}: REGISTER_CONTENT is <{1..50000}>" and asks
// for the number of one line; the answer is right when the last number in it is that number.
//
// Two tasks:
// - shipped: LongChat's test cases (testcases/{N}_lines.jsonl) whose prompt fits the context;
//   --limit caps the cases per file.
// - generated: the same prompt generated for each length (tokens, answer included) and answer
//   position (percent of the lines, --depths), from wonderwords adjective and noun lists with
//   values from the seed: the paper's Fig. 8 (length x answer position).
// The answer is decoded greedily for at most 32 tokens and stops at a newline (LongEval allows
// 100 tokens; a number needs a few).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "eval/data_files.h"
#include "eval/rng.h"
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader =
    "Below is a record of lines I want you to remember. Each line begins with 'line <line index>' and contains a "
    "'<REGISTER_CONTENT>' at the end of the line as a numerical value. For each line index, memorize its "
    "corresponding <REGISTER_CONTENT>. At the end of the record, I will ask you to retrieve the corresponding "
    "<REGISTER_CONTENT> of a certain line index. Now the record start:\n\n";
constexpr const char* kQuestionStart = "Now the record is over.";
constexpr int kMaxTokens = 32;

class LongEvalLinesSuite : public Suite {
 public:
  explicit LongEvalLinesSuite(const SuiteParams& p) : p_(p) {
    if (p_.tasks.empty()) p_.tasks = {"shipped", "generated"};
    for (const std::string& t : p_.tasks) {
      if (t != "shipped" && t != "generated") {
        fail(ErrorKind::kInvalidArgument, "unknown longeval_lines task '{}' (known: shipped, generated)", t);
      }
    }
    if (p_.lengths.empty()) p_.lengths = {2048, 4096, 6144, 8192};
    if (p_.depths.empty()) p_.depths = {0, 25, 50, 75, 100};
    for (int d : p_.depths) {
      if (d < 0 || d > 100) fail(ErrorKind::kInvalidArgument, "answer position {} is outside [0, 100] (in percent)", d);
    }
    for (int l : p_.lengths) {
      if (l < 256) fail(ErrorKind::kInvalidArgument, "length {} is too short (at least 256 tokens)", l);
      if (p_.n_ctx > 0 && l > p_.n_ctx) {
        fail(ErrorKind::kInvalidArgument, "length {} exceeds the model's context of {}", l, p_.n_ctx);
      }
    }
  }
  std::string name() const override { return "longeval_lines"; }
  std::string score_name() const override { return "accuracy %"; }
  std::pair<std::string, std::string> heatmap() const override { return {"length", "position"}; }

  std::vector<EvalCase> cases(const Tokenizer&, const PromptTokens& prompt_tokens) const override {
    std::vector<EvalCase> out;
    for (const std::string& t : p_.tasks) {
      if (t == "shipped") add_shipped(prompt_tokens, out);
      if (t == "generated") add_generated(prompt_tokens, out);
    }
    return out;
  }

  nlohmann::json score(const EvalCase& c, std::string_view answer) const override {
    // LongEval: the last run of digits in the answer, -1 when there is none.
    int64_t parsed = -1;
    const std::string a(answer);
    static const std::regex kDigits("\\d+");
    for (auto it = std::sregex_iterator(a.begin(), a.end(), kDigits); it != std::sregex_iterator(); ++it) {
      const std::string d = it->str();
      parsed = d.size() > 12 ? -2 : std::stoll(d);
    }
    const bool right = parsed == c.meta["expected"].get<int64_t>();
    return {{"score", right ? 100 : 0}, {"parsed", parsed}};
  }

 private:
  static EvalCase make_case(const std::string& record, const std::string& key, int64_t expected) {
    EvalCase c;
    c.context = fmt::format("{}{}", kHeader, record);
    c.question = fmt::format("{} Tell me what is the <REGISTER_CONTENT> in line {}? I need the number. ",
                             kQuestionStart, key);
    c.separator = std::string("\n");  // (assigning the literal trips GCC 12's false -Wrestrict)
    c.references = {std::to_string(expected)};
    c.max_tokens = kMaxTokens;
    c.stop_at_newline = true;
    return c;
  }

  // LongChat's files in order of their line counts; the first file whose first case does not fit
  // ends the search (longer files hold longer prompts).
  void add_shipped(const PromptTokens& prompt_tokens, std::vector<EvalCase>& out) const {
    const fs::path dir = fs::path(p_.data) / "longeval_lines" / "testcases";
    std::vector<std::pair<int, fs::path>> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.ends_with("_lines.jsonl")) files.emplace_back(std::atoi(n.c_str()), e.path());
    }
    if (ec || files.empty()) fail(ErrorKind::kBadFile, "{}: no LongEval test cases (*_lines.jsonl)", dir.string());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const int n_lines = file.first;  // a plain variable: lambdas cannot capture structured bindings in C++20
      const fs::path& path = file.second;
      int index = -1, taken = 0;
      bool longer = false;  // the first case of this file does not fit: nor will the next files'
      for_each_jsonl(path, [&](const nlohmann::json& r, const std::string& where) {
        ++index;
        if (!r.contains("prompt") || !r.contains("expected_number") || !r.contains("random_idx")) {
          fail(ErrorKind::kBadFile, "{}: not a LongEval lines record", where);
        }
        const std::string prompt = r["prompt"].get<std::string>();
        const size_t q = prompt.rfind(kQuestionStart), h = std::string_view(kHeader).size();
        if (q == std::string::npos || q < h + 1 || prompt.compare(0, h, kHeader) != 0) {
          fail(ErrorKind::kBadFile, "{}: the prompt is not LongEval's", where);
        }
        EvalCase c = make_case(prompt.substr(h, q - h - 1), r["random_idx"][0].get<std::string>(),
                               r["expected_number"].get<int64_t>());
        if (p_.n_ctx > 0 && prompt_tokens(c) + c.max_tokens > p_.n_ctx) {
          longer = index == 0;
          return !longer;
        }
        c.id = fmt::format("shipped/{}_lines/{}", n_lines, index);
        c.meta = {{"task", "shipped"},
                  {"lines", n_lines},
                  {"answer_line", r["random_idx"][1].get<int>()},
                  {"expected", r["expected_number"]}};
        out.push_back(std::move(c));
        return p_.limit == 0 || ++taken < p_.limit;
      });
      if (longer) return;
    }
  }

  // Lines for a record of n lines with the answer at line `at`, drawn from the case's seed.
  struct Record {
    std::string text, key;
    int64_t expected = 0;
  };
  struct Words {
    std::vector<std::string> adjectives, nouns;
  };
  static Record generate(const Words& words, uint64_t seed, int n, int at) {
    EvalRng rng(seed);
    std::set<std::string> used;
    Record r;
    for (int i = 0; i < n; ++i) {
      std::string key;
      do {
        key = rng.pick(words.adjectives) + "-" + rng.pick(words.nouns);
      } while (!used.insert(key).second);
      const int64_t value = rng.uniform(1, 50000);
      r.text += fmt::format("line {}: REGISTER_CONTENT is <{}>\n", key, value);
      if (i == at) r.key = key, r.expected = value;
    }
    return r;
  }

  void add_generated(const PromptTokens& prompt_tokens, std::vector<EvalCase>& out) const {
    const fs::path words = fs::path(p_.data) / "ruler" / "wonderwords_v2.2.0";
    const Words w{read_word_list(words / "adjectivelist.txt"), read_word_list(words / "nounlist.txt")};
    const auto tokens_of = [&](uint64_t seed, int n, int at) {
      const Record r = generate(w, seed, n, at);
      return prompt_tokens(make_case(r.text, r.key, r.expected)) + kMaxTokens;
    };
    // Tokens per line from two record sizes, then the most lines that fit each length.
    const int64_t t64 = tokens_of(p_.seed, 64, 0), t128 = tokens_of(p_.seed, 128, 0);
    const double per_line = static_cast<double>(t128 - t64) / 64.0;
    for (int length : p_.lengths) {
      const int lines = std::max(4, static_cast<int>((length - (t64 - 64 * per_line)) / per_line));
      int taken = 0;
      for (int pos : p_.depths) {
        if (p_.limit > 0 && taken >= p_.limit) break;
        const uint64_t seed = EvalRng::derive(p_.seed, fmt::format("longeval_lines/{}/{}", length, pos));
        int n = lines;
        const auto answer_at = [&] { return static_cast<int>(static_cast<int64_t>(n - 1) * pos / 100); };
        while (n > 4 && tokens_of(seed, n, answer_at()) > length) n -= std::max(1, n / 100);
        const Record r = generate(w, seed, n, answer_at());
        EvalCase c = make_case(r.text, r.key, r.expected);
        c.id = fmt::format("generated/L{}/p{}", length, pos);
        c.meta = {{"task", "generated"}, {"length", length},       {"position", pos}, {"lines", n},
                  {"answer_line", answer_at()}, {"expected", r.expected}};
        out.push_back(std::move(c));
        ++taken;
      }
    }
  }

  SuiteParams p_;
};

}  // namespace

std::unique_ptr<Suite> make_longeval_lines_suite(const SuiteParams& params) {
  return std::make_unique<LongEvalLinesSuite>(params);
}

}  // namespace snapkv
