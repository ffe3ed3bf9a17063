#include "context_prompt.h"

#include "cli_error.h"
#include "text_file.h"

namespace snapkv::cli {
namespace {

// Stands for the question while the template is applied; never in a document.
const std::string kMark = "\x01snapkv-question\x01";

// text split around the one kMark in it, after `from`.
ContextPrompt split(const std::string& text, size_t from, const std::string& prefix_end) {
  const size_t at = text.rfind(prefix_end + kMark);
  if (at == std::string::npos || at < from) fail(ErrorKind::kInternal, "the chat template dropped the question");
  const size_t question = at + prefix_end.size();
  return {text.substr(0, from), text.substr(from, question - from), text.substr(question + kMark.size()), true};
}

}  // namespace

ContextPrompt context_prompt(const std::string& document, bool chat, const ChatTemplate& tmpl,
                             const std::string& system) {
  if (!chat) return {document, "\n\n", "", false};
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  messages.push_back({"user", document + "\n\n" + kMark});
  const std::string text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
  const size_t at = text.rfind("\n\n" + kMark);
  if (at == std::string::npos) fail(ErrorKind::kInternal, "the chat template dropped the question");
  return split(text, at, "\n\n");
}

ContextPrompt next_user_turn(const ChatTemplate& tmpl, std::vector<ChatMessage> messages,
                             const std::string& rendered_so_far) {
  messages.push_back({"user", kMark});
  const std::string text = apply_chat_template(tmpl, messages, /*add_generation_prompt=*/true);
  if (text.compare(0, rendered_so_far.size(), rendered_so_far) != 0) {
    fail(ErrorKind::kUnsupported, "the chat template rewrites earlier turns, so the next one cannot be appended");
  }
  return split(text, rendered_so_far.size(), "");
}

std::string PromptFlags::text() const {
  if (prompt.empty() == prompt_file.empty()) fail(ErrorKind::kInvalidArgument, "give exactly one of -p TEXT or -f FILE");
  return prompt_file.empty() ? prompt : read_text_file(prompt_file);
}

ContextPrompt PromptFlags::context(const Model& model, const std::string& document) const {
  return context_prompt(document, chat, model.pick_chat_template(chat_template), system);
}

void add_prompt_flags(CLI::App& app, PromptFlags& f) {
  app.add_option("-p,--prompt", f.prompt, "prompt text (the document)");
  app.add_option("-f,--file", f.prompt_file, "read the prompt (the document) from a file");
  app.add_flag("--chat", f.chat, "wrap the prompt in the model's chat template as a user turn");
  app.add_option("--system", f.system, "system message (with --chat)");
  app.add_option("--chat-template", f.chat_template,
                 "chatml | llama3 | mistral | gemma (default: detected from the model's template)");
}

std::vector<int32_t> context_tokens(const Model& model, const ContextPrompt& p) {
  const Tokenizer& t = model.tokenizer();
  return t.encode(p.context, t.add_bos(), /*parse_special=*/p.chat);
}

std::vector<int32_t> question_tokens(const Model& model, const std::string& question, const std::string& prefix,
                                     const std::string& suffix, bool chat) {
  return model.tokenizer().encode(prefix + question + suffix, false, /*parse_special=*/chat);
}

}  // namespace snapkv::cli
