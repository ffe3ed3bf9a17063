#pragma once
// Where the evaluation data lives (essays, RULER inputs, LongBench, L-Eval, LongEval), for every
// command that reads it: the --data flag when given, else $SNAPKV_DATA, else kDefaultDataDir.
#include <string>

namespace snapkv {

inline constexpr const char* kDefaultDataDir = "../shared/data";

// flag: the user's --data value ("" when not given).
std::string resolve_data_dir(const std::string& flag);

}  // namespace snapkv
