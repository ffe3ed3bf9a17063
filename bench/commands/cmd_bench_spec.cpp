// snapkv bench spec: speculative decoding on the full cache and on a pressed one (the SnapKV
// paper's parallel-decoding case study, Fig. 9), side by side in one run: decode ms per generated
// token against prompt length for plain decoding, speculative decoding, and both again with the
// press, on LongBench multi_news summaries and L-Eval legal_contract_qa answers (the data in
// ../shared/data), each prompt through the model's chat template with its document cut in the
// middle to the length. For each record the four settings run in turn (the order rotates from
// record to record), each greedy, stopping at the end of the answer or after -n tokens.
// Reported per setting: the median ms per generated token (min-max over the records), the
// prefill's seconds (a draft model's prefill of the prompt included), the speed-up over plain
// full-cache decoding on the same record, tokens per forward pass, the share of drafts accepted,
// and how many answers equal the non-speculative run's token for token (where one parts, the
// plain run's logit margin between the two tokens there, replayed).
// On the public API only (snapkv/model.h, snapkv/session.h, generate).
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_util.h"
#include "cli_error.h"
#include "kv_options.h"
#include "model_options.h"
#include "snapkv/chat.h"
#include "snapkv/data_dir.h"
#include "snapkv/session.h"
#include "snapkv/timer.h"
#include "spec_flags.h"
#include "subcommands.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

struct SpecBenchOptions {
  std::string model = kDefaultModel;
  std::string data;  // resolve_data_dir
  std::vector<std::string> sets = {"multi_news", "legal_contract_qa"};
  std::vector<int> lengths = {1024, 2048, 4096, 7680};
  int records = 2;
  int n_generate = 128;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string out;  // JSON results
  SpecFlags spec;
  KvOptions kv;
  ModelFlags model_flags;
};

// A document and what is asked of it.
struct Record {
  std::string document, instruction, prefix;  // prefix: the text before the document
};

std::vector<Record> load_records(const std::string& data_dir, const std::string& set) {
  std::vector<Record> out;
  const auto each_line = [](const std::string& path, const auto& fn) {
    const std::string text = read_text_file(path);
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      if (end > at) fn(nlohmann::json::parse(text.substr(at, end - at)));
      at = end + 1;
    }
  };
  if (set == "multi_news") {  // LongBench's prompt (config/dataset2prompt.json)
    each_line(data_dir + "/longbench/data/multi_news.jsonl", [&](const nlohmann::json& j) {
      out.push_back({j.at("context").get<std::string>(), "\n\nNow, write a one-page summary of all the news.\n\nSummary:",
                     "You are given several news passages. Write a one-page summary of all news.\n\nNews:\n"});
    });
  } else if (set == "legal_contract_qa") {  // L-Eval: the contract, then its first question
    each_line(data_dir + "/leval/Open-ended-tasks/legal_contract_qa.jsonl", [&](const nlohmann::json& j) {
      out.push_back({j.at("input").get<std::string>(), "\n\n" + j.at("instructions").at(0).get<std::string>(), ""});
    });
  } else {
    fail(ErrorKind::kInvalidArgument, "--sets: unknown set '{}' (multi_news, legal_contract_qa)", set);
  }
  // The longest documents first: they fill the longest lengths.
  std::stable_sort(out.begin(), out.end(), [](const Record& a, const Record& b) { return a.document.size() > b.document.size(); });
  return out;
}

// The record as one user turn of the chat template with its document cut in the middle so that
// the prompt has `length` tokens; empty when the document is too short for that.
std::vector<int32_t> prompt_tokens(const Model& model, const Record& r, int length) {
  const Tokenizer& tok = model.tokenizer();
  const std::string marker = "\x01DOC\x01";
  const std::string text = apply_chat_template(model.pick_chat_template(""), {{"user", r.prefix + marker + r.instruction}},
                                               /*add_generation_prompt=*/true);
  const size_t at = text.find(marker);
  std::vector<int32_t> ids = tok.encode(text.substr(0, at), tok.add_bos(), true);
  const std::vector<int32_t> doc = tok.encode(r.document, false, false);
  const std::vector<int32_t> tail = tok.encode(text.substr(at + marker.size()), false, true);
  const int64_t room = static_cast<int64_t>(length) - static_cast<int64_t>(ids.size() + tail.size());
  if (room <= 0 || static_cast<int64_t>(doc.size()) < room) return {};
  ids.insert(ids.end(), doc.begin(), doc.begin() + room / 2);
  ids.insert(ids.end(), doc.end() - (room - room / 2), doc.end());
  ids.insert(ids.end(), tail.begin(), tail.end());
  return ids;
}

struct Setting {
  std::string name;
  PressConfig press;
  bool spec = false;
};

struct Run {
  std::vector<int32_t> ids;
  GenerateStats st;
  double ms_per_token() const { return st.decode_s * 1e3 / std::max(1, st.n_decoded); }
};

Run measure(const Model& model, const DraftSession& draft, const Setting& s, const SessionOptions& base,
            const GenerateParams& params, const std::vector<int32_t>& prompt) {
  SessionOptions so = base;
  so.press = s.press;
  so.n_ctx = static_cast<int>(prompt.size()) + params.max_tokens + 1;
  Session session(model, so);
  GenerateParams p = params;
  if (!s.spec) p.speculation.mode = SpecMode::kNone;
  if (draft.session) draft.session->reset();
  Run r;
  r.st = generate(session, prompt, p, [&](int32_t id, std::string_view) {
    if (id >= 0) r.ids.push_back(id);
    return true;
  }, {}, s.spec ? draft.session.get() : nullptr);
  return r;
}

// Where a speculative answer parts from the plain one: the plain run replayed to that token, and
// its logit of the plain token minus that of the speculative one (a near-tie when tiny).
double parting_margin(const Model& model, const Setting& s, const SessionOptions& base, const std::vector<int32_t>& prompt,
                      const std::vector<int32_t>& plain, const std::vector<int32_t>& spec) {
  const size_t at = std::mismatch(plain.begin(), plain.end(), spec.begin(), spec.end()).first - plain.begin();
  if (at >= plain.size() || at >= spec.size()) return 0;  // one answer stopped earlier at its end token
  SessionOptions so = base;
  so.press = s.press;
  so.n_ctx = static_cast<int>(prompt.size() + plain.size()) + 1;
  Session session(model, so);
  session.prefill(prompt);
  for (size_t i = 0; i < at; ++i) session.decode(plain[i]);
  return session.logits()[plain[at]] - session.logits()[spec[at]];
}

std::string range(const std::vector<double>& v, const char* fmt_one) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format(fmt::runtime(fmt_one), median(v)) + " (" + fmt::format(fmt::runtime(fmt_one), *lo) + "–" +
         fmt::format(fmt::runtime(fmt_one), *hi) + ")";
}

int bench_spec(SpecBenchOptions o) {
  if (o.records < 1 || o.n_generate < 1 || o.threads < 1) fail(ErrorKind::kInvalidArgument, "--records, -n and -t must be >= 1");
  GenerateParams params;  // greedy
  params.max_tokens = o.n_generate;
  params.speculation = o.spec.params();
  if (params.speculation.mode == SpecMode::kNone) fail(ErrorKind::kInvalidArgument, "--spec none: nothing to compare");
  const SessionOptions base = o.kv.session_options();
  if (!base.press.compresses()) fail(ErrorKind::kInvalidArgument, "--kv-press must name a compressing press");
  const Model model = Model::load(o.model, o.model_flags.model_options(o.threads));
  const DraftSession draft = load_draft(o.spec, o.model_flags.model_options(o.threads), base);
  const std::vector<Setting> settings = {{"full", {}, false},
                                         {"full + spec", {}, true},
                                         {base.press.press, base.press, false},
                                         {base.press.press + " + spec", base.press, true}};
  const std::string data_dir = resolve_data_dir(o.data);
  fmt::print("# bench spec: {} speculation, k = {}, {}; press {}; {} threads; up to {} generated tokens, greedy\n\n",
             o.spec.params().mode == SpecMode::kDraft ? "draft-model" : "prompt-lookup", params.speculation.k,
             model.info().name, base.press.describe(), o.threads, o.n_generate);
  fmt::print("| set | prompt | setting | ms/token | prefill s | speed-up vs plain full | tok/pass | drafts accepted | same answer |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& set : o.sets) {
    const std::vector<Record> records = load_records(data_dir, set);
    for (const int length : o.lengths) {
      std::vector<std::vector<Run>> runs(settings.size());
      std::vector<std::vector<int32_t>> prompts;
      int used = 0;
      for (size_t i = 0; i < records.size() && used < o.records; ++i) {
        const std::vector<int32_t> prompt = prompt_tokens(model, records[i], length);
        if (prompt.empty()) continue;
        prompts.push_back(prompt);
        for (size_t j = 0; j < settings.size(); ++j) {
          const size_t s = (j + used) % settings.size();  // the order rotates
          runs[s].push_back(measure(model, draft, settings[s], base, params, prompt));
          fmt::print(stderr, "{} L={} record {}: {} {:.2f} ms/token over {} tokens, prefill {:.2f} s\n", set, length,
                     used + 1, settings[s].name, runs[s].back().ms_per_token(), runs[s].back().st.n_generated,
                     runs[s].back().st.prefill_s);
        }
        ++used;
      }
      if (used == 0) {
        fmt::print(stderr, "{}: no document is long enough for {} tokens\n", set, length);
        continue;
      }
      for (size_t s = 0; s < settings.size(); ++s) {
        std::vector<double> ms, prefill_s, speedup, per_pass;
        int drafted = 0, accepted = 0, same = 0;
        std::vector<double> margins;  // of the answers that part from the plain run's
        for (int r = 0; r < used; ++r) {
          const Run& run = runs[s][r];
          ms.push_back(run.ms_per_token());
          prefill_s.push_back(run.st.prefill_s);
          speedup.push_back(runs[0][r].ms_per_token() / run.ms_per_token());
          per_pass.push_back(settings[s].spec ? static_cast<double>(run.st.n_decoded) / std::max(1, run.st.n_passes) : 1.0);
          drafted += run.st.n_drafted;
          accepted += run.st.n_accepted;
          if (!settings[s].spec) continue;
          const std::vector<int32_t>& plain = runs[s - 1][r].ids;  // the same press without
          same += run.ids == plain;
          if (run.ids != plain) {
            margins.push_back(parting_margin(model, settings[s], base, prompts[r], plain, run.ids));
          }
        }
        const double rate = drafted ? 100.0 * accepted / drafted : 0.0;
        fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", set, length, settings[s].name, range(ms, "{:.2f}"),
                   range(prefill_s, "{:.2f}"), range(speedup, "{:.2f}x"), settings[s].spec ? range(per_pass, "{:.2f}") : "1",
                   settings[s].spec ? fmt::format("{:.0f} % of {}", rate, drafted) : "-",
                   !settings[s].spec ? "-"
                   : margins.empty() ? fmt::format("{}/{}", same, used)
                                     : fmt::format("{}/{} (parted at margin {:.1e})", same, used,
                                                   *std::max_element(margins.begin(), margins.end())));
        results.push_back({{"set", set}, {"length", length}, {"setting", settings[s].name}, {"ms_per_token", ms},
                           {"prefill_s", prefill_s}, {"speedup_vs_plain_full", speedup}, {"tokens_per_pass", per_pass},
                           {"drafted", drafted}, {"accepted", accepted}, {"same_answers", same},
                           {"parting_margins", margins}, {"records", used}});
      }
    }
  }
  if (!o.out.empty()) {
    std::ofstream(o.out) << nlohmann::json{{"model", model.info().name}, {"threads", o.threads},
                                           {"k", params.speculation.k}, {"press", base.press.describe()},
                                           {"results", results}}.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

Action add_bench_spec(CLI::App& c) {
  auto o = std::make_shared<SpecBenchOptions>();
  o->kv.press.press = "snapkv";
  o->spec.mode = "prompt-lookup";
  c.add_option("-m,--model", o->model, "GGUF model file")->capture_default_str();
  c.add_option("--data", o->data, data_flag_help());
  c.add_option("--sets", o->sets, "multi_news and/or legal_contract_qa")->delimiter(',')->capture_default_str();
  c.add_option("--lengths", o->lengths, "prompt lengths in tokens")->delimiter(',')->capture_default_str();
  c.add_option("--records", o->records, "records per set and length")->capture_default_str();
  c.add_option("-n,--n-generate", o->n_generate, "tokens generated at most per answer")->capture_default_str();
  c.add_option("-t,--threads", o->threads, "threads")->capture_default_str();
  c.add_option("--out", o->out, "write the results as JSON here");
  add_spec_flags(c, o->spec);
  add_kv_options(c, o->kv);
  add_model_flags(c, o->model_flags);
  return [o] { return bench_spec(*o); };
}

}  // namespace snapkv::cli
