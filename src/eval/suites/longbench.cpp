// LongBench v1 (THUDM/LongBench), task multi_news: summarize several news passages; scored by
// LongBench's ROUGE-L F against the reference summary. Only multi_news is in the shared data
// (every other English task file is over 4 MiB).
//
// As LongBench's pred.py: prompt = dataset2prompt[task].format(**record), answered greedily in
// up to dataset2maxlen[task] tokens, with the chat template (multi_news is not one of the tasks
// pred.py sends raw). A prompt longer than max_length = n_ctx - max_tokens tokens keeps its
// first and last max_length/2 tokens; here the cut is made in the middle of the record's
// context (the part before it and the question after it stay whole), at token level, and the
// prompt is measured again after decoding, as the runner renders it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <span>

#include "eval/data_files.h"
#include "eval/metrics.h"
#include "eval/suites/suites.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr const char* kTask = "multi_news";

// Python's str.format(**record) for the named fields LongBench's prompts use ({context},
// {input}); "{{" and "}}" are literal braces.
std::string format_fields(std::string_view tmpl, const nlohmann::json& record, const std::string& where) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      out += c;
      ++i;
    } else if (c == '{') {
      const size_t close = tmpl.find('}', i);
      if (close == std::string_view::npos) fail(ErrorKind::kBadFile, "{}: unbalanced '{{' in the prompt", where);
      const std::string key(tmpl.substr(i + 1, close - i - 1));
      if (!record.contains(key)) fail(ErrorKind::kBadFile, "{}: the record has no field '{}'", where, key);
      const nlohmann::json& v = record[key];
      out += v.is_string() ? v.get<std::string>() : v.dump();
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

std::string string_field(const nlohmann::json& record, const char* key, const std::string& where) {
  if (!record.contains(key) || !record[key].is_string()) fail(ErrorKind::kBadFile, "{}: no string field '{}'", where, key);
  return record[key].get<std::string>();
}

class LongBenchSuite : public Suite {
 public:
  explicit LongBenchSuite(SuiteParams params) : p_(std::move(params)) {}
  std::string name() const override { return "longbench"; }
  std::string score_name() const override { return "ROUGE-L F x100"; }

  std::vector<EvalCase> cases(const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) const override {
    const std::filesystem::path root = std::filesystem::path(p_.data) / "longbench";
    const std::filesystem::path prompt_path = root / "config" / "dataset2prompt.json";
    const std::filesystem::path maxlen_path = root / "config" / "dataset2maxlen.json";
    const nlohmann::json prompts = read_json_file(prompt_path), maxlens = read_json_file(maxlen_path);
    if (!prompts.contains(kTask) || !prompts[kTask].is_string()) {
      fail(ErrorKind::kBadFile, "{}: no prompt for {}", prompt_path.string(), kTask);
    }
    if (!maxlens.contains(kTask) || !maxlens[kTask].is_number_integer() || maxlens[kTask].get<int>() <= 0) {
      fail(ErrorKind::kBadFile, "{}: no answer length for {}", maxlen_path.string(), kTask);
    }
    const std::string tmpl = prompts[kTask].get<std::string>();
    const int max_tokens = maxlens[kTask].get<int>();
    // The context part ends with the {context} substitution; the rest is the question.
    const size_t at = tmpl.find("{context}");
    if (at == std::string::npos) fail(ErrorKind::kBadFile, "{}: the {} prompt has no {{context}}", prompt_path.string(), kTask);
    const std::string_view head_tmpl = std::string_view(tmpl).substr(0, at);
    const std::string_view tail_tmpl = std::string_view(tmpl).substr(at + 9);
    const int64_t max_length = p_.n_ctx > 0 ? p_.n_ctx - max_tokens : 0;
    if (p_.n_ctx > 0 && max_length <= 0) {
      fail(ErrorKind::kInvalidArgument, "a context of {} tokens leaves no room for a {} prompt: its answers take up to {} tokens",
           p_.n_ctx, kTask, max_tokens);
    }

    const std::filesystem::path data_path = root / "data" / (std::string(kTask) + ".jsonl");
    std::vector<EvalCase> out;
    int64_t index = 0;
    for_each_jsonl(data_path, [&](const nlohmann::json& r, const std::string& where) {
      if (!r.is_object()) fail(ErrorKind::kBadFile, "{}: not a LongBench record", where);
      const std::string context = string_field(r, "context", where);
      EvalCase c;
      c.id = fmt::format("{}/{}", kTask, string_field(r, "_id", where));
      c.separator.clear();
      c.chat = true;
      c.max_tokens = max_tokens;
      const std::string prefix = format_fields(head_tmpl, r, where);
      c.context = prefix + context;
      c.question = format_fields(tail_tmpl, r, where);
      if (!r.contains("answers") || !r["answers"].is_array() || r["answers"].empty()) {
        fail(ErrorKind::kBadFile, "{}: no answers", where);
      }
      for (const auto& a : r["answers"]) {
        if (!a.is_string()) fail(ErrorKind::kBadFile, "{}: an answer is not a string", where);
        c.references.push_back(a.get<std::string>());
      }
      int64_t length = prompt_tokens(c);
      if (max_length > 0 && length > max_length && !truncate(c, prefix, context, max_length, &length, tokenizer, prompt_tokens)) {
        return true;  // not even the prompt around the context fits
      }
      c.meta = {{"task", kTask}, {"length", length}, {"index", index++}};
      out.push_back(std::move(c));
      return p_.limit == 0 || static_cast<int>(out.size()) < p_.limit;
    });
    return out;
  }

  nlohmann::json score(const EvalCase& c, std::string_view answer) const override {
    double best = 0;
    for (const std::string& ref : c.references) best = std::max(best, longbench_rouge_l(answer, ref));
    return {{"score", 100 * best}};
  }

 private:
  // Keeps the head and the tail of the context's tokens so that the prompt fits max_length;
  // false when no context at all would fit.
  static bool truncate(EvalCase& c, const std::string& prefix, const std::string& context, int64_t max_length,
                       int64_t* length, const Tokenizer& tokenizer, const PromptTokens& prompt_tokens) {
    const std::vector<int32_t> ids = tokenizer.encode(context, /*add_bos=*/false, /*parse_special=*/false);
    const auto n = static_cast<int64_t>(ids.size());
    int64_t budget = n - (*length - max_length);  // context tokens we may keep
    for (int attempt = 0; attempt < 16 && budget > 0; ++attempt) {
      const int64_t half = budget / 2;
      const std::span<const int32_t> all(ids);
      c.context = prefix + tokenizer.decode(all.subspan(0, static_cast<size_t>(half))) +
                  tokenizer.decode(all.subspan(static_cast<size_t>(n - half)));
      *length = prompt_tokens(c);
      if (*length <= max_length) return true;
      budget -= std::max<int64_t>(1, *length - max_length);
    }
    return false;
  }

  SuiteParams p_;
};

}  // namespace

std::unique_ptr<Suite> make_longbench_suite(const SuiteParams& params) {
  if (!params.lengths.empty()) {
    fail(ErrorKind::kInvalidArgument, "longbench takes no prompt lengths: its prompts are the records' (truncated in the middle to the context)");
  }
  for (const std::string& t : params.tasks) {
    if (t != kTask) {
      fail(ErrorKind::kInvalidArgument, "unknown longbench task '{}' (known: {}; the other LongBench tasks' data is not in the shared data)",
           t, kTask);
    }
  }
  if (params.limit < 0) fail(ErrorKind::kInvalidArgument, "longbench: the limit must be >= 0 (got {})", params.limit);
  if (params.n_ctx < 0) fail(ErrorKind::kInvalidArgument, "longbench: the context must be >= 0 tokens (got {})", params.n_ctx);
  return std::make_unique<LongBenchSuite>(params);
}

}  // namespace snapkv
