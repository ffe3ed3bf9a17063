#include "spec_flags.h"

#include <fmt/core.h>

#include <algorithm>

#include "cli_error.h"

namespace snapkv::cli {

void add_spec_flags(CLI::App& app, SpecFlags& o) {
  app.add_option("--spec", o.mode,
                 "speculative decoding: none | prompt-lookup (drafts the tokens that followed the last few tokens "
                 "earlier in the prompt or answer) | draft (a smaller model's greedy tokens, --draft-model); greedy "
                 "output stays the same, sampled output keeps its distribution")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.mode_given = true; });
  app.add_option("--spec-k", o.k, "tokens drafted per verification pass (1..16)")->capture_default_str();
  app.add_option("--spec-ngram", o.ngram, "prompt lookup: the most last tokens matched (then fewer)")
      ->capture_default_str();
  app.add_option("--spec-ngram-min", o.ngram_min, "prompt lookup: the fewest last tokens matched (else no draft)")
      ->capture_default_str();
  app.add_option("--draft-model", o.draft_model,
                 "GGUF draft model with the same vocabulary (implies --spec draft); it uses the same --kv-* options");
}

SpeculationParams SpecFlags::params() const {
  SpeculationParams p;
  p.mode = parse_spec_mode(!mode_given && !draft_model.empty() ? "draft" : mode);
  p.k = k;
  p.ngram_max = ngram;
  p.ngram_min = ngram_min;
  if (const std::string err = p.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  if (p.mode == SpecMode::kDraft && draft_model.empty()) {
    fail(ErrorKind::kInvalidArgument, "--spec draft needs --draft-model FILE");
  }
  if (p.mode != SpecMode::kDraft && !draft_model.empty()) {
    fail(ErrorKind::kInvalidArgument, "--draft-model goes with --spec draft, not --spec {}", mode);
  }
  return p;
}

DraftSession load_draft(const SpecFlags& flags, const ModelOptions& model_options, SessionOptions session_options) {
  DraftSession d;
  if (flags.params().mode != SpecMode::kDraft) return d;
  d.model = std::make_unique<Model>(Model::load(flags.draft_model, model_options));
  const int n_ctx_train = d.model->info().n_ctx_train;
  session_options.n_ctx = session_options.n_ctx > 0 ? std::min(session_options.n_ctx, n_ctx_train) : n_ctx_train;
  d.session = std::make_unique<Session>(*d.model, session_options);
  return d;
}

std::string spec_stats(const SpeculationParams& spec, const GenerateStats& st) {
  if (spec.mode == SpecMode::kNone) return "";
  const char* name = spec.mode == SpecMode::kDraft ? "draft" : "prompt-lookup";
  return fmt::format(" | spec {} k={}: {:.2f} tok/pass, {:.0f} % of {} drafts accepted", name, spec.k,
                     static_cast<double>(st.n_decoded) / std::max(1, st.n_passes),
                     100.0 * st.n_accepted / std::max(1, st.n_drafted), st.n_drafted);
}

}  // namespace snapkv::cli
