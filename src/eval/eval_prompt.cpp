#include "eval/eval_prompt.h"

#include <fmt/format.h>

#include "util/error.h"

namespace snapkv {

EvalPrompt render_eval_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl, const EvalCase& c,
                              QuestionPlacement placement) {
  const bool first = placement == QuestionPlacement::kFirst;
  const std::string user = first ? c.question + c.separator + c.context : c.context + c.separator + c.question;
  std::string text;
  if (c.chat) {
    std::vector<ChatMessage> messages;
    if (!c.system.empty()) messages.push_back({"system", c.system});
    messages.push_back({"user", user});
    text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
  } else {
    text = c.system.empty() ? user : c.system + "\n\n" + user;
  }
  text += c.answer_prefix;
  EvalPrompt p;
  size_t cut = text.size();
  if (placement == QuestionPlacement::kAgnostic) {
    cut = text.rfind(c.question);
    if (c.question.empty() || cut == std::string::npos) {
      fail(ErrorKind::kInvalidArgument, "case {}: the question is not in the prompt, so it cannot be placed apart",
           c.id);
    }
  }
  p.ids = tokenizer.encode(text.substr(0, cut), tokenizer.add_bos(), /*parse_special=*/c.chat);
  p.split = p.ids.size();
  if (cut < text.size()) {
    const std::vector<int32_t> rest = tokenizer.encode(text.substr(cut), false, c.chat);
    p.ids.insert(p.ids.end(), rest.begin(), rest.end());
  }
  return p;
}

std::string fnv1a_hex(std::span<const int32_t> ids) {
  uint64_t h = 14695981039346656037ull;
  for (const int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return fmt::format("{:016x}", h);
}

const char* placement_name(QuestionPlacement placement) {
  switch (placement) {
    case QuestionPlacement::kFirst: return "question-first";
    case QuestionPlacement::kAgnostic: return "question-agnostic";
    case QuestionPlacement::kEnd: break;
  }
  return "question-last";
}

}  // namespace snapkv
