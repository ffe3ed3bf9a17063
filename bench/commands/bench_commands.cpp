// `snapkv bench`: the group and its subcommands (bench_commands.h).
#include "bench_commands.h"

#include "subcommands.h"

namespace snapkv::cli {

Action add_bench(CLI::App& app) {
  app.require_subcommand(1);
  CLI::App* compress =
      app.add_subcommand("compress", "full cache vs a press: prefill time, decode ms/token, KV bytes, peak RSS");
  Action run_compress = add_bench_compress(*compress);
  CLI::App* roofline = app.add_subcommand(
      "roofline", "this CPU's FLOP/s and bandwidth ceilings, and prefill and decode against their bounds");
  Action run_roofline = add_bench_roofline(*roofline);
  CLI::App* decode = app.add_subcommand(
      "decode", "decode ms per step vs prompt length and batch size, prefill time and memory: full, SnapKV, llama.cpp");
  Action run_decode = add_bench_decode(*decode);
  CLI::App* phase = app.add_subcommand("phase", "this moment's memory read bandwidth and the threads' cache-line round trip");
  Action run_phase = add_bench_phase(*phase);
  CLI::App* spec = app.add_subcommand(
      "spec", "speculative decoding, full cache and pressed: decode ms/token vs prompt length, acceptance, same answers");
  Action run_spec = add_bench_spec(*spec);
  return [=] {
    if (spec->parsed()) return run_spec();
    return compress->parsed() ? run_compress() : roofline->parsed() ? run_roofline() : decode->parsed() ? run_decode() : run_phase();
  };
}

}  // namespace snapkv::cli
