#!/usr/bin/env python3
"""Load test for `snapkv serve` (standard library only).

For each press configuration (default: "full", then "snapkv:1024") it starts a fresh server on a
free port, runs N concurrent clients that each send M requests one after the other (a seeded mix
of prompt lengths cut from the Paul Graham essays, chat and text completions, streaming and not),
then checks:
  - no 5xx, no broken responses (connection errors, streams without [DONE], invalid JSON);
  - the server process is still alive, and idle again at the end (/metrics: no running or queued
    sequences, no KV bytes reserved);
  - its RSS (/proc/PID/status VmRSS) less the bytes its prompt cache holds (/metrics; the cache
    keeps finished requests' states within the KV budget) grew by less than --max-rss-growth between
    the end of the warm-up (the first 20% of the requests) and the end;
  - no oversubscription: of its threads (HTTP connections, scheduler, pool), at most --threads
    did the work, i.e. used at least a fifth of the busiest thread's CPU time during the run
    (/proc/PID/task, loading and start-up left out);
  - SIGTERM stops it with exit status 0.
It prints one table row per configuration and exits non-zero when any check failed.

  python3 scripts/load_test.py --binary build/release/snapkv --model models/SmolLM2-135M-Instruct.Q4_1.gguf
  python3 scripts/load_test.py --binary ... --model ... --quick     # CI: 4 clients x 3 short requests
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from snapkv_server import SnapkvServer

ROOT = Path(__file__).resolve().parent.parent

# Prompt lengths in tokens (roughly: ~4 characters per token of English) and how often each is
# drawn: mostly short, with a tail of long prompts that SnapKV compresses.
LENGTHS = [(50, 4), (100, 3), (200, 3), (400, 2), (800, 2), (1500, 1), (3000, 1)]
QUICK_LENGTHS = [(50, 2), (100, 1), (200, 1)]
CHARS_PER_TOKEN = 4.0


# ---------------------------------------------------------------------------------------------
# the server process


def start_server(args, press: str, capacity: int | None) -> SnapkvServer:
    extra = ["--kv-memory", args.kv_memory, "--max-batch", str(args.max_batch), "--max-queue", str(args.max_queue),
             "-t", str(args.threads), "--kv-press", press]
    if capacity is not None:
        extra += ["--kv-capacity", str(capacity)]
    return SnapkvServer(args.binary, args.model, extra, args.startup_timeout)


# ---------------------------------------------------------------------------------------------
# requests


def load_corpus(data_dir: Path) -> str:
    essays = sorted((data_dir / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    if not essays:
        raise SystemExit(f"no essays under {data_dir}/niah_paulgraham/PaulGrahamEssays (set --data or SNAPKV_DATA)")
    return re.sub(r"\s+", " ", " ".join(p.read_text(errors="replace") for p in essays))


@dataclass
class Planned:
    chat: bool
    stream: bool
    target_tokens: int
    body: dict


def plan_requests(args, corpus: str, client: int) -> list[Planned]:
    lengths = QUICK_LENGTHS if args.quick else LENGTHS
    sizes = [n for n, _ in lengths]
    weights = [w for _, w in lengths]
    out = []
    for i in range(args.requests):
        rng = random.Random(f"{args.seed}-{client}-{i}")
        n = rng.choices(sizes, weights)[0]
        n_chars = int(n * CHARS_PER_TOKEN)
        start = rng.randrange(0, max(1, len(corpus) - n_chars))
        start = corpus.find(" ", start) + 1  # whole words
        excerpt = corpus[start:start + n_chars].rsplit(" ", 1)[0]
        chat, stream = rng.random() < 0.5, rng.random() < 0.5
        # Every sampling field given, so that servers with other defaults generate the same tokens.
        body: dict = {"max_tokens": args.max_tokens, "temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                      "repeat_penalty": 1.0, "seed": rng.randrange(1 << 31)}
        if chat:
            body["messages"] = [{"role": "user", "content": excerpt + "\n\nIn one sentence, what is this text about?"}]
        else:
            body["prompt"] = excerpt + "\n\nIn short, the text above is about"
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        out.append(Planned(chat, stream, n, body))
    return out


@dataclass
class Result:
    status: int = 0                 # HTTP status; 0: no response
    error: str = ""                 # why a 200 or a transport failed
    latency: float = 0.0
    ttft: float | None = None       # streaming: first content chunk
    prompt_tokens: int = 0
    completion_tokens: int = 0
    kv_bytes: int = 0
    kv_full_bytes: int = 0

    @property
    def kind(self) -> str:
        if self.status == 200 and not self.error:
            return "ok"
        if 400 <= self.status < 500:
            return "4xx"
        if self.status >= 500:
            return "5xx"
        return "err"


def take_usage(res: Result, usage: dict | None):
    if not isinstance(usage, dict):
        res.error = res.error or "no usage"
        return
    res.prompt_tokens = int(usage.get("prompt_tokens", 0))
    res.completion_tokens = int(usage.get("completion_tokens", 0))
    res.kv_bytes = int(usage.get("kv_bytes", 0))
    res.kv_full_bytes = int(usage.get("kv_full_bytes", 0))
    if usage.get("total_tokens") != res.prompt_tokens + res.completion_tokens:
        res.error = res.error or f"usage total_tokens {usage.get('total_tokens')} != prompt + completion"


def send(port: int, p: Planned, timeout: float) -> Result:
    res = Result()
    path = "/v1/chat/completions" if p.chat else "/v1/completions"
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(p.body), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        res.status = r.status
        if r.status != 200:
            body = r.read().decode(errors="replace")
            try:
                res.error = json.loads(body)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                res.error = f"not OpenAI's error shape: {body[:200]!r}"
            if r.status in (429, 503) and r.getheader("Retry-After") is None:
                res.error += " [no Retry-After]"
        elif p.stream:
            read_stream(r, p, res, t0)
        else:
            body = json.loads(r.read())  # may start with keep-alive spaces; json allows that
            choice = body["choices"][0]
            text = choice["message"]["content"] if p.chat else choice["text"]
            if not isinstance(text, str):
                res.error = f"no text in {choice}"
            if choice.get("finish_reason") not in ("stop", "length"):
                res.error = res.error or f"finish_reason {choice.get('finish_reason')!r}"
            take_usage(res, body.get("usage"))
    except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError) as e:
        res.error = res.error or f"{type(e).__name__}: {e}"
    finally:
        conn.close()
    res.latency = time.monotonic() - t0
    if res.status == 200 and not res.error and res.completion_tokens > p.body["max_tokens"]:
        res.error = f"completion_tokens {res.completion_tokens} > max_tokens {p.body['max_tokens']}"
    return res


def read_stream(r, p: Planned, res: Result, t0: float):
    done, finish, usage = False, None, None
    for raw in r:
        line = raw.decode(errors="replace").rstrip("\r\n")
        if not line or line.startswith(":"):
            continue  # event separator, or a keep-alive comment
        if not line.startswith("data: "):
            res.error = f"unexpected SSE line {line[:100]!r}"
            return
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if "error" in chunk:
            res.error = f"error event: {chunk['error']}"
            res.status = 500  # an error after the 200 head counts as a server error
            return
        if chunk.get("usage"):
            usage = chunk["usage"]
        for c in chunk.get("choices", []):
            text = c.get("delta", {}).get("content") if p.chat else c.get("text")
            if text and res.ttft is None:
                res.ttft = time.monotonic() - t0
            finish = c.get("finish_reason") or finish
    if not done:
        res.error = "stream ended without data: [DONE]"
    elif finish not in ("stop", "length"):
        res.error = f"finish_reason {finish!r}"
    else:
        take_usage(res, usage)


# ---------------------------------------------------------------------------------------------
# one configuration


@dataclass
class Run:
    config: str
    results: list[Result] = field(default_factory=list)
    wall: float = 0.0
    rss_warm: int | None = None
    rss_end: int | None = None
    cache_warm: int = 0  # the prompt cache's bytes when the RSS was read
    cache_end: int = 0
    rss_peak: int | None = None
    thread_cpu: list[float] = field(default_factory=list)  # CPU seconds of each server thread during the run
    exit_status: int | None = None
    failures: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def run_config(args, corpus: str, config: str) -> Run:
    press, _, cap = config.partition(":")
    run = Run(config)
    server = start_server(args, press, int(cap) if cap else None)
    try:
        plans = [plan_requests(args, corpus, c) for c in range(args.clients)]
        total = args.clients * args.requests
        warm_after = max(1, math.ceil(0.2 * total))
        lock = threading.Lock()
        warm_sampled = threading.Event()
        start = threading.Barrier(args.clients + 1)
        finished = [0.0]  # when the last response ended

        def client(c: int):
            start.wait()
            for p in plans[c]:
                r = send(server.port, p, args.request_timeout)
                with lock:
                    run.results.append(r)
                    finished[0] = time.monotonic()
                    if len(run.results) >= warm_after and not warm_sampled.is_set():
                        run.rss_warm = server.rss_bytes()
                        run.cache_warm = int(server.metrics().get("snapkv_prompt_cache_bytes", 0))
                        warm_sampled.set()
                    if args.verbose:
                        print(f"  [{config}] client {c:2d} {p.target_tokens:5d} tok {'chat' if p.chat else 'text'} "
                              f"{'stream' if p.stream else 'block '} -> {r.status} {r.latency:6.2f}s "
                              f"{r.completion_tokens} tok {r.error}", flush=True)

        threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(args.clients)]
        for t in threads:
            t.start()
        cpu_before = server.thread_cpu_seconds()  # loading and start-up are not the run's work
        start.wait()
        t0 = time.monotonic()
        last_report = t0
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
            if not args.verbose and time.monotonic() - last_report >= 30:
                last_report = time.monotonic()
                print(f"  [{config}] {len(run.results)}/{total} requests, {last_report - t0:.0f}s", flush=True)
        run.wall = max(finished[0], t0) - t0

        if not server.alive():
            run.failures.append(f"server exited during the run with status {server.proc.returncode}")
        else:
            run.rss_end = server.rss_bytes()
            run.cache_end = int(server.metrics().get("snapkv_prompt_cache_bytes", 0))
            run.rss_peak = server.peak_rss_bytes()
            check_idle(server, run)
            check_threads(server, run, args.threads, cpu_before)
        kinds = [r.kind for r in run.results]
        for kind in ("5xx", "err"):
            bad = [r for r in run.results if r.kind == kind]
            if bad:
                run.failures.append(f"{len(bad)} {kind}: " + "; ".join(sorted({f'{r.status} {r.error}' for r in bad})[:5]))
        n4 = kinds.count("4xx")
        if n4:
            print(f"  [{config}] note: {n4} 4xx: " + "; ".join(
                sorted({f'{r.status} {r.error}' for r in run.results if r.kind == '4xx'})[:5]))
        if run.rss_warm and run.rss_end:
            growth = rss_growth(run)
            if growth >= args.max_rss_growth:
                run.failures.append(f"RSS less the prompt cache grew {growth:.1%} (limit {args.max_rss_growth:.0%}): "
                                    f"{mib(run.rss_warm)} - {mib(run.cache_warm)} after warm-up, "
                                    f"{mib(run.rss_end)} - {mib(run.cache_end)} at the end")
        elif server.alive():
            run.failures.append("could not read VmRSS from /proc")
        if server.alive():
            run.exit_status = server.terminate()
            if run.exit_status != 0:
                run.failures.append(f"exit status after SIGTERM: {run.exit_status} (None: still running after 60 s)")
        if run.failures:
            print(f"  [{config}] server stderr (tail):\n{server.log_tail()}")
    finally:
        server.cleanup()
    return run


def rss_growth(run: Run) -> float:
    """RSS growth from warm-up to the end, the prompt cache's bytes left out of both."""
    return (run.rss_end - run.cache_end) / (run.rss_warm - run.cache_warm) - 1


def check_idle(server: SnapkvServer, run: Run):
    """After the last response the server should hold nothing: polled briefly, as the scheduler
    may release a finished sequence just after its last bytes were written."""
    gauges = ("snapkv_running_sequences", "snapkv_queue_length", "snapkv_kv_reserved_bytes", "snapkv_kv_bytes")
    deadline = time.monotonic() + 5
    while True:
        try:
            run.metrics = server.metrics()
        except OSError as e:
            run.failures.append(f"/metrics: {e}")
            return
        busy = {g: run.metrics.get(g) for g in gauges if run.metrics.get(g, 0) != 0}
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if busy:
        run.failures.append(f"not idle after the run: {busy}")
    ours = sum(r.completion_tokens for r in run.results if r.kind == "ok")
    theirs = run.metrics.get("snapkv_generated_tokens_total")
    if theirs is not None and all(r.kind == "ok" for r in run.results) and int(theirs) != ours:
        print(f"  [{run.config}] note: /metrics snapkv_generated_tokens_total {int(theirs)} != "
              f"{ours} completion_tokens in the responses")


def busy_threads(cpu: list[float]) -> list[float]:
    """The threads that did the work: at least a fifth of the busiest one's CPU time."""
    top = max(cpu, default=0.0)
    return [s for s in cpu if s >= 0.2 * top] if top > 0 else []


def check_threads(server: SnapkvServer, run: Run, threads: int, before: dict[int, float]):
    run.thread_cpu = [s - before.get(tid, 0.0) for tid, s in server.thread_cpu_seconds().items()]
    busy = busy_threads(run.thread_cpu)
    if len(busy) > threads:
        run.failures.append(f"{len(busy)} threads did the work of -t {threads} (CPU seconds: "
                            + ", ".join(f"{s:.1f}" for s in sorted(busy, reverse=True)) + ")")


# ---------------------------------------------------------------------------------------------
# report


def mib(b: int | None) -> str:
    return "-" if b is None else f"{b / 2**20:.0f} MiB"


def print_table(runs: list[Run]):
    header = ["config", "requests", "ok", "4xx", "5xx", "err", "wall s", "gen tok/s", "p50 s", "p95 s",
              "TTFT p50 s", "KV/full", "RSS warm", "RSS end", "growth", "RSS peak", "busy threads"]
    rows = []
    for run in runs:
        ok = [r for r in run.results if r.kind == "ok"]
        kinds = [r.kind for r in run.results]
        gen = sum(r.completion_tokens for r in ok)
        lat = [r.latency for r in ok]
        ttft = [r.ttft for r in ok if r.ttft is not None]
        kv, full = sum(r.kv_bytes for r in ok), sum(r.kv_full_bytes for r in ok)
        growth = f"{rss_growth(run):+.1%}" if run.rss_warm and run.rss_end else "-"
        rows.append([run.config, str(len(run.results)), str(len(ok)), str(kinds.count("4xx")), str(kinds.count("5xx")),
                     str(kinds.count("err")), f"{run.wall:.1f}", f"{gen / run.wall:.1f}" if run.wall else "-",
                     f"{percentile(lat, 0.5):.2f}", f"{percentile(lat, 0.95):.2f}", f"{percentile(ttft, 0.5):.2f}",
                     f"{kv / full:.1%}" if full else "-", mib(run.rss_warm), mib(run.rss_end), growth,
                     mib(run.rss_peak),
                     f"{len(busy_threads(run.thread_cpu))} of {len(run.thread_cpu)}" if run.thread_cpu else "-"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    for run in runs:
        m = run.metrics
        if m:
            print(f"{run.config}: server /metrics: prompt tokens {m.get('snapkv_prompt_tokens_total', 0):.0f}, "
                  f"generated {m.get('snapkv_generated_tokens_total', 0):.0f}, "
                  f"prefill {m.get('snapkv_prefill_tokens_per_second', 0):.0f} tok/s, "
                  f"decode {m.get('snapkv_decode_tokens_per_second', 0):.1f} tok/s, "
                  f"decode steps {m.get('snapkv_decode_steps_total', 0):.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build/release/snapkv"))
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--data", default=os.environ.get("SNAPKV_DATA", str(ROOT.parent / "shared/data")),
                    help="data directory with niah_paulgraham/PaulGrahamEssays")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20, help="requests per client, sent one after the other")
    ap.add_argument("--press-configs", default="full,snapkv:1024",
                    help="comma-separated PRESS[:CAPACITY], each run on a fresh server")
    ap.add_argument("--max-tokens", type=int, default=None, help="max_tokens per request (default 32; --quick 16)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-memory", default="2GiB")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--max-queue", type=int, default=16)
    ap.add_argument("--max-rss-growth", type=float, default=0.10, help="allowed RSS growth after warm-up (fraction)")
    ap.add_argument("--request-timeout", type=float, default=900)
    ap.add_argument("--startup-timeout", type=float, default=120)
    ap.add_argument("--quick", action="store_true", help="CI: 4 clients x 3 requests, short prompts")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per request")
    args = ap.parse_args()
    if args.quick:
        args.clients, args.requests = 4, 3
    if args.max_tokens is None:
        args.max_tokens = 16 if args.quick else 32
    if args.clients < 1 or args.requests < 1:
        ap.error("--clients and --requests must be positive")
    configs = [c.strip() for c in args.press_configs.split(",") if c.strip()]
    for c in configs:
        if not re.fullmatch(r"[a-z_]+(:\d+)?", c):
            ap.error(f"--press-configs: '{c}' is not PRESS[:CAPACITY]")

    corpus = load_corpus(Path(args.data))
    print(f"load test: {args.clients} clients x {args.requests} requests, max_tokens {args.max_tokens}, seed {args.seed}, "
          f"server -t {args.threads} --max-batch {args.max_batch} --max-queue {args.max_queue} --kv-memory {args.kv_memory}",
          flush=True)
    runs = []
    for config in configs:
        print(f"[{config}] starting", flush=True)
        try:
            runs.append(run_config(args, corpus, config))
        except RuntimeError as e:
            run = Run(config, failures=[str(e)])
            runs.append(run)
    print()
    print_table(runs)
    failed = [(run.config, f) for run in runs for f in run.failures]
    for config, f in failed:
        print(f"FAIL [{config}] {f}")
    n_failed = len({c for c, _ in failed})
    print(f"load test: {'FAILED' if failed else 'PASSED'}")
    print(f"{len(runs) - n_failed} passed, {n_failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
