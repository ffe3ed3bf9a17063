// The RULER task generators (see ruler_tasks.h), written after RULER's Python generators.
// Each function below names the RULER script it follows. All randomness comes from EvalRng:
// RULER's global `random`/`np.random` draws become draws from the case's own stream, and its
// `random.Random(seed).shuffle(x)` (a fresh generator every time, so equal-length lists get the
// same permutation) becomes fixed_shuffle(x, seed).
#include "eval/suites/ruler_tasks.h"

#include "eval/data_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <set>
#include <sstream>
#include <unordered_set>

#include "eval/rng.h"
#include "util/error.h"

namespace snapkv {
namespace {

constexpr RulerTask kTasks[] = {
    // name, kind, tokens_to_generate, haystack, key, value, keys, values, queries (synthetic.yaml)
    {"niah_single_1", RulerKind::kNiah, 128, RulerHaystack::kNoise, RulerItem::kWords, RulerItem::kNumbers, 1, 1, 1},
    {"niah_single_2", RulerKind::kNiah, 128, RulerHaystack::kEssay, RulerItem::kWords, RulerItem::kNumbers, 1, 1, 1},
    {"niah_single_3", RulerKind::kNiah, 128, RulerHaystack::kEssay, RulerItem::kWords, RulerItem::kUuids, 1, 1, 1},
    {"niah_multikey_1", RulerKind::kNiah, 128, RulerHaystack::kEssay, RulerItem::kWords, RulerItem::kNumbers, 4, 1, 1},
    {"niah_multikey_2", RulerKind::kNiah, 128, RulerHaystack::kNeedle, RulerItem::kWords, RulerItem::kNumbers, 1, 1, 1},
    {"niah_multikey_3", RulerKind::kNiah, 128, RulerHaystack::kNeedle, RulerItem::kUuids, RulerItem::kUuids, 1, 1, 1},
    {"niah_multivalue", RulerKind::kNiah, 128, RulerHaystack::kEssay, RulerItem::kWords, RulerItem::kNumbers, 1, 4, 1},
    {"niah_multiquery", RulerKind::kNiah, 128, RulerHaystack::kEssay, RulerItem::kWords, RulerItem::kNumbers, 4, 1, 4},
    {"vt", RulerKind::kVariableTracking, 30},
    {"cwe", RulerKind::kCommonWords, 120},
    {"fwe", RulerKind::kFreqWords, 50},
};

constexpr const char* kNoise =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

// ---------------------------------------------------------------------------------------------
// Small helpers

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// random.Random(seed).shuffle(items): the same permutation for every list of one length.
template <typename T>
void fixed_shuffle(std::vector<T>& items, uint64_t seed) {
  EvalRng rng(EvalRng::derive(seed, "random.Random(seed)"));
  rng.shuffle(items);
}

// random.sample(range(n), m): m distinct indexes of [0, n) in random order.
std::vector<int64_t> sample_indexes(EvalRng& rng, int64_t n, int64_t m) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(m));
  if (m * 4 < n) {  // few of many: draw and reject repeats
    std::unordered_set<int64_t> seen;
    while (static_cast<int64_t>(out.size()) < m) {
      const int64_t x = rng.uniform(0, n - 1);
      if (seen.insert(x).second) out.push_back(x);
    }
    return out;
  }
  std::vector<int64_t> all(static_cast<size_t>(n));  // partial Fisher-Yates
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  for (int64_t i = 0; i < m; ++i) {
    std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(rng.uniform(i, n - 1))]);
    out.push_back(all[static_cast<size_t>(i)]);
  }
  return out;
}

// ''.join(random.choices(alphabet, k=n))
std::string random_letters(EvalRng& rng, int n, char first) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(first + rng.uniform(0, 25));
  return s;
}

// ---------------------------------------------------------------------------------------------
// Data (<data>/ruler: PaulGrahamEssays.json and the wonderwords word lists)

// re.sub(r'\s+', ' ', text).split(' ') without the empty words at the ends.
std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(std::move(w));
  return words;
}

// Stands in for NLTK's sent_tokenize (punkt): a sentence ends with a word whose last character,
// after closing quotes and brackets, is '.', '!' or '?' — unless that word is a common
// abbreviation or a single-letter initial ("Mr.", "e.g.", "J.").
bool ends_sentence(std::string_view w) {
  while (!w.empty() && std::string_view("\"')]}").find(w.back()) != std::string_view::npos) w.remove_suffix(1);
  if (w.size() >= 3 && w.substr(w.size() - 3) == "\xE2\x80\x9D") w.remove_suffix(3);  // ”
  if (w.size() >= 3 && w.substr(w.size() - 3) == "\xE2\x80\x99") w.remove_suffix(3);  // ’
  if (w.empty() || std::string_view(".!?").find(w.back()) == std::string_view::npos) return false;
  if (w.back() != '.') return true;
  std::string stem(w.substr(0, w.size() - 1));
  std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> kAbbreviations = {"mr",  "mrs", "ms", "dr",   "st", "vs", "etc",  "e.g", "i.e",
                                                       "inc", "jr",  "sr", "prof", "no", "co", "corp", "u.s"};
  return !(stem.size() == 1 && std::isalpha(static_cast<unsigned char>(stem[0]))) && !kAbbreviations.contains(stem);
}

}  // namespace

std::span<const RulerTask> ruler_tasks() { return kTasks; }

const RulerTask* find_ruler_task(std::string_view name) {
  for (const RulerTask& t : kTasks) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

RulerData load_ruler_data(const std::string& data_dir) {
  RulerData d;
  const std::string essay_path = data_dir + "/ruler/PaulGrahamEssays.json";
  const nlohmann::json essay = nlohmann::json::parse(read_data_file(essay_path), nullptr, /*allow_exceptions=*/false);
  if (essay.is_discarded()) fail(ErrorKind::kBadFile, "{}: not valid JSON", essay_path);
  if (!essay.is_object() || !essay.contains("text") || !essay["text"].is_string()) {
    fail(ErrorKind::kBadFile, "{}: expected an object {{\"text\": \"...\"}}", essay_path);
  }
  d.essay_words = split_whitespace(essay["text"].get_ref<const std::string&>());
  if (d.essay_words.empty()) fail(ErrorKind::kBadFile, "{}: the essay text is empty", essay_path);
  d.essay_sentence_end.reserve(d.essay_words.size());
  for (const std::string& w : d.essay_words) d.essay_sentence_end.push_back(ends_sentence(w) ? 1 : 0);

  const std::string words_dir = data_dir + "/ruler/wonderwords_v2.2.0/";
  d.nouns = read_word_list(words_dir + "nounlist.txt");
  d.adjectives = read_word_list(words_dir + "adjectivelist.txt");
  const std::vector<std::string> verbs = read_word_list(words_dir + "verblist.txt");
  std::set<std::string> all(d.nouns.begin(), d.nouns.end());
  all.insert(d.adjectives.begin(), d.adjectives.end());
  all.insert(verbs.begin(), verbs.end());
  d.cwe_words.assign(all.begin(), all.end());
  return d;
}

namespace {

// ---------------------------------------------------------------------------------------------
// niah (niah.py)

const char* item_plural(RulerItem t) {
  switch (t) {
    case RulerItem::kWords:
      return "words";
    case RulerItem::kNumbers:
      return "numbers";
    case RulerItem::kUuids:
      return "uuids";
  }
  return "";
}

// str(uuid.UUID(int=random.getrandbits(128), version=4))
std::string random_uuid4(EvalRng& rng) {
  uint64_t hi = rng.bits(), lo = rng.bits();
  hi = (hi & ~0xF000ull) | 0x4000ull;                  // version 4
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48,
                     lo & 0xFFFFFFFFFFFFull);
}

// generate_random(type): an "adjective-noun" (a uniform pick from the sorted unique product, drawn
// without building its 6 million strings), a 7-digit number, or a uuid4.
std::string random_item(EvalRng& rng, RulerItem t, const RulerData& d) {
  switch (t) {
    case RulerItem::kWords: {
      const std::string& adj = rng.pick(d.adjectives);
      return adj + "-" + rng.pick(d.nouns);
    }
    case RulerItem::kNumbers:
      return std::to_string(rng.uniform(1000000, 9999999));
    case RulerItem::kUuids:
      return random_uuid4(rng);
  }
  return "";
}

std::string niah_needle(RulerItem value, const std::string& key, const std::string& v) {
  return fmt::format("One of the special magic {} for {} is: {}.", item_plural(value), key, v);
}

// DEPTHS = list(np.round(np.linspace(0, 100, num=40, endpoint=True)).astype(int))
std::vector<int> niah_depths() {
  std::vector<int> d;
  for (int i = 0; i < 40; ++i) d.push_back(static_cast<int>(std::lround(i * 100.0 / 39)));
  return d;
}

// Essay haystack: the first `size` words (repeated if needed), cut into sentences; the needles go
// between sentences at depths sampled without replacement from DEPTHS; joined with " ".
std::string essay_haystack(EvalRng& rng, const RulerData& d, int64_t size, const std::vector<std::string>& needles,
                           int* first_depth) {
  const auto n_essay = static_cast<int64_t>(d.essay_words.size());
  std::vector<int64_t> sentence_start{0};
  for (int64_t w = 0; w + 1 < size; ++w) {
    if (d.essay_sentence_end[static_cast<size_t>(w % n_essay)]) sentence_start.push_back(w + 1);
  }
  const auto n_sents = static_cast<int64_t>(sentence_start.size());
  sentence_start.push_back(size);

  const std::vector<int> depths = niah_depths();
  std::vector<int> picked;
  for (const int64_t i : sample_indexes(rng, 40, static_cast<int64_t>(needles.size()))) {
    picked.push_back(depths[static_cast<size_t>(i)]);
  }
  std::sort(picked.begin(), picked.end());
  *first_depth = picked.empty() ? -1 : picked.front();

  std::vector<int64_t> at{0};  // [0] + sorted(int(n_sents * depth / 100)) + [n_sents]
  for (const int depth : picked) at.push_back(static_cast<int64_t>(static_cast<double>(n_sents) * (depth / 100.0)));
  at.push_back(n_sents);

  std::string out;
  for (size_t i = 1; i < at.size(); ++i) {
    if (i > 1) out += ' ';
    for (int64_t w = sentence_start[static_cast<size_t>(at[i - 1])]; w < sentence_start[static_cast<size_t>(at[i])];
         ++w) {
      if (w > sentence_start[static_cast<size_t>(at[i - 1])]) out += ' ';
      out += d.essay_words[static_cast<size_t>(w % n_essay)];
    }
    if (i - 1 < needles.size()) out += ' ' + needles[i - 1];
  }
  return out;
}

// Noise and needle haystacks: `lines` joined with "\n", the needles inserted before the lines at
// random indexes (sorted descending and zipped with the needles, as RULER inserts them).
std::string line_haystack(EvalRng& rng, const std::vector<std::string>& lines, const std::vector<std::string>& needles,
                          int* first_depth) {
  const auto n = static_cast<int64_t>(lines.size());
  std::vector<int64_t> indexes = sample_indexes(rng, n, static_cast<int64_t>(needles.size()));
  std::sort(indexes.rbegin(), indexes.rend());
  std::vector<int> needle_at(lines.size(), -1);
  for (size_t j = 0; j < indexes.size(); ++j) needle_at[static_cast<size_t>(indexes[j])] = static_cast<int>(j);
  *first_depth = indexes.empty() ? -1 : static_cast<int>(std::lround(100.0 * static_cast<double>(indexes.back()) / n));

  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (needle_at[i] >= 0) out += needles[static_cast<size_t>(needle_at[i])] + '\n';
    out += lines[i];
  }
  return out;
}

RulerText generate_niah(const RulerTask& t, const RulerData& d, const RulerGenContext& ctx, EvalRng& rng,
                        int64_t size) {
  std::vector<std::string> keys, needles;
  std::vector<std::vector<std::string>> values;
  for (int k = 0; k < t.n_keys; ++k) {
    std::string key = random_item(rng, t.key, d);
    while (std::find(keys.begin(), keys.end(), key) != keys.end()) key = random_item(rng, t.key, d);
    keys.push_back(key);
    values.emplace_back();
    for (int v = 0; v < t.n_values; ++v) {
      values.back().push_back(random_item(rng, t.value, d));
      needles.push_back(niah_needle(t.value, key, values.back().back()));
    }
  }
  fixed_shuffle(needles, ctx.seed);

  RulerText out;
  std::string haystack;
  if (t.haystack == RulerHaystack::kEssay) {
    haystack = essay_haystack(rng, d, size, needles, &out.depth);
  } else {
    std::vector<std::string> lines;
    for (int64_t i = 0; i < size; ++i) {
      if (t.haystack == RulerHaystack::kNoise) {
        lines.emplace_back(kNoise);
        continue;
      }
      // A distractor needle; unlike RULER, never with one of the queried keys.
      std::string key = random_item(rng, t.key, d);
      while (std::find(keys.begin(), keys.end(), key) != keys.end()) key = random_item(rng, t.key, d);
      lines.push_back(niah_needle(t.value, key, random_item(rng, t.value, d)));
    }
    haystack = line_haystack(rng, lines, needles, &out.depth);
  }

  // The query: n_queries of the keys, "a, b, and c"; the answers: all values of those keys.
  std::vector<std::string> queries;
  for (const int64_t i : sample_indexes(rng, t.n_keys, t.n_queries)) {
    queries.push_back(keys[static_cast<size_t>(i)]);
    for (const std::string& v : values[static_cast<size_t>(i)]) out.references.push_back(v);
  }
  std::string query = queries.back();
  if (queries.size() > 1) {
    queries.pop_back();
    query = join(queries, ", ") + ", and " + query;
  }

  std::string head =
      "Some special magic {type} are hidden within the following text. Make sure to memorize it. "
      "I will quiz you about the {type} afterwards.\n";
  std::string question = "What are all the special magic {type} for {query} mentioned in the provided text?";
  std::string prefix = " The special magic {type} for {query} mentioned in the provided text are";
  std::string type = item_plural(t.value);
  if (t.n_queries * t.n_values == 1) {  // one answer: the template in the singular
    for (std::string* s : {&head, &question, &prefix}) {
      replace_all(*s, "Some", "A");
      replace_all(*s, "are all", "is");
      replace_all(*s, "are", "is");
      replace_all(*s, "answers", "answer");
    }
    type.pop_back();
  }
  for (std::string* s : {&head, &question, &prefix}) {
    replace_all(*s, "{type}", type);
    replace_all(*s, "{query}", query);
  }
  out.context = head + haystack;
  out.question = question;
  out.answer_prefix = prefix;
  return out;
}

// ---------------------------------------------------------------------------------------------
// vt (variable_tracking.py, one chain of 4 hops over the noise haystack)

constexpr int kVtHops = 4;
constexpr const char* kVtHead =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n";

struct VtChain {
  std::vector<std::string> vars;
  std::string value;
  std::vector<std::string> lines;  // "VAR X0 = value", then "VAR Xj+1 = VAR Xj " (trailing space)
};

// generate_chains(1, 4): distinct random variable names of `letters` uppercase letters.
VtChain vt_chain(EvalRng& rng, int letters, const std::string& value) {
  VtChain c;
  while (static_cast<int>(c.vars.size()) < kVtHops + 1) {
    std::string v = random_letters(rng, letters, 'A');
    if (v != "VAR" && std::find(c.vars.begin(), c.vars.end(), v) == c.vars.end()) c.vars.push_back(v);
  }
  c.value = value.empty() ? std::to_string(rng.uniform(10000, 99998)) : value;  // np.random.randint(10000, 99999)
  c.lines.push_back(fmt::format("VAR {} = {}", c.vars[0], c.value));
  for (int j = 0; j < kVtHops; ++j) c.lines.push_back(fmt::format("VAR {} = VAR {} ", c.vars[j + 1], c.vars[j]));
  return c;
}

// size noise lines with the chain's lines inserted, in order, at sorted random positions.
std::string vt_haystack(EvalRng& rng, const VtChain& c, int64_t size) {
  std::vector<int64_t> positions = sample_indexes(rng, size, static_cast<int64_t>(c.lines.size()));
  std::sort(positions.begin(), positions.end());
  std::string out;
  size_t next = 0;
  for (int64_t i = 0; i < size; ++i) {
    while (next < positions.size() && positions[next] == i) out += c.lines[next++] + '\n';
    out += kNoise;
    if (i + 1 < size) out += '\n';
  }
  replace_all(out, ". \n", ".\n");
  return out;
}

std::string vt_question(const std::string& value) {
  return fmt::format("Question: Find all variables that are assigned the value {} in the text above.", value);
}

std::string vt_prefix(const std::string& value) {
  return fmt::format(
      " Answer: According to the chain(s) of variable assignment in the text above, {} variables are "
      "assigned the value {}, they are: ",
      kVtHops + 1, value);
}

// randomize_icl: the example's answer variables renamed (same lengths) and 12345 replaced by a
// new value. Unlike RULER the new names differ from every old one, so renames cannot chain.
std::string vt_randomize_example(EvalRng& rng, const VtExample& ex) {
  std::string text = ex.text;
  std::vector<std::string> taken = ex.vars;
  for (const std::string& old : ex.vars) {
    std::string fresh = random_letters(rng, static_cast<int>(old.size()), 'A');
    while (fresh == "VAR" || std::find(taken.begin(), taken.end(), fresh) != taken.end()) {
      fresh = random_letters(rng, static_cast<int>(old.size()), 'A');
    }
    taken.push_back(fresh);
    replace_all(text, old, fresh);
  }
  replace_all(text, "12345", std::to_string(rng.uniform(10000, 99998)));
  return text;
}

RulerText generate_vt(const RulerGenContext& ctx, EvalRng& rng, int64_t size) {
  if (ctx.vt_example == nullptr) fail(ErrorKind::kInternal, "ruler vt: no in-context example");
  const VtChain chain = vt_chain(rng, 5, "");
  const std::string haystack = vt_haystack(rng, chain, size);
  RulerText out;
  out.context = vt_randomize_example(rng, *ctx.vt_example) + "\n" + kVtHead + haystack;
  out.question = vt_question(chain.value);
  out.answer_prefix = vt_prefix(chain.value);
  out.references = chain.vars;
  return out;
}

// ---------------------------------------------------------------------------------------------
// cwe (common_words_extraction.py, freq_cw=30, freq_ucw=3, num_cw=10)

constexpr int kCweCommon = 10;
constexpr const char* kCweHead =
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that "
    "appear most often.\n";
constexpr const char* kCweQuestion = "Question: What are the 10 most common words in the above list?";
constexpr const char* kCwePrefix = " Answer: The top 10 words that appear most often in the list are:";

std::string numbered(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += fmt::format("{}{}. {}", i > 0 ? " " : "", i + 1, words[i]);
  return out;
}

// get_example: n words sampled; the first 10 repeat `common` times, the rest `uncommon` times;
// the list shuffled with random.Random(seed) and numbered. Returns the list and the 10 words.
std::pair<std::string, std::vector<std::string>> cwe_example(EvalRng& rng, const std::vector<std::string>& words,
                                                             uint64_t seed, int64_t n, int common, int uncommon) {
  std::vector<std::string> picked;
  for (const int64_t i : sample_indexes(rng, static_cast<int64_t>(words.size()), n)) {
    picked.push_back(words[static_cast<size_t>(i)]);
  }
  const std::vector<std::string> top(picked.begin(), picked.begin() + kCweCommon);
  std::vector<std::string> list;
  for (int r = 0; r < common; ++r) list.insert(list.end(), top.begin(), top.end());
  for (int r = 0; r < uncommon; ++r) list.insert(list.end(), picked.begin() + kCweCommon, picked.end());
  fixed_shuffle(list, seed);
  return {numbered(list), top};
}

RulerText generate_cwe(const RulerData& d, const RulerGenContext& ctx, EvalRng& rng, int64_t size) {
  std::vector<std::string> words = d.cwe_words;  // sorted(set(nouns + adjs + verbs)), then shuffled
  fixed_shuffle(words, ctx.seed);
  const bool short_ctx = ctx.length < 4096;  // fewer repeats, and a smaller example
  const auto [example, example_answer] =
      cwe_example(rng, words, ctx.seed, short_ctx ? 20 : 40, short_ctx ? 3 : 10, short_ctx ? 1 : 3);
  const auto [list, answer] = cwe_example(rng, words, ctx.seed, size, short_ctx ? 6 : 30, short_ctx ? 1 : 3);
  RulerText out;
  out.context = std::string(kCweHead) + example + "\n" + kCweQuestion + kCwePrefix + " " + numbered(example_answer) +
                "\n" + kCweHead + list;
  out.question = kCweQuestion;
  out.answer_prefix = kCwePrefix;
  out.references = answer;
  return out;
}

// ---------------------------------------------------------------------------------------------
// fwe (freq_words_extraction.py, alpha=2, coded_wordlen=6)

RulerText generate_fwe(const RulerGenContext& ctx, EvalRng& rng, int64_t size) {
  // (max_seq_len - tokens_to_generate) // 50 random 6-letter words, unique, sorted, shuffled.
  const auto vocab_size = static_cast<size_t>(std::max((ctx.length - 50) / 50, 4));
  std::set<std::string> unique;
  while (unique.size() < vocab_size) unique.insert(random_letters(rng, 6, 'a'));
  std::vector<std::string> vocab(unique.begin(), unique.end());
  fixed_shuffle(vocab, ctx.seed);
  vocab[0] = "...";  // the top rank is noise

  // Rank k (1-based) gets int(size * k^-2 / zeta(2)) copies; all copies shuffled.
  constexpr double kZeta2 = std::numbers::pi * std::numbers::pi / 6;
  std::vector<const std::string*> words;
  for (size_t k = 1; k <= vocab.size(); ++k) {
    const auto count =
        static_cast<int64_t>(static_cast<double>(size) * std::pow(static_cast<double>(k), -2.0) / kZeta2);
    for (int64_t c = 0; c < count; ++c) words.push_back(&vocab[k - 1]);
  }
  fixed_shuffle(words, ctx.seed);
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) text += (i > 0 ? " " : "") + *words[i];

  RulerText out;
  out.context =
      "Read the following coded text and track the frequency of each coded word. Find the three most "
      "frequently appeared coded words. " +
      text;
  out.question =
      "Question: Do not provide any explanation. Please ignore the dots '....'. What are the three most "
      "frequently appeared words in the above coded text?";
  out.answer_prefix = " Answer: According to the coded text above, the three most frequently appeared words are:";
  out.references.assign(vocab.begin() + 1, vocab.begin() + 4);
  return out;
}

}  // namespace

RulerText generate_ruler_case(const RulerTask& task, const RulerData& data, const RulerGenContext& ctx,
                              uint64_t case_seed, int64_t size) {
  if (size < ruler_min_size(task)) {
    fail(ErrorKind::kInternal, "ruler {}: haystack size {} below the minimum {}", task.name, size,
         ruler_min_size(task));
  }
  EvalRng rng(case_seed);
  switch (task.kind) {
    case RulerKind::kNiah:
      return generate_niah(task, data, ctx, rng, size);
    case RulerKind::kVariableTracking:
      return generate_vt(ctx, rng, size);
    case RulerKind::kCommonWords:
      return generate_cwe(data, ctx, rng, std::min<int64_t>(size, ruler_max_size(task, data)));
    case RulerKind::kFreqWords:
      return generate_fwe(ctx, rng, size);
  }
  fail(ErrorKind::kInternal, "ruler: unknown task kind");
}

int64_t ruler_min_size(const RulerTask& task) {
  switch (task.kind) {
    case RulerKind::kNiah:  // the needles need distinct line indexes
      return task.haystack == RulerHaystack::kEssay ? 1 : task.n_keys * task.n_values;
    case RulerKind::kVariableTracking:
      return kVtHops + 1;
    case RulerKind::kCommonWords:
      return kCweCommon;
    case RulerKind::kFreqWords:
      return 32;  // enough for the 4th rank to appear once
  }
  return 1;
}

int64_t ruler_incremental(const RulerTask& task, int length) {
  switch (task.kind) {
    case RulerKind::kNiah:
      if (task.haystack == RulerHaystack::kEssay) return 500;
      return length < 4096 ? 5 : 25;
    case RulerKind::kVariableTracking:
      return length < 4096 ? 5 : 10;
    case RulerKind::kCommonWords:
      return 10;
    case RulerKind::kFreqWords:
      return std::max(32, (length - 50) / 32);
  }
  return 1;
}

int64_t ruler_max_size(const RulerTask& task, const RulerData& data) {
  // cwe without RULER's english_words.json (not available): at most the wonderwords words.
  if (task.kind == RulerKind::kCommonWords) return static_cast<int64_t>(data.cwe_words.size());
  return std::numeric_limits<int64_t>::max();
}

VtExample make_vt_example(uint64_t seed, const std::function<int64_t(std::string_view)>& count_tokens) {
  // The first call of sys_vartrack_w_noise_random: max_seq_length 500, nothing to generate, the
  // haystack (steps of 5 noise lines) binary-searched so that the template with its answer prefix
  // holds at most 500 tokens.
  const uint64_t example_seed = EvalRng::derive(seed, "vt/example");
  const auto render = [&](int64_t size, VtChain* chain) {
    EvalRng rng(example_seed);
    *chain = vt_chain(rng, 3, "12345");
    return kVtHead + vt_haystack(rng, *chain, size) + "\n" + vt_question(chain->value) + vt_prefix(chain->value);
  };
  constexpr int64_t kMaxTokens = 500, kStep = 5;
  VtChain chain;
  const double per_line = static_cast<double>(count_tokens(render(kStep, &chain))) / kStep;
  int64_t good = kStep, bad = std::max<int64_t>(static_cast<int64_t>(kMaxTokens / per_line * 3), 2 * kStep) + 1;
  while (bad - good > 1) {
    const int64_t mid = (good + bad) / 2;
    (count_tokens(render(mid, &chain)) <= kMaxTokens ? good : bad) = mid;
  }
  VtExample ex;
  ex.text = render(good, &chain) + " " + join(chain.vars, " ") + "\n";
  ex.vars = chain.vars;
  return ex;
}

}  // namespace snapkv
