#pragma once
// Pieces shared by the `snapkv bench` subcommands.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "snapkv/tokenizer.h"

namespace snapkv {
class GgufFile;
}

namespace snapkv::cli {

// The median of v (the upper one for an even count); v must not be empty.
double median(std::vector<double> v);

// The most likely next token (the first of equals).
int32_t greedy(std::span<const float> logits);

// Help of the --data flag (resolved by snapkv::resolve_data_dir).
std::string data_flag_help();

// The first n tokens of the Paul Graham essays in data_dir, or Error(kInvalidArgument).
std::vector<int32_t> essay_tokens(const std::string& data_dir, const Tokenizer& tok, int n);

// Runs fn in a child process forked from this one (fork before any thread starts, so the child
// measures alone: its peak RSS and warm caches are its own) and returns what fn returned. An
// exception in the child becomes Error(kInternal) with its message here.
std::string run_in_child(const std::function<std::string()>& fn);

// Runs a shell command and returns its standard output; Error(kInternal) with the command's
// last output line when it fails.
std::string run_command(const std::string& command);

// Bytes of the weights one decode step reads: every tensor, the embedding table only where it
// doubles as the output head (otherwise a step reads one row of it).
size_t decode_weight_bytes(const GgufFile& file);

// s between single quotes for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace snapkv::cli
