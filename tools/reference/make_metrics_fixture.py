#!/usr/bin/env python3
"""LongBench's ROUGE-L (pltrdy `rouge` 1.0.1) on varied (prediction, reference) pairs.

Writes tests/fixtures/metrics_rouge_l.json. Run inside tools/reference/.venv-metrics:

    tools/reference/setup_metrics_venv.sh
    tools/reference/.venv-metrics/bin/python tools/reference/make_metrics_fixture.py   # ~10 s

Reference (not written by us): THUDM LongBench metrics.py, rouge_score():
    Rouge().get_scores([prediction], [ground_truth], avg=True)["rouge-l"]["f"], and 0.0 when it
raises (ValueError for an empty side, RecursionError from the recursive LCS backtrack).

The RecursionError depends on how deep the Python stack already is when get_scores is called.
This script calls it from the same depth as LongBench's eval.py (module code -> scorer() ->
rouge_score() -> get_scores), so the pairs at the recursion boundary score as they do there
(CPython's default recursion limit, 1000). That is why the scoring loop below is plain
module-level code (no main(), no comprehension: a comprehension is a frame before Python 3.12).

Pairs: hand-written edge cases (empty, whitespace-only, '.'-only, punctuation, repeated words,
LCS ties, case, Unicode whitespace, several sentences), real multi_news reference summaries
(longbench/data/multi_news.jsonl in the evaluation data) against truncated / reordered / thinned /
lower-cased / other-record versions, and the two sides of the recursion boundary.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rouge import Rouge

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import versions, write_fixture  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SNAPKV_SHARED", ROOT.parent / "shared"))
OUT = ROOT / "tests" / "fixtures" / "metrics_rouge_l.json"


def rouge_score(prediction, ground_truth):
    """LongBench metrics.rouge_score, returning the exception's name as well."""
    rouge = Rouge()
    try:
        scores = rouge.get_scores([prediction], [ground_truth], avg=True)
    except Exception as e:  # LongBench: a bare except -> 0.0
        return 0.0, type(e).__name__
    return scores["rouge-l"]["f"], None


def scorer(prediction, ground_truth):
    """Stands for LongBench eval.py's scorer(), one frame between the module and rouge_score."""
    return rouge_score(prediction, ground_truth)


def build_pairs() -> list[tuple[str, str, str]]:
    pairs = [
        ("identical", "The cat sat on the mat.", "The cat sat on the mat."),
        ("partial", "the cat was on the mat", "the cat sat on the mat"),
        ("empty prediction", "", "The cat sat on the mat."),
        ("empty reference", "The cat sat on the mat.", ""),
        ("both empty", "", ""),
        ("whitespace only, both", "   ", " \n "),
        ("whitespace-only prediction", " ", "a b c"),
        ("dots only", "...", "a b. c"),
        ("dots and spaces", ". . .", "a b. c"),
        ("punctuation only", "!!! ,,, ???", "!!! ,,, ??? ;;"),
        ("repeated words", "the the the cat cat", "the cat the dog the"),
        ("tie: swapped pair", "b a", "a b"),
        ("tie: reversed", "d c b a", "a b c d"),
        ("tie: aba/bab", "B A B", "A B A"),
        ("tie: two sentences", "y x. x z y", "x y z"),
        ("case matters", "The Cat Sat", "the cat sat"),
        ("unicode whitespace", "a\u00a0b\u2003c\u3000d", "a b c d"),
        ("tabs and newlines", "one\ttwo\nthree.\n\nfour  five", "one two three four five"),
        ("trailing dots", "Hello world. .", "Hello world."),
        ("sentence union", "w1 w2 w6 w7 w8. w1 w3 w8 w9 w5", "w1 w2 w3 w4 w5"),
        ("several sentences", "It rained. The match was cancelled. Fans went home.",
         "The match was cancelled because it rained. Fans were sent home early."),
        ("no overlap", "alpha beta gamma", "delta epsilon"),
        ("numbers and dots", "Version 3.14 was released in 2024.", "Version 3 was released. In 2024 14 bugs"),
        ("utf-8 words", "Café résumé naïve — “quoted” text.", "café résumé naive – \"quoted\" text"),
    ]

    records = []
    with open(SHARED / "data" / "longbench" / "data" / "multi_news.jsonl", encoding="utf-8") as f:
        for line in f:
            records.append(json.loads(line))
            if len(records) == 4:
                break
    for k, rec in enumerate(records[:3]):
        ref = rec["answers"][0]
        words = ref.split(" ")
        sentences = [s for s in ref.split(". ")]
        other = records[k + 1]["answers"][0]
        pairs += [
            (f"multi_news[{k}] itself", ref, ref),
            (f"multi_news[{k}] first half", " ".join(words[: len(words) // 2]), ref),
            (f"multi_news[{k}] last third", " ".join(words[-len(words) // 3:]), ref),
            (f"multi_news[{k}] sentences reversed", ". ".join(reversed(sentences)), ref),
            (f"multi_news[{k}] every third word dropped", " ".join(w for i, w in enumerate(words) if i % 3 != 2), ref),
            (f"multi_news[{k}] lower-cased", ref.lower(), ref),
            (f"multi_news[{k}] other record's summary", other, ref),
        ]
    rec = records[0]
    ref = rec["answers"][0]
    lead = rec["context"][:1500]
    pairs += [
        ("multi_news[0] context lead (NEWLINE_CHAR)", lead, ref),
        ("multi_news[0] without periods", ref.replace(".", ""), ref),
    ]
    return pairs


def recursion_pairs(n: int) -> list[tuple[str, str, str]]:
    """The longest hypothesis sentence that still scores (n words) and one word more.

    With no word in common every step of the backtrack goes j-1, so a one-word reference
    against an n-word hypothesis sentence recurses n + 1 frames deep; identical sentences of
    n words go diagonally, also n + 1 frames."""
    hyp_ok = " ".join(f"h{i}" for i in range(n))
    hyp_bad = " ".join(f"h{i}" for i in range(n + 1))
    same_ok = " ".join(f"s{i}" for i in range(n))
    same_bad = " ".join(f"s{i}" for i in range(n + 1))
    return [
        (f"recursion: {n}-word sentence, no match (deepest that scores)", hyp_ok, "zzz"),
        (f"recursion: {n + 1}-word sentence, no match (RecursionError)", hyp_bad, "zzz"),
        (f"recursion: identical {n}-word sentences", same_ok, same_ok),
        (f"recursion: identical {n + 1}-word sentences (RecursionError)", same_bad, same_bad),
        (f"recursion: {n + 1} words split by a period", hyp_bad.replace(" h500 ", ". h500 "), "h3 h700 zzz"),
    ]


# The recursion boundary, searched from the same stack depth as the scoring loop below.
lo, hi = 10, 3000
while hi - lo > 1:  # the largest n whose n-word sentence still scores
    mid = (lo + hi) // 2
    if scorer(" ".join(f"h{i}" for i in range(mid)), "zzz")[1] is None:
        lo = mid
    else:
        hi = mid

pairs = build_pairs() + recursion_pairs(lo)
cases = []
for name, prediction, reference in pairs:  # module level on purpose: see the docstring
    f, err = scorer(prediction, reference)
    case = {"name": name, "prediction": prediction, "reference": reference, "f": f}
    if err is not None:
        case["error"] = err
    cases.append(case)

write_fixture(
    OUT,
    {
        "description": "LongBench ROUGE-L F (pltrdy rouge 1.0.1: Rouge().get_scores([prediction], [reference], "
        "avg=True)['rouge-l']['f'], 0.0 when it raises), at the stack depth of LongBench eval.py. "
        "f is the exact float; error names the exception that gave 0.0.",
        "meta": {"versions": versions(["rouge", "six"]), "recursion_limit": sys.getrecursionlimit()},
        "cases": cases,
    },
    row_keys=("cases",),
)
print(f"wrote {OUT} ({len(cases)} cases)")
