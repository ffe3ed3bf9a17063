#pragma once
// The sampling flags (--temp, --top-k, ...) of every command that generates text.
#include <CLI/CLI.hpp>

#include "snapkv/sampling.h"

namespace snapkv::cli {

// with_seed: also --seed (the server has none: each request gives its own or draws one).
void add_sampling_flags(CLI::App& app, SamplingParams& s, bool with_seed = true);

// The sampling flags given on the command line copied over `base` (the others keep base's values).
SamplingParams given_sampling_flags(const CLI::App& app, const SamplingParams& flags, SamplingParams base);

}  // namespace snapkv::cli
