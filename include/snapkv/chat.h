#pragma once
// Chat templates: a conversation rendered to the prompt text a model was tuned on.
// We do not run Jinja; the GGUF's tokenizer.chat_template is recognised by the markers it
// contains (detect_chat_template), and a few well-known formats are written out here:
//   kChatML   <|im_start|>{role}\n{content}<|im_end|>\n ...  gen: <|im_start|>assistant\n
//             (SmolLM2, Qwen2). Content is not trimmed. When the template injects a default
//             system prompt for conversations that start without one (SmolLM2's and Qwen2's
//             do), chat_template_from_jinja() extracts it and apply_chat_template() adds it.
//   kLlama3   <|start_header_id|>{role}<|end_header_id|>\n\n{trimmed}<|eot_id|>
//             gen: <|start_header_id|>assistant<|end_header_id|>\n\n
//   kMistral  [INST] {user} [/INST]{assistant}</s>  (Mistral-7B-Instruct v0.1/v0.2);
//             a system message is put before the first user message, followed by "\n\n".
//   kGemma    <start_of_turn>{user|model}\n{trimmed}<end_of_turn>\n  gen: <start_of_turn>model\n
//             (Gemma 2/3); a system message is put before the first user message, then "\n\n".
// The BOS token that HF templates write first ({{ bos_token }}) is NOT part of the output: the
// caller encodes with add_bos = tokenizer.add_bos(), so it is added once as a token.
// The output contains special-token text: encode it with parse_special = true.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

enum class ChatTemplateKind { kChatML, kLlama3, kMistral, kGemma };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others pass through as written)
  std::string content;
};

struct ChatTemplate {
  ChatTemplateKind kind = ChatTemplateKind::kChatML;
  // ChatML: the system prompt to add when the first message is not a system message.
  std::optional<std::string> default_system;
};

// "chatml", "llama3", "mistral", "gemma" (what chat_template_name returns).
std::string_view chat_template_name(ChatTemplateKind kind);

// The template named by `name` (case-insensitive; also "llama-3", "gemma2", "gemma3").
// Throws Error(kInvalidArgument) listing the known names.
ChatTemplateKind chat_template_from_name(std::string_view name);

// Recognises a Jinja chat template by its markers; ChatML when `jinja` is empty or unknown
// (also llama.cpp's fallback).
ChatTemplateKind detect_chat_template(std::string_view jinja);

// detect_chat_template plus the default system prompt of a ChatML template, if it has one.
ChatTemplate chat_template_from_jinja(std::string_view jinja);

// Renders the conversation; add_generation_prompt appends the opening of the assistant's turn.
std::string apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);
// The same with no default system prompt.
std::string apply_chat_template(ChatTemplateKind kind, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);

}  // namespace snapkv
