// Session::fork (snapkv/session.h) on the default model: the copy holds the pressed prompt as the
// original does, decodes the same logits from it, and moving either on leaves the other alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "snapkv/session.h"
#include "support/paths.h"

namespace snapkv {
namespace {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(SessionFork, CopyDecodesLikeTheOriginalAndLeavesItAlone) {
  const Model model = Model::load(test::default_model_path(), {.threads = 2});
  PressConfig press;
  press.press = "snapkv", press.capacity = 48, press.window = 8;
  Session s(model, {.n_ctx = 256, .press = press});
  const Session empty = s.fork();
  EXPECT_EQ(empty.n_past(), 0);

  std::string text;
  for (int i = 0; i < 12; ++i) text += "The quick brown fox jumps over the lazy dog. ";
  s.prefill(model.tokenizer().encode(text, model.tokenizer().add_bos()));
  ASSERT_LT(s.kv_bytes(), s.kv_full_bytes());  // the press compressed the prompt

  Session copy = s.fork();
  EXPECT_EQ(copy.tokens(), s.tokens());
  EXPECT_EQ(copy.n_ctx(), s.n_ctx());
  EXPECT_EQ(copy.kv_bytes(), s.kv_bytes());
  EXPECT_EQ(copy.options().press.press, "full");
  ASSERT_TRUE(std::ranges::equal(copy.logits(), s.logits()));

  const int32_t next = argmax(s.logits());
  s.decode(next);
  copy.decode(next);
  ASSERT_TRUE(std::ranges::equal(copy.logits(), s.logits()));
  const std::vector<float> before(s.logits().begin(), s.logits().end());
  const int n_past = s.n_past();
  copy.decode(argmax(copy.logits()));
  EXPECT_EQ(copy.n_past(), n_past + 1);
  EXPECT_EQ(s.n_past(), n_past);
  EXPECT_TRUE(std::ranges::equal(s.logits(), before));
}

}  // namespace
}  // namespace snapkv
