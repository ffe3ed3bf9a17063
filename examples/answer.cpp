// A long-context answer on the public API alone: load a GGUF model, render a document and a
// question through the model's chat template, let SnapKV keep 1024 entries per KV head, and
// stream the answer.
//
//   snapkv_example_answer MODEL.gguf DOCUMENT.txt "QUESTION" [THREADS]
#include <snapkv/chat.h>
#include <snapkv/error.h>
#include <snapkv/memory.h>
#include <snapkv/session.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s MODEL.gguf DOCUMENT.txt \"QUESTION\" [THREADS]\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[2], std::ios::binary);
    if (!in) throw snapkv::Error(snapkv::ErrorKind::kBadFile, std::string(argv[2]) + ": cannot read it");
    std::stringstream document;
    document << in.rdbuf();

    snapkv::ModelOptions model_options;
    model_options.threads = argc == 5 ? std::stoi(argv[4]) : 0;
    const snapkv::Model model = snapkv::Model::load(argv[1], model_options);

    const std::string user = document.str() + "\n\n" + argv[3];
    const std::string text = snapkv::apply_chat_template(model.chat_template(), {{"user", user}},
                                                         /*add_generation_prompt=*/true);
    const snapkv::Tokenizer& tokenizer = model.tokenizer();
    const std::vector<int32_t> prompt = tokenizer.encode(text, tokenizer.add_bos(), /*parse_special=*/true);

    snapkv::SessionOptions session_options;
    session_options.n_ctx = static_cast<int>(prompt.size()) + 256;
    session_options.press.press = "snapkv";
    session_options.press.capacity = 1024;
    snapkv::Session session(model, session_options);

    snapkv::GenerateParams params;
    params.max_tokens = 128;  // greedy by default
    const snapkv::GenerateStats stats = snapkv::generate(session, prompt, params, [](int32_t, std::string_view piece) {
      std::cout << piece << std::flush;
      return true;
    });
    std::printf("\n%d prompt tokens, %d generated; KV cache %s instead of %s; peak RSS %s\n", stats.n_prompt,
                stats.n_generated, snapkv::format_bytes(static_cast<double>(session.kv_bytes())).c_str(),
                snapkv::format_bytes(static_cast<double>(session.kv_full_bytes())).c_str(),
                snapkv::format_bytes(static_cast<double>(snapkv::peak_rss_bytes())).c_str());
    return 0;
  } catch (const std::exception& e) {  // snapkv::Error and std::stoi's errors: one line
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
