#pragma once
// The sampling flags (--temp, --top-k, ...) of every command that generates text.
#include <CLI/CLI.hpp>

#include "snapkv/sampling.h"

namespace snapkv::cli {

void add_sampling_flags(CLI::App& app, SamplingParams& s);

}  // namespace snapkv::cli
