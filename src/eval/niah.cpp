#include "eval/niah.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "eval/fidelity.h"

namespace snapkv {

NiahPrompt build_niah_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl, std::string_view haystack,
                             int length, int depth, std::string_view needle, std::string_view question) {
  const std::string needle_text = fmt::format("\n{}\n", needle);
  const auto render = [&](const std::string& doc) {
    const std::string user = fmt::format("<document>\n{}\n</document>\n\n{}", doc, question);
    return tokenizer.encode(apply_chat_template(tmpl, {{"user", user}}, /*add_generation_prompt=*/true),
                            tokenizer.add_bos(), /*parse_special=*/true);
  };
  const int64_t overhead = static_cast<int64_t>(render(needle_text).size());
  const int64_t budget = std::max<int64_t>(0, length - overhead);
  std::vector<int32_t> hay = encode_prefix(tokenizer, haystack, budget + (tokenizer.add_bos() ? 1 : 0));
  if (tokenizer.add_bos() && !hay.empty() && hay.front() == tokenizer.bos_id()) hay.erase(hay.begin());
  if (static_cast<int64_t>(hay.size()) > budget) hay.resize(static_cast<size_t>(budget));
  const int64_t n = static_cast<int64_t>(hay.size());
  int64_t at = depth >= 100 ? n : n * depth / 100;
  if (depth < 100) {
    while (at > 0) {
      const std::string piece = tokenizer.token_piece(hay[static_cast<size_t>(at - 1)]);
      if (!piece.empty() && piece.back() == '.') break;
      --at;
    }
  }
  const std::span<const int32_t> all(hay);
  const std::string doc = tokenizer.decode(all.first(static_cast<size_t>(at))) + needle_text +
                          tokenizer.decode(all.subspan(static_cast<size_t>(at)));
  NiahPrompt p;
  p.ids = render(doc);
  p.haystack_tokens = n;
  p.needle_at = at;
  return p;
}

std::string fnv1a_hex(std::span<const int32_t> ids) {
  uint64_t h = 14695981039346656037ull;
  for (const int32_t id : ids) {
    const uint32_t u = static_cast<uint32_t>(id);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return fmt::format("{:016x}", h);
}

}  // namespace snapkv
