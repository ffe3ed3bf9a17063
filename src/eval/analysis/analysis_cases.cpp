#include "eval/analysis/analysis_cases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "snapkv/data_dir.h"
#include "util/error.h"

namespace snapkv {

std::vector<AnalyzeCase> parse_analyze_cases(std::string_view jsonl, const std::string& name) {
  std::vector<AnalyzeCase> cases;
  int n = 0;
  for (size_t at = 0; at < jsonl.size();) {
    const size_t end = std::min(jsonl.find('\n', at), jsonl.size());
    const std::string_view line = jsonl.substr(at, end - at);
    at = end + 1;
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto bad = [&](const std::string& why) { fail(ErrorKind::kBadFile, "{}:{}: {}", name, n, why); };
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) bad("not a JSON object");
    const auto text = [&](const char* key, bool required) {
      if (!j.contains(key)) {
        if (required) bad(fmt::format("no \"{}\"", key));
        return std::string();
      }
      if (!j[key].is_string()) bad(fmt::format("\"{}\" is not a string", key));
      return j[key].get<std::string>();
    };
    AnalyzeCase c;
    c.context = text("context", true);
    c.question = text("question", false);
    c.id = j.contains("id") ? text("id", false) : fmt::format("line{}", n);
    if (j.contains("answers")) {
      if (!j["answers"].is_array()) bad("\"answers\" is not a list of strings");
      for (const nlohmann::json& a : j["answers"]) {
        if (!a.is_string()) bad("\"answers\" is not a list of strings");
        c.answers.push_back(a.get<std::string>());
      }
    }
    cases.push_back(std::move(c));
  }
  if (cases.empty()) fail(ErrorKind::kBadFile, "{}: no case in it", name);
  return cases;
}

std::string AnalyzeInput::validate() const {
  if (!suite.empty()) {
    const std::vector<std::string> names = eval_suite_names();
    if (std::find(names.begin(), names.end(), suite) == names.end()) {
      return fmt::format("unknown evaluation suite '{}' (known: {})", suite, fmt::join(names, ", "));
    }
    if (!cases.empty()) return "give either a suite or cases, not both";
  } else if (cases.empty()) {
    return "no prompts: name a suite or give cases";
  }
  if (limit < 0) return fmt::format("the case limit must be 0 (all) or positive, got {}", limit);
  std::set<std::string> ids;
  for (const AnalyzeCase& c : cases) {
    if (c.context.empty()) return fmt::format("case '{}' has an empty context", c.id);
    if (!c.id.empty() && !ids.insert(c.id).second) return fmt::format("two cases are named '{}'", c.id);
  }
  return {};
}

EvalPrompt render(const Model& model, const AnalysisCases& ac, const EvalCase& c, QuestionPlacement placement) {
  return render_eval_prompt(model.tokenizer(), ac.tmpl, c, placement);
}

AnalysisCases analysis_cases(const Model& model, const AnalyzeInput& in, int extra) {
  if (const std::string err = in.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  const int n_ctx = model.info().n_ctx_train;
  AnalysisCases ac;
  ac.tmpl = model.pick_chat_template(in.chat_template);
  const auto tokens = [&](const EvalCase& c) {
    return static_cast<int64_t>(render(model, ac, c, QuestionPlacement::kEnd).ids.size());
  };
  if (!in.suite.empty()) {
    SuiteParams sp;
    sp.data = resolve_data_dir(in.data);
    sp.lengths = in.lengths;
    sp.tasks = in.tasks;
    sp.limit = in.limit;
    sp.seed = in.seed;
    sp.depths = in.depths;
    sp.n_ctx = n_ctx - extra;
    ac.suite = make_suite(in.suite, sp);
    ac.cases = ac.suite->cases(model.tokenizer(), tokens);
    if (ac.cases.empty()) {
      fail(ErrorKind::kInvalidArgument, "no {} case fits the model's context of {} with {} tokens generated",
           in.suite, n_ctx, extra);
    }
    return ac;
  }
  for (size_t i = 0; i < in.cases.size(); ++i) {
    const AnalyzeCase& a = in.cases[i];
    EvalCase c;
    c.id = a.id.empty() ? fmt::format("case{}", i + 1) : a.id;
    c.context = a.context;
    c.question = a.question;
    c.references = a.answers;
    if (const int64_t n = tokens(c); n + extra > n_ctx) {
      fail(ErrorKind::kOutOfRange, "case {}: {} prompt tokens and {} generated tokens exceed the context of {}", c.id,
           n, extra, n_ctx);
    }
    ac.cases.push_back(std::move(c));
  }
  return ac;
}

double analysis_score(const AnalysisCases& ac, const EvalCase& c, std::string_view answer) {
  if (ac.suite) return ac.suite->score(c, answer)["score"].get<double>();
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  const std::string a = lower(answer);
  for (const std::string& r : c.references) {
    if (!r.empty() && a.find(lower(r)) != std::string::npos) return 100;
  }
  return 0;
}

}  // namespace snapkv
