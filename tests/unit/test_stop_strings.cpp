#include <gtest/gtest.h>

#include "engine/stop_strings.h"

namespace snapkv {
namespace {

// Feeds pieces; returns everything released and whether a stop string ended the text.
std::pair<std::string, bool> feed(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopMatcher m(std::move(stops));
  std::string out;
  for (const std::string& p : pieces) {
    out += m.push(p);
    if (m.stopped()) break;
  }
  out += m.flush();
  return {out, m.stopped()};
}

TEST(StopMatcher, CutsAtTheFirstStopStringAcrossPieces) {
  EXPECT_EQ(feed({"\n\n"}, {"Paris", ".\n", "\nThe"}), std::make_pair(std::string("Paris."), true));
  EXPECT_EQ(feed({"END", "###"}, {"a#", "#", "#b END"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(feed({"stop"}, {"no", " match", " here"}), std::make_pair(std::string("no match here"), false));
  EXPECT_EQ(feed({}, {"a", "b"}), std::make_pair(std::string("ab"), false));
  EXPECT_EQ(feed({""}, {"a", "b"}), std::make_pair(std::string("ab"), false));  // empty stops are ignored
}

TEST(StopMatcher, HoldsBackOnlyWhatCouldStartAStopString) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("abc<"), "abc");
  EXPECT_EQ(m.push("/"), "");
  EXPECT_EQ(m.push("x"), "</x");  // not a stop string after all
  EXPECT_EQ(m.push("<</"), "<");
  EXPECT_EQ(m.push("s>tail"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.flush(), "");
  EXPECT_EQ(m.push("more"), "");
}

TEST(StopMatcher, FlushReleasesAHeldPrefix) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("the end ST"), "the end ");
  EXPECT_EQ(m.flush(), "ST");
  EXPECT_FALSE(m.stopped());
}

}  // namespace
}  // namespace snapkv
