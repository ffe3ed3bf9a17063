#!/usr/bin/env python3
"""Soak test for `snapkv serve` (standard library only; not in CI: 30 minutes by default).

One server, for --minutes, under a mix of clients at once:
  - well-behaved clients: chat and text completions, streaming and not, prompts of 50 to 1,500
    tokens cut from the Paul Graham essays, one request after the other;
  - leavers: streaming requests whose client disconnects after a random 0.1-3 s;
  - slowloris: connections that trickle a header byte every half second (reopened when the
    server's header deadline closes them);
  - clumsy clients: malformed JSON, bodies over --max-body, conflicting Content-Length, unknown
    routes, wrong methods, numbers out of range.
It samples the server's RSS every 10 s and fails when any reply is a 5xx (other than 503 at the
end), when a well-behaved request fails, when the process dies, when RSS in the last quarter is
more than --max-rss-growth above the second quarter (after warm-up), or when SIGTERM does not end
it with status 0. Writes OUT/summary.md (the RSS curve per minute, counts) and OUT/rss.csv.

  python3 scripts/soak_server.py --binary build/release/snapkv --minutes 30 --out results/server_soak
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from snapkv_server import SnapkvServer

ROOT = Path(__file__).resolve().parent.parent


class Soak:
    def __init__(self, args, server: SnapkvServer, corpus: str):
        self.args, self.server, self.corpus = args, server, corpus
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses: Counter[str] = Counter()  # "kind status"
        self.failures: list[str] = []
        self.rss: list[tuple[float, int]] = []

    def count(self, kind: str, status: int | str):
        with self.lock:
            self.statuses[f"{kind} {status}"] += 1

    def fail(self, what: str):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)

    def body(self, rng: random.Random) -> tuple[str, dict]:
        n_chars = 4 * rng.choice([50, 100, 200, 400, 800, 1500])
        start = self.corpus.find(" ", rng.randrange(0, len(self.corpus) - n_chars)) + 1
        text = self.corpus[start:start + n_chars]
        body: dict = {"max_tokens": rng.choice([8, 16, 32]), "stream": rng.random() < 0.5}
        if rng.random() < 0.5:
            return "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": text + "\n\nWhat is this about?"}]}
        return "/v1/completions", {**body, "prompt": text + "\n\nIn short, the text is about"}

    def well_behaved(self, i: int):
        rng = random.Random(f"good-{i}")
        while not self.stop.is_set():
            path, body = self.body(rng)
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=300)
                c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                self.count("good", r.status)
                if r.status != 200:
                    self.fail(f"well-behaved {path}: {r.status} {data[:200]!r}")
                elif body["stream"] and not data.endswith(b"data: [DONE]\n\n"):
                    self.fail(f"stream without [DONE]: {data[-200:]!r}")
                c.close()
            except OSError as e:
                self.count("good", "error")
                self.fail(f"well-behaved {path}: {e!r}")

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
    ap.add_argument("--leavers", type=int, default=2)
    ap.add_argument("--slowloris", type=int, default=100, help="trickling connections")
    ap.add_argument("--max-rss-growth", type=float, default=0.10)
    ap.add_argument("--out", default=str(ROOT / "results/server_soak"))
    args = ap.parse_args()

    essays = sorted((Path(args.data) / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    corpus = re.sub(r"\s+", " ", " ".join(p.read_text(errors="replace") for p in essays))
    server = SnapkvServer(args.binary, args.model, ["-t", "2", "--max-body", "1MiB", "--header-timeout", "5"])
    soak = Soak(args, server, corpus)
    t0 = time.monotonic()
    threads = [threading.Thread(target=soak.sample_rss, args=(t0,))]
    threads += [threading.Thread(target=soak.well_behaved, args=(i,)) for i in range(args.good)]
    threads += [threading.Thread(target=soak.leaver, args=(i,)) for i in range(args.leavers)]
    threads += [threading.Thread(target=soak.slowloris, args=(args.slowloris,)), threading.Thread(target=soak.clumsy)]
    for t in threads:
        t.daemon = True
        t.start()
    try:
        while time.monotonic() - t0 < args.minutes * 60 and server.alive():
            time.sleep(5)
        soak.stop.set()
        for t in threads:
            t.join(320)
        alive = server.alive()
        rc = server.terminate(30) if alive else server.proc.returncode
    finally:
        server.cleanup()

    rss = soak.rss
    q = max(1, len(rss) // 4)
    second = sum(r for _, r in rss[q:2 * q]) / max(1, len(rss[q:2 * q]))
    last = sum(r for _, r in rss[-q:]) / q
    growth = last / second - 1 if second else 0
    fivexx = {k: v for k, v in soak.statuses.items() if re.search(r" 5\d\d$", k)}
    problems = list(soak.failures)
    if fivexx:
        problems.append(f"5xx answers: {fivexx}")
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
    lines = [f"# Server soak: {args.minutes:g} minutes", "",
             f"`python3 scripts/soak_server.py --minutes {args.minutes:g}` ({args.good} well-behaved clients, "
             f"{args.leavers} leavers, {args.slowloris} slowloris connections, one clumsy client; "
             f"`snapkv serve -t 2 --max-body 1MiB --header-timeout 5`, default model).", "",
             "| replies | count |", "|---|--:|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(soak.statuses.items())]
    lines += ["", f"RSS: second quarter {second / 2**20:.0f} MiB, last quarter {last / 2**20:.0f} MiB "
                  f"({growth:+.1%}); exit status after SIGTERM {rc}.", "",
              "| minute | RSS MiB (min / max) |", "|--:|--:|"]
    lines += [f"| {m} | {min(v) / 2**20:.0f} / {max(v) / 2**20:.0f} |" for m, v in sorted(per_minute.items())]
    lines += ["", "Problems: " + ("none" if not problems else "; ".join(problems)), ""]
    (out / "summary.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
