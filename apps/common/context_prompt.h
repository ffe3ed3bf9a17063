#pragma once
// How `run --question`, `compress` and `chat` split a prompt into a context and a question, so that
// a question asked on a saved context gets the tokens it would get with the document: the context
// is the document (opened as a user turn of the chat template with --chat), the question's text is
// a blank line, the question, and the template's text after it. After a conversation, the
// question's text is the template's next user turn.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "snapkv/chat.h"
#include "snapkv/model.h"

namespace snapkv::cli {

struct ContextPrompt {
  std::string context;  // the text before the question
  std::string question_prefix = "\n\n", question_suffix;
  bool chat = false;  // special tokens are parsed
};

// The prompt flags of `run` and `compress`: -p / -f, --chat, --system, --chat-template.
struct PromptFlags {
  std::string prompt, prompt_file;
  bool chat = false;
  std::string system, chat_template;

  bool given() const { return !prompt.empty() || !prompt_file.empty(); }
  // The text of -p or -f; Error(kInvalidArgument) unless exactly one was given.
  std::string text() const;
  // The document as a context (context_prompt() with these flags).
  ContextPrompt context(const Model& model, const std::string& document) const;
};
void add_prompt_flags(CLI::App& app, PromptFlags& f);

// The document as a context; with chat, a user turn of tmpl after an optional system message,
// left open for the question.
ContextPrompt context_prompt(const std::string& document, bool chat, const ChatTemplate& tmpl,
                             const std::string& system);

// What the template adds after `messages` (a conversation rendered as rendered_so_far) for the
// next user turn, split around its text: {rendered_so_far, prefix, suffix, true}. Error(kUnsupported)
// when the template rewrites earlier turns.
ContextPrompt next_user_turn(const ChatTemplate& tmpl, std::vector<ChatMessage> messages,
                             const std::string& rendered_so_far);

// The context's tokens (with the model's BOS) and a question's (without).
std::vector<int32_t> context_tokens(const Model& model, const ContextPrompt& p);
std::vector<int32_t> question_tokens(const Model& model, const std::string& question, const std::string& prefix,
                                     const std::string& suffix, bool chat);

}  // namespace snapkv::cli
