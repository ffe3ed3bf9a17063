#include "eval/metrics.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "io/tokenizer_unicode.h"

namespace snapkv {

std::vector<std::string> rouge_words(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  for (const char ch : text) {
    const char c = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      cur += c;
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

double rouge1_f(std::string_view reference, std::string_view candidate) {
  const std::vector<std::string> ref = rouge_words(reference), cand = rouge_words(candidate);
  if (ref.empty() || cand.empty()) return 0;
  std::map<std::string, int> counts;
  for (const std::string& w : ref) ++counts[w];
  int overlap = 0;
  for (const std::string& w : cand) {
    const auto it = counts.find(w);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++overlap;
    }
  }
  if (overlap == 0) return 0;
  const double p = static_cast<double>(overlap) / static_cast<double>(cand.size());
  const double r = static_cast<double>(overlap) / static_cast<double>(ref.size());
  return 2 * p * r / (p + r);
}

double needle_word_recall(std::string_view needle, std::string_view answer) {
  static const std::set<std::string> kStop = {"a",  "an", "and", "the", "to", "do", "in", "is", "on", "of", "for",
                                              "at", "it", "be",  "by",  "or", "as", "with", "that", "this"};
  std::set<std::string> content;
  for (std::string& w : rouge_words(needle)) {
    if (!kStop.count(w)) content.insert(std::move(w));
  }
  if (content.empty()) return 0;
  const std::vector<std::string> aw = rouge_words(answer);
  const std::set<std::string> have(aw.begin(), aw.end());
  int found = 0;
  for (const std::string& w : content) found += have.count(w) ? 1 : 0;
  return static_cast<double>(found) / static_cast<double>(content.size());
}


// --- UTF-8 and Python's str helpers ---------------------------------------------------------
namespace {

// One code point of UTF-8 at s[i]; `len` is its byte length. A malformed byte is returned as
// itself (a value >= 0x80 that is neither whitespace nor punctuation) with length 1.
char32_t next_cp(std::string_view s, size_t i, size_t* len) {
  bool valid = true;
  return tokenizer_detail::utf8_decode(s, i, len, &valid);
}

// Python's str.isspace().
bool py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.split() with no argument: runs of whitespace separate, none are empty.
std::vector<std::string_view> py_split(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0, start = std::string_view::npos;
  while (i < s.size()) {
    size_t len = 1;
    const char32_t c = next_cp(s, i, &len);
    if (py_space(c)) {
      if (start != std::string_view::npos) words.push_back(s.substr(start, i - start));
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = i;
    }
    i += len;
  }
  if (start != std::string_view::npos) words.push_back(s.substr(start));
  return words;
}

// str.lower() for ASCII, Latin-1, Greek and Cyrillic capitals (the letters these benchmarks'
// English texts contain); other characters are kept.
char32_t py_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const char32_t c = next_cp(s, i, &len);
    if (c < 0x80 || len > 1) {
      tokenizer_detail::append_utf8(out, static_cast<uint32_t>(py_lower(c)));
    } else {
      out += s[i];  // a malformed byte passes through
    }
    i += len;
  }
  return out;
}

// Python's string.punctuation.
bool ascii_punct(char32_t c) { return c < 0x80 && std::ispunct(static_cast<int>(c)) != 0; }

// Regex \w for Python str patterns, approximated: ASCII letters, digits and '_', and every
// non-ASCII character except whitespace and the common punctuation and symbol blocks.
bool py_word(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) != 0 || c == '_';
  if (py_space(c)) return false;
  if (c >= 0xA1 && c <= 0xBF) return c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA || c >= 0xBC;
  if (c == 0xD7 || c == 0xF7) return false;
  if ((c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E)) return false;  // general punctuation
  if ((c >= 0x20A0 && c <= 0x20CF) || (c >= 0x2190 && c <= 0x23FF) || (c >= 0x2500 && c <= 0x27BF)) return false;
  if ((c >= 0x3001 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) || (c >= 0xFF01 && c <= 0xFF0F)) return false;
  if (c >= 0x1F300 && c <= 0x1FAFF) return false;  // emoji
  return true;
}

size_t cp_count(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    size_t len = 1;
    next_cp(s, i, &len);
    i += len;
  }
  return n;
}

bool is_abcd(char c) { return c >= 'A' && c <= 'D'; }

std::string sorted_unique(std::string s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

// Python float(s) succeeds: optional surrounding whitespace, sign, digits (single '_' between
// digits), '.', exponent; or inf / infinity / nan. Sets *value.
bool py_float(std::string_view s, double* value) {
  std::vector<std::string_view> parts = py_split(s);
  if (parts.size() != 1) return false;
  const std::string_view t = parts[0];
  std::string clean;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
  std::string rest = lower(t.substr(i));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    clean += rest;
    *value = std::strtod(clean.c_str(), nullptr);
    return true;
  }
  auto digits = [&](bool required) {
    size_t n = 0;
    while (i < t.size()) {
      if (std::isdigit(static_cast<unsigned char>(t[i]))) {
        clean += t[i++];
        ++n;
      } else if (t[i] == '_' && n > 0 && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
        ++i;
      } else {
        break;
      }
    }
    return n > 0 || !required;
  };
  const size_t before = clean.size();
  digits(false);
  const bool int_part = clean.size() > before;
  bool frac_part = false;
  if (i < t.size() && t[i] == '.') {
    clean += t[i++];
    const size_t b = clean.size();
    digits(false);
    frac_part = clean.size() > b;
  }
  if (!int_part && !frac_part) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    clean += t[i++];
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
    if (!digits(true)) return false;
  }
  if (i != t.size()) return false;
  *value = std::strtod(clean.c_str(), nullptr);
  return true;
}

}  // namespace

// --- LongBench ------------------------------------------------------------------------------

namespace {

// A text as pltrdy rouge sees it: sentences of interned word ids.
std::vector<std::vector<int>> rouge_sentences(std::string_view text, std::map<std::string, int, std::less<>>& ids) {
  std::vector<std::vector<int>> sentences;
  auto intern = [&](std::string_view w) {
    auto it = ids.find(w);
    if (it == ids.end()) it = ids.emplace(std::string(w), static_cast<int>(ids.size())).first;
    return it->second;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('.', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view piece = text.substr(start, end - start);
    if (!piece.empty()) {
      // " ".join(piece.split()).split(" "): a whitespace-only piece is one empty word.
      std::vector<int> words;
      for (std::string_view w : py_split(piece)) words.push_back(intern(w));
      if (words.empty()) words.push_back(intern(""));
      sentences.push_back(std::move(words));
    }
    start = end + 1;
  }
  return sentences;
}

}  // namespace

double longbench_rouge_l(std::string_view prediction, std::string_view reference) {
  std::map<std::string, int, std::less<>> ids;
  const std::vector<std::vector<int>> hyp = rouge_sentences(prediction, ids);
  const std::vector<std::vector<int>> ref = rouge_sentences(reference, ids);
  if (hyp.empty() || ref.empty()) return 0;  // rouge raises ValueError
  std::set<int> ref_words, hyp_words, lcs_union;
  for (const auto& s : ref) ref_words.insert(s.begin(), s.end());
  for (const auto& s : hyp) hyp_words.insert(s.begin(), s.end());

  std::vector<int> table;
  for (const std::vector<int>& x : ref) {
    for (const std::vector<int>& y : hyp) {
      const size_t n = x.size(), m = y.size(), w = m + 1;
      table.assign((n + 1) * w, 0);
      for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
          table[i * w + j] = x[i - 1] == y[j - 1] ? table[(i - 1) * w + j - 1] + 1
                                                  : std::max(table[(i - 1) * w + j], table[i * w + j - 1]);
        }
      }
      // _recon_lcs recurses once per step and once more at the edge.
      size_t i = n, j = m;
      int frames = 1;
      while (i > 0 && j > 0) {
        if (x[i - 1] == y[j - 1]) {
          lcs_union.insert(x[i - 1]);
          --i;
          --j;
        } else if (table[(i - 1) * w + j] > table[i * w + j - 1]) {
          --i;
        } else {
          --j;
        }
        ++frames;
      }
      if (frames > kLongBenchRougeMaxFrames) return 0;  // RecursionError
    }
  }
  const double llcs = static_cast<double>(lcs_union.size());
  const double r = llcs / static_cast<double>(ref_words.size());
  const double p = llcs / static_cast<double>(hyp_words.size());
  return 2.0 * ((p * r) / (p + r + 1e-8));
}

std::string normalize_answer(std::string_view text, bool lowercase) {
  const std::string lowered = lowercase ? lower(text) : std::string(text);
  std::string no_punct;
  no_punct.reserve(lowered.size());
  for (const char ch : lowered) {
    if (!ascii_punct(static_cast<unsigned char>(ch))) no_punct += ch;
  }
  // Replace the word runs "a", "an", "the" by a space.
  std::string no_articles;
  no_articles.reserve(no_punct.size());
  const std::string_view t = no_punct;
  size_t i = 0;
  while (i < t.size()) {
    size_t len = 1;
    if (!py_word(next_cp(t, i, &len))) {
      no_articles.append(t.substr(i, len));
      i += len;
      continue;
    }
    size_t end = i;
    while (end < t.size()) {
      size_t l = 1;
      if (!py_word(next_cp(t, end, &l))) break;
      end += l;
    }
    const std::string_view word = t.substr(i, end - i);
    if (word == "a" || word == "an" || word == "the") {
      no_articles += ' ';
    } else {
      no_articles.append(word);
    }
    i = end;
  }
  std::string out;
  for (std::string_view w : py_split(no_articles)) {
    if (!out.empty()) out += ' ';
    out.append(w);
  }
  return out;
}

double qa_f1(std::string_view prediction, std::string_view reference, bool lowercase) {
  const std::string np = normalize_answer(prediction, lowercase), nr = normalize_answer(reference, lowercase);
  const std::vector<std::string_view> pw = py_split(np), rw = py_split(nr);
  std::map<std::string_view, int> counts;
  for (std::string_view w : rw) ++counts[w];
  int same = 0;
  for (std::string_view w : pw) {
    const auto it = counts.find(w);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0;
  const double p = 1.0 * same / static_cast<double>(pw.size());
  const double r = 1.0 * same / static_cast<double>(rw.size());
  return (2 * p * r) / (p + r);
}

// --- L-Eval ---------------------------------------------------------------------------------

std::string leval_mc_answer(std::string_view response, bool multiple) {
  if (py_split(response).empty()) return "None";
  if (std::string_view("ABCD").find(response) != std::string_view::npos) return std::string(response);
  if (!multiple) {
    for (const char c : response) {
      if (is_abcd(c)) return std::string(1, c);
    }
  }
  std::string cleaned;
  size_t lead = 0;
  while (lead < response.size() && is_abcd(response[lead])) cleaned += response[lead++];
  if (cleaned.size() > 1) return sorted_unique(cleaned);
  std::string_view rest = response.substr(lead);
  rest = rest.substr(0, rest.find("Question"));
  // re.findall(r"\s*[A-Z](?=[\s.)])"), then only A-D kept.
  for (size_t i = 0; i < rest.size(); ++i) {
    if (!is_abcd(rest[i]) || i + 1 >= rest.size()) continue;
    size_t len = 1;
    const char32_t next = next_cp(rest, i + 1, &len);
    if (py_space(next) || next == '.' || next == ')') cleaned += rest[i];
  }
  cleaned = sorted_unique(cleaned);
  if (cleaned.empty()) {
    bool has_answer = false;
    for (const char c : rest) {
      if (is_abcd(c)) {
        cleaned += c;
        has_answer = true;
      } else if (has_answer) {
        break;
      }
    }
  }
  return cleaned.empty() ? std::string("A") : cleaned;
}

std::string leval_mc_reference(std::string_view reference) {
  const std::vector<std::string_view> words = py_split(reference);
  std::string cleaned;
  if (!words.empty()) {
    for (const char c : words[0]) {
      if (is_abcd(c)) cleaned += c;
    }
  }
  return cleaned.empty() ? "A" : cleaned;
}

std::string leval_math_answer(std::string_view response) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string_view ret;
  bool matched = false;
  static constexpr std::string_view kLead = "The answer is ";
  for (size_t at = response.find(kLead); at != std::string_view::npos; at = response.find(kLead, at + 1)) {
    const size_t start = at + kLead.size();
    size_t end = start;
    while (end < response.size()) {
      size_t len = 1;
      if (py_space(next_cp(response, end, &len))) break;
      end += len;
    }
    if (end > start) {
      ret = response.substr(start, end - start);
      matched = true;
      break;
    }
  }
  if (!matched) {
    std::string_view first = response.substr(0, response.find("\n\n"));
    // The last ' '-separated word that contains a digit.
    size_t end = first.size();
    while (true) {
      const size_t sp = end == 0 ? std::string_view::npos : first.rfind(' ', end - 1);
      const size_t start = sp == std::string_view::npos ? 0 : sp + 1;
      const std::string_view word = first.substr(start, end - start);
      if (std::any_of(word.begin(), word.end(), is_digit)) {
        ret = word;
        break;
      }
      if (sp == std::string_view::npos) break;
      end = sp;
    }
  }
  std::string digits;
  for (const char c : ret) {
    if (is_digit(c)) digits += c;
    if (c == '.') break;
  }
  return digits;
}

std::string leval_judge_answer(std::string_view response) {
  const std::string low = lower(response);
  const std::string_view loyalty = std::string_view(low).substr(0, low.find("[fact:"));
  for (std::string_view w : py_split(loyalty)) {
    if (w.find("true") != std::string_view::npos) return "true";
    if (w.find("false") != std::string_view::npos) return "false";
  }
  return "<error>";
}

std::string leval_judge_reference(std::string_view reference) {
  const std::string low = lower(reference);
  const std::string_view loyalty = std::string_view(low).substr(0, low.find("[fact:"));
  const std::vector<std::string_view> words = py_split(loyalty);
  if (words.empty()) return "";
  // str.strip(): from the first word's start to the last word's end.
  const char* b = words.front().data();
  const char* e = words.back().data() + words.back().size();
  return std::string(b, e);
}

double leval_exact_match(std::string_view prediction, std::string_view reference) {
  const std::string nr = normalize_answer(reference, false);
  const bool options = std::all_of(nr.begin(), nr.end(), is_abcd);
  if (options) {
    const std::string np = normalize_answer(prediction, false);
    if (np == nr) return 1;
    const bool subset = std::all_of(np.begin(), np.end(), [&](char c) { return nr.find(c) != std::string::npos; });
    return subset ? 0.25 : 0;
  }
  double p = 0, g = 0;
  if (py_float(prediction, &p) && py_float(reference, &g)) return p == g ? 1 : 0;
  std::string_view pred = prediction;
  size_t start = 0;
  while (start <= prediction.size()) {
    size_t end = prediction.find('\n', start);
    if (end == std::string_view::npos) end = prediction.size();
    const std::string_view line = prediction.substr(start, end - start);
    if (cp_count(line) > 1) {
      pred = line;
      break;
    }
    start = end + 1;
  }
  auto squash = [](std::string_view s) {
    std::string out = lower(s);
    out.erase(std::remove(out.begin(), out.end(), ' '), out.end());
    return out;
  };
  return squash(pred).find(squash(reference)) != std::string::npos ? 1 : 0;
}

}  // namespace snapkv
