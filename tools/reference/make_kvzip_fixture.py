#!/usr/bin/env python3
"""Which prompt positions kvpress's KVzipPress keeps (per layer and KV head), and its scores.

Writes tests/fixtures/press_kvzip.json (the format of press_selections.json). Run inside
tools/reference/.venv-kvpress (see make_press_fixture.py):

    tools/reference/.venv-kvpress/bin/python tools/reference/make_kvzip_fixture.py     # ~8 min, 2 threads

Reference (not written by us): NVIDIA kvpress 0.5.5 KVzipPress, driven by its own context
manager on HF transformers' LlamaForCausalLM loaded from the GGUF (fp32, sdpa):
`with press(model): model.model(input_ids=..., past_key_values=DynamicCache())`; on leaving the
block kvpress runs the reconstruction passes (chunks of 2,048 context tokens, each after
"\\n\\nRepeat the previous context exactly." or "... the part of the previous context exactly,
starting with" and the previous chunk's last 8 tokens, then the suffix, then the chunk) and
selects. The model's chat template is hidden from the press (its tokenizer is handed over with
chat_template = None), so its prefix is empty and its suffix is "\\n": the reconstruction
snapkv runs on any prompt.

Prompts: the first two of make_press_fixture.py (~2K tokens: one chunk; ~4K: two chunks, so
the later prompt, the carried tokens and the sinks in the softmax are covered), context only.

Cases per prompt and capacity C:
  * "kvpress.KVzipPress(layerwise=True)": kvpress's own selection (its masked_key_indices'
    complement): per layer, the KV heads' lowest scores dropped jointly, the first 4 positions
    never. Ours: kvzip + budget ada with alpha 0 (no safeguard), capacity C; kvpress_args gives
    the compression ratio that keeps the same counts under both kvpress's and our rounding.
  * "kvpress.KVzipPress scores, top-C per head": kvpress's scores (captured before its
    selection), the first 4 positions forced, the C best per KV head (ties: lower position).
    Ours: kvzip, capacity C.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_press_fixture as mpf  # noqa: E402
from fixture_io import sha256_file, versions, write_fixture  # noqa: E402

DEFAULT_OUT = mpf.REPO / "tests" / "fixtures" / "press_kvzip.json"
CAPACITIES = (256, 1024)
N_SINK = 4


def ratio_for(L: int, hkv: int, C: int) -> float:
    """A compression ratio r with max(1, int(L * (1 - r))) == C (ours, kvpress's compute_n_kept)
    and hkv * L - int(hkv * L * r) == hkv * C (KVzipPress layerwise)."""
    r = 1.0 - C / L
    for step in range(200):
        for cand in (r, -r):
            x = abs(cand)
            if max(1, int(L * (1 - x))) == C and hkv * L - int(hkv * L * x) == hkv * C:
                return float(x)
        r = float(np.nextafter(r, 1.0)) if step % 2 == 0 else float(np.nextafter(r, 0.0))
    raise SystemExit(f"no ratio keeps {C} of {L} under both roundings")


def hand_tokenizer_to_kvzip(tok):
    """KVzipPress loads its tokenizer by the model's name, which a GGUF-loaded model has not: make
    it get tok instead."""
    import kvpress.presses.kvzip_press as kz

    class HandOver:
        @staticmethod
        def from_pretrained(*args, **kwargs):
            return tok

    kz.AutoTokenizer = HandOver


def run_kvzip(model, tok, ids, ratio):
    """kvpress's KVzipPress(layerwise=True) on ids: (scores [layers, Hkv, L] before selection,
    kept positions per layer and head)."""
    from transformers import DynamicCache

    import kvpress.presses.kvzip_press as kz

    hand_tokenizer_to_kvzip(tok)
    press = kz.KVzipPress(compression_ratio=ratio, layerwise=True, n_sink=N_SINK)
    got = {}
    post = press.compress_post

    def capture(m):
        got["scores"] = press.score_val[:, 0].detach().to(torch.float64).numpy().copy()
        post(m)
        L = got["scores"].shape[-1]
        kept = []
        for layer in m.model.layers:
            _, heads, seq = layer.self_attn.masked_key_indices
            keep = np.ones((got["scores"].shape[1], L), dtype=bool)
            keep[heads.numpy(), seq.numpy()] = False
            kept.append([np.flatnonzero(k) for k in keep])
        got["kept"] = kept

    press.compress_post = capture
    with torch.no_grad(), press(model):
        model.model(input_ids=torch.tensor([ids]), past_key_values=DynamicCache())
    return got["scores"], got["kept"]


def per_head_top(scores: np.ndarray, C: int):
    """Per layer: the first N_SINK positions and the C - N_SINK best others per head, with the
    near-tie statistics of that choice."""
    kept, bounds = [], []
    for s in scores:
        heads, gaps, band = [], [], [0] * len(mpf.BAND_EPS)
        for h in range(s.shape[0]):
            c = s[h, N_SINK:]
            top = np.sort(np.argsort(-c, kind="stable")[: C - N_SINK]) + N_SINK
            heads.append(np.concatenate([np.arange(N_SINK), top]))
            g, b = mpf.boundary(c, mpf.kept_mask(top - N_SINK, len(c)), float(np.max(np.abs(c))))
            gaps.append(g)
            band = [x + y for x, y in zip(band, b)]
        kept.append(heads)
        bounds.append((gaps, band))
    return kept, bounds


def joint_bounds(scores: np.ndarray, kept, C: int):
    """Per layer: the joint boundary of kvpress's layerwise selection (sinks forced)."""
    out = []
    for s, k in zip(scores, kept):
        s = s.copy()
        s[:, :N_SINK] = s.max() + 1.0
        out.append(mpf.layer_boundary_ada(s, k, C, 0.0, 0))
    return out


def main() -> int:
    args = mpf.fixture_args(mpf.fixture_parser(__doc__, DEFAULT_OUT))
    t_start = time.time()
    import kvpress  # noqa: F401
    model_path = args.model.resolve()
    tok, prompts, model, tok_check = mpf.load_hf(model_path, args.essays, 2)
    tok.chat_template = None
    hkv = model.config.num_key_value_heads

    def ids_of(text):
        return [int(x) for x in tok.encode(text, add_special_tokens=False)]

    cases = []
    for pi, p in enumerate(prompts):
        ids, L = p["tokens"], p["n_tokens"]
        for C in CAPACITIES:
            t0 = time.time()
            r = ratio_for(L, hkv, C)
            scores, kept = run_kvzip(model, tok, ids, r)
            print(f"{p['name']} C={C}: kvpress KVzip in {time.time() - t0:.1f}s", flush=True)
            args_kv = {"press": "KVzipPress", "compression_ratio": r, "layerwise": True, "n_sink": N_SINK}
            cases.append(mpf.case_record(pi, "kvpress.KVzipPress(layerwise=True)",
                                         {"press": "kvzip", "capacity": C, "budget": "ada", "alpha": 0.0},
                                         args_kv, kept, joint_bounds(scores, kept, C)))
            top, bounds = per_head_top(scores, C)
            cases.append(mpf.case_record(pi, "kvpress.KVzipPress scores, top-C per head",
                                         {"press": "kvzip", "capacity": C}, None, top, bounds))
    for p in prompts:
        del p["text"]
    fixture = {
        "description": __doc__,
        "model": {"file": model_path.name, "sha256": sha256_file(model_path)},
        "versions": versions(["kvpress", "torch", "transformers"]),
        "tokenizer_check": tok_check,
        "reconstruction_prompt": {
            "first": ids_of("\n\nRepeat the previous context exactly."),
            "later": ids_of("\n\nRepeat the part of the previous context exactly, starting with"),
            "suffix": ids_of("\n"),
        },
        "prompts": prompts,
        "cases": cases,
        "elapsed_s": round(time.time() - t_start, 1),
    }
    write_fixture(args.out, fixture)
    print(f"wrote {args.out} ({len(cases)} cases) in {time.time() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
