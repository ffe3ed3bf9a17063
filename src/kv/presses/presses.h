#pragma once
// Constructors of the presses, one per file in this folder; the registry is in kv/press.cpp.
#include <memory>

#include "kv/press.h"

namespace snapkv {

std::unique_ptr<Press> make_full_press(const PressConfig& c);
std::unique_ptr<Press> make_snapkv_press(const PressConfig& c);
std::unique_ptr<Press> make_streaming_llm_press(const PressConfig& c);
std::unique_ptr<Press> make_h2o_press(const PressConfig& c);
std::unique_ptr<Press> make_knorm_press(const PressConfig& c);
std::unique_ptr<Press> make_keydiff_press(const PressConfig& c);
std::unique_ptr<Press> make_random_press(const PressConfig& c);
std::unique_ptr<Press> make_tova_press(const PressConfig& c);
std::unique_ptr<Press> make_expected_attention_press(const PressConfig& c);
std::unique_ptr<Press> make_kvzip_press(const PressConfig& c);

}  // namespace snapkv
