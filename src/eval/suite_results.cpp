#include "eval/suite_results.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "eval/results_file.h"
#include "util/error.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;

// j[key] when it is an integer that fits an int.
std::optional<int> int_at(const nlohmann::json& j, const std::string& key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  constexpr int kMax = std::numeric_limits<int>::max(), kMin = std::numeric_limits<int>::min();
  if (it->is_number_unsigned()) {
    const auto u = it->get<uint64_t>();
    return u <= kMax ? std::optional<int>(static_cast<int>(u)) : std::nullopt;
  }
  const auto v = it->get<int64_t>();
  return v >= kMin && v <= kMax ? std::optional<int>(static_cast<int>(v)) : std::nullopt;
}

// The fields a resume and a report read, with their types: anything else is not our line.
bool is_result_line(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto text = [&](const char* key) { return j.contains(key) && j.at(key).is_string(); };
  const auto number = [&](const char* key) { return j.contains(key) && j.at(key).is_number(); };
  const std::optional<int> capacity = int_at(j, "capacity");
  return text("case") && text("press") && capacity && *capacity >= 0 &&
         text("input_hash") && text("placement") && number("score") && number("kv_bytes_kept") &&
         number("kv_bytes_full") && number("decode_s");
}

void add_lines(SuiteResults& r, const fs::path& path, const std::vector<std::string>& lines,
               const std::string& placement, const std::string& spec) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !is_result_line(j)) {
      fail(ErrorKind::kBadFile, "{}:{}: not a result line of snapkv eval", path.string(), i + 1);
    }
    if (j["placement"] != placement || j.value("spec", std::string("none")) != spec) continue;
    const std::string id = j["case"].get<std::string>();
    r.hashes[id] = j["input_hash"].get<std::string>();
    if (!r.cells.insert(cell_key(id, j["press"].get<std::string>(), j["capacity"].get<int>())).second) continue;
    r.rows.push_back(std::move(j));
  }
}

}  // namespace

std::string cell_key(const std::string& case_id, const std::string& press, int capacity) {
  return fmt::format("{}|{}|{}", case_id, press, capacity);
}

fs::path results_path(const std::string& out, const std::string& suite) {
  return fs::path(out) / (suite + ".jsonl.gz");
}

std::string spec_label(const SpeculationParams& spec) {
  if (spec.mode == SpecMode::kNone) return "none";
  return fmt::format("{} k={}", spec.mode == SpecMode::kDraft ? "draft" : "prompt-lookup", spec.k);
}

SuiteResults read_suite_results(const std::string& out, const std::string& suite, const std::string& placement,
                                const std::string& spec) {
  SuiteResults r;
  const fs::path plain = fs::path(out) / (suite + ".jsonl");
  add_lines(r, plain, read_result_lines(plain).lines, placement, spec);
  const fs::path gz = results_path(out, suite);
  const ResultLines lines = read_result_lines(gz);
  add_lines(r, gz, lines.lines, placement, spec);
  if (lines.truncated) write_result_lines(gz, lines.lines);
  return r;
}

EvalSuiteRow suite_row(const nlohmann::json& j, const std::pair<std::string, std::string>& heatmap) {
  EvalSuiteRow r;
  r.case_id = j["case"].get<std::string>();
  r.press = j["press"].get<std::string>();
  r.capacity = j["capacity"].get<int>();
  r.score = j["score"].get<double>();
  const double full = j["kv_bytes_full"].get<double>();
  r.kv_kept = full > 0 ? j["kv_bytes_kept"].get<double>() / full : 0;
  r.decode_s = j["decode_s"].get<double>();
  if (const auto it = j.find("task"); it != j.end() && it->is_string()) r.task = it->get<std::string>();
  // A heatmap's coordinates are ints; a line with others (edited by hand) is left off the map.
  const auto& [col, row] = heatmap;
  if (const auto c = int_at(j, col), w = int_at(j, row); !col.empty() && c && w) r.heat = std::make_pair(*c, *w);
  return r;
}

}  // namespace snapkv
