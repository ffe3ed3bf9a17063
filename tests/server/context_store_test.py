"""Two `snapkv serve` replicas sharing a context store on a real Redis server (Debian's
redis-server, started here on a free loopback port, nothing saved to disk).

A document sent to replica A is found by replica B: B's answer reports the document's tokens as
cached (usage.prompt_tokens_details.cached_tokens) and B's /metrics count them as resumed, not
prefilled. Within one replica, a conversation's next turn resumes from the turn before. When Redis
goes away the replicas still answer (one log line), and find it again when it is back.

Usage: context_store_test.py SNAPKV_BINARY MODEL
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from snapkv_server import SnapkvServer, cached_tokens  # noqa: E402
from redis_server import Redis, free_port  # noqa: E402
from checks import Checks, expect  # noqa: E402


def chat(server: SnapkvServer, messages: list[dict], max_tokens: int = 8) -> dict:
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0}).encode()
    req = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        expect(r.status == 200, f"status {r.status}")
        return json.loads(r.read())


def log_count(server: SnapkvServer, text: str) -> int:
    return Path(server.log.name).read_text(errors="replace").count(text)


def main() -> int:
    binary, model = sys.argv[1], sys.argv[2]
    data = Path(os.environ.get("SNAPKV_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    essays = sorted((data / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    expect(len(essays) >= 2, f"no Paul Graham essays under {data}")
    doc_a, doc_b = (e.read_text()[:4000] for e in essays[:2])
    if shutil.which("redis-server") is None:
        print("FAIL redis-server is not installed (scripts/install_deps.sh installs it)")
        return 1

    checks = Checks()
    port = free_port()
    redis = Redis(port)
    store = f"redis://127.0.0.1:{port}"
    replicas = [SnapkvServer(binary, model, ["-t", "1", "--context-store", store]) for _ in range(2)]
    a, b = replicas
    try:
        question = [{"role": "user", "content": doc_a + "\n\nWhat is this essay about?"}]

        def shared_between_replicas():
            first = chat(a, question)
            expect(cached_tokens(first) == 0, f"a new document reported {cached_tokens(first)} cached tokens")
            # The replica saves on a background thread: the state, then an index key per 256-token
            # prefix, shortest first. Replica B can resume once the prompt's prefixes are indexed.
            n_index = first["usage"]["prompt_tokens"] // 256
            deadline = time.monotonic() + 20
            while len(redis.command("KEYS", "snapkv:1:index:*") or []) < n_index and time.monotonic() < deadline:
                time.sleep(0.1)
            expect(redis.command("KEYS", "snapkv:1:state:*"), "replica A saved no state to Redis")
            expect(len(redis.command("KEYS", "snapkv:1:index:*") or []) >= n_index, "replica A indexed too few prefixes")
            other = [{"role": "user", "content": doc_a + "\n\nWho wrote it, and when?"}]
            second = chat(b, other)
            n_prompt = second["usage"]["prompt_tokens"]
            expect(cached_tokens(second) >= n_prompt // 2,
                   f"replica B resumed {cached_tokens(second)} of {n_prompt} prompt tokens from the store")
            m = b.metrics()
            expect(m["snapkv_context_store_hits_total"] == 1, f"store hits {m['snapkv_context_store_hits_total']}")
            expect(m["snapkv_prompt_tokens_prefilled_total"] == n_prompt - cached_tokens(second),
                   f"replica B prefilled {m['snapkv_prompt_tokens_prefilled_total']} tokens")
            return f"{cached_tokens(second)} of {n_prompt} prompt tokens from the store"

        def next_turn_in_memory():
            first = chat(b, question, max_tokens=16)
            answer = first["choices"][0]["message"]["content"]
            turn = question + [{"role": "assistant", "content": answer},
                               {"role": "user", "content": "Say it in one sentence."}]
            second = chat(b, turn)
            # The template's closing tokens after the answer and the new message are new.
            expect(cached_tokens(second) >= first["usage"]["prompt_tokens"] - 1,
                   f"turn 2 resumed {cached_tokens(second)} tokens; turn 1 had {first['usage']['prompt_tokens']}")
            m = b.metrics()
            expect(m["snapkv_prompt_cache_entries"] >= 1 and m["snapkv_prompt_cache_bytes"] > 0, "nothing cached")
            return f"turn 2: {cached_tokens(second)} of {second['usage']['prompt_tokens']} tokens cached"

        def redis_away_and_back():
            redis.stop()
            for i in range(2):
                reply = chat(a, [{"role": "user", "content": doc_b + f"\n\nQuestion {i}: what is the point?"}])
                expect(reply["choices"][0]["finish_reason"] in ("stop", "length"), f"reply {reply}")
            expect(log_count(a, "unreachable") == 1, f"{log_count(a, 'unreachable')} 'unreachable' lines:\n"
                   + a.log_tail())
            restarted = Redis(port)
            try:
                time.sleep(1.2)  # the replica asks again at most once a second
                chat(a, [{"role": "user", "content": doc_b + "\n\nOne more question: why?"}])
                deadline = time.monotonic() + 20
                while log_count(a, "reachable again") == 0 and time.monotonic() < deadline:
                    time.sleep(0.1)
                expect(log_count(a, "reachable again") == 1, "no 'reachable again' line:\n" + a.log_tail())
                deadline = time.monotonic() + 20
                while not restarted.command("KEYS", "snapkv:1:state:*") and time.monotonic() < deadline:
                    time.sleep(0.1)
                expect(restarted.command("KEYS", "snapkv:1:state:*"), "nothing saved after Redis came back")
            finally:
                restarted.stop()
            return "answered while Redis was down; saved again once it was back"

        checks.run("a document sent to one replica is cached for the other", shared_between_replicas)
        checks.run("a conversation's next turn resumes from the turn before", next_turn_in_memory)
        checks.run("Redis going away costs one log line and no request", redis_away_and_back)
        for r in replicas:
            expect(r.alive(), "a replica exited")
    finally:
        for r in replicas:
            r.terminate()
            r.cleanup()
        if redis.proc.poll() is None:
            redis.stop()
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
