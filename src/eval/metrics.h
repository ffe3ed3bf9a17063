#pragma once
// Answer scores of the evaluation suites, each as its reference implementation computes it
// (shared/data/SOURCES.md names them).
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

// Words as rouge_score's default tokenizer makes them: lowercase, every character outside
// [a-z0-9] becomes a space, split on spaces (no stemming).
std::vector<std::string> rouge_words(std::string_view text);
// ROUGE-1 F (rouge_score): F1 of the unigram overlap (multiset) of reference and candidate, in
// [0, 1]; 0 when either has no word.
double rouge1_f(std::string_view reference, std::string_view candidate);
// The share of the needle's content words (its words minus a short list of stop words: a, an,
// and, the, to, do, in, is, on, of, ...) that appear among the answer's words, in [0, 1]. For
// the default needle: best, thing, san, francisco, eat, sandwich, sit, dolores, park, sunny, day.
double needle_word_recall(std::string_view needle, std::string_view answer);

}  // namespace snapkv
