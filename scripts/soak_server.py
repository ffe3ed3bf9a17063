#!/usr/bin/env python3
"""Soak test for `snapkv serve` (standard library only; not in CI: 30 minutes by default).

One server, for --minutes, under a mix of clients at once:
  - well-behaved clients: chat and text completions, streaming and not, prompts of 50 to 1,500
    tokens cut from the Paul Graham essays, one request after the other, each with a random press
    (or none), prompt-lookup speculation or not, greedy or sampled with a seed, a stop string or not;
  - conversations: a document and a question, then up to 5 more turns, each answer fed back, with
    SnapKV or the full cache for the whole conversation (the prompt cache resumes each turn);
  - askers: three questions on one new document sent at once (the shared prefill);
  - a repeater: the same six greedy completions over and over, each answer compared with its first;
  - leavers: streaming requests whose client disconnects after a random 0.1-3 s;
  - slowloris: connections that trickle a header byte every half second (reopened when the
    server's header deadline closes them);
  - clumsy clients: malformed JSON, bodies over --max-body, conflicting Content-Length, unknown
    routes, wrong methods, numbers out of range, unknown presses.
With --redis the server's context store is a real redis-server (Debian's), stopped for 20 s three
times during the run. --kv-memory is kept small so that cached states are evicted all the time.
It samples the server's RSS every 10 s and fails when any reply is a 5xx (other than 503 at the
end), when a request of the well-behaved kinds fails, when the process dies, when RSS in the last
quarter is more than --max-rss-growth above the second quarter (after warm-up), or when SIGTERM
does not end it with status 0. Writes OUT/summary.md (the RSS curve per minute, counts, the
server's own metrics) and OUT/rss.csv.

  python3 scripts/soak_server.py --binary build/release/snapkv --minutes 30 --redis --out results/server_soak
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shlex
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from redis_server import Redis, free_port
from snapkv_server import SnapkvServer, cached_tokens

ROOT = Path(__file__).resolve().parent.parent


# Presses a well-behaved request may ask for (None: the server's default, the full cache).
PRESSES = [None, {"press": "snapkv", "capacity": 128}, {"press": "snapkv", "capacity": 256, "recompress": 16},
           {"press": "pyramidkv", "capacity": 256}, {"press": "ada_kv", "capacity": 256},
           {"press": "streaming_llm", "capacity": 128}, {"press": "tova", "capacity": 256},
           {"press": "expected_attention", "capacity": 256}, {"press": "recommended", "capacity": 256}]


def with_press(body: dict, press: dict | None) -> dict:
    """body with its kv_compression field when press is not None (None: the server's default)."""
    return {**body, "kv_compression": press} if press else body


QUESTIONS = ["What is this about?", "Who is the author talking to?", "Name one example the text gives.",
             "What does the author recommend?", "Say it in one sentence.", "What is the main claim?"]


class Soak:
    def __init__(self, args, server: SnapkvServer, corpus: str, redis: Redis | None):
        self.args, self.server, self.corpus, self.redis = args, server, corpus, redis
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses: Counter[str] = Counter()  # "kind status"
        self.failures: list[str] = []
        self.differences: list[str] = []  # the repeater's answers that changed
        self.rss: list[tuple[float, int]] = []

    def count(self, kind: str, status: int | str):
        with self.lock:
            self.statuses[f"{kind} {status}"] += 1

    def fail(self, what: str):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)

    def text(self, rng: random.Random, n_tokens: int) -> str:
        """About n_tokens of essay text from a random place (4 characters a token)."""
        n_chars = 4 * n_tokens
        start = self.corpus.find(" ", rng.randrange(0, len(self.corpus) - n_chars)) + 1
        return self.corpus[start:start + n_chars]

    def post(self, kind: str, path: str, body: dict) -> dict | None:
        """One request on its own connection; the reply's JSON (None for a stream), or None after
        counting and recording a failure."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=300)
            c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            c.close()
        except OSError as e:
            self.count(kind, "error")
            self.fail(f"{kind} {path}: {e!r}")
            return None
        self.count(kind, r.status)
        if r.status != 200:
            self.fail(f"{kind} {path}: {r.status} {data[:200]!r}")
        elif body.get("stream"):
            if not data.endswith(b"data: [DONE]\n\n"):
                self.fail(f"{kind}: stream without [DONE]: {data[-200:]!r}")
        else:
            return json.loads(data)
        return None

    def body(self, rng: random.Random) -> tuple[str, dict]:
        text = self.text(rng, rng.choice([50, 100, 200, 400, 800, 1500]))
        body: dict = {"max_tokens": rng.choice([8, 16, 32]), "stream": rng.random() < 0.5}
        body = with_press(body, rng.choice(PRESSES))
        if rng.random() < 0.3:
            body["speculation"] = {"mode": "prompt-lookup", "k": rng.choice([2, 4, 8])}
        if rng.random() < 0.5:
            body["temperature"] = 0
        else:
            body.update(temperature=0.8, top_p=0.9, seed=rng.randrange(1 << 31))
        if rng.random() < 0.2:
            body["stop"] = ["\n\n", "."]
        if rng.random() < 0.5:
            return "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": text + "\n\n" + rng.choice(QUESTIONS)}]}
        return "/v1/completions", {**body, "prompt": text + "\n\nIn short, the text is about"}

    def well_behaved(self, i: int):
        rng = random.Random(f"good-{i}")
        while not self.stop.is_set():
            self.post("good", *self.body(rng))

    def conversation(self, i: int):
        """Turns of one conversation, each answer fed back; turn 2 on resumes from the turn before."""
        rng = random.Random(f"conversation-{i}")
        while not self.stop.is_set():
            press = rng.choice([None, {"press": "snapkv", "capacity": 256}])
            messages = [{"role": "user", "content": self.text(rng, rng.choice([400, 800, 1500])) + "\n\n" + rng.choice(QUESTIONS)}]
            for turn in range(rng.randint(2, 6)):
                body = with_press({"messages": messages, "max_tokens": 24, "temperature": 0}, press)
                reply = self.post("conversation", "/v1/chat/completions", body)
                if reply is None or self.stop.is_set():
                    break
                if turn > 0:
                    resumed = cached_tokens(reply) > 0
                    self.count("conversation turn", "resumed" if resumed else "not resumed")
                messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                             {"role": "user", "content": rng.choice(QUESTIONS)}]

    def askers(self):
        """Three questions on one new document sent at once, with the full cache or SnapKV."""
        rng = random.Random("askers")
        while not self.stop.is_set():
            doc = self.text(rng, 1500)
            press = rng.choice([None, {"press": "snapkv", "capacity": 512}])
            replies: list[dict | None] = [None] * 3
            barrier = threading.Barrier(3)

            def ask(k: int):
                body = with_press({"messages": [{"role": "user", "content": doc + "\n\n" + QUESTIONS[k]}],
                                   "max_tokens": 16, "temperature": 0}, press)
                barrier.wait()
                replies[k] = self.post("askers", "/v1/chat/completions", body)

            threads = [threading.Thread(target=ask, args=(k,)) for k in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            shared = sum(1 for r in replies if r and cached_tokens(r) > 0)
            self.count(f"askers ({'SnapKV' if press else 'full cache'}) resuming a shared prefill", shared)

    def repeater(self):
        """Six greedy completions with the full cache, again and again: every answer should be its
        first (the prompt cache and the context store change only the time)."""
        rng = random.Random("repeater")
        prompts = [self.text(rng, n) + "\n\nIn short, the text is about" for n in (300, 300, 700, 700, 1200, 1200)]
        first: dict[int, str] = {}
        while not self.stop.is_set():
            k = rng.randrange(len(prompts))
            reply = self.post("repeater", "/v1/completions", {"prompt": prompts[k], "max_tokens": 16, "temperature": 0})
            if reply is None:
                continue
            answer = reply["choices"][0]["text"]
            if k not in first:
                first[k] = answer
            elif answer == first[k]:
                self.count("repeater answer", "same")
            else:
                self.count("repeater answer", "different")
                with self.lock:
                    self.differences.append(f"prompt {k} (cached tokens {cached_tokens(reply)}): "
                                            f"{first[k]!r} then {answer!r}")

    def outages(self):
        """Stops the context store's Redis for 20 s at a quarter, half and three quarters of the run."""
        for quarter in (1, 2, 3):
            if self.stop.wait(self.args.minutes * 60 / 4 if quarter == 1 else self.args.minutes * 60 / 4 - 20):
                return
            self.redis.stop()
            self.count("redis", "stopped")
            self.stop.wait(20)
            self.redis = Redis(self.redis.port)

    def leaver(self, i: int):
        rng = random.Random(f"leaver-{i}")
        while not self.stop.is_set():
            path, body = self.body(rng)
            body["stream"] = True
            body["max_tokens"] = 200
            try:
                with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
                    raw = json.dumps(body).encode()
                    s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw)
                    time.sleep(rng.uniform(0.1, 3))
                self.count("leaver", "left")
            except OSError:
                self.count("leaver", "error")

    def slowloris(self, n: int):
        socks: list[socket.socket] = []
        while not self.stop.is_set():
            while len(socks) < n:
                try:
                    s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    socks.append(s)
                except OSError:
                    break
            alive = []
            for s in socks:
                try:
                    s.send(b"a")
                    alive.append(s)
                except OSError:
                    s.close()
                    self.count("slowloris", "dropped")
            socks = alive
            self.stop.wait(0.5)
        for s in socks:
            s.close()

    def clumsy(self):
        rng = random.Random("clumsy")
        def post(body: bytes, extra: bytes = b"") -> bytes:
            return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n%s\r\n"
                    % (len(body), extra)) + body

        bad = [
            post(b'{"messag'),
            post(b'{"messages":[{"role":"user","content":"x"}],"top_p":1e400}'),
            post(b"{}", b"Content-Length: 6\r\n"),
            post(b'{"messages":[{"role":"user","content":"x"}],"kv_compression":{"press":"nope"}}'),
            post(b'{"messages":[{"role":"user","content":"x"}],"speculation":{"mode":"draft"}}'),
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999999\r\n\r\n",
            b"DELETE /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"\x00\x01\x02 garbage\r\n\r\n",
        ]
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
                    s.sendall(rng.choice(bad))
                    head = s.recv(4096).split(b"\r\n", 1)[0]
                    m = re.match(rb"HTTP/1\.[01] (\d+)", head)
                    status = int(m.group(1)) if m else 0
                    self.count("clumsy", status)
                    if not 400 <= status < 500:
                        self.fail(f"clumsy request answered {head!r}")
            except OSError as e:
                self.count("clumsy", "error")
                self.fail(f"clumsy: {e!r}")
            self.stop.wait(0.2)

    def sample_rss(self, t0: float):
        while not self.stop.is_set():
            self.rss.append((time.monotonic() - t0, self.server.rss_bytes() or 0))
            self.stop.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "build/release/snapkv"))
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--data", default=os.environ.get("SNAPKV_DATA", str(ROOT.parent / "shared/data")))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--good", type=int, default=6, help="well-behaved clients")
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--leavers", type=int, default=2)
    ap.add_argument("--slowloris", type=int, default=100, help="trickling connections")
    ap.add_argument("--kv-memory", default="384MiB", help="the server's --kv-memory")
    ap.add_argument("--redis", action="store_true", help="a redis-server as the context store, with three outages")
    ap.add_argument("--server-args", default="", help="more flags for snapkv serve")
    ap.add_argument("--max-rss-growth", type=float, default=0.10)
    ap.add_argument("--out", default=str(ROOT / "results/server_soak"))
    args = ap.parse_args()

    essays = sorted((Path(args.data) / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    corpus = re.sub(r"\s+", " ", " ".join(p.read_text(errors="replace") for p in essays))
    redis = Redis(free_port()) if args.redis else None
    server_args = ["-t", "2", "--max-body", "1MiB", "--header-timeout", "5", "--kv-memory", args.kv_memory]
    if redis:
        server_args += ["--context-store", f"redis://127.0.0.1:{redis.port}"]
    server_args += shlex.split(args.server_args)
    server = SnapkvServer(args.binary, args.model, server_args)
    soak = Soak(args, server, corpus, redis)
    t0 = time.monotonic()
    threads = [threading.Thread(target=soak.sample_rss, args=(t0,))]
    threads += [threading.Thread(target=soak.well_behaved, args=(i,)) for i in range(args.good)]
    threads += [threading.Thread(target=soak.conversation, args=(i,)) for i in range(args.conversations)]
    threads += [threading.Thread(target=soak.leaver, args=(i,)) for i in range(args.leavers)]
    threads += [threading.Thread(target=f) for f in (soak.askers, soak.repeater, soak.clumsy)]
    threads += [threading.Thread(target=soak.slowloris, args=(args.slowloris,))]
    if redis:
        threads.append(threading.Thread(target=soak.outages))
    for t in threads:
        t.daemon = True
        t.start()
    metrics: dict[str, float] = {}
    try:
        while time.monotonic() - t0 < args.minutes * 60 and server.alive():
            time.sleep(5)
        soak.stop.set()
        for t in threads:
            t.join(320)
        alive = server.alive()
        if alive:
            metrics = server.metrics()
        rc = server.terminate(30) if alive else server.proc.returncode
        log_tail = server.log_tail(10)
    finally:
        server.cleanup()
        if soak.redis and soak.redis.proc.poll() is None:
            soak.redis.stop()

    rss = soak.rss
    q = max(1, len(rss) // 4)
    second = sum(r for _, r in rss[q:2 * q]) / max(1, len(rss[q:2 * q]))
    last = sum(r for _, r in rss[-q:]) / q
    growth = last / second - 1 if second else 0
    fivexx = {k: v for k, v in soak.statuses.items() if re.search(r" 5\d\d$", k)}
    served_5xx = {k: v for k, v in metrics.items() if re.search(r'status="5\d\d"', k) and '"503"' not in k}
    problems = list(soak.failures)
    if fivexx:
        problems.append(f"5xx answers: {fivexx}")
    if served_5xx:
        problems.append(f"5xx in the server's metrics: {served_5xx}")
    if not alive:
        problems.append("the server died")
    if rc != 0:
        problems.append(f"exit status after SIGTERM: {rc}")
    if growth > args.max_rss_growth:
        problems.append(f"RSS grew {growth:.1%} from the second quarter to the last")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rss.csv").write_text("seconds,rss_bytes\n" + "".join(f"{t:.0f},{r}\n" for t, r in rss))
    per_minute = {}
    for t, r in rss:
        per_minute.setdefault(int(t // 60), []).append(r)
    flags = " ".join(server_args)
    lines = [f"# Server soak: {args.minutes:g} minutes", "",
             f"`python3 scripts/soak_server.py --minutes {args.minutes:g}{' --redis' if redis else ''}` "
             f"({args.good} well-behaved clients, {args.conversations} conversations, 3 askers, a repeater, "
             f"{args.leavers} leavers, {args.slowloris} slowloris connections, one clumsy client; "
             f"`snapkv serve {flags}`, default model).", "",
             "| replies | count |", "|---|--:|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(soak.statuses.items())]
    lines += ["", "The server's own counts at the end (`/metrics`):", "", "| metric | value |", "|---|--:|"]
    lines += [f"| `{k}` | {v:g} |" for k, v in sorted(metrics.items())
              if k.startswith(("snapkv_requests_total", "snapkv_prompt", "snapkv_context_store", "snapkv_generated"))]
    lines += ["", f"Repeated greedy answers that changed: {len(soak.differences)}"]
    lines += [f"- {d}" for d in soak.differences[:10]]
    lines += ["", f"RSS: second quarter {second / 2**20:.0f} MiB, last quarter {last / 2**20:.0f} MiB "
                  f"({growth:+.1%}); exit status after SIGTERM {rc}.", "",
              "| minute | RSS MiB (min / max) |", "|--:|--:|"]
    lines += [f"| {m} | {min(v) / 2**20:.0f} / {max(v) / 2**20:.0f} |" for m, v in sorted(per_minute.items())]
    lines += ["", "Problems: " + ("none" if not problems else "; ".join(problems)), ""]
    if problems:
        lines += ["Server log, last lines:", "", "```", log_tail, "```", ""]
    (out / "summary.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
