#include "snapkv/chat.h"

#include <cctype>

#include "util/error.h"

namespace snapkv {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Jinja's `trim` filter: strips leading and trailing whitespace.
std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
                                   c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Undoes the escapes of a Jinja string literal (\n, \t, \', \", \\); returns nullopt when the
// text is not a plain literal (it would close the quote or concatenate an expression).
std::optional<std::string> unescape_literal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"' || c == '{' || c == '}') return std::nullopt;
    if (c != '\\' || i + 1 == s.size()) {
      out += c;
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: out += e; break;  // \' \" \\ and anything else: the character itself
    }
  }
  return out;
}

// The default system prompt of a ChatML template: a literal
// '<|im_start|>system\n...<|im_end|>' written by the template itself.
std::optional<std::string> chatml_default_system(std::string_view jinja) {
  constexpr std::string_view kOpen = "<|im_start|>system";
  constexpr std::string_view kClose = "<|im_end|>";
  for (size_t at = jinja.find(kOpen); at != std::string_view::npos;
       at = jinja.find(kOpen, at + 1)) {
    size_t start = at + kOpen.size();
    if (jinja.substr(start, 1) == "\n") {
      start += 1;
    } else if (jinja.substr(start, 2) == "\\n") {
      start += 2;
    } else {
      continue;  // '<|im_start|>system' followed by an expression: not a literal prompt
    }
    const size_t end = jinja.find(kClose, start);
    if (end == std::string_view::npos) continue;
    if (auto text = unescape_literal(jinja.substr(start, end - start))) return text;
  }
  return std::nullopt;
}

// Gemma and Mistral have no system turn: a system message goes before the first user message.
struct Folded {
  std::string system;
  bool has_system = false;
  size_t first = 0;  // index of the first non-system message
};
Folded fold_system(const std::vector<ChatMessage>& messages) {
  Folded f;
  if (!messages.empty() && messages[0].role == "system") {
    f.system = messages[0].content;
    f.has_system = true;
    f.first = 1;
  }
  return f;
}

std::string render_chatml(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                          bool gen) {
  std::string out;
  // As the templates do: inside the message loop, when the first message is not a system one.
  if (t.default_system && !messages.empty() && messages[0].role != "system") {
    out += "<|im_start|>system\n" + *t.default_system + "<|im_end|>\n";
  }
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_llama3(const std::vector<ChatMessage>& messages, bool gen) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
    out += trim(m.content);
    out += "<|eot_id|>";
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_mistral(const std::vector<ChatMessage>& messages) {
  const Folded f = fold_system(messages);
  std::string out;
  bool first_user = true;
  for (size_t i = f.first; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (m.role == "assistant") {
      out += m.content + "</s>";
      continue;
    }
    out += "[INST] ";
    if (first_user && f.has_system) out += f.system + "\n\n";
    out += m.content + " [/INST]";
    first_user = false;
  }
  return out;
}

std::string render_gemma(const std::vector<ChatMessage>& messages, bool gen) {
  const Folded f = fold_system(messages);
  std::string out;
  for (size_t i = f.first; i < messages.size(); ++i) {
    const auto& m = messages[i];
    out += "<start_of_turn>";
    out += m.role == "assistant" ? "model" : m.role;
    out += "\n";
    if (i == f.first && f.has_system) out += f.system + "\n\n";
    out += trim(m.content);
    out += "<end_of_turn>\n";
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

}  // namespace

std::string_view chat_template_name(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kChatML: return "chatml";
    case ChatTemplateKind::kLlama3: return "llama3";
    case ChatTemplateKind::kMistral: return "mistral";
    case ChatTemplateKind::kGemma: return "gemma";
  }
  return "chatml";
}

ChatTemplateKind chat_template_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "chatml") return ChatTemplateKind::kChatML;
  if (n == "llama3" || n == "llama-3") return ChatTemplateKind::kLlama3;
  if (n == "mistral") return ChatTemplateKind::kMistral;
  if (n == "gemma" || n == "gemma2" || n == "gemma3") return ChatTemplateKind::kGemma;
  fail(ErrorKind::kInvalidArgument,
       "unknown chat template \"{}\" (known: chatml, llama3, mistral, gemma)", name);
}

ChatTemplateKind detect_chat_template(std::string_view jinja) {
  if (jinja.find("<|im_start|>") != std::string_view::npos) return ChatTemplateKind::kChatML;
  if (jinja.find("<|start_header_id|>") != std::string_view::npos) {
    return ChatTemplateKind::kLlama3;
  }
  if (jinja.find("<start_of_turn>") != std::string_view::npos) return ChatTemplateKind::kGemma;
  if (jinja.find("[INST]") != std::string_view::npos) return ChatTemplateKind::kMistral;
  return ChatTemplateKind::kChatML;
}

ChatTemplate chat_template_from_jinja(std::string_view jinja) {
  ChatTemplate t;
  t.kind = detect_chat_template(jinja);
  if (t.kind == ChatTemplateKind::kChatML) t.default_system = chatml_default_system(jinja);
  return t;
}

std::string apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  switch (tmpl.kind) {
    case ChatTemplateKind::kChatML: return render_chatml(tmpl, messages, add_generation_prompt);
    case ChatTemplateKind::kLlama3: return render_llama3(messages, add_generation_prompt);
    case ChatTemplateKind::kMistral: return render_mistral(messages);
    case ChatTemplateKind::kGemma: return render_gemma(messages, add_generation_prompt);
  }
  return render_chatml(tmpl, messages, add_generation_prompt);
}

std::string apply_chat_template(ChatTemplateKind kind, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  return apply_chat_template(ChatTemplate{kind, std::nullopt}, messages, add_generation_prompt);
}

}  // namespace snapkv
