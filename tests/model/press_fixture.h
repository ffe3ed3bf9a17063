#pragma once
// Shared by the tests that compare presses with kvpress's fixtures: a case's options as a press
// configuration, and what presses need of the default model's tokenizer.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

#include "kv/press.h"
#include "kv/press_inputs.h"
#include "reference_model.h"
#include "snapkv/tokenizer.h"

namespace snapkv::test {

// The fixture's options are named as the server's kv_compression fields: each goes through the
// press options table, as a request's would.
inline PressConfig config_from(const nlohmann::json& o) {
  PressConfig c;
  for (const auto& [key, v] : o.items()) {
    const PressParam* p = find_press_param(key);
    if (!p) {
      ADD_FAILURE() << "unknown press option '" << key << "' in " << o.dump();
      continue;
    }
    const PressValue value = v.is_string()           ? PressValue(v.get<std::string>())
                             : v.is_number_integer() ? PressValue(v.get<int64_t>())
                                                     : PressValue(v.get<double>());
    EXPECT_EQ(p->set(c, value, key), "") << o.dump();
  }
  EXPECT_EQ(c.validate(), "") << o.dump();
  return c;
}

// What a recorded prefill must keep for the presses of these fixture cases (their "options"): the
// widest window of theirs (at least `window`) and every input any of them needs.
struct Recording {
  int64_t window = 1;
  PressNeeds needs;
};
inline Recording recording_for(std::span<const nlohmann::json> cases, int64_t window = 1) {
  Recording r{window, {}};
  for (const nlohmann::json& c : cases) {
    const auto press = make_press(config_from(c.at("options")));
    r.window = std::max<int64_t>(r.window, press->window());
    r.needs |= press->needs();
  }
  return r;
}

// What presses need of the default model's tokenizer (kvzip: the reconstruction prompt).
inline const PressInputs& press_inputs_of_default_model() {
  static const PressInputs p = press_inputs(*Tokenizer::from_gguf(*reference_model().file));
  return p;
}

}  // namespace snapkv::test
