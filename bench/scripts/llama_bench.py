#!/usr/bin/env python3
"""The llama.cpp contender of `snapkv bench decode`: one measurement, in this fresh process.

Reads the prompt's token ids (whitespace-separated) from --tokens, so llama.cpp sees exactly the
tokens snapkv sees, and drives llama.cpp through llama-cpp-python's C API (no Python sampling
loop in the timed part):

  prefill   the prompt into sequence 0, in llama_decode calls of n_batch tokens, logits for the
            last token only; timed with the clock around those calls;
  peak RSS  of this process after the prefill (the Python interpreter included, ~25 MiB);
  decode    for each batch size B, sequence 0 is copied to 1..B-1 (llama_memory_seq_cp: the
            unified cache shares the prompt's cells, so each step's attention reads the prompt
            once per sequence, as snapkv's copies do), then N steps of one llama_decode of B
            tokens (each sequence's greedy next token), after one untimed step; ms per step =
            the mean time of those calls. The copies and generated tokens are removed before the next B.

Prints one JSON line: {"prefill_s", "peak_rss", "decode_ms": {"B": ms per step}, "flash_attn"}.
Run with the Python of a venv that has llama-cpp-python (tools/reference/setup_venv.sh).
"""
import argparse
import json
import resource
import sys
import time

import llama_cpp as L
import numpy as np


def fill(batch, tokens, positions, seqs, logits):
    for i, (t, p, s, lg) in enumerate(zip(tokens, positions, seqs, logits)):
        batch.token[i] = t
        batch.pos[i] = p
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = s
        batch.logits[i] = lg
    batch.n_tokens = len(tokens)


def decode(ctx, batch):
    rc = L.llama_decode(ctx, batch)
    if rc != 0:
        sys.exit(f"error: llama_decode returned {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True, help="file of the prompt's token ids")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--batches", default="1,2,4")
    ap.add_argument("-n", "--n-decode", type=int, default=64)
    a = ap.parse_args()
    with open(a.tokens) as f:
        prompt = [int(t) for t in f.read().split()]
    batches = [int(b) for b in a.batches.split(",")]
    max_b = max(batches)

    quiet = L.llama_log_callback(lambda *_: None)  # kept alive: llama.cpp holds the pointer
    L.llama_log_set(quiet, None)
    L.llama_backend_init()
    model = L.llama_model_load_from_file(a.model.encode(), L.llama_model_default_params())
    if not model:
        sys.exit(f"error: llama.cpp cannot load {a.model}")
    cp = L.llama_context_default_params()
    cp.n_ctx = len(prompt) + max_b * (a.n_decode + 2) + 16
    cp.n_seq_max = max_b
    cp.kv_unified = True
    cp.n_threads = cp.n_threads_batch = a.threads
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        sys.exit("error: llama.cpp cannot create the context")
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    mem = L.llama_get_memory(ctx)
    n_batch = cp.n_batch
    batch = L.llama_batch_init(max(n_batch, max_b), 0, max_b)

    def greedy(i):
        return int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(n_vocab,))))

    start = time.perf_counter()
    for b in range(0, len(prompt), n_batch):
        chunk = prompt[b:b + n_batch]
        last = b + len(chunk) == len(prompt)
        fill(batch, chunk, range(b, b + len(chunk)), [0] * len(chunk), [last and i == len(chunk) - 1 for i in range(len(chunk))])
        decode(ctx, batch)
    prefill_s = time.perf_counter() - start
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    first = greedy(len(chunk) - 1)

    n = len(prompt)
    decode_ms = {}
    for B in batches:
        for s in range(1, B):
            L.llama_memory_seq_cp(mem, 0, s, -1, -1)
        tokens = [first] * B
        spent = 0.0
        for step in range(a.n_decode + 1):  # step 0 untimed, as snapkv's
            fill(batch, tokens, [n + step] * B, range(B), [True] * B)
            t = time.perf_counter()
            decode(ctx, batch)
            if step > 0:
                spent += time.perf_counter() - t
            tokens = [greedy(i) for i in range(B)]
        decode_ms[str(B)] = spent * 1e3 / a.n_decode
        for s in range(1, B):
            L.llama_memory_seq_rm(mem, s, -1, -1)
        L.llama_memory_seq_rm(mem, 0, n, -1)
    print(json.dumps({"prefill_s": prefill_s, "peak_rss": peak_rss, "decode_ms": decode_ms,
                      "flash_attn": int(cp.flash_attn_type)}))
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)


if __name__ == "__main__":
    main()
