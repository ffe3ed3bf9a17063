#pragma once
// Context files: a session's state saved after a prefill (a long document, a conversation), so that
// later runs ask about it without prefilling it again (docs/context-files.md).
//
//   snapkv::Session s(model, {.press = {.press = "snapkv", .capacity = 1024}});
//   s.prefill(model.tokenizer().encode(document, true, false));
//   snapkv::save_context(s, "doc.snapkv");               // pressed: used as it is later
//   snapkv::Session q = snapkv::load_context(model, "doc.snapkv");
//   snapkv::generate(q, question_ids, params, on_token);
//
// A session without a press saves its whole cache with the last queries of every layer; loaded
// into a session with a press, the whole cache is pressed at the next prefill (the question), the
// window sliding on from those queries: the same selection as one prefill of document and question.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "snapkv/model.h"
#include "snapkv/session.h"

namespace snapkv {

struct ContextInfo {
  std::string model_name;  // of the model that made it
  std::string press;       // what pressed it ("full" for a whole cache)
  bool pressed = false;
  std::string kv_type;
  int n_tokens = 0;
  int64_t entries = 0;  // over all layers and heads
  size_t file_bytes = 0;
  // How a question is asked on it: the text before and after the question (after a document: a
  // blank line before, and with a chat template the end of the user turn and the assistant's
  // header after; after a conversation: the template's next user turn), and whether special
  // tokens in them are parsed.
  std::string question_prefix = "\n\n", question_suffix;
  bool chat = false;
};

// Saves what session holds, atomically (a temporary file renamed over path). Only question_prefix,
// question_suffix and chat are taken from notes. Returns the bytes written. Error(kInvalidArgument) for a session
// that holds nothing or is mid-prefill, Error(kUnsupported) for a per_query_head cache,
// Error(kBadFile) when path cannot be written (it is then unchanged).
size_t save_context(const Session& session, const std::string& path, const ContextInfo& notes = {});

// A session on model holding the state saved in path; options.kv_type is taken from the file and
// options.n_ctx (0: the model's) must hold its tokens. With a press in options, the file must hold
// a whole cache, which is pressed at the next prefill. Error(kBadFile) for a file that is not a
// valid context file or was made with another model or tokenizer (naming it); Error(kInvalidArgument)
// for a press on a pressed file; Error(kUnsupported) for a press that cannot press a saved cache
// (h2o, per_query_head); Error(kOutOfRange) when the context does not fit n_ctx.
Session load_context(const Model& model, const std::string& path, SessionOptions options = {},
                     ContextInfo* info = nullptr);

// n sessions on the state saved in path (read and checked once), e.g. one per question; as
// load_context otherwise.
std::vector<Session> load_contexts(const Model& model, const std::string& path, int n, SessionOptions options = {},
                                   ContextInfo* info = nullptr);

// What a context file holds, validated (Error(kBadFile) as load_context), without a model.
ContextInfo inspect_context(const std::string& path);

}  // namespace snapkv
