#pragma once
// The KV cache flags shared by every subcommand that runs the model: element type and press.
// The press flags (--kv-<name>) are generated from snapkv::press_params().
#include <CLI/CLI.hpp>

#include <string>

#include "snapkv/session.h"

namespace snapkv::cli {

struct KvOptions {
  std::string type = "f16";
  PressConfig press;  // the command's defaults before parsing; each --kv-* flag overwrites its option

  // The session options these flags describe, or Error(kInvalidArgument) with a readable message.
  SessionOptions session_options() const;
};

// Adds --kv-type and one flag per press option; the help shows o.press's values as defaults.
void add_kv_options(CLI::App& app, KvOptions& o);

}  // namespace snapkv::cli
