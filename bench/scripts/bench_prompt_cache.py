#!/usr/bin/env python3
"""The server's prompt cache in a 10-turn chat about a document, with and without it.

Each conversation opens with a Paul Graham essay (a needle sentence inserted at a given depth) and
a first question, then asks nine more, one of them the needle's; every answer (greedy, at most
--max-tokens) goes back into the history, as chat clients send it. For each server setting (the
full cache, and SnapKV at --capacity) and with the prompt cache on and off (--no-prompt-cache),
the same conversations run through a real `snapkv serve` (the run without the cache replays the
prompts of the run with it, so both answer the same prompts); per turn it records the prompt tokens,
those resumed from the cache (usage.prompt_tokens_details.cached_tokens), the time to the first
streamed token, and the answer. It reports the tokens prefilled per turn against what the turn
added, whether answers are the same with and without the cache, and the needle's word recall in
the needle turn (with a press, a cached turn resumes from the state the earlier turns' presses
kept instead of pressing the whole conversation again). Writes --out (JSON) and prints Markdown.

  python3 bench/scripts/bench_prompt_cache.py --out results/prompt_cache.json
"""
import argparse
import json
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from snapkv_server import SnapkvServer  # noqa: E402

NEEDLE = " The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day."
NEEDLE_QUESTION = "What is the best thing to do in San Francisco, according to the document?"
QUESTIONS = [
    "What is the document about? Answer in one sentence.",
    "Who is the author, do you think?",
    "Name one idea from the document.",
    "Is the author optimistic?",
    NEEDLE_QUESTION,
    "Give the document a title.",
    "What would a critic say about it?",
    "Which sentence do you find most surprising?",
    "Who should read it?",
    "Summarize our conversation in one sentence.",
]


def documents(data: Path, n_chars: int, count: int) -> list[str]:
    essays = sorted((data / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    out = []
    for i in range(count):
        text = essays[i % len(essays)].read_text()
        text = (text + " " + essays[(i + 1) % len(essays)].read_text())[:n_chars]
        depth = (i + 0.5) / count
        cut = text.rfind(".", 0, int(len(text) * depth)) + 1
        out.append(f"<document>\n{text[:cut]}{NEEDLE}{text[cut:]}\n</document>")
    return out


def ask(server: SnapkvServer, messages: list[dict], max_tokens: int) -> dict:
    """A streamed greedy chat completion: the text, the usage and the seconds to the first token."""
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    first, text, usage = None, "", None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content") or ""
                if piece and first is None:
                    first = time.perf_counter() - t0
                text += piece
    return {"text": text, "usage": usage, "ttft_s": first if first is not None else time.perf_counter() - t0}


def word_recall(answer: str) -> float:
    words = lambda s: re.findall(r"[a-z0-9]+", s.lower())  # noqa: E731
    want, got = words(NEEDLE), set(words(answer))
    return sum(w in got for w in want) / len(want)


def conversation(server: SnapkvServer, doc: str, max_tokens: int, script: list[dict] | None = None) -> list[dict]:
    """Ten turns; with a script (another run's turns), its answers go into the history instead of
    this run's, so that both runs see the same prompts."""
    messages, turns = [], []
    for i, q in enumerate(QUESTIONS):
        messages.append({"role": "user", "content": f"{doc}\n\n{q}" if i == 0 else q})
        a = ask(server, messages, max_tokens)
        messages.append({"role": "assistant", "content": script[i]["answer"] if script else a["text"]})
        u = a["usage"]
        cached = u["prompt_tokens_details"]["cached_tokens"]
        turns.append({"prompt_tokens": u["prompt_tokens"], "cached_tokens": cached,
                      "prefilled_tokens": u["prompt_tokens"] - cached, "completion_tokens": u["completion_tokens"],
                      "ttft_s": a["ttft_s"], "answer": a["text"]})
    return turns


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/snapkv"))
    p.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    p.add_argument("--conversations", type=int, default=6)
    p.add_argument("--doc-chars", type=int, default=8000)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--capacity", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out")
    args = p.parse_args()

    docs = documents(Path(args.data), args.doc_chars, args.conversations)
    settings = {"full": [], f"snapkv C={args.capacity}": ["--kv-press", "snapkv", "--kv-capacity", str(args.capacity)]}
    runs = {}
    for name, press_flags in settings.items():
        for cache in (True, False):  # one server each
            flags = ["-t", str(args.threads), *press_flags] + ([] if cache else ["--no-prompt-cache"])
            server = SnapkvServer(args.binary, args.model, flags)
            try:
                scripts = runs[(name, True)] if not cache else [None] * len(docs)
                runs[(name, cache)] = [conversation(server, d, args.max_tokens, sc) for d, sc in zip(docs, scripts)]
            finally:
                server.terminate()
                server.cleanup()

    report = {"model": Path(args.model).name, "doc_chars": args.doc_chars, "conversations": args.conversations,
              "max_tokens": args.max_tokens, "settings": {}}
    needle_turn = QUESTIONS.index(NEEDLE_QUESTION)
    print(f"{args.conversations} conversations of {len(QUESTIONS)} turns, {args.doc_chars}-character documents, "
          f"greedy, at most {args.max_tokens} tokens an answer; {Path(args.model).name}, -t {args.threads}\n")
    for name in settings:
        on, off = runs[(name, True)], runs[(name, False)]
        per_turn = []
        for t in range(len(QUESTIONS)):
            added = [c[t]["prompt_tokens"] - (c[t - 1]["prompt_tokens"] + c[t - 1]["completion_tokens"]) if t else
                     c[t]["prompt_tokens"] for c in on]
            per_turn.append({
                "turn": t + 1,
                "prompt_tokens": statistics.mean(c[t]["prompt_tokens"] for c in on),
                "added_tokens": statistics.mean(added),
                "prefilled_on": statistics.mean(c[t]["prefilled_tokens"] for c in on),
                "prefilled_off": statistics.mean(c[t]["prefilled_tokens"] for c in off),
                "ttft_on_s": statistics.median(c[t]["ttft_s"] for c in on),
                "ttft_off_s": statistics.median(c[t]["ttft_s"] for c in off),
                "same_answers": sum(a[t]["answer"] == b[t]["answer"] for a, b in zip(on, off)),
            })
        ratios = [b[t]["ttft_s"] / a[t]["ttft_s"] for a, b in zip(on, off) for t in range(1, len(QUESTIONS))]
        recall_on = statistics.mean(word_recall(c[needle_turn]["answer"]) for c in on)
        recall_off = statistics.mean(word_recall(c[needle_turn]["answer"]) for c in off)
        same = sum(r["same_answers"] for r in per_turn)
        report["settings"][name] = {"per_turn": per_turn, "needle_recall_on": recall_on,
                                    "ttft_ratio_turns_2_on": [min(ratios), statistics.median(ratios), max(ratios)],
                                    "same_answers": [same, len(per_turn) * args.conversations],
                                    "needle_recall_off": recall_off,
                                    "runs": {"on": on, "off": off}}
        print(f"### {name}\n")
        print("| turn | prompt tokens | added by the turn | prefilled, cache on | prefilled, cache off "
              "| first token on / off (s) | same answers |")
        print("|--:|--:|--:|--:|--:|--:|--:|")
        for r in per_turn:
            print(f"| {r['turn']} | {r['prompt_tokens']:.0f} | {r['added_tokens']:.1f} | {r['prefilled_on']:.1f} | "
                  f"{r['prefilled_off']:.0f} | {r['ttft_on_s']:.3f} / {r['ttft_off_s']:.3f} | "
                  f"{r['same_answers']}/{args.conversations} |")
        print(f"\nturns 2-{len(QUESTIONS)}: first token {statistics.median(ratios):.0f}x sooner with the cache "
              f"(min-max {min(ratios):.0f}-{max(ratios):.0f}x); the same answer in {same} of "
              f"{len(per_turn) * args.conversations} turns; needle word recall in turn {needle_turn + 1}: "
              f"cache on {recall_on:.2f}, off {recall_off:.2f}\n")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
