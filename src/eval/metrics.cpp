#include "eval/metrics.h"

#include <map>
#include <set>

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

}  // namespace snapkv
