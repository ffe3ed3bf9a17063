#!/usr/bin/env python3
"""TOVA as published: which positions kvpress keeps when TOVA evicts while decoding.

Writes tests/fixtures/press_tova_decode.json. Run inside tools/reference/.venv-kvpress (see
make_press_fixture.py):

    tools/reference/.venv-kvpress/bin/python tools/reference/make_tova_decode_fixture.py   # ~2 min, 2 threads

Reference (not written by us): NVIDIA kvpress 0.5.5, PrefillDecodingPress(prefilling_press=
TOVAPress(ratio), decoding_press=DecodingPress(TOVAPress(), compression_interval=1,
target_size=C, hidden_states_buffer_size=1)), on HF transformers' LlamaForCausalLM loaded from the
GGUF (fp32, sdpa), driven as kvpress's own pipeline drives generation (position_ids only): the
prompt is pressed to C entries by its last token's attention, then every decoded token is added
and the layer pressed back to C by that token's attention (averaged over all query heads, the
newest entry always kept): one eviction per layer and step, as TOVA's paper does. The decoded
tokens are kvpress's greedy choices and are stored, so the test feeds the same ones (teacher
forcing) and a near tie cannot make the two runs read different text.

Per case (prompt, C), recorded by wrapping TOVAPress.compress (which kvpress calls with the
layer's keys; it prunes in its top-k order, so the script follows positions through it):
  * prefill_kept[layer]: the positions kept after the prompt (every KV head keeps the same ones:
    the scores are averaged over all heads), with prefill_gap[layer] = (lowest kept - highest
    dropped score) / max |score|;
  * steps[i]: the token fed at step i (position L + i) and, per layer, the position evicted and
    its gap = (second lowest - lowest score) / max |score| (the newest entry excluded);
  * final_kept[layer]: the positions held after the last step.
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

DEFAULT_OUT = mpf.REPO / "tests" / "fixtures" / "press_tova_decode.json"
CASES = ((0, 256), (0, 1024), (1, 256))  # (prompt index, C)
STEPS = 32


def run_case(model, ids, C):
    from transformers import DynamicCache

    from kvpress import DecodingPress, PrefillDecodingPress, TOVAPress
    from kvpress.utils import compute_n_kept

    L = len(ids)
    labels = {}  # layer -> positions in the cache's order
    prefill_gap, evicted = {}, {}
    step = {"pos": None}

    class Recording(TOVAPress):
        def compress(self, module, hidden_states, keys, values, attentions, kwargs):
            il = module.layer_idx
            k_len = keys.shape[2]
            if il not in labels:
                labels[il] = list(range(k_len))
            elif k_len == len(labels[il]) + 1:
                labels[il].append(step["pos"])
            assert k_len == len(labels[il]), (il, k_len, len(labels[il]))
            if self.compression_ratio == 0:
                return keys, values
            s = self.score(module, hidden_states, keys, values, attentions, kwargs)[0].to(torch.float64)
            assert all(torch.equal(s[0], s[h]) for h in range(1, s.shape[0])), "TOVA scores differ between KV heads"
            s = s[0]
            n_kept = compute_n_kept(k_len, self.compression_ratio)
            idx = s.topk(n_kept).indices.tolist()
            body = s[:-1].numpy()  # the newest entry is forced (max + 1)
            scale = float(np.max(np.abs(body)))
            kept_set = set(idx)
            if step["pos"] is None:
                lo = min(float(s[i]) for i in idx if i != k_len - 1)
                hi = max(float(s[i]) for i in range(k_len) if i not in kept_set)
                prefill_gap[il] = (lo - hi) / scale
            else:
                assert n_kept == k_len - 1
                order = np.argsort(body, kind="stable")
                gone = [i for i in range(k_len) if i not in kept_set]
                assert gone == [int(order[0])], (gone, order[:2])
                evicted[il] = (labels[il][gone[0]], float((body[order[1]] - body[order[0]]) / scale))
            labels[il] = [labels[il][i] for i in idx]
            return super().compress(module, hidden_states, keys, values, attentions, kwargs)

    ratio = mpf.compute_ratio(L, C)
    press = PrefillDecodingPress(
        prefilling_press=Recording(compression_ratio=ratio),
        decoding_press=DecodingPress(base_press=Recording(), compression_interval=1, target_size=C,
                                     hidden_states_buffer_size=1),
    )
    cache = DynamicCache()
    n_layer = model.config.num_hidden_layers
    with torch.no_grad(), press(model):
        out = model(input_ids=torch.tensor([ids]), past_key_values=cache, logits_to_keep=1)
        prefill_kept = [sorted(labels[il]) for il in range(n_layer)]
        gaps = [prefill_gap[il] for il in range(n_layer)]
        token = int(out.logits[0, -1].argmax())
        steps = []
        for i in range(STEPS):
            step["pos"] = L + i
            evicted.clear()
            out = model(input_ids=torch.tensor([[token]]), past_key_values=cache,
                        position_ids=torch.tensor([[L + i]]))
            assert len(evicted) == n_layer, f"step {i}: {len(evicted)} layers evicted"
            steps.append({"token": token, "evicted": [evicted[il][0] for il in range(n_layer)],
                          "gap": [evicted[il][1] for il in range(n_layer)]})
            token = int(out.logits[0, -1].argmax())
    final_kept = [sorted(labels[il]) for il in range(n_layer)]
    assert all(len(k) == C for k in final_kept)
    return {"compression_ratio": ratio, "prefill_kept": prefill_kept, "prefill_gap": gaps, "steps": steps,
            "final_kept": final_kept}


def main() -> int:
    args = mpf.fixture_args(mpf.fixture_parser(__doc__, DEFAULT_OUT))
    t_start = time.time()
    model_path = args.model.resolve()
    _, prompts, model, tok_check = mpf.load_hf(model_path, args.essays, 2)

    cases = []
    for pi, C in CASES:
        t0 = time.time()
        case = {"prompt": pi, "capacity": C, **run_case(model, prompts[pi]["tokens"], C)}
        cases.append(case)
        print(f"{prompts[pi]['name']} C={C}: {time.time() - t0:.1f}s, smallest eviction gap "
              f"{min(min(s['gap']) for s in case['steps']):.2e}", flush=True)
    for p in prompts:
        del p["text"]
    fixture = {
        "description": __doc__,
        "model": {"file": model_path.name, "sha256": sha256_file(model_path)},
        "versions": versions(["kvpress", "torch", "transformers"]),
        "tokenizer_check": tok_check,
        "prompts": prompts,
        "cases": cases,
        "elapsed_s": round(time.time() - t_start, 1),
    }
    write_fixture(args.out, fixture)
    print(f"wrote {args.out} ({len(cases)} cases) in {time.time() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
