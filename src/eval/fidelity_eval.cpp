// evaluate_fidelity (snapkv/eval.h): the fidelity evaluation on a loaded Model, with one JSON
// line per cell in <out>/fidelity.jsonl. The file is small (a line per cell) and rewritten by
// every run, so it stays plain text.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "api/impl.h"
#include "eval/fidelity.h"
#include "ops/attention.h"
#include "util/error.h"

namespace snapkv {
namespace {

nlohmann::json cell_json(const FidelityCell& c, const FidelityParams& p, const std::string& model) {
  const PressConfig pc = p.cell_config(c.press, c.capacity);
  return {
      {"length", c.length},
      {"press", c.press},
      {"capacity", c.capacity},
      {"n_eval", c.n_scored},
      {"top1", c.top1},
      {"kl_mean", c.kl_mean},
      {"kl_max", c.kl_max},
      {"nll_full", c.nll_full},
      {"nll_press", c.nll_press},
      {"nll_delta", c.nll_delta()},
      {"kept_bytes", c.kept_bytes},
      {"full_bytes", c.full_bytes},
      {"kept_entries", c.kept_entries},
      {"full_entries", c.full_entries},
      {"kept_fraction", static_cast<double>(c.kept_bytes) / static_cast<double>(std::max<size_t>(1, c.full_bytes))},
      {"seconds", c.seconds},
      {"model", model},
      {"kv_type", kv_type_name(p.kv_type)},
      {"window", pc.window},
      {"kernel", pc.kernel},
      {"pool", pool_name(pc.pool)},
      {"gqa", gqa_name(pc.gqa)},
      {"variant", variant_name(pc.variant)},
      {"budget", budget_name(pc.budget)},
      {"compress_short", pc.compress_short},
  };
}

}  // namespace

std::vector<FidelityCell> evaluate_fidelity(const Model& model, std::string_view text, const FidelityParams& params,
                                            const std::string& out,
                                            const std::function<void(const FidelityProgress&)>& progress) {
  const ModelInfo& info = model.info();
  if (const std::string err = params.validate(info.n_ctx_train); !err.empty()) {
    fail(ErrorKind::kInvalidArgument, "{}", err);
  }
  namespace fs = std::filesystem;
  const fs::path jsonl_path = out.empty() ? fs::path() : fs::path(out) / "fidelity.jsonl";
  std::ofstream jsonl;
  if (!out.empty()) {
    std::error_code ec;
    fs::create_directories(out, ec);
    jsonl.open(jsonl_path, std::ios::trunc);
    if (ec || !jsonl) fail(ErrorKind::kBadFile, "{}: cannot write fidelity.jsonl there", out);
  }
  const std::vector<int32_t> ids = encode_prefix(model.tokenizer(), text, params.tokens_needed());
  if (static_cast<int64_t>(ids.size()) < params.tokens_needed()) {
    fail(ErrorKind::kOutOfRange, "the text has {} tokens; the lengths and the evaluated tokens need {}", ids.size(),
         params.tokens_needed());
  }
  const auto each = [&](const FidelityProgress& p) {
    if (p.cell && jsonl.is_open()) {
      jsonl << cell_json(*p.cell, params, info.name).dump() << "\n" << std::flush;
      if (!jsonl) fail(ErrorKind::kBadFile, "{}: writing failed", jsonl_path.string());
    }
    if (progress) progress(p);
  };
  return run_fidelity(*model.impl().decoder, model.impl().press_inputs, ids, params, model.impl().threads(), each);
}

}  // namespace snapkv
