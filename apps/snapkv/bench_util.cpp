#include "bench_util.h"

#include <algorithm>

#include "eval/fidelity.h"
#include "util/error.h"

namespace snapkv::cli {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int32_t> essay_tokens(const std::string& data_dir, const Tokenizer& tok, int n) {
  std::vector<int32_t> ids = encode_prefix(tok, read_paul_graham_essays(data_dir), n);
  if (static_cast<int>(ids.size()) < n) fail(ErrorKind::kInvalidArgument, "the essays have only {} tokens", ids.size());
  return ids;
}

}  // namespace snapkv::cli
