#pragma once
// Each `snapkv bench` subcommand registers its flags on its app and returns the function that
// runs it; add_bench (cmd_bench_compress.cpp, bench_commands.h) registers them all.
#include <CLI/CLI.hpp>

#include <functional>

namespace snapkv::cli {

using Action = std::function<int()>;

Action add_bench_compress(CLI::App& app);  // cmd_bench_compress.cpp
Action add_bench_decode(CLI::App& app);    // cmd_bench_decode.cpp
Action add_bench_roofline(CLI::App& app);  // cmd_bench_roofline.cpp
Action add_bench_phase(CLI::App& app);     // cmd_bench_phase.cpp
Action add_bench_spec(CLI::App& app);      // cmd_bench_spec.cpp

}  // namespace snapkv::cli
