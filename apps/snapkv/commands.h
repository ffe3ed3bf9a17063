#pragma once
// Each subcommand registers its flags on the app and returns the function that runs it.
#include <CLI/CLI.hpp>

#include <functional>

namespace snapkv::cli {

using Action = std::function<int()>;

Action add_run(CLI::App& app);
Action add_inspect(CLI::App& app);
// eval: a group; each evaluation is a subcommand of it (snapkv eval fidelity).
Action add_eval(CLI::App& app);
// cmd_eval_suite.cpp: `snapkv eval <suite>` for one of eval_suite_names(), registered by add_eval.
Action add_eval_suite(CLI::App& app, const std::string& suite);
// bench: a group; compress is in cmd_bench.cpp, roofline in cmd_bench_roofline.cpp, decode in
// cmd_bench_decode.cpp.
Action add_bench(CLI::App& app);
Action add_bench_roofline(CLI::App& app);
Action add_bench_decode(CLI::App& app);
Action add_bench_phase(CLI::App& app);
Action add_chat(CLI::App& app);
Action add_serve(CLI::App& app);

// The model used when -m is not given: the one scripts/setup.sh downloads.
inline constexpr const char* kDefaultModel = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

}  // namespace snapkv::cli
