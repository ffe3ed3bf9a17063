#pragma once
// The speculative decoding flags (--spec, --spec-k, --spec-ngram, --draft-model) of the commands
// that generate one answer at a time, the draft model they load, and their part of the stats line.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "snapkv/session.h"

namespace snapkv::cli {

struct SpecFlags {
  std::string mode = "none";
  int k = SpeculationParams{}.k;
  int ngram = SpeculationParams{}.ngram_max;
  int ngram_min = SpeculationParams{}.ngram_min;
  std::string draft_model;
  bool mode_given = false;  // --spec was on the command line

  // The speculation these flags describe (--draft-model without --spec means --spec draft, whatever
  // the command's default mode), or Error(kInvalidArgument).
  SpeculationParams params() const;
};

void add_spec_flags(CLI::App& app, SpecFlags& o);

// The draft model's session for --spec draft (null otherwise): same model options and session
// options as the verifying model's (its press too), the context capped at the draft model's.
struct DraftSession {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
};
DraftSession load_draft(const SpecFlags& flags, const ModelOptions& model_options, SessionOptions session_options);

// " | spec prompt-lookup k=4: 2.31 tok/pass, 71 % of 412 drafts accepted", or "" without speculation.
std::string spec_stats(const SpeculationParams& spec, const GenerateStats& st);

}  // namespace snapkv::cli
