// `snapkv presses`: the list comes from the registry and the options table, and docs/presses.md
// carries exactly the table `snapkv presses --markdown` prints (regenerate it with that command
// when an option changes).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "snapkv/press.h"
#include "support/cli.h"
#include "support/paths.h"

namespace snapkv {
namespace {

constexpr const char* kBegin = "<!-- press-options:begin -->";
constexpr const char* kEnd = "<!-- press-options:end -->";

// The text between the markers, without the line breaks next to them.
std::string marked_region(const std::string& doc) {
  const size_t b = doc.find(kBegin), e = doc.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) return "(markers missing)";
  std::string s = doc.substr(b + std::string(kBegin).size(), e - b - std::string(kBegin).size());
  while (!s.empty() && s.front() == '\n') s.erase(s.begin());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(CliPresses, ListsEveryPressAndOption) {
  const test::CliRun r = test::run_cli("presses");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const PressInfo& p : press_infos()) EXPECT_NE(r.out.find(p.name + " "), std::string::npos) << p.name;
  for (const PressParam& p : press_params()) EXPECT_NE(r.out.find(p.help), std::string::npos) << p.name;
}

TEST(CliPresses, DocsTableMatchesTheBinary) {
  const test::CliRun r = test::run_cli("presses --markdown");
  ASSERT_EQ(r.status, 0) << r.err;
  std::string table = r.out;
  while (!table.empty() && table.back() == '\n') table.pop_back();
  for (const PressParam& p : press_params()) {
    EXPECT_NE(table.find(fmt::format("`{}`", p.flag())), std::string::npos) << p.name;
  }
  const std::string doc = test::slurp(test::source_dir() + "/docs/presses.md");
  EXPECT_EQ(marked_region(doc), table)
      << "docs/presses.md's options table is out of date: replace the lines between " << kBegin << " and " << kEnd
      << " with the output of `snapkv presses --markdown`";
}

}  // namespace
}  // namespace snapkv
