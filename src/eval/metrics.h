#pragma once
// Answer scores of the evaluation suites, each as its reference implementation computes it
// (named in each section below).

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

// --- LongBench (THUDM LongBench metrics.py) -------------------------------------------------
// Text is UTF-8; "whitespace" is Python's str.split() whitespace (ASCII space, \t..\r,
// \x1c..\x1f, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028/9, U+202F, U+205F, U+3000).

// LongBench's `rouge` score: ROUGE-L F of pltrdy `rouge` 1.0.1 (summary level, exclusive), in
// [0, 1]: each text is split on '.', empty pieces dropped, each piece's whitespace-separated
// words form a sentence (a whitespace-only piece is the sentence of one empty word); m and n
// are the numbers of DISTINCT reference and prediction words; llcs is the number of distinct
// words in the union, over every (reference sentence, prediction sentence) pair, of the LCS
// that the backtrack reconstructs (on a tie it moves along the prediction, j-1); F =
// 2PR/(P+R+1e-8) with R = llcs/m, P = llcs/n. Case-sensitive, no stemming. 0 when either text
// has no sentence (empty, or only '.'), and 0 when the recursive backtrack of the reference
// would overflow Python's stack (more than kLongBenchRougeMaxFrames calls deep, as when
// LongBench's eval.py calls it with CPython's default recursion limit).
double longbench_rouge_l(std::string_view prediction, std::string_view reference);
inline constexpr int kLongBenchRougeMaxFrames = 991;

// SQuAD / LongBench answer normalisation: lower-case (ASCII, Latin-1, Greek and Cyrillic
// letters; L-Eval skips this step: lowercase = false), remove every ASCII punctuation
// character (Python's string.punctuation), replace the words "a", "an", "the" by a space
// (regex \b(a|an|the)\b; non-ASCII characters count as word characters except whitespace and
// common punctuation and symbols), then join the whitespace-separated words with one space.
std::string normalize_answer(std::string_view text, bool lowercase = true);
// LongBench qa_f1_score (SQuAD token F1), in [0, 1]: the words of the normalised texts, their
// multiset intersection c; 0 when c is 0, else 2PR/(P+R) with P = c/|prediction|, R = c/|reference|.
double qa_f1(std::string_view prediction, std::string_view reference, bool lowercase = true);

// --- L-Eval (OpenLMLab/LEval Evaluation/auto_eval.py and em.py) -----------------------------

// process_output_mc: the option letters of a multiple-choice answer. "None" when the answer is
// blank; the answer itself when it is a substring of "ABCD"; else, unless `multiple` (coursera),
// the first of A-D anywhere. For coursera: a leading run of two or more of A-D (sorted, unique);
// else, before the first "Question", that leading letter plus every capital followed by
// whitespace, '.' or ')' that is one of A-D (sorted, unique); else the first run of A-D; else "A".
std::string leval_mc_answer(std::string_view response, bool multiple);
// process_gt_mc: the A-D letters of the reference's first word; "A" when there are none.
std::string leval_mc_reference(std::string_view reference);
// process_math: the digits of the word after "The answer is " (else of the last word with a
// digit in the first paragraph), up to its first '.'.
std::string leval_math_answer(std::string_view response);
// process_output_judge (loyalty part): "true" or "false" from the first word of the lower-cased
// answer (before any "[fact:") that contains one, else "<error>".
std::string leval_judge_answer(std::string_view response);
// The lower-cased, trimmed part of a sci_fi reference before "[fact:" ("true" / "false").
std::string leval_judge_reference(std::string_view reference);
// em.py exact_match_score, in {0, 0.25, 1}. A reference made only of the letters A-D (after
// normalize_answer without lower-casing): 1 when the normalised texts are equal, 0.25 when the
// prediction's characters are a subset of the reference's (some of several correct options), else
// 0. Otherwise: when both parse as Python floats, whether they are equal; else whether the
// reference, lower-cased and without spaces, occurs in the prediction's first line longer than
// one character (the whole prediction when there is none), lower-cased and without spaces.
double leval_exact_match(std::string_view prediction, std::string_view reference);

}  // namespace snapkv
