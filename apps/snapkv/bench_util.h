#pragma once
// Pieces shared by the `snapkv bench` subcommands.
#include <cstdint>
#include <string>
#include <vector>

#include "io/tokenizer.h"

namespace snapkv::cli {

// The median of v (the upper one for an even count); v must not be empty.
double median(std::vector<double> v);

// The first n tokens of the Paul Graham essays in data_dir, or Error(kInvalidArgument).
std::vector<int32_t> essay_tokens(const std::string& data_dir, const Tokenizer& tok, int n);

}  // namespace snapkv::cli
