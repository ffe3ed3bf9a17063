// ModelOptions::n_ctx: the context a model is loaded for bounds its sessions and is their default;
// past the training context, or negative, it is refused with one clear error.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "snapkv/session.h"
#include "support/paths.h"
#include "util/error.h"

namespace snapkv {
namespace {

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    FAIL() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ModelContext, BoundsAndDefaultsItsSessions) {
  const Model model = Model::load(test::default_model_path(), {.threads = 1, .n_ctx = 512});
  EXPECT_EQ(model.info().n_ctx, 512);
  EXPECT_GT(model.info().n_ctx_train, 512);
  EXPECT_TRUE(model.info().longrope.empty());
  EXPECT_EQ(Session(model, {}).n_ctx(), 512);
  EXPECT_EQ(Session(model, {.n_ctx = 300, .press = {}}).n_ctx(), 300);
  expect_invalid([&] { Session s(model, {.n_ctx = 513, .press = {}}); }, "exceeds the 512 the model was loaded for");

  const int n_train = model.info().n_ctx_train;
  expect_invalid([&] { Model::load(test::default_model_path(), {.n_ctx = n_train + 1}); },
                 "exceeds the model's training context of " + std::to_string(n_train));
  expect_invalid([&] { Model::load(test::default_model_path(), {.n_ctx = -1}); }, "context size must be positive");
  EXPECT_EQ(Model::load(test::default_model_path(), {.threads = 1}).info().n_ctx, n_train);
}

}  // namespace
}  // namespace snapkv
