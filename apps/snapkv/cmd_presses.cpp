// snapkv presses: the registered presses and the press options, printed from the registry and
// the options table themselves, so the list cannot drift from what the CLI and the server accept.
// --markdown prints the options table that docs/presses.md carries (a test compares the two).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "commands.h"
#include "snapkv/press.h"

namespace snapkv::cli {
namespace {

// A Markdown table cell: a literal '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

void print_markdown() {
  fmt::print("| option | CLI flag | type | default | allowed | meaning |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  for (const PressParam& p : press_params()) {
    fmt::print("| `{}` | `{}` | {} | `{}` | {} | {} |\n", p.name, p.flag(), p.type_name(), p.default_text,
               cell(p.allowed()), cell(p.help));
  }
}

void print_text() {
  size_t width = 0;
  for (const PressInfo& i : press_infos()) width = std::max(width, i.name.size());
  fmt::print("Presses (--kv-press NAME; the server's kv_compression.press):\n");
  for (const PressInfo& i : press_infos()) fmt::print("  {:<{}}  {}\n", i.name, width, i.summary);
  fmt::print("\nOptions (the CLI flag --kv-NAME; the server's kv_compression.NAME):\n");
  width = 0;
  for (const PressParam& p : press_params()) width = std::max(width, p.name.size());
  for (const PressParam& p : press_params()) {
    fmt::print("  {:<{}}  {} (default {}; {})\n", p.name, width, p.help, p.default_text, p.allowed());
  }
}

}  // namespace

Action add_presses(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  app.add_flag("--markdown", *markdown, "print the options table as Markdown (the one in docs/presses.md)");
  return [markdown] {
    if (*markdown) {
      print_markdown();
    } else {
      print_text();
    }
    return 0;
  };
}

}  // namespace snapkv::cli
