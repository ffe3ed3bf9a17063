#!/usr/bin/env python3
"""Several questions about one new document sent to the server at once: is the document prefilled
once, and how soon are all answered, with the prompt cache and without it (--no-prompt-cache).

For each server setting (the full cache, and SnapKV at --capacity) and with the cache on and off
(a fresh `snapkv serve` each), every round takes a document the server has not seen (a Paul Graham
essay cut to --doc-chars) and sends --questions chat requests about it together (threads released
by one barrier; greedy, at most --max-tokens). It records the prompt tokens the server prefilled
in the round (/metrics), each request's cached tokens (usage.prompt_tokens_details), the seconds
until the last answer, and whether the answers equal those of the run without the cache. Writes --out
(JSON) and prints Markdown.

  python3 bench/scripts/bench_shared_prefill.py --out results/shared_prefill.json
"""
import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from snapkv_server import SnapkvServer  # noqa: E402

QUESTIONS = ["What is the document about?", "Who wrote it?", "Name one idea from it.", "Is the author optimistic?",
             "Give it a title.", "Who should read it?", "What would a critic say?", "What is its main claim?"]


def ask(server: SnapkvServer, messages: list[dict], max_tokens: int) -> dict:
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0}).encode()
    req = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=900) as r:
        return json.loads(r.read())


def prefilled(server: SnapkvServer) -> int:
    return int(server.metrics()["snapkv_prompt_tokens_prefilled_total"])


def round_(server: SnapkvServer, doc: str, questions: list[str], max_tokens: int) -> dict:
    prompts = [[{"role": "user", "content": f"{doc}\n\n{q}"}] for q in questions]
    before = prefilled(server)
    barrier = threading.Barrier(len(prompts))
    replies: list[dict | None] = [None] * len(prompts)

    def one(i: int):
        barrier.wait()
        replies[i] = ask(server, prompts[i], max_tokens)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if any(r is None for r in replies):
        raise RuntimeError("a request failed")
    n_prompt = [r["usage"]["prompt_tokens"] for r in replies]
    return {"prompt_tokens": n_prompt, "prefilled_tokens": prefilled(server) - before, "wall_s": wall,
            "cached_tokens": [r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in replies],
            "answers": [r["choices"][0]["message"]["content"] for r in replies]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/snapkv"))
    p.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--questions", type=int, default=4)
    p.add_argument("--doc-chars", type=int, default=8000)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--capacity", type=int, default=1024)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out")
    args = p.parse_args()

    essays = sorted((Path(args.data) / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    docs = [(essays[i].read_text() + " " + essays[i + 1].read_text())[:args.doc_chars] for i in range(args.rounds)]
    questions = QUESTIONS[:args.questions]
    settings = {"full": [], f"snapkv C={args.capacity}": ["--kv-press", "snapkv", "--kv-capacity", str(args.capacity)]}
    report = {"model": Path(args.model).name, "doc_chars": args.doc_chars, "questions": args.questions,
              "rounds": args.rounds, "max_tokens": args.max_tokens, "threads": args.threads, "settings": {}}
    print(f"{args.questions} questions sent together about a new {args.doc_chars}-character document, "
          f"{args.rounds} rounds; {Path(args.model).name}, -t {args.threads}\n")
    print("| setting | prompt cache | prompt tokens a round | prefilled a round | cached per request | "
          "all answered, s | same answers |")
    print("|---|---|--:|--:|---|--:|--:|")
    for name, flags in settings.items():
        runs = {}
        for cache in (False, True):
            server = SnapkvServer(args.binary, args.model,
                                  ["-t", str(args.threads), *flags] + ([] if cache else ["--no-prompt-cache"]))
            try:
                runs[cache] = []
                for doc in docs:
                    runs[cache].append(round_(server, doc, questions, args.max_tokens))
            finally:
                server.terminate()
                server.cleanup()
        report["settings"][name] = {"without_cache": runs[False], "with_cache": runs[True]}
        for cache in (False, True):
            rs = runs[cache]
            same = sum(a == b for r, o in zip(rs, runs[False]) for a, b in zip(r["answers"], o["answers"]))
            prompt = statistics.mean(sum(r["prompt_tokens"]) for r in rs)
            pre = [r["prefilled_tokens"] for r in rs]
            wall = [r["wall_s"] for r in rs]
            print(f"| {name} | {'on' if cache else 'off'} | {prompt:,.0f} | "
                  f"{statistics.mean(pre):,.0f} ({min(pre):,}–{max(pre):,}) | "
                  f"{' / '.join(str(c) for c in rs[0]['cached_tokens'])} (round 1) | "
                  f"{statistics.mean(wall):.1f} ({min(wall):.1f}–{max(wall):.1f}) | "
                  f"{same}/{len(rs) * len(questions)} |")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
