// Chat templates: ChatML against transformers' apply_chat_template on the GGUFs' own Jinja
// templates (tests/fixtures/tokenizer_chat_templates.json), the other formats against the
// strings their model cards and HF templates give.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "snapkv/chat.h"
#include "io/gguf.h"
#include "support/paths.h"
#include "util/error.h"

namespace snapkv {
namespace {

std::vector<ChatMessage> to_messages(const nlohmann::json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  return out;
}

TEST(ChatTemplate, MatchesTransformers) {
  std::ifstream in(test::fixture_path("tokenizer_chat_templates.json"));
  ASSERT_TRUE(in.good()) << "missing tests/fixtures/tokenizer_chat_templates.json";
  const auto fx = nlohmann::json::parse(in);
  std::map<std::string, ChatTemplate> templates;  // by GGUF
  size_t n = 0;
  for (const auto& c : fx["cases"]) {
    const std::string rel = c["gguf"].get<std::string>();
    if (!templates.count(rel)) {
      const std::string path = test::source_dir() + "/" + rel;
      ASSERT_TRUE(std::filesystem::exists(path))
          << path << " is missing: run `bash scripts/setup.sh` (it downloads the default model "
          << "and the vocabulary-only GGUFs under models/vocab/)";
      const auto file = GgufFile::open(path);
      const std::string jinja(file->get_string("tokenizer.chat_template"));
      templates[rel] = chat_template_from_jinja(jinja);
      EXPECT_EQ(templates[rel].kind, ChatTemplateKind::kChatML) << rel;
      EXPECT_TRUE(templates[rel].default_system.has_value()) << rel;
    }
    const auto got = apply_chat_template(templates[rel], to_messages(c["messages"]),
                                         c["add_generation_prompt"].get<bool>());
    EXPECT_EQ(got, c["expected"].get<std::string>())
        << rel << " messages " << c["messages"].dump() << " add_generation_prompt "
        << c["add_generation_prompt"];
    ++n;
  }
  EXPECT_GE(n, 20u);
  // SmolLM2's template injects its own system prompt.
  const auto& smol = templates["models/SmolLM2-135M-Instruct.Q4_1.gguf"];
  ASSERT_TRUE(smol.default_system.has_value());
  EXPECT_EQ(*smol.default_system,
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
}

TEST(ChatTemplate, DetectsByMarkers) {
  EXPECT_EQ(detect_chat_template(""), ChatTemplateKind::kChatML);
  EXPECT_EQ(detect_chat_template("{{ unknown }}"), ChatTemplateKind::kChatML);
  EXPECT_EQ(detect_chat_template("{{'<|im_start|>' + message['role']}}"), ChatTemplateKind::kChatML);
  EXPECT_EQ(detect_chat_template("{{ '<|start_header_id|>' + message['role'] + "
                                 "'<|end_header_id|>\n\n' }}"),
            ChatTemplateKind::kLlama3);
  EXPECT_EQ(detect_chat_template("{{ '<start_of_turn>' + role + '\n' }}"), ChatTemplateKind::kGemma);
  EXPECT_EQ(detect_chat_template("{{ '[INST] ' + message['content'] + ' [/INST]' }}"),
            ChatTemplateKind::kMistral);
  // A ChatML template without a literal system prompt has no default.
  EXPECT_FALSE(chat_template_from_jinja("{{'<|im_start|>' + message['role'] + '\\n'}}")
                   .default_system.has_value());
  // Escaped newlines and quotes in the literal are undone.
  const auto t = chat_template_from_jinja(
      "{{ '<|im_start|>system\\nYou\\'re Qwen.<|im_end|>\\n' }}{{'<|im_start|>'}}");
  ASSERT_TRUE(t.default_system.has_value());
  EXPECT_EQ(*t.default_system, "You're Qwen.");
}

TEST(ChatTemplate, Names) {
  for (auto k : {ChatTemplateKind::kChatML, ChatTemplateKind::kLlama3, ChatTemplateKind::kMistral,
                 ChatTemplateKind::kGemma}) {
    EXPECT_EQ(chat_template_from_name(chat_template_name(k)), k);
  }
  EXPECT_EQ(chat_template_from_name("Llama-3"), ChatTemplateKind::kLlama3);
  EXPECT_EQ(chat_template_from_name("GEMMA3"), ChatTemplateKind::kGemma);
  try {
    chat_template_from_name("vicuna");
    ADD_FAILURE() << "accepted an unknown name";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("vicuna"), std::string::npos);
  }
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."},
    {"user", " Hi! "},
    {"assistant", "Hello."},
    {"user", "Bye"},
};

TEST(ChatTemplate, ChatML) {
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::kChatML, kConversation, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi! <|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  ChatTemplate t{ChatTemplateKind::kChatML, "Default."};
  EXPECT_EQ(apply_chat_template(t, {{"user", "x"}}, false),
            "<|im_start|>system\nDefault.<|im_end|>\n<|im_start|>user\nx<|im_end|>\n");
  EXPECT_EQ(apply_chat_template(t, {}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama3) {
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::kLlama3, kConversation, true),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Mistral) {
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::kMistral, kConversation, true),
            "[INST] Be brief.\n\n Hi!  [/INST]Hello.</s>[INST] Bye [/INST]");
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::kMistral, {{"user", "Q"}}, false),
            "[INST] Q [/INST]");
}

TEST(ChatTemplate, Gemma) {
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::kGemma, kConversation, true),
            "<start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n"
            "<start_of_turn>model\n");
}

}  // namespace
}  // namespace snapkv
