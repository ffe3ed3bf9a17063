#pragma once
// `snapkv bench`: the measurement subcommands (compress, decode, roofline, phase), built from
// bench/commands/ into snapkv_bench_cmds and registered by the snapkv binary (apps/snapkv/main.cpp).
#include <CLI/CLI.hpp>

#include <functional>

namespace snapkv::cli {

// Registers the subcommands on app (the `bench` group) and returns the function that runs the
// one the command line named.
std::function<int()> add_bench(CLI::App& app);

}  // namespace snapkv::cli
