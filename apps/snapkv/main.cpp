// snapkv: one binary, one subcommand per job. Errors inside the engine are typed exceptions;
// here they become one line on stderr and a non-zero exit status.
#include <fmt/core.h>

#include <cstdio>
#include <map>

#include "bench_commands.h"  // bench/: the measurement subcommands
#include "commands.h"
#include "snapkv/error.h"

int main(int argc, char** argv) {
  CLI::App app{"snapkv: long-context LLM inference with a SnapKV-compressed KV cache"};
  app.require_subcommand(1);
  // Flag errors get the same one-line shape as engine errors.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("error: {} (see --help)\n", e.what());
  });
  std::map<CLI::App*, snapkv::cli::Action> actions;
  auto add = [&](const char* name, const char* help, auto add_fn) {
    CLI::App* sub = app.add_subcommand(name, help);
    actions[sub] = add_fn(*sub);
  };
  add("run", "answer a prompt with a GGUF model", snapkv::cli::add_run);
  add("compress", "prefill a document once and save it, pressed or whole, as a context file",
      snapkv::cli::add_compress);
  add("chat", "a multi-turn conversation on stdin, each turn appended to the (compressed) cache",
      snapkv::cli::add_chat);
  add("inspect", "print a GGUF file's architecture, tokenizer and tensors", snapkv::cli::add_inspect);
  add("serve", "an OpenAI-compatible HTTP server with per-request KV compression and continuous batching",
      snapkv::cli::add_serve);
  add("eval", "evaluate KV-cache compression (fidelity, ...)", snapkv::cli::add_eval);
  add("analyze", "the SnapKV paper's observations on any model and prompts (hit rate, overlap, pooling, map)",
      snapkv::cli::add_analyze);
  add("bench", "side-by-side speed and memory measurements", snapkv::cli::add_bench);
  add("presses", "list the KV compression presses and their options", snapkv::cli::add_presses);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
  } catch (const snapkv::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory (try a smaller --ctx)\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
