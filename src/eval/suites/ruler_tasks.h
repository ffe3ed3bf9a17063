#pragma once
// The RULER synthetic tasks (as RULER's Python generators at NVIDIA/RULER @ c3f5e3b make them):
// their table, their input data, and one generator that turns (task, case seed, haystack size)
// into the text of a case. Sizing the haystack to a token length is the suite's job (ruler.cpp);
// everything here is a pure function of its arguments, so a case can be rebuilt alone from its
// seed.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

enum class RulerKind { kNiah, kVariableTracking, kCommonWords, kFreqWords };
enum class RulerHaystack { kNoise, kEssay, kNeedle };  // niah only
enum class RulerItem { kWords, kNumbers, kUuids };     // niah keys and values

struct RulerTask {
  const char* name;
  RulerKind kind;
  int max_tokens;  // RULER's tokens_to_generate
  // niah only: the haystack, key and value types, and the numbers of keys, values per key and
  // queried keys (synthetic.yaml).
  RulerHaystack haystack = RulerHaystack::kNoise;
  RulerItem key = RulerItem::kWords, value = RulerItem::kNumbers;
  int n_keys = 1, n_values = 1, n_queries = 1;
};

// The 11 tasks in RULER's order (qa_1 and qa_2 are left out: their data is not available).
std::span<const RulerTask> ruler_tasks();
// nullptr when there is no task of that name.
const RulerTask* find_ruler_task(std::string_view name);

// The inputs read from <data>/ruler: PaulGrahamEssays.json (RULER's essay haystack, one
// {"text": ...} object) and the wonderwords 2.2.0 noun, adjective and verb lists.
struct RulerData {
  std::vector<std::string> essay_words;     // PaulGrahamEssays.json "text", split on whitespace
  std::vector<uint8_t> essay_sentence_end;  // 1 where a word ends a sentence (see ruler_tasks.cpp)
  std::vector<std::string> adjectives;      // sorted, unique (niah "words" keys: adjective-noun)
  std::vector<std::string> nouns;           // sorted, unique
  std::vector<std::string> cwe_words;       // nouns + adjectives + verbs, unique, sorted (unshuffled)
};
// Throws Error(kBadFile) naming the file that is missing or unreadable.
RulerData load_ruler_data(const std::string& data_dir);

// vt's in-context example, built once (RULER: at max_seq_length 500 with 3-letter variables and
// the value 12345): its full text, ending with the answer and "\n", and the answer's variables.
struct VtExample {
  std::string text;
  std::vector<std::string> vars;
};

// What every generated case shares: the suite's seed (RULER's random.Random(seed) shuffles use
// it afresh every time), the length the case is made for (cwe and fwe change with it), and vt's
// example.
struct RulerGenContext {
  uint64_t seed = 42;
  int length = 4096;
  const VtExample* vt_example = nullptr;
};

// The text of one case, split where the runner may move the question.
struct RulerText {
  std::string context;   // the instruction and the haystack (and the few-shot example, if any)
  std::string question;  // the template's question sentence
  std::string answer_prefix;
  std::vector<std::string> references;
  int depth = -1;  // niah: where the first needle of the text sits, percent; -1 otherwise
};

// One case of `task` with a haystack of `size` units: noise lines, essay words or distractor
// needles (niah), noise lines (vt), distinct words (cwe) or words in all (fwe). size must be at
// least ruler_min_size(task).
RulerText generate_ruler_case(const RulerTask& task, const RulerData& data, const RulerGenContext& ctx,
                              uint64_t case_seed, int64_t size);
int64_t ruler_min_size(const RulerTask& task);
// RULER's step for the haystack size at this length (used to estimate the search range).
int64_t ruler_incremental(const RulerTask& task, int length);
// The largest size the data allows (cwe: the number of distinct words), else INT64_MAX.
int64_t ruler_max_size(const RulerTask& task, const RulerData& data);

// vt's example (variable_tracking.py, its first call): the template over noise lines as many as
// keep it within 500 tokens (count_tokens counts plain text), with a 4-hop chain of 3-letter
// variables starting at 12345.
VtExample make_vt_example(uint64_t seed, const std::function<int64_t(std::string_view)>& count_tokens);

}  // namespace snapkv
