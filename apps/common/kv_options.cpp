#include "kv_options.h"

#include <fmt/format.h>

#include "cli_error.h"

namespace snapkv::cli {

void add_kv_options(CLI::App& app, KvOptions& o) {
  app.add_option("--kv-type", o.type, "KV cache element type: f16 | bf16 | f32")->capture_default_str();
  for (const PressParam& p : press_params()) {
    // Each flag writes its option as it is parsed, so an invalid value fails the parse with the
    // table's message naming the flag.
    const std::string flag = p.flag();
    auto store = [&o, &p, flag](const std::string& text) {
      if (std::string err = p.set_text(o.press, text, flag); !err.empty()) throw CLI::ValidationError(err);
    };
    app.add_option_function<std::string>(flag, store, fmt::format("{} ({})", p.help, p.allowed()))
        ->default_str(p.text(o.press))
        ->type_name(p.type == PressParam::Type::kChoice ? "TEXT" : p.type == PressParam::Type::kInt ? "INT" : "FLOAT");
  }
}

SessionOptions KvOptions::session_options() const {
  SessionOptions s;
  if (!parse_kv_type(type, s.kv_type)) fail(ErrorKind::kInvalidArgument, "--kv-type must be f16, bf16 or f32, got '{}'", type);
  s.press = press;
  if (const std::string err = s.press.validate(); !err.empty()) fail(ErrorKind::kInvalidArgument, "{}", err);
  return s;
}

}  // namespace snapkv::cli
