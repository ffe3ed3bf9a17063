#pragma once
// The KV cache flags shared by every subcommand that runs the model: element type and press.
#include <CLI/CLI.hpp>

#include <string>

#include "snapkv/session.h"

namespace snapkv::cli {

struct KvOptions {
  std::string type = "f16";
  std::string pool = "max";
  std::string gqa = "mean";
  std::string variant = "paper";
  std::string short_rule = "skip";
  PressConfig press;

  // The session options these flags describe, or Error(kInvalidArgument) with a readable message.
  SessionOptions session_options() const;
};

void add_kv_options(CLI::App& app, KvOptions& o);

}  // namespace snapkv::cli
