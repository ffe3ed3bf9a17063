#!/usr/bin/env python3
"""Which prompt positions kvpress's ChunkKVPress keeps (whole chunks, the same in every KV head).

Writes tests/fixtures/press_chunks.json. Run inside tools/reference/.venv-kvpress, after
tests/fixtures/press_selections.json exists (its first prompts' token ids are reused, so both
fixtures press the same text):

    tools/reference/setup_kvpress_venv.sh
    tools/reference/.venv-kvpress/bin/python tools/reference/make_chunk_fixture.py    # ~2 min, 2 threads

Reference (not written by us): NVIDIA kvpress 0.5.5 `ChunkKVPress(press=SnapKVPress(...),
chunk_length=N)` on HF transformers' LlamaForCausalLM loaded from the GGUF (fp32, sdpa). It
scores with SnapKVPress (window mean, average pooling, GQA mean, the window padded with the
layer's highest score + 1), sums the scores over the KV heads, averages them over each chunk of N
positions (the last chunk shorter), and keeps the max(1, int(n_chunks * (1 - compression_ratio)))
best chunks in every head.

Driven as make_press_fixture.py drives the pruning presses: after layer l's attention ran with the
full K/V, a hook calls the press's own forward_hook on it, reads the kept positions back by
matching the pruned key rows to the full ones, and restores the full K/V (the prefill's output
never sees the compression). The options stored per case give the budget as the same
compression_ratio (`ratio`), pressed always (`short` = always), as kvpress does.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_press_fixture as mp  # noqa: E402
from fixture_io import sha256_file, versions, write_fixture  # noqa: E402

CHUNKS = (10, 20)
PROMPTS_USED = 2
DEFAULT_OUT = mp.REPO / "tests" / "fixtures" / "press_chunks.json"


def main() -> int:
    ap = mp.fixture_parser(__doc__, DEFAULT_OUT, essays=False)
    ap.add_argument("--selections", type=Path, default=mp.DEFAULT_OUT, help="press_selections.json (its prompts)")
    args = mp.fixture_args(ap)
    t_start = time.time()
    import kvpress as kp
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    prompts = [{k: p[k] for k in ("name", "n_tokens", "text_sha256", "tokens")}
               for p in json.loads(args.selections.read_text())["prompts"][:PROMPTS_USED]]
    model_path = args.model.resolve()
    model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                 dtype=torch.float32, attn_implementation="sdpa")
    model.eval()
    n_layers = model.config.num_hidden_layers

    cases = []
    for pi, p in enumerate(prompts):
        ids, L = p["tokens"], p["n_tokens"]
        for C in mp.CAPACITIES:
            r = mp.compute_ratio(L, C)
            for chunk in CHUNKS:
                press = kp.ChunkKVPress(press=kp.SnapKVPress(compression_ratio=r, window_size=mp.WINDOW,
                                                             kernel_size=mp.KERNEL), chunk_length=chunk)
                kept = [None] * n_layers

                def hook(module, hargs, kwargs, output, press=press, kept=kept):
                    layer = kwargs["past_key_values"].layers[module.layer_idx]
                    full_k, full_v = layer.keys, layer.values
                    press.forward_hook(module, hargs, kwargs, output)
                    kept[module.layer_idx] = mp.kept_from_layer(module, layer.keys, full_k, mp.make_rowmaps(full_k), False)
                    layer.keys, layer.values = full_k, full_v
                    return output

                hooks = [l.self_attn.register_forward_hook(hook, with_kwargs=True) for l in model.model.layers]
                try:
                    mp.prefill(model, ids)
                finally:
                    for h in hooks:
                        h.remove()
                for heads in kept:  # whole chunks, the same in every head
                    assert all((h == heads[0]).all() for h in heads)
                options = {"press": "snapkv", "window": mp.WINDOW, "kernel": mp.KERNEL, "pool": "avg", "gqa": "mean",
                           "ratio": r, "short": "always", "chunk": chunk}
                kvpress_args = {"class": "ChunkKVPress", "chunk_length": chunk,
                                "press": {"class": "SnapKVPress", "compression_ratio": r, "window_size": mp.WINDOW,
                                          "kernel_size": mp.KERNEL}}
                cases.append(mp.case_record(pi, "kvpress.ChunkKVPress(SnapKVPress)", options, kvpress_args, kept, None,
                                            {"capacity_of_ratio": C}))
                print(f"{p['name']} C={C} chunk={chunk}: {len(kept[0][0])} kept per head", flush=True)

    fixture = {
        "description": "Positions kvpress 0.5.5 ChunkKVPress(SnapKVPress) keeps per layer and KV head (whole "
                       "chunks, the same in every head), on the first prompts of press_selections.json; "
                       "kept_delta is encoded as there. No scores: the chunks must match exactly.",
        "generator": "tools/reference/make_chunk_fixture.py",
        "model_file": "models/" + model_path.name,
        "model_sha256": sha256_file(model_path),
        "versions": versions(["kvpress", "torch", "transformers"]),
        "timings": {"total_s": round(time.time() - t_start, 1)},
        "prompts": prompts,
        "cases": cases,
    }
    write_fixture(args.out, fixture, row_keys=("prompts", "cases"))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes), {len(cases)} cases", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
