#!/usr/bin/env python3
"""Decode throughput of `snapkv serve` against llama.cpp's servers, side by side in one run.

Contenders (one server process each, all started by this script, on the same model, threads and
context, measured one after the other, order rotated):
  snapkv-full       `snapkv serve --kv-press full`
  snapkv-C1024      `snapkv serve --kv-press snapkv --kv-capacity 1024`
  snapkv-full-spec, snapkv-C1024-spec   the same with `--spec prompt-lookup` (speculative decoding:
                    each sequence's drafts verified in the batched decode steps)
  llama-server      llama.cpp's own server, built natively (scripts/build_llamacpp.sh), full f16
                    cache (llama.cpp has no KV compression), one slot per concurrent request
                    (`-np` = the largest batch, `-c` = --ctx per slot), continuous batching: the peer
  llama-cpp-python  llama-cpp-python's server (`python -m llama_cpp.server`, --llama-python), what
                    pip installs. It serves ONE request at a time (a lock around the model), so its
                    batch-B figures are B requests queued and served one after another.

For each batch size B (default 1, 4, 8) and repetition, B different ~7K-token prompts (Paul Graham
essays, cut at deterministic, distinct offsets, so llama.cpp cannot reuse a cached prompt prefix)
are sent at once with max_tokens = 1 + N (temperature 0, streaming). Decode throughput must not
include the prefill. Two measures, both reported:

  decode tok/s     the steady window, the same black-box measure for every server: from the moment
                   the last of the B requests streams its first token (every prefill is done) to the
                   moment the first one streams its last; tokens streamed by all B requests inside
                   the window / its length. With B = 1 it is (tokens - 1) / (last - first token). A
                   server that runs one request at a time has no such window at B > 1: there the
                   sum of each request's first-to-last-token spans is its decode time.
  timers tok/s     snapkv only: (sum of completion tokens - B) / (wall - prefill time), the prefill
                   time from the server's own accounting (/metrics snapkv_prefill_seconds_total).
                   It counts the steps where fewer than B sequences decode too.

The first token of each request is sampled from the prefill's logits (no decode step), hence "- B".
--method subtract (or both) adds a third, black-box recipe: a second run of B other prompts of the
same length with max_tokens = 1 ("prefill only") and decode tok/s = (sum completion - B) /
(wall(run with N) - wall(prefill-only run)). It doubles the prefill work, and at B = 8 its result is
the difference of two ~6-minute walls, so machine noise weighs far more than with the window.

Also reported: engine decode tok/s (snapkv: /metrics snapkv_decode_seconds_total, the time of the
batched decode steps only), the mean number of sequences per decode step (snapkv: tokens fed to
decode steps / steps; 1 for llama-cpp-python by construction; not known for llama-server), prefill
seconds per prompt (snapkv: its timers; llama.cpp: the time until the last request's first token,
over B), per-request latency, the server-reported decode_seconds (snapkv usage), KV bytes per
sequence. Figures are medians over --reps runs (--reps-batched for B > 1: every B = 8 run costs 8
prefills of 7K tokens, ~6 minutes per snapkv contender on 2 cores). Before each measurement the
script waits until no other process uses the CPU (up to --quiet-timeout); a measurement during which
other processes took more than --max-foreign-cpu cores is run again with fresh prompts (up to
--max-retries), then kept and marked "busy!".

  bash scripts/build_llamacpp.sh              # once: native llama.cpp tools, 10+ minutes on 2 cores
  python3 bench/scripts/bench_server.py       # ~45 min on 2 cores
  python3 bench/scripts/bench_server.py --quick   # ~6 min, 2K prompts
  bash scripts/setup_llamacpp_server_venv.sh  # for the llama-cpp-python contender (--llama-python)

Standard library only. llama.cpp's tokenizer (llama-server's /tokenize, else the --llama-python
environment's) cuts every prompt to exactly --prompt-tokens tokens (without either: ~4.2 characters
per token, actual counts reported).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: bench/scripts/ is two levels down
sys.path.insert(0, str(ROOT / "scripts"))  # snapkv_server.py, shared with scripts/load_test.py

from snapkv_server import SnapkvServer  # noqa: E402
CHARS_PER_TOKEN = 4.2
LLAMA_SERVER = "llama-server"
LLAMA_PYTHON = "llama-cpp-python"
STOP = threading.Event()  # set by SIGTERM / SIGINT


def log(msg: str):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# a quiet machine


def _cpu_ticks() -> dict[int, tuple[int, str]]:
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(d)] = (int(fields[11]) + int(fields[12]), name)  # utime + stime
        except (OSError, ValueError, IndexError):
            pass
    return out


def _busy_ticks() -> int:
    """Ticks all CPUs spent busy (/proc/stat: user nice system irq softirq steal), processes that
    have come and gone included, which per-process snapshots would miss (a build's compiler runs)."""
    f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f[:8])
    return user + nice + system + irq + softirq + steal


class CpuWatch:
    """CPU that processes other than `exclude` (this script, the servers) use between start() and
    stop(): all busy time minus ours."""

    def __init__(self, exclude: set[int]):
        self.exclude = exclude

    def start(self):
        self.t = time.monotonic()
        self.busy = _busy_ticks()
        self.procs = _cpu_ticks()

    def stop(self) -> tuple[float, list[str]]:
        hz = os.sysconf("SC_CLK_TCK")
        seconds = max(time.monotonic() - self.t, 1e-3)
        procs = _cpu_ticks()
        ours = sum(t - self.procs.get(pid, (0, ""))[0] for pid, (t, _) in procs.items() if pid in self.exclude)
        others = max(0, _busy_ticks() - self.busy - ours) / hz / seconds
        top = sorted(((t - self.procs.get(pid, (0, ""))[0], pid, name) for pid, (t, name) in procs.items()
                      if pid not in self.exclude), reverse=True)[:3]
        return others, [f"{pid} {name} {t / hz / seconds:.0%}" for t, pid, name in top if t / hz / seconds > 0.02]


def wait_quiet(exclude: set[int], timeout: float, threshold: float) -> list[str]:
    """Waits until other processes use less than `threshold` cores for 3 s in a row."""
    t0 = time.monotonic()
    last = 0.0
    watch = CpuWatch(exclude)
    while True:
        watch.start()
        time.sleep(3)
        others, top = watch.stop()
        if others <= threshold or STOP.is_set():
            return []
        if time.monotonic() - t0 >= timeout:
            log(f"WARNING: measuring on a busy machine (waited {timeout:.0f} s): others use {others:.2f} cores: {top}")
            return [f"{others:.2f} cores"] + top
        if time.monotonic() - last >= 60:
            log(f"waiting for a quiet machine: others use {others:.2f} cores: {top}")
            last = time.monotonic()


# ---------------------------------------------------------------------------------------------
# prompts


def load_corpus(data_dir: Path) -> str:
    essays = sorted((data_dir / "niah_paulgraham" / "PaulGrahamEssays").glob("*.txt"))
    if not essays:
        raise SystemExit(f"no essays under {data_dir}/niah_paulgraham/PaulGrahamEssays (set --data or SNAPKV_DATA)")
    return re.sub(r"\s+", " ", " ".join(p.read_text(errors="replace") for p in essays)).strip()


def excerpts(corpus: str, n: int, n_chars: int, seed: int) -> list[str]:
    """n texts of about n_chars characters starting at distinct word boundaries (at least 2,000
    characters apart), wrapping around the corpus when it is shorter than an excerpt."""
    ring = corpus + " " + corpus
    slots = list(range(0, len(corpus) - 1, 2000))
    if n > len(slots):
        raise SystemExit(f"the corpus has room for {len(slots)} distinct prompts, {n} needed")
    starts = random.Random(seed).sample(slots, n)
    out = []
    for s in starts:
        s = ring.find(" ", s) + 1
        out.append(ring[s:s + n_chars].rsplit(" ", 1)[0])
    return out


TOKENIZE_SRC = r"""
import json, sys
from llama_cpp import Llama
req = json.load(sys.stdin)
llm = Llama(model_path=req["model"], vocab_only=True, verbose=False)
def count(t): return len(llm.tokenize(t.encode(), add_bos=True, special=True))
out = []
for text in req["texts"]:
    want = req["tokens"]
    ids = llm.tokenize(text.encode(), add_bos=False, special=False)
    if len(ids) < want:
        raise SystemExit(f"an excerpt has only {len(ids)} tokens, {want} wanted")
    n_bos = count("x") - len(llm.tokenize(b"x", add_bos=False, special=True))
    keep = want - n_bos
    while True:
        t = llm.detokenize(ids[:keep]).decode("utf-8", errors="ignore")
        n = count(t)
        if n <= want or keep <= 0:
            break
        keep -= n - want
    out.append([t, n])
json.dump(out, sys.stdout)
"""


def http_post(port: int, path: str, body: dict, timeout: float = 60) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def cut_with_llama_server(port: int, texts: list[str], want: int) -> list[tuple[str, int]]:
    """The TOKENIZE_SRC recipe over llama-server's /tokenize and /detokenize."""
    def ids(text: str, special: bool) -> list:
        return http_post(port, "/tokenize", {"content": text, "add_special": special})["tokens"]

    n_bos = len(ids("x", True)) - len(ids("x", False))
    out = []
    for text in texts:
        toks = ids(text, False)
        if len(toks) < want:
            raise SystemExit(f"an excerpt has only {len(toks)} tokens, {want} wanted")
        keep = want - n_bos
        while True:
            t = http_post(port, "/detokenize", {"tokens": toks[:keep]})["content"]
            n = len(ids(t, True))
            if n <= want or keep <= 0:
                break
            keep -= n - want
        out.append((t, n))
    return out


def make_prompts(args, corpus: str, n: int, seed: int, llama_server_port: int | None) -> list[tuple[str, int | None]]:
    """n prompts of --prompt-tokens tokens: (text, tokens by llama.cpp's tokenizer or None)."""
    if llama_server_port:
        texts = excerpts(corpus, n, int(args.prompt_tokens * CHARS_PER_TOKEN * 1.3) + 200, seed)
        return cut_with_llama_server(llama_server_port, texts, args.prompt_tokens)
    if args.llama_python:
        texts = excerpts(corpus, n, int(args.prompt_tokens * CHARS_PER_TOKEN * 1.3) + 200, seed)
        r = subprocess.run([args.llama_python, "-c", TOKENIZE_SRC], input=json.dumps(
            {"model": args.model, "texts": texts, "tokens": args.prompt_tokens}), capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"tokenizing the prompts with {args.llama_python} failed:\n{r.stderr[-2000:]}")
        return [(t, c) for t, c in json.loads(r.stdout)]
    return [(t, None) for t in excerpts(corpus, n, int(args.prompt_tokens * CHARS_PER_TOKEN), seed)]


# ---------------------------------------------------------------------------------------------
# servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


class Contender:
    def __init__(self, name: str, kind: str, cmd: list[str], press: dict | None = None):
        self.name, self.kind, self.cmd, self.press = name, kind, cmd, press
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.request_timeout = 3600.0
        self.log = None  # the server's log file, from start()
        self.server: SnapkvServer | None = None

    @property
    def is_snapkv(self) -> bool:
        return self.kind == "snapkv"

    def start(self, timeout: float):
        if self.is_snapkv:  # self.cmd: [binary, model, serve options...]
            try:
                self.server = SnapkvServer(self.cmd[0], self.cmd[1], self.cmd[2:], timeout)
            except RuntimeError as e:
                raise SystemExit(str(e))
            self.proc, self.port, self.log = self.server.proc, self.server.port, self.server.log
        else:
            self.port = free_port()
            self.cmd = [c.replace("{PORT}", str(self.port)) for c in self.cmd]
            self.log = tempfile.NamedTemporaryFile(prefix=f"bench-server-{self.kind}-", suffix=".log", delete=False)
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    http_get(self.port, "/v1/models", 2)
                    break
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        self.stop()
                        raise SystemExit(f"{' '.join(self.cmd)}: did not come up\n{self.log_tail()}")
                    time.sleep(0.3)

    def metrics(self) -> dict[str, float]:
        return self.server.metrics() if self.server else {}

    def body(self, prompt: str, max_tokens: int) -> dict:
        b = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}
        if self.is_snapkv:
            # the last of 8 queued 7K prompts finishes after ~6 minutes: above the server's default
            # request timeout (600 s) with a slower machine
            b.update({"stream_options": {"include_usage": True}, "timeout": self.request_timeout})
        elif self.name == LLAMA_SERVER:
            b["stream_options"] = {"include_usage": True}
        else:
            # llama-cpp-python's request defaults differ from OpenAI's (repeat_penalty 1.1, top_k 40,
            # ...): with temperature 0 it samples greedily; the penalty would still cost time.
            b.update({"repeat_penalty": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0})
        return b

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def log_text(self) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace") if self.log else ""
        except OSError:
            return ""

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


# ---------------------------------------------------------------------------------------------
# one measurement


@dataclass
class Req:
    status: int = 0
    error: str = ""
    t_send: float = 0.0
    t_first: float | None = None   # first streamed chunk with text (after the prefill)
    t_last: float | None = None    # last streamed chunk with text or a finish reason
    t_end: float = 0.0
    chunks: int = 0
    stamps: list = field(default_factory=list)  # when each chunk with text arrived
    finish: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int = 0
    completion_exact: bool = True
    usage: dict = field(default_factory=dict)


def send(c: Contender, prompt: str, max_tokens: int, timeout: float, t0: float) -> Req:
    r = Req()
    r.t_send = time.monotonic() - t0
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=timeout)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(c.body(prompt, max_tokens)),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        r.status = resp.status
        if resp.status != 200:
            r.error = resp.read().decode(errors="replace")[:300]
            return r
        done = False
        for raw in resp:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("data:"):
                continue  # blank separators, ": ping" comments, "event:" lines
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            chunk = json.loads(data)
            now = time.monotonic() - t0
            if "error" in chunk:
                r.error = f"error event: {chunk['error']}"
                return r
            if chunk.get("usage"):
                r.usage = chunk["usage"]
            for ch in chunk.get("choices") or []:
                if r.t_first is None and ch.get("text"):
                    r.t_first = now
                if ch.get("text") or ch.get("finish_reason"):
                    r.t_last = now
                    if ch.get("text"):
                        r.chunks += 1
                        r.stamps.append(now)
                r.finish = ch.get("finish_reason") or r.finish
        if not done:
            r.error = "stream ended without [DONE]"
    except (OSError, http.client.HTTPException, ValueError) as e:
        r.error = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
        r.t_end = time.monotonic() - t0
    if r.usage:
        r.prompt_tokens = r.usage.get("prompt_tokens")
        r.completion_tokens = int(r.usage.get("completion_tokens", 0))
    elif r.finish == "length":
        r.completion_tokens = max_tokens
    else:  # llama-cpp-python streams no usage; one chunk per token unless a UTF-8 sequence spans two
        r.completion_tokens, r.completion_exact = r.chunks, False
    return r


def steady_window(reqs: list[Req]) -> tuple[int, float] | None:
    """(tokens, seconds) streamed by all requests while every one of them was decoding: after the
    last first token, up to the first last token; None when the requests never decoded together."""
    if not all(r.stamps for r in reqs):
        return None
    start, end = max(r.stamps[0] for r in reqs), min(r.stamps[-1] for r in reqs)
    if end <= start:
        return None
    return sum(1 for r in reqs for t in r.stamps if start < t <= end), end - start


def run_batch(c: Contender, prompts: list[tuple[str, int | None]], max_tokens: int, args, exclude: set[int]) -> dict:
    busy = wait_quiet(exclude, args.quiet_timeout, args.max_foreign_cpu)
    watch = CpuWatch(exclude)
    watch.start()
    m0 = c.metrics()
    log_before = len(c.log_text()) if not c.is_snapkv else 0
    results: list[Req | None] = [None] * len(prompts)
    barrier = threading.Barrier(len(prompts) + 1)
    t0 = 0.0

    def worker(i: int):
        barrier.wait()
        results[i] = send(c, prompts[i][0], max_tokens, args.request_timeout, t0)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(prompts))]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    barrier.wait()
    for t in threads:
        t.join()
    reqs: list[Req] = results  # type: ignore[assignment]
    wall = max(r.t_end for r in reqs)
    m1 = c.metrics()
    if c.is_snapkv:
        # the scheduler adds a step's tokens to /metrics after the responses it ended have gone out
        want = m0.get("snapkv_generated_tokens_total", 0) + sum(r.completion_tokens for r in reqs if r.usage)
        deadline = time.monotonic() + 2
        while m1.get("snapkv_generated_tokens_total", 0) < want and time.monotonic() < deadline:
            time.sleep(0.05)
            m1 = c.metrics()
    others, top = watch.stop()
    B = len(prompts)
    out: dict = {"contender": c.name, "batch": B, "max_tokens": max_tokens, "wall_s": wall, "busy": busy,
                 "foreign_cpu": others, "foreign_top": top, "requests": [asdict(r) for r in reqs]}
    errors = [f"{r.status} {r.error}" for r in reqs if r.status != 200 or r.error]
    if errors:
        out["errors"] = errors
        log(f"  {c.name} B={B}: {len(errors)} failed requests: {errors[:3]}")
        return out
    total = sum(r.completion_tokens for r in reqs)
    out["completion_tokens"] = total
    out["completion_exact"] = all(r.completion_exact for r in reqs)
    out["finish"] = sorted({str(r.finish) for r in reqs})
    out["prompt_tokens"] = [r.prompt_tokens if r.prompt_tokens is not None else p[1] for r, p in zip(reqs, prompts)]
    out["latency_s"] = [r.t_end - r.t_send for r in reqs]
    out["ttft_s"] = [(r.t_first or r.t_end) - r.t_send for r in reqs]
    fed = total - B  # tokens that went through a decode step
    window = steady_window(reqs)
    if c.is_snapkv:
        d = {k: m1.get(k, 0.0) - m0.get(k, 0.0) for k in (
            "snapkv_prefill_seconds_total", "snapkv_decode_seconds_total", "snapkv_decode_steps_total",
            "snapkv_generated_tokens_total", "snapkv_prompt_tokens_total")}
        out["metrics_delta"] = d
        prefill = d["snapkv_prefill_seconds_total"]
        out["prefill_s"] = prefill
        out["timers_decode_tok_s"] = fed / (wall - prefill) if wall > prefill else None
        out["engine_decode_s"] = d["snapkv_decode_seconds_total"]
        out["mean_decode_batch"] = fed / d["snapkv_decode_steps_total"] if d["snapkv_decode_steps_total"] else None
        out["server_decode_seconds"] = [r.usage.get("decode_seconds") for r in reqs]
        out["server_prefill_seconds"] = [r.usage.get("prefill_seconds") for r in reqs]
        out["kv_bytes"] = [r.usage.get("kv_bytes") for r in reqs]
        out["kv_full_bytes"] = [r.usage.get("kv_full_bytes") for r in reqs]
        if d["snapkv_generated_tokens_total"] != total:
            out.setdefault("notes", []).append(
                f"/metrics counted {d['snapkv_generated_tokens_total']:.0f} generated tokens, usage {total}")
    elif c.name == LLAMA_PYTHON:
        out["engine_decode_s"] = None
        out["mean_decode_batch"] = 1.0
        if window is None:  # one request at a time: each decodes alone from its first token to its last
            spans = [(r.t_last or r.t_end) - (r.t_first or r.t_end) for r in reqs]
            window = (sum(r.chunks - 1 for r in reqs), sum(spans))
        out["prefill_s"] = wall - window[1]
        # llama-cpp-python logs "N prefix-match hit" when it reuses the cache of the previous prompt
        hits = re.findall(r"(\d+) prefix-match hit", c.log_text()[log_before:])
        out["prefix_match_tokens"] = [int(h) for h in hits]
        if any(int(h) > 16 for h in hits):
            out.setdefault("notes", []).append(f"llama.cpp reused cached prompt prefixes: {hits}")
    else:  # llama-server
        out["prefill_s"] = max((r.t_first or r.t_end) for r in reqs)  # until every prefill is done
        out["engine_decode_s"] = None
        out["mean_decode_batch"] = None
    out["window_tokens"], out["window_s"] = window or (None, None)
    out["decode_tok_s"] = window[0] / window[1] if window and window[1] > 0 else None
    out["engine_decode_tok_s"] = fed / out["engine_decode_s"] if out.get("engine_decode_s") else None
    out["prefill_s_per_prompt"] = out["prefill_s"] / B
    return out


# ---------------------------------------------------------------------------------------------
# the run


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".1f", none="–"):
    return none if x is None else format(x, spec)


def build_contenders(args) -> list[Contender]:
    out = []
    common = [args.binary, args.model, "-t", str(args.threads), "--kv-memory", args.kv_memory, "--max-batch", str(max(args.batches)), "--max-queue",
              str(max(16, max(args.batches)))] + args.snapkv_arg
    names = set(args.contenders)
    spec = ["--spec", "prompt-lookup"]
    full, pressed = ["--kv-press", "full"], ["--kv-press", "snapkv", "--kv-capacity", str(args.capacity)]
    for name, label, flags in [("snapkv-full", "snapkv-full", full),
                               ("snapkv-C", f"snapkv-C{args.capacity}", pressed),
                               ("snapkv-full-spec", "snapkv-full-spec", full + spec),
                               ("snapkv-C-spec", f"snapkv-C{args.capacity}-spec", pressed + spec)]:
        if name in names:
            out.append(Contender(label, "snapkv", common + flags))
    if LLAMA_SERVER in names:
        if not Path(args.llama_server).is_file():
            raise SystemExit(f"{args.llama_server}: not found; bash scripts/build_llamacpp.sh builds it "
                             f"(or --contenders without {LLAMA_SERVER})")
        slots = max(args.batches)
        out.append(Contender(LLAMA_SERVER, "llamacpp", [
            args.llama_server, "--model", args.model, "--host", "127.0.0.1", "--port", "{PORT}",
            "--threads", str(args.threads), "--threads-batch", str(args.threads),
            # one slot per concurrent request, each with --ctx positions (the slots share one cache)
            "--parallel", str(slots), "--ctx-size", str(args.ctx * slots), "--cont-batching",
            "--flash-attn", args.llama_flash_attn, "--no-webui"] + args.llama_server_arg))
    if LLAMA_PYTHON in names:
        if not args.llama_python:
            raise SystemExit(f"{LLAMA_PYTHON} needs --llama-python (a python with llama-cpp-python[server]); "
                             f"see scripts/setup_llamacpp_server_venv.sh, or --contenders without {LLAMA_PYTHON}")
        out.append(Contender(LLAMA_PYTHON, "llamacpp", [
            args.llama_python, "-m", "llama_cpp.server", "--model", args.model, "--host", "127.0.0.1",
            "--port", "{PORT}", "--n_ctx", str(args.ctx), "--n_batch", "512", "--n_ubatch", "512",
            "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
            "--flash_attn", "True" if args.llama_flash_attn == "on" else "False",
            # the server's default logits_all=True computes and copies the logits of every prompt
            # token (7K x 49K floats): a cost no completion needs and snapkv does not pay
            "--logits_all", "False",
            # by default a queued request interrupts a streaming one
            "--interrupt_requests", "False",
            "--use_mlock", "False", "--cache", "False", "--verbose", "True"] + args.llama_arg))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build/release/snapkv"))
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--data", default=os.environ.get("SNAPKV_DATA", str(ROOT.parent / "shared/data")),
                    help="data directory with niah_paulgraham/ (default: $SNAPKV_DATA, then ../shared/data)")
    ap.add_argument("--llama-python", default=None,
                    help="python of a venv with llama-cpp-python[server] (e.g. tools/reference/.venv/bin/python)")
    ap.add_argument("--contenders", default=f"snapkv-full,snapkv-C,{LLAMA_SERVER}",
                    help=f"comma-separated subset of snapkv-full, snapkv-C (SnapKV at --capacity), snapkv-full-spec, "
                         f"snapkv-C-spec (both with --spec prompt-lookup), {LLAMA_SERVER}, "
                         f"{LLAMA_PYTHON}")
    ap.add_argument("--llama-server", default=str(Path.home() / ".cache/snapkv/llamacpp-0.3.36/bin/llama-server"),
                    help="native llama-server (scripts/build_llamacpp.sh; default: its cache)")
    ap.add_argument("--capacity", type=int, default=1024, help="SnapKV entries per layer and KV head")
    ap.add_argument("--batches", default="1,4,8", help="concurrent requests per measurement")
    ap.add_argument("--prompt-tokens", type=int, default=None, help="tokens per prompt (default 7000; --quick 2000)")
    ap.add_argument("--new-tokens", type=int, default=None,
                    help="N: decode tokens per request; max_tokens = 1 + N (default 128; --quick 32)")
    ap.add_argument("--reps", type=int, default=None, help="runs per measurement at batch 1 (default 3; --quick 2)")
    ap.add_argument("--reps-batched", type=int, default=None,
                    help="runs per measurement at batch > 1 (default 1: each costs B prefills; --quick 1)")
    ap.add_argument("--method", choices=["timers", "subtract", "both"], default="timers",
                    help="how the prefill is taken out (see above; subtract and both double the prefill work)")
    ap.add_argument("--quick", action="store_true", help="development: 2K-token prompts, N = 32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=8192, help="llama.cpp's n_ctx (snapkv: the model's context)")
    ap.add_argument("--kv-memory", default="4GiB")
    ap.add_argument("--llama-flash-attn", choices=["on", "off"], default="off",
                    help="llama.cpp flash attention (off: the peer's faster decode at 7K tokens of context on the "
                         "2-core AVX2 VM, llama-bench -d 7000 13.4 vs 6.75 tok/s; on: what its -fa auto picks on a CPU)")
    ap.add_argument("--snapkv-arg", action="append", default=[], help="extra argument for snapkv serve (repeatable)")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra argument for llama_cpp.server (repeatable)")
    ap.add_argument("--llama-server-arg", action="append", default=[], help="extra argument for llama-server (repeatable)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet-timeout", type=float, default=900,
                    help="seconds to wait for other processes to leave the CPU before each measurement")
    ap.add_argument("--max-foreign-cpu", type=float, default=0.1,
                    help="cores other processes may use during a measurement before it is run again")
    ap.add_argument("--max-retries", type=int, default=2,
                    help="reruns of a measurement disturbed by other processes (then it is kept, marked busy)")
    ap.add_argument("--request-timeout", type=float, default=3600)
    ap.add_argument("--startup-timeout", type=float, default=180)
    ap.add_argument("--out", default=str(ROOT / "results/bench_server.json"), help="raw numbers (JSON)")
    args = ap.parse_args()

    args.prompt_tokens = args.prompt_tokens or (2000 if args.quick else 7000)
    args.new_tokens = args.new_tokens or (32 if args.quick else 128)
    args.reps = args.reps or (2 if args.quick else 3)
    args.reps_batched = args.reps_batched or 1
    args.batches = [int(b) for b in args.batches.split(",")]
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if args.llama_python:
        args.llama_python = str(Path(args.llama_python).absolute())  # a venv's python: keep the symlink
    if args.prompt_tokens + 1 + args.new_tokens > args.ctx:
        raise SystemExit("--prompt-tokens + 1 + --new-tokens exceeds the context")
    for p in (args.binary, args.model):
        if not Path(p).exists():
            raise SystemExit(f"{p}: not found")

    corpus = load_corpus(Path(args.data))
    kinds = ["gen"] + (["prefill"] if args.method != "timers" else [])
    plan = []  # (rep, batch, kind): every one gets its own prompts, shared by all contenders
    for rep in range(max(args.reps, args.reps_batched)):
        for b in args.batches:
            if rep < (args.reps if b == 1 else args.reps_batched):
                for k in kinds:
                    plan.append((rep, b, k))
    discarded: list[dict] = []
    contenders = build_contenders(args)

    def stop_soon(signum, frame):  # SIGTERM / SIGINT: finish with what has been measured, stop the servers
        if STOP.is_set():
            raise KeyboardInterrupt
        STOP.set()
        log("interrupted: stopping after the measurement under way (again: at once)")

    signal.signal(signal.SIGTERM, stop_soon)
    signal.signal(signal.SIGINT, stop_soon)
    for c in contenders:
        c.request_timeout = args.request_timeout
    exclude = {os.getpid()}
    results: list[dict] = []
    report: dict = {"args": {k: v for k, v in vars(args).items()}, "host": platform.node(),
                    "cpu": next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                                 if l.startswith("model name")), platform.processor()),
                    "n_cpus": os.cpu_count(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "servers": {}, "results": results, "discarded": discarded}
    try:
        for c in contenders:
            c.start(args.startup_timeout)
            exclude.add(c.proc.pid)
            report["servers"][c.name] = " ".join(c.cmd)
            log(f"{c.name}: port {c.port}: {' '.join(c.cmd)}")
        exclude |= {p.pid for p in map(lambda c: c.proc, contenders)}
        n_prompts = sum(b for _, b, _ in plan)
        n_spares = 2 * max(args.batches) + 1 if args.max_retries else 0
        log(f"preparing {n_prompts} + {n_spares} spare prompts of {args.prompt_tokens} tokens")
        tokenizer = next((c.port for c in contenders if c.name == LLAMA_SERVER), None)
        pool = make_prompts(args, corpus, n_prompts + n_spares, args.seed, tokenizer)
        prompts, i = {}, 0
        for key in plan:
            prompts[key] = pool[i:i + key[1]]
            i += key[1]
        spares, spare_at = pool[i:], 0
        for c in contenders:  # warm-up: page in the weights, start the threads
            wp = excerpts(corpus, 1, 400, args.seed + 999)[0]
            r = send(c, wp, 4, args.request_timeout, time.monotonic())
            if r.status != 200 or r.error:
                raise SystemExit(f"{c.name}: warm-up request failed: {r.status} {r.error}\n{c.log_tail()}")
        t_start = time.monotonic()
        for n, (rep, b, kind) in enumerate(plan):
            if STOP.is_set():
                break
            order = contenders[n % len(contenders):] + contenders[:n % len(contenders)]
            for c in order:
                if STOP.is_set():
                    break
                max_tokens = 1 + args.new_tokens if kind == "gen" else 1
                ps = prompts[(rep, b, kind)]
                for attempt in range(args.max_retries + 1):
                    if attempt and STOP.is_set():
                        break
                    log(f"[{n + 1}/{len(plan)}] rep {rep + 1} B={b} {kind:7s} {c.name}"
                        + (f" (again: other processes used {res['foreign_cpu']:.2f} cores: {res['foreign_top']})"
                           if attempt else "") + " ...")
                    res = run_batch(c, ps, max_tokens, args, exclude)
                    res.update({"rep": rep, "kind": kind, "attempt": attempt})
                    if res["foreign_cpu"] <= args.max_foreign_cpu or attempt == args.max_retries or STOP.is_set():
                        break
                    res["discarded"] = True
                    discarded.append(res)
                    # fresh prompts: llama.cpp would reuse the cache of a prompt it has just seen
                    ps = [spares[(spare_at + k) % len(spares)] for k in range(b)]
                    spare_at += b
                res["busy"] = bool(res["busy"]) or res["foreign_cpu"] > args.max_foreign_cpu
                results.append(res)
                if STOP.is_set():
                    break
                if "errors" not in res:
                    log(f"    wall {res['wall_s']:.1f} s, prefill {res['prefill_s']:.1f} s, "
                        f"decode {fmt(res['decode_tok_s'])} tok/s (timers {fmt(res.get('timers_decode_tok_s'))}, "
                        f"engine {fmt(res['engine_decode_tok_s'])}), "
                        f"mean decode batch {fmt(res['mean_decode_batch'], '.2f')}, completion {res['completion_tokens']}"
                        + (f", notes: {res['notes']}" if res.get("notes") else ""))
            log(f"    elapsed {time.monotonic() - t_start:.0f} s")
    except KeyboardInterrupt:
        log("interrupted at once: the measurement under way is lost")
    finally:
        for c in contenders:
            rc = c.stop()
            report["servers"][c.name + " exit status"] = rc
            if c.is_snapkv and rc not in (0, None):
                log(f"{c.name}: exit status {rc} after SIGTERM\n{c.log_tail()}")
            if c.log:
                try:
                    os.unlink(c.log.name)
                except OSError:
                    pass

    summary = summarize(args, contenders, results)
    report["summary"] = summary
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report["interrupted"] = STOP.is_set()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print_table(args, summary, report)
    log(f"raw numbers: {args.out}")
    return 1 if any("errors" in r for r in results) else 0


def summarize(args, contenders: list[Contender], results: list[dict]) -> list[dict]:
    rows = []
    for b in args.batches:
        for c in contenders:
            gen = [r for r in results if r["contender"] == c.name and r["batch"] == b and r["kind"] == "gen"
                   and "errors" not in r]
            pre = [r for r in results if r["contender"] == c.name and r["batch"] == b and r["kind"] == "prefill"
                   and "errors" not in r]
            row = {"batch": b, "contender": c.name, "runs": len(gen),
                   "decode_tok_s": med([r["decode_tok_s"] for r in gen]),
                   "decode_tok_s_runs": [r["decode_tok_s"] for r in gen],
                   "timers_decode_tok_s": med([r.get("timers_decode_tok_s") for r in gen]),
                   "engine_decode_tok_s": med([r["engine_decode_tok_s"] for r in gen]),
                   "mean_decode_batch": med([r["mean_decode_batch"] for r in gen]),
                   "prefill_s_per_prompt": med([r["prefill_s_per_prompt"] for r in gen]),
                   "latency_s": med([x for r in gen for x in r["latency_s"]]),
                   "prompt_tokens": med([x for r in gen for x in r["prompt_tokens"]]),
                   "completion_tokens_per_request": med([r["completion_tokens"] / b for r in gen]),
                   "busy": any(r["busy"] for r in gen + pre)}
            if c.is_snapkv:
                row["server_decode_seconds"] = med([x for r in gen for x in r["server_decode_seconds"]])
                row["kv_mib"] = med([x / 2**20 for r in gen for x in r["kv_bytes"] if x is not None])
            if pre:
                subs = [(g["completion_tokens"] - b) / (g["wall_s"] - p["wall_s"])
                        for g, p in zip(gen, pre) if g["wall_s"] > p["wall_s"]]
                row["subtract_decode_tok_s"] = med(subs)
                row["subtract_decode_tok_s_runs"] = subs
            rows.append(row)
    for row in rows:
        same = {r["contender"]: r for r in rows if r["batch"] == row["batch"]}
        ref, full = same.get(LLAMA_SERVER) or same.get(LLAMA_PYTHON), same.get("snapkv-full")
        ratio = lambda a, z: a / z if a and z else None  # noqa: E731
        row["vs_llama_cpp"] = ratio(row["decode_tok_s"], ref and ref["decode_tok_s"])
        row["vs_full"] = ratio(row["decode_tok_s"], full and full["decode_tok_s"]) if row["contender"].startswith("snapkv") else None
    return rows


def print_table(args, rows: list[dict], report: dict):
    subtract = args.method != "timers"
    pt = rows[0]["prompt_tokens"] if rows and rows[0]["prompt_tokens"] else args.prompt_tokens
    print(f"\nDecode throughput, {pt:.0f}-token prompts, "
          f"max_tokens 1+{args.new_tokens}, temperature 0, {args.threads} threads, {report['cpu']} "
          f"({report['n_cpus']} CPUs); medians of {args.reps} runs at batch 1, {args.reps_batched} at batch > 1\n")
    peer = LLAMA_SERVER if LLAMA_SERVER in args.contenders else LLAMA_PYTHON
    head = ["batch", "contender", "decode tok/s", f"vs {peer}", "vs full", "timers tok/s"]
    if subtract:
        head.append("decode tok/s (subtract)")
    head += ["engine decode tok/s", "seqs per decode step", "prefill s/prompt", "latency s", "KV MiB/seq"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 2 else "--:" for i in range(len(head))) + "|")
    for r in rows:
        if not r["runs"]:
            continue
        cells = [str(r["batch"]), r["contender"] + (" (busy!)" if r["busy"] else ""), fmt(r["decode_tok_s"]),
                 fmt(r["vs_llama_cpp"], ".2f"), fmt(r["vs_full"], ".2f"), fmt(r["timers_decode_tok_s"])]
        if subtract:
            cells.append(fmt(r.get("subtract_decode_tok_s")))
        cells += [fmt(r["engine_decode_tok_s"]), fmt(r["mean_decode_batch"], ".2f"),
                  fmt(r["prefill_s_per_prompt"]), fmt(r["latency_s"]), fmt(r.get("kv_mib"))]
        print("| " + " | ".join(cells) + " |")
    print(f"\ndecode tok/s: tokens streamed while all B requests were decoding / that window's length "
          f"({LLAMA_PYTHON}, which serves one request at a time: the sum of its requests' decode spans). "
          f"timers tok/s: (completion tokens - B) / (wall - snapkv's prefill seconds from /metrics).")
    notes = sorted({n for r in report["results"] for n in r.get("notes", [])})
    for n in notes:
        print(f"note: {n}")


if __name__ == "__main__":
    sys.exit(main())
