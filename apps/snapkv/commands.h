#pragma once
// Each subcommand registers its flags on the app and returns the function that runs it.
#include <CLI/CLI.hpp>

#include <functional>

#include "model_options.h"

namespace snapkv::cli {

using Action = std::function<int()>;

Action add_run(CLI::App& app);
// compress: prefill a document once and save it as a context file (cmd_compress.cpp).
Action add_compress(CLI::App& app);
Action add_inspect(CLI::App& app);
// eval: a group; each evaluation is a subcommand of it (snapkv eval fidelity).
Action add_eval(CLI::App& app);
// cmd_eval_suite.cpp: `snapkv eval <suite>` for one of eval_suite_names(), registered by add_eval.
Action add_eval_suite(CLI::App& app, const std::string& suite);
Action add_chat(CLI::App& app);
Action add_serve(CLI::App& app);
// analyze: a group; the paper's observations, one subcommand each (cmd_analyze.cpp).
Action add_analyze(CLI::App& app);
// presses: the registered presses and their options (cmd_presses.cpp).
Action add_presses(CLI::App& app);

}  // namespace snapkv::cli
