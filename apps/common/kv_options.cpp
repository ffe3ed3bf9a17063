#include "kv_options.h"

#include <fmt/format.h>

#include "cli_error.h"

namespace snapkv::cli {

void add_kv_options(CLI::App& app, KvOptions& o) {
  app.add_option("--kv-type", o.type, "KV cache element type: f16 | bf16 | f32")->capture_default_str();
  app.add_option("--kv-press", o.press.press,
                 fmt::format("KV compression: {}", fmt::join(press_names(), " | ")))->capture_default_str();
  app.add_option("--kv-capacity", o.press.capacity, "entries kept per KV head, window included")->capture_default_str();
  app.add_option("--kv-ratio", o.press.ratio, "instead of a capacity: fraction of the prompt's entries dropped, in (0, 1)");
  app.add_option("--kv-window", o.press.window, "observation window: last prompt tokens that score the rest")->capture_default_str();
  app.add_option("--kv-kernel", o.press.kernel, "pooling kernel (odd)")->capture_default_str();
  app.add_option("--kv-pool", o.pool, "pooling: max | avg")->capture_default_str();
  app.add_option("--kv-gqa", o.gqa, "GQA score reduction: mean | max | per_query_head")->capture_default_str();
  app.add_option("--kv-short", o.short_rule,
                 "prompts no longer than the capacity: skip (kept whole, official) | always (pressed anyway)")->capture_default_str();
  app.add_option("--kv-sinks", o.press.sinks, "streaming_llm: initial tokens always kept")->capture_default_str();
  app.add_option("--kv-alpha", o.press.alpha, "ada_kv: guaranteed share of each head's budget")->capture_default_str();
  app.add_option("--kv-beta", o.press.beta, "pyramidkv: smallest layer budget = budget / beta")->capture_default_str();
  app.add_option("--kv-variant", o.variant, "pyramidkv / ada_kv budget formulas: paper | kvpress")->capture_default_str();
  app.add_option("--kv-seed", o.press.seed, "random press: seed")->capture_default_str();
  app.add_option("--kv-recompress", o.press.recompress,
                 "during generation, re-compress a head once it holds capacity + N entries (0 = never)")->capture_default_str();
}

SessionOptions KvOptions::session_options() const {
  SessionOptions s;
  if (!parse_kv_type(type, s.kv_type)) fail(ErrorKind::kInvalidArgument, "--kv-type must be f16, bf16 or f32, got '{}'", type);
  s.press = press;
  if (!parse_pool(pool, s.press.pool)) fail(ErrorKind::kInvalidArgument, "--kv-pool must be max or avg, got '{}'", pool);
  if (!parse_gqa(gqa, s.press.gqa)) {
    fail(ErrorKind::kInvalidArgument, "--kv-gqa must be mean, max or per_query_head, got '{}'", gqa);
  }
  if (!parse_variant(variant, s.press.variant)) {
    fail(ErrorKind::kInvalidArgument, "--kv-variant must be paper or kvpress, got '{}'", variant);
  }
  if (short_rule != "skip" && short_rule != "always") {
    fail(ErrorKind::kInvalidArgument, "--kv-short must be skip or always, got '{}'", short_rule);
  }
  s.press.compress_short = short_rule == "always";
  if (const std::string err = s.press.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  return s;
}

}  // namespace snapkv::cli
