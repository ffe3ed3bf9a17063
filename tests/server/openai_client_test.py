#!/usr/bin/env python3
"""`snapkv serve` driven by the official `openai` Python package.

Usage: openai_client_test.py SNAPKV_BINARY MODEL_PATH

Starts the real server on a free port, talks to it only through `openai.OpenAI`, and checks what
a client of OpenAI's API relies on: the model list, chat and text completions (streaming and not),
usage accounting, the kv_compression extension, and OpenAI-shaped errors mapped to the client's
exception classes. Then SIGTERMs the server and expects exit status 0. Prints one PASS/FAIL line
per check and exits non-zero on any failure; the server is always killed on exit.
"""
from __future__ import annotations

import atexit
import re
import sys
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from snapkv_server import SnapkvServer  # noqa: E402

from checks import Checks, expect  # noqa: E402  (tests/server/checks.py)

STARTUP_TIMEOUT_S = 60
SHUTDOWN_TIMEOUT_S = 30
REQUEST_TIMEOUT_S = 60

# ~400 tokens of plain English for the compression check: numbered sentences, so that no two are alike.
LONG_DOC = " ".join(
    f"Note {i}: the warehouse in district {i % 7} stores {3 * i + 11} crates of {w} that ship every {d}."
    for i, (w, d) in enumerate(
        [(w, d) for w in ("apples", "copper", "paper", "salt", "wool") for d in ("Monday", "Thursday", "week", "month")]
    )
)


def extra(obj, key):
    """An extension field of a pydantic model from the openai package (kept in model_extra)."""
    value = (getattr(obj, "model_extra", None) or {}).get(key)
    return value if value is not None else getattr(obj, key, None)


def check_usage(usage, what: str):
    expect(usage is not None, f"{what}: no usage")
    expect(usage.prompt_tokens > 0, f"{what}: prompt_tokens {usage.prompt_tokens}")
    expect(usage.completion_tokens >= 0, f"{what}: completion_tokens {usage.completion_tokens}")
    expect(usage.total_tokens == usage.prompt_tokens + usage.completion_tokens,
           f"{what}: total_tokens {usage.total_tokens} != {usage.prompt_tokens} + {usage.completion_tokens}")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    binary, model_path = sys.argv[1], sys.argv[2]
    model_id = Path(model_path).stem
    print(f"openai {openai.__version__}; server {binary}; model {model_path}", flush=True)

    try:
        server = SnapkvServer(binary, model_path, ["--kv-memory", "2GiB", "--max-batch", "8", "--max-queue", "16",
                                                   "-t", "2"], STARTUP_TIMEOUT_S)
        atexit.register(server.cleanup)
        lines = [line for line in server.stdout_lines if line.strip()]
        if len(lines) != 1:
            raise RuntimeError(f"stdout must be exactly one line at start, got {lines!r}")
    except Exception as e:  # noqa: BLE001
        print(f"FAIL start server: {e}")
        return 1
    print(f"PASS start server: port {server.port}", flush=True)

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="none",
                           max_retries=0, timeout=REQUEST_TIMEOUT_S)
    checks = Checks()
    question = [{"role": "system", "content": "You are a helpful assistant. Answer briefly."},
                {"role": "user", "content": "What is the capital of France?"}]
    greedy = dict(model=model_id, messages=question, temperature=0, max_tokens=16)
    answer: dict[str, str] = {}

    def models_list():
        ids = [m.id for m in client.models.list()]
        expect(model_id in ids, f"{model_id!r} not in {ids}")
        return f"{ids}"

    def chat_non_streaming():
        r = client.chat.completions.create(**greedy)
        expect(r.object == "chat.completion", f"object {r.object!r}")
        expect(r.model == model_id, f"model {r.model!r}")
        expect(len(r.choices) == 1, f"{len(r.choices)} choices")
        c = r.choices[0]
        expect(c.message.role == "assistant", f"role {c.message.role!r}")
        expect(bool(c.message.content and c.message.content.strip()), f"empty content {c.message.content!r}")
        expect(c.finish_reason in ("stop", "length"), f"finish_reason {c.finish_reason!r}")
        check_usage(r.usage, "chat")
        expect(r.usage.completion_tokens <= 16, f"completion_tokens {r.usage.completion_tokens} > max_tokens 16")
        if c.finish_reason == "length":
            expect(r.usage.completion_tokens == 16, f"finish_reason length after {r.usage.completion_tokens} tokens")
        answer["chat"] = c.message.content
        answer["usage"] = (r.usage.prompt_tokens, r.usage.completion_tokens)
        return f"{c.message.content!r} ({c.finish_reason}, usage {r.usage.prompt_tokens}+{r.usage.completion_tokens})"

    def chat_streaming():
        expect("chat" in answer, "needs the non-streaming answer")
        stream = client.chat.completions.create(**greedy, stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        expect(len(chunks) >= 2, f"{len(chunks)} chunks")
        text, finish, roles = "", None, []
        for ch in chunks:
            expect(ch.object == "chat.completion.chunk", f"object {ch.object!r}")
            for c in ch.choices:
                if c.delta.role:
                    roles.append(c.delta.role)
                text += c.delta.content or ""
                finish = c.finish_reason or finish
        expect(roles[:1] == ["assistant"], f"first delta role {roles}")
        expect(len({ch.id for ch in chunks}) == 1, "chunks carry different ids")
        expect(finish in ("stop", "length"), f"finish_reason {finish!r}")
        expect(text == answer["chat"], f"streamed {text!r} != non-streaming {answer['chat']!r}")
        last = chunks[-1]
        expect(last.choices == [], f"usage chunk has choices {last.choices}")
        check_usage(last.usage, "stream usage")
        expect(all(ch.usage is None for ch in chunks[:-1]), "usage before the last chunk")
        got = (last.usage.prompt_tokens, last.usage.completion_tokens)
        expect(got == answer["usage"], f"streamed usage (prompt, completion) {got} != non-streaming {answer['usage']}")
        return f"{len(chunks)} chunks, usage {last.usage.prompt_tokens}+{last.usage.completion_tokens}"

    def chat_streaming_without_usage():
        chunks = list(client.chat.completions.create(**greedy, stream=True))
        expect(all(ch.usage is None for ch in chunks), "usage sent without stream_options.include_usage")
        text = "".join(c.delta.content or "" for ch in chunks for c in ch.choices)
        expect(text == answer.get("chat"), f"streamed {text!r} != {answer.get('chat')!r}")

    def text_completions():
        kw = dict(model=model_id, prompt="The capital of France is", temperature=0, max_tokens=8)
        r = client.completions.create(**kw)
        expect(r.object == "text_completion", f"object {r.object!r}")
        c = r.choices[0]
        expect(bool(c.text), f"empty text {c.text!r}")
        expect(c.finish_reason in ("stop", "length"), f"finish_reason {c.finish_reason!r}")
        check_usage(r.usage, "completion")
        chunks = list(client.completions.create(**kw, stream=True, stream_options={"include_usage": True}))
        streamed = "".join(c.text for ch in chunks for c in ch.choices)
        expect(streamed == c.text, f"streamed {streamed!r} != non-streaming {c.text!r}")
        expect(chunks[-1].usage is not None, "no usage in the last chunk")
        expect(chunks[-1].usage.completion_tokens == r.usage.completion_tokens,
               f"streamed completion_tokens {chunks[-1].usage.completion_tokens} != {r.usage.completion_tokens}")
        return f"{c.text!r}"

    def kv_compression():
        messages = [{"role": "user", "content": LONG_DOC + "\n\nHow many crates are in note 5?"}]
        kw = dict(model=model_id, messages=messages, temperature=0, max_tokens=4)
        raw = client.chat.completions.with_raw_response.create(
            **kw, extra_body={"kv_compression": {"press": "snapkv", "capacity": 64, "window": 8}})
        expect(raw.http_response.status_code == 200, f"status {raw.http_response.status_code}")
        r = raw.parse()
        usage = r.usage
        expect(usage.prompt_tokens >= 300, f"prompt only {usage.prompt_tokens} tokens")
        kv, full = extra(usage, "kv_bytes"), extra(usage, "kv_full_bytes")
        expect(isinstance(kv, int) and isinstance(full, int), f"kv_bytes {kv!r}, kv_full_bytes {full!r}")
        expect(0 < kv < full, f"snapkv capacity 64: kv_bytes {kv} not below kv_full_bytes {full}")
        # The server's default press (full) keeps every entry.
        u = client.chat.completions.create(**kw).usage
        kv0, full0 = extra(u, "kv_bytes"), extra(u, "kv_full_bytes")
        expect(isinstance(kv0, int) and kv0 == full0 > 0, f"no kv_compression: kv_bytes {kv0} != kv_full_bytes {full0}")
        return f"{usage.prompt_tokens} prompt tokens: kv_bytes {kv} vs kv_full_bytes {full} ({kv / full:.1%})"

    def bad_request():
        try:
            client.chat.completions.create(**greedy, extra_body={"kv_compression": {"press": "nope"}})
        except openai.BadRequestError as e:
            expect(e.status_code == 400, f"status {e.status_code}")
            expect(isinstance(e.body, dict) and e.body.get("message"), f"error body {e.body!r}")
            expect(e.param == "kv_compression.press", f"param {e.param!r}")
            expect(e.type == "invalid_request_error", f"type {e.type!r}")
            return f"{e.body.get('message')!r}"
        raise AssertionError("no BadRequestError for press 'nope'")

    def bad_request_stream():
        try:
            list(client.chat.completions.create(**greedy, stream=True, max_completion_tokens=-1))
        except openai.BadRequestError as e:
            return f"param {e.param!r}"
        raise AssertionError("no BadRequestError for max_completion_tokens -1 (streaming)")

    def any_model_name():  # one model served: any name is (a client's default "gpt-4o-mini" works)
        r = client.chat.completions.create(**{**greedy, "model": "gpt-4o-mini"})
        expect(r.model == model_id, f"model {r.model!r}")
        expect(r.choices[0].message.content == answer["chat"], "another answer than under the real name")
        try:
            client.models.retrieve("gpt-4o-mini")
        except openai.NotFoundError as e:
            expect(e.status_code == 404, f"status {e.status_code}")
            expect(e.code == "model_not_found", f"code {e.code!r}")
            return f"answered as {r.model!r}; models.retrieve: {e.body.get('message')!r}"
        raise AssertionError("models.retrieve('gpt-4o-mini') found a model")

    def metrics():
        text = server.get("/metrics")
        m = re.search(r"^snapkv_generated_tokens_total (\S+)$", text, re.M)
        expect(m is not None and float(m.group(1)) > 0, "snapkv_generated_tokens_total missing or 0")
        generated = m.group(1)
        m = re.search(r'^snapkv_requests_total\{endpoint="/v1/chat/completions",status="200"\} (\S+)$', text, re.M)
        expect(m is not None and float(m.group(1)) >= 3, "chat 200s not counted in snapkv_requests_total")
        return f"snapkv_generated_tokens_total {generated}"

    try:
        checks.run("models.list", models_list)
        checks.run("chat non-streaming", chat_non_streaming)
        checks.run("chat streaming with usage", chat_streaming)
        checks.run("chat streaming without usage", chat_streaming_without_usage)
        checks.run("completions streaming and non-streaming", text_completions)
        checks.run("kv_compression snapkv", kv_compression)
        checks.run("bad request -> BadRequestError", bad_request)
        checks.run("bad request (stream) -> BadRequestError", bad_request_stream)
        checks.run("any model name; models.retrieve of another -> NotFoundError", any_model_name)
        checks.run("metrics", metrics)
        alive = server.proc.poll() is None
        checks.run("server alive after the checks", lambda: expect(alive, f"exited with {server.proc.poll()}"))
        if alive:
            def sigterm():
                rc = server.terminate(SHUTDOWN_TIMEOUT_S)
                expect(rc == 0, f"exit status after SIGTERM: {rc} (None: still running after {SHUTDOWN_TIMEOUT_S}s)")
            checks.run("SIGTERM -> exit status 0", sigterm)
    finally:
        if checks.failed:
            print("--- server stderr (tail) ---\n" + server.log_tail())
        server.cleanup()

    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
