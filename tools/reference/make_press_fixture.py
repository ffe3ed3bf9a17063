#!/usr/bin/env python3
"""Which prompt positions each KV-cache compression press keeps (per layer and KV head).

Writes tests/fixtures/press_selections.json. Run inside tools/reference/.venv-kvpress
(kvpress 0.5.5 needs transformers < 5.3, so it cannot share tools/reference/.venv):

    tools/reference/setup_kvpress_venv.sh
    tools/reference/.venv-kvpress/bin/python tools/reference/make_press_fixture.py     # ~12 min, 2 threads

References (none of them written by us):
  * NVIDIA kvpress 0.5.5 presses (SnapKVPress, PyramidKVPress, AdaKVPress(SnapKVPress),
    AdaKVPress(KeyDiffPress) (Ada-KV's budget over another scorer), StreamingLLMPress,
    KnormPress, KeyDiffPress, ObservedAttentionPress, TOVAPress, ExpectedAttentionPress), applied to HF
    transformers' LlamaForCausalLM loaded from the GGUF (dequantized to fp32).
  * A numpy (float64) transcription of the official SnapKV scoring and selection
    (SnapKV's scoring rule, as docs/presses.md gives it): sum over the window rows, max-pool with
    -inf padding, GQA mean after pooling, top-(C - W) plus the last W positions.

Prompts: the Paul Graham essays (sorted file names, texts concatenated as is, the NIAH
convention), cut at a sentence boundary so that context + question is about 2K / 4K / 7K
tokens, followed by "\\n\\nQuestion: ...? Answer:". Tokenized with the tokenizer transformers
builds from the GGUF, add_special_tokens=False: the GGUF says add_bos_token = false, but
transformers 5.2.0 builds a CodeLlamaTokenizer with add_bos_token = True and would prepend
<|im_start|> (id 1) otherwise. The tokenizer is checked against
tests/fixtures/tokenizer_smollm2.json before use. The fixture stores exactly the ids fed to
the model.

How kvpress is driven (read from the installed kvpress source; quirks):
  * `with press(model): model.model(input_ids, past_key_values=DynamicCache())` is kvpress's
    own prefill path (its pipeline does the same without the LM head). The press registers a
    forward hook on every `self_attn`; after layer l's attention has run with the FULL K/V
    (the prefill output never sees the compression) the hook scores, prunes and writes the
    pruned K/V back into `cache.layers[l]`. Compression is only done when
    cache_position[-1] + 1 == q_len (prefill), and always (no "skip if L <= C").
  * Because compressing layer l changes nothing that later layers compute during the same
    prefill, this script runs ONE forward per prompt (per attention implementation) and, in
    its own hook, calls every press's `forward_hook` in turn on the same layer, restoring the
    full K/V in the cache before each press. Prompt 0 is additionally re-run once per press
    with kvpress's own context manager and the kept sets must be identical (checked).
  * Kept positions of a pruning press are found by matching the pruned key rows it wrote to
    the cache against the full key rows (exact fp32 equality; rows are unique). Scores are
    captured by wrapping the press's `score` (a clone is taken: AdaKVPress modifies the
    tensor in place). AdaKVPress does not shorten the cache: it stores the dropped
    (batch, head, position) triples in `module.masked_key_indices` (used at decode time by its
    attention patch, which replaces those keys with a fake key); kept = the complement.
  * compute_n_kept(L, r) = max(1, int(L * (1 - r))). The ratio stored in kvpress_args is the
    float (full precision) closest to 1 - C/L for which compute_n_kept(L, r) == C (checked).
  * SnapKVPress with sdpa (attentions is None) recomputes the window queries itself:
    q_proj(hidden_states[-W:]), RoPE with the layer's cos/sin, softmax in fp32 over all L
    keys with a causal mask inside the window, then MEAN over the W rows, avg_pool1d(kernel,
    padding kernel//2, stride 1, count_include_pad=True), GQA mean over the group AFTER
    pooling, and the window is appended with score max(all scores of the layer) + 1, so the
    window is always kept and counts inside n_kept = C (top-C over L scores).
  * AdaKVPress refuses eager attention (assert); ObservedAttentionPress needs it (it reads the
    attention weights the eager attention returns as output[1]); SnapKV/TOVA would switch to
    those weights if present, so they run on the sdpa model.

Near ties: boundary_gap[layer][kv_head] = (lowest score kept - highest score dropped) /
max |score|, over the positions the press actually chooses among (protected window / last
token / safeguard positions excluded), boundary_band = how many candidates lie within
1e-6 / 1e-5 / 1e-4 * max |score| of the boundary; see the fixture's "description".
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("MKL_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import sha256_file, sig, versions, write_fixture  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SHARED = Path(os.environ.get("SNAPKV_SHARED", REPO.parent / "shared"))
DEFAULT_ESSAYS = SHARED / "data" / "niah_paulgraham" / "PaulGrahamEssays"
# The authors' selection code (FasterDecoding/SnapKV, unchanged): the oracle of the official cases.
OFFICIAL_SNAPKV = SHARED / "reference" / "official-snapkv"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "press_selections.json"
TOKENIZER_FIXTURE = REPO / "tests" / "fixtures" / "tokenizer_smollm2.json"

PROMPTS = [
    ("pg_2k", 2048, "What does the author say about startups and hard work?"),
    ("pg_4k", 4096, "Why does the author think technological progress makes things more addictive?"),
    ("pg_7k", 7168, "What advice does the author give to people who want to start a company?"),
]
QUESTION_FMT = "\n\nQuestion: {q} Answer:"
CAPACITIES = (256, 1024)
WINDOW = 32
KERNEL = 7
SINKS = 4
ALPHA = 0.2
CRITICAL = 0.5  # CriticalKVPress's first_stage_ratio (its default)
BETA = 20
BAND_EPS = (1e-6, 1e-5, 1e-4)


# ----------------------------------------------------------------------------------------
# prompts


def build_prompts(tok, essays: Path):
    files = sorted(essays.glob("*.txt"))
    need = max(t for _, t, _ in PROMPTS)
    corpus, used = "", []
    for f in files:  # only as many essays as the longest prompt needs (chars >> tokens)
        corpus += f.read_text(encoding="utf-8")
        used.append(f.name)
        if len(corpus) > 8 * need:
            break
    enc = tok(corpus, add_special_tokens=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    if len(offsets) < need:
        raise SystemExit(f"essays give only {len(offsets)} tokens, need {need}")
    ends = [m.end() for m in re.finditer(r"[.!?][\"')\]]?(?=\s)", corpus)]
    prompts = []
    for name, target, question in PROMPTS:
        qtext = QUESTION_FMT.format(q=question)
        n_q = len(tok(qtext, add_special_tokens=False)["input_ids"])
        char_limit = offsets[target - n_q - 1][1]
        end = max(e for e in ends if e <= char_limit)
        text = corpus[:end] + qtext
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert len(ids) <= target, (name, len(ids))
        n_files = sum(1 for _ in _files_covering(used, essays, end))
        prompts.append({
            "name": name, "n_tokens": len(ids), "question": qtext,
            "context_chars": end, "essays_used": used[:n_files],
            "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "text": text, "tokens": [int(x) for x in ids],
        })
    return prompts


def _files_covering(names, essays, n_chars):
    total = 0
    for n in names:
        yield n
        total += len((essays / n).read_text(encoding="utf-8"))
        if total >= n_chars:
            return


def restore_smollm_pretokenizer(tok) -> None:
    """transformers' GGUF converter gives every byte-level vocabulary a plain GPT-2 ByteLevel
    pre-tokenizer; SmolLM2's tokenizer.json (and llama.cpp's "smollm" pre-tokenizer) first splits
    every numeric character off (Digits(individual_digits=True)). Restored here exactly as
    make_tokenizer_fixture.py does; check_tokenizer() then verifies all its cases."""
    from tokenizers import pre_tokenizers

    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])


def check_tokenizer(tok) -> dict:
    if not TOKENIZER_FIXTURE.exists():
        return {"checked": False}
    fx = json.loads(TOKENIZER_FIXTURE.read_text(encoding="utf-8"))
    bad = [c["text"] for c in fx["cases"] if tok(c["text"], add_special_tokens=False)["input_ids"] != c["ids"]]
    if bad:
        raise SystemExit(f"tokenizer disagrees with {TOKENIZER_FIXTURE.name} on {len(bad)} cases, e.g. {bad[0]!r}")
    return {"checked": True, "fixture": "tests/fixtures/tokenizer_smollm2.json", "cases_agree": len(fx["cases"])}


def load_hf(model_path: Path, essays: Path, n_prompts: int):
    """For the scripts that reuse this one's prompts: the tokenizer (digits step restored, checked),
    the first n_prompts prompts, the model (fp32, sdpa) and the tokenizer check's record."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    restore_smollm_pretokenizer(tok)
    tok_check = check_tokenizer(tok)
    prompts = build_prompts(tok, essays)[:n_prompts]
    model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                 dtype=torch.float32, attn_implementation="sdpa")
    model.eval()
    return tok, prompts, model, tok_check


def gguf_add_bos(model_path: Path):
    from gguf import GGUFReader

    r = GGUFReader(str(model_path))
    field = r.fields.get("tokenizer.ggml.add_bos_token")
    return None if field is None else bool(field.parts[field.data[0]][0])


# ----------------------------------------------------------------------------------------
# numpy references (float64)


def softmax_rows(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=-1, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=-1, keepdims=True)


def pool1d(s: np.ndarray, k: int, mode: str) -> np.ndarray:
    """Pool along the last axis, stride 1, padding k//2: max pads with -inf, avg pads with 0
    and divides by k (PyTorch avg_pool1d count_include_pad=True)."""
    p = k // 2
    if mode == "max":
        padded = np.pad(s, [(0, 0)] * (s.ndim - 1) + [(p, p)], constant_values=-np.inf)
        return np.lib.stride_tricks.sliding_window_view(padded, k, axis=-1).max(axis=-1)
    padded = np.pad(s, [(0, 0)] * (s.ndim - 1) + [(p, p)], constant_values=0.0)
    return np.lib.stride_tricks.sliding_window_view(padded, k, axis=-1).sum(axis=-1) / k


def topk_sorted(s: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries (ties: lower position first), ascending."""
    return np.sort(np.argsort(-s, kind="stable")[:k])


class NumpyLayer:
    """Post-RoPE Q (window) and K of one layer, float64, from the fp32 hidden states entering
    self_attn, the fp32 q_proj/k_proj weights and the layer's own fp32 RoPE cos/sin tables."""

    def __init__(self, module, kwargs, n_heads, n_kv, head_dim, window):
        h = kwargs["hidden_states"][0].detach().to(torch.float64).numpy()  # [L, hidden]
        cos, sin = (t[0].detach().to(torch.float64).numpy() for t in kwargs["position_embeddings"])  # [L, d]
        wq = module.q_proj.weight.detach().to(torch.float64).numpy()
        wk = module.k_proj.weight.detach().to(torch.float64).numpy()
        L = h.shape[0]
        k = (h @ wk.T).reshape(L, n_kv, head_dim).transpose(1, 0, 2)
        q = (h[-window:] @ wq.T).reshape(window, n_heads, head_dim).transpose(1, 0, 2)
        self.K = rope(k, cos, sin)
        self.Qw = rope(q, cos[-window:], sin[-window:])
        self.L, self.H, self.Hkv, self.d, self.W = L, n_heads, n_kv, head_dim, window
        self.G = n_heads // n_kv

    def window_probs(self, W: int) -> np.ndarray:
        """softmax(Q_w K^T / sqrt(d)) over all L keys, causal inside the window: [H, W, L]."""
        L = self.L
        Kr = np.repeat(self.K, self.G, axis=0)
        a = np.einsum("hwd,hld->hwl", self.Qw[:, -W:], Kr) / math.sqrt(self.d)
        i = np.arange(W)[:, None]
        j = np.arange(W)[None, :]
        a[:, :, L - W:] += np.where(j > i, -np.inf, 0.0)
        return softmax_rows(a)

    def snapkv_scores(self, W: int, kernel: int, pool: str, rows: str, gqa_mean: bool = True) -> np.ndarray:
        """[Hkv, L-W] SnapKV scores: sum (or mean) over window rows, pool, GQA mean after pooling
        ([H, L-W] without the GQA mean: one selection per query head)."""
        P = self.window_probs(W)
        s = P[:, :, : self.L - W].sum(axis=1)
        if rows == "mean":
            s = s / W
        s = pool1d(s, kernel, pool)
        return s.reshape(self.Hkv, self.G, -1).mean(axis=1) if gqa_mean else s

    def tova_scores(self) -> np.ndarray:
        """[L-1]: last query's softmax over all L keys, last column dropped, mean over all H heads."""
        P = self.window_probs(1)[:, 0, :]
        return P[:, :-1].mean(axis=0)

    def knorm_scores(self) -> np.ndarray:
        return -np.linalg.norm(self.K, axis=-1)

    def keydiff_scores(self) -> np.ndarray:
        """-cos(k, a), a = the mean of the head's unit keys (F.normalize / cosine_similarity eps)."""
        n = np.linalg.norm(self.K, axis=-1, keepdims=True)
        a = (self.K / np.maximum(n, 1e-12)).mean(axis=1, keepdims=True)
        return -(self.K * a).sum(-1) / np.maximum(n[..., 0] * np.linalg.norm(a, axis=-1), 1e-8)


def select_window(s_prefix: np.ndarray, n_prefix: int, L: int, W: int):
    """Per KV head: top-n_prefix of the prefix scores plus the last W positions."""
    win = np.arange(L - W, L)
    return [np.concatenate([topk_sorted(s_prefix[h], n_prefix), win]) for h in range(s_prefix.shape[0])]


def pyramid_budget(layer: int, n_layers: int, q_len: int, ratio: float, window: int, beta: int) -> int:
    """kvpress 0.5.5 PyramidKVPress.get_layer_budget, transcribed (round() is Python's: half to even)."""
    max_capacity_prompt = window + q_len * (1 - ratio)
    min_num = (max_capacity_prompt - window) / beta
    max_num = (max_capacity_prompt - window) * 2 - min_num
    if max_num >= q_len - window:
        max_num = q_len - window
        min_num = (max_capacity_prompt - window) * 2 - max_num
    if not (q_len >= max_num >= min_num >= window):
        return max(1, round(q_len * (1 - ratio)))
    steps = (max_num - min_num) / (n_layers - 1) if n_layers > 1 else 0.0
    return round(max_num - layer * steps)


def adakv_select(s_full: np.ndarray, n_kept: int, alpha: float):
    """kvpress 0.5.5 AdaKVPress selection on [Hkv, L] scores (window already padded):
    per head the top int(n_kept*alpha) (at least 1) are forced, then the Hkv*(L-n_kept)
    lowest scores over all heads jointly are dropped. Returns (kept lists, forced mask)."""
    Hkv, L = s_full.shape
    n_safe = max(1, int(n_kept * alpha)) if alpha > 0 else 0
    s = s_full.copy()
    forced = np.zeros_like(s, dtype=bool)
    for h in range(Hkv):
        forced[h, np.argsort(-s[h], kind="stable")[:n_safe]] = True
    s[forced] = np.inf
    n_pruned = Hkv * (L - n_kept)
    drop = np.argsort(s.ravel(), kind="stable")[:n_pruned]
    keep = np.ones(Hkv * L, dtype=bool)
    keep[drop] = False
    keep = keep.reshape(Hkv, L)
    return [np.flatnonzero(keep[h]) for h in range(Hkv)], forced


# ----------------------------------------------------------------------------------------
# near-tie diagnostics


def boundary(cand_scores: np.ndarray, cand_kept: np.ndarray, scale: float):
    """Near-tie statistics of one selection among candidate positions: (gap, band counts).
    gap = (lowest kept - highest dropped) / scale (None if nothing is dropped or nothing kept);
    band[e] = number of candidates whose score lies within BAND_EPS[e] * scale of the boundary
    (the midpoint between those two scores)."""
    if cand_kept.all() or not cand_kept.any() or scale == 0.0:
        return None, [0] * len(BAND_EPS)
    lo = cand_scores[cand_kept].min()
    hi = cand_scores[~cand_kept].max()
    mid = 0.5 * (lo + hi)
    band = [int(np.count_nonzero(np.abs(cand_scores - mid) <= e * scale)) for e in BAND_EPS]
    return float((lo - hi) / scale), band


def kept_mask(kept: np.ndarray, L: int) -> np.ndarray:
    m = np.zeros(L, dtype=bool)
    m[kept] = True
    return m


def layer_boundary_prefix(scores: np.ndarray, kept: list, n_cand: int):
    """Per KV head selection among positions [0, n_cand); scale = max |score| of the head there.
    -> (gap per head, band counts summed over heads)."""
    gaps, band = [], [0] * len(BAND_EPS)
    for h in range(scores.shape[0]):
        c = scores[h, :n_cand]
        g, b = boundary(c, kept_mask(kept[h], scores.shape[1])[:n_cand], float(np.max(np.abs(c))))
        gaps.append(g)
        band = [x + y for x, y in zip(band, b)]
    return gaps, band


def layer_boundary_ada(scores: np.ndarray, kept: list, n_kept: int, alpha: float, window: int):
    """AdaKV: one joint boundary over all non-safeguarded prefix entries of the layer (all KV heads),
    and each head's safeguard boundary (both counted in the band);
    per head the gap is that joint gap, or the head's safeguard boundary (lowest safeguarded score -
    best non-safeguarded score) when smaller and deciding (that best entry was dropped).
    scale = max |score| over the layer's prefix (all heads)."""
    Hkv, L = scores.shape
    _, forced = adakv_select(scores, n_kept, alpha)
    cand = ~forced
    cand[:, L - window:] = False
    keep = np.stack([kept_mask(k, L) for k in kept])
    prefix = scores[:, : L - window]
    scale = float(np.max(np.abs(prefix)))
    joint, band = boundary(scores[cand], keep[cand], scale)
    for h in range(Hkv):  # each head's safeguard boundary: a near-tie there moves an entry too
        if forced[h].any() and not forced[h].all():
            band = [x + y for x, y in zip(band, boundary(scores[h], forced[h], scale)[1])]
    gaps = []
    for h in range(Hkv):
        gs = [joint] if joint is not None else []
        c = cand[h]
        f = forced[h, : L - window]
        if c.any() and f.any():
            best = np.flatnonzero(c)[np.argmax(scores[h][c])]
            if not keep[h, best]:
                gs.append(float((prefix[h][f].min() - scores[h, best]) / scale))
        gaps.append(min(gs) if gs else None)
    return gaps, band


def layer_boundary_critical(inner: np.ndarray, scores: np.ndarray, kept: list, n_cand: int, n_kept: int):
    """CriticalKV: two boundaries per head among the prefix [0, n_cand): stage 1, the top
    int(n_kept * CRITICAL) of the inner press's scores (kvpress writes float max over them), then the
    rest by the re-weighted scores among the entries stage 1 left. The band counts both."""
    fmax = float(np.finfo(np.float32).max)
    n1 = max(1, int(n_kept * CRITICAL))
    gaps, band = [], [0] * len(BAND_EPS)
    for h in range(scores.shape[0]):
        si = inner[h, :n_cand]
        stage1 = np.zeros(inner.shape[1], dtype=bool)
        stage1[np.argsort(-inner[h], kind="stable")[:n1]] = True  # window entries score the max: among them
        stage1 = stage1[:n_cand]
        g1, b1 = boundary(si, stage1, float(np.max(np.abs(si))))
        rest = scores[h, :n_cand] < 0.5 * fmax
        c = scores[h, :n_cand][rest]
        km = kept_mask(kept[h], scores.shape[1])[:n_cand][rest]
        g2, b2 = boundary(c, km, float(np.max(np.abs(c))) if c.size else 0.0)
        gs = [g for g in (g1, g2) if g is not None]
        gaps.append(min(gs) if gs else None)
        band = [x + y + z for x, y, z in zip(band, b1, b2)]
    return gaps, band


# ----------------------------------------------------------------------------------------
# kvpress driving


def compute_ratio(L: int, C: int) -> float:
    from kvpress.utils import compute_n_kept

    r = 1.0 - C / L
    while compute_n_kept(L, r) < C:
        r = float(np.nextafter(r, 0.0))
    while compute_n_kept(L, r) > C:
        r = float(np.nextafter(r, 1.0))
    assert compute_n_kept(L, r) == C
    return float(r)


def make_specs(L: int, eager: bool):
    """The kvpress cases for one prompt: (reference, options, kvpress_args, factory)."""
    import kvpress as kp

    specs = []
    for C in CAPACITIES:
        r = compute_ratio(L, C)
        snap_args = {"compression_ratio": r, "window_size": WINDOW, "kernel_size": KERNEL}
        snap_opts = {"window": WINDOW, "kernel": KERNEL, "pool": "avg", "gqa": "mean"}
        if eager:
            specs.append(("kvpress.ObservedAttentionPress", {"press": "h2o", "capacity": C},
                          {"class": "ObservedAttentionPress", "compression_ratio": r},
                          lambda r=r: kp.ObservedAttentionPress(compression_ratio=r)))
            continue
        specs += [
            ("kvpress.SnapKVPress", {"press": "snapkv", **snap_opts, "capacity": C},
             {"class": "SnapKVPress", **snap_args},
             lambda a=snap_args: kp.SnapKVPress(**a)),
            ("kvpress.PyramidKVPress", {"press": "pyramidkv", "variant": "kvpress", **snap_opts, "beta": BETA, "capacity": C},
             {"class": "PyramidKVPress", **snap_args, "beta": BETA},
             lambda a=snap_args: kp.PyramidKVPress(**a, beta=BETA)),
            ("kvpress.AdaKVPress(SnapKVPress)", {"press": "ada_kv", "variant": "kvpress", "alpha": ALPHA, **snap_opts, "capacity": C},
             {"class": "AdaKVPress", "alpha_safeguard": ALPHA, "press": {"class": "SnapKVPress", **snap_args}},
             lambda a=snap_args: kp.AdaKVPress(press=kp.SnapKVPress(**a), alpha_safeguard=ALPHA)),
            ("kvpress.StreamingLLMPress", {"press": "streaming_llm", "sinks": SINKS, "capacity": C},
             {"class": "StreamingLLMPress", "compression_ratio": r, "n_sink": SINKS},
             lambda r=r: kp.StreamingLLMPress(compression_ratio=r, n_sink=SINKS)),
            ("kvpress.KnormPress", {"press": "knorm", "capacity": C},
             {"class": "KnormPress", "compression_ratio": r},
             lambda r=r: kp.KnormPress(compression_ratio=r)),
            ("kvpress.KeyDiffPress", {"press": "keydiff", "capacity": C},
             {"class": "KeyDiffPress", "compression_ratio": r},
             lambda r=r: kp.KeyDiffPress(compression_ratio=r)),
            ("kvpress.CriticalKVPress(SnapKVPress)", {"press": "snapkv", "critical": CRITICAL, **snap_opts, "capacity": C},
             {"class": "CriticalKVPress", "first_stage_ratio": CRITICAL, "press": {"class": "SnapKVPress", **snap_args}},
             lambda a=snap_args: kp.CriticalKVPress(press=kp.SnapKVPress(**a), first_stage_ratio=CRITICAL)),
            # Ada-KV's budget over a scorer other than SnapKV's (snapkv's --kv-budget ada over any press)
            ("kvpress.AdaKVPress(KeyDiffPress)", {"press": "keydiff", "budget": "ada", "variant": "kvpress", "alpha": ALPHA, "capacity": C},
             {"class": "AdaKVPress", "alpha_safeguard": ALPHA, "press": {"class": "KeyDiffPress", "compression_ratio": r}},
             lambda r=r: kp.AdaKVPress(press=kp.KeyDiffPress(compression_ratio=r), alpha_safeguard=ALPHA)),
            ("kvpress.TOVAPress", {"press": "tova", "capacity": C},
             {"class": "TOVAPress", "compression_ratio": r},
             lambda r=r: kp.TOVAPress(compression_ratio=r)),
            ("kvpress.ExpectedAttentionPress", {"press": "expected_attention", "capacity": C},
             {"class": "ExpectedAttentionPress", "compression_ratio": r},
             lambda r=r: kp.ExpectedAttentionPress(compression_ratio=r)),
        ]
    return specs


class PressRun:
    """One press instance, its captured scores and kept positions per layer."""

    def __init__(self, spec, n_layers):
        self.reference, self.options, self.kvpress_args, factory = spec
        self.press = factory()
        self.is_ada = type(self.press).__name__ == "AdaKVPress"
        scorer = self.press.press if self.is_ada else self.press
        self._pending, self._inner_pending = [], []
        self.inner_scores = [None] * n_layers  # CriticalKVPress: its inner press's scores (stage 1)

        def capture(press, into):
            orig = press.score

            def score(*a, **k):
                s = orig(*a, **k)
                into.append(s.detach().clone())
                return s

            press.score = score

        capture(scorer, self._pending)
        if type(self.press).__name__ == "CriticalKVPress":
            capture(self.press.press, self._inner_pending)
        self.scores = [None] * n_layers  # np.float64 [Hkv, L] (the press's own fp32 scores)
        self.kept = [None] * n_layers  # list over heads of sorted np.int64 positions

    def apply(self, module, args, kwargs, output, full_k, full_v, rowmaps):
        layer = kwargs["past_key_values"].layers[module.layer_idx]
        layer.keys, layer.values = full_k, full_v
        module.masked_key_indices = None
        self._pending.clear()
        self._inner_pending.clear()
        self.press.forward_hook(module, args, kwargs, output)
        out_k = layer.keys
        assert len(self._pending) == 1, "score() should run once per layer"
        scores = self._pending[0][0].to(torch.float64).numpy()
        self.scores[module.layer_idx] = scores
        if self._inner_pending:
            self.inner_scores[module.layer_idx] = self._inner_pending[0][0].to(torch.float64).numpy()
        self.kept[module.layer_idx] = kept_from_layer(module, out_k, full_k, rowmaps, self.is_ada)
        layer.keys, layer.values = full_k, full_v


def kept_from_layer(module, out_k, full_k, rowmaps, is_ada):
    Hkv, L = full_k.shape[1], full_k.shape[2]
    if is_ada:
        assert out_k.shape == full_k.shape and torch.equal(out_k, full_k), "AdaKVPress should not shorten the cache"
        b, h, s = module.masked_key_indices
        mask = np.ones((Hkv, L), dtype=bool)
        mask[h.cpu().numpy(), s.cpu().numpy()] = False
        return [np.flatnonzero(mask[j]) for j in range(Hkv)]
    kept = []
    ok = out_k[0].detach().contiguous().numpy()
    for j in range(Hkv):
        pos = np.array([rowmaps[j][row.tobytes()] for row in ok[j]], dtype=np.int64)
        assert len(np.unique(pos)) == len(pos), "a key row was kept twice"
        kept.append(np.sort(pos))
    return kept


def make_rowmaps(full_k):
    fk = full_k[0].detach().contiguous().numpy()
    maps = []
    for j in range(fk.shape[0]):
        m = {row.tobytes(): i for i, row in enumerate(fk[j])}
        assert len(m) == fk.shape[1], "duplicate key rows: positions cannot be recovered from pruned keys"
        maps.append(m)
    return maps


class Multiplexer:
    """Forward hook on every self_attn: runs each press's own kvpress forward_hook on the layer's full
    K/V (restored before each press) and, optionally, the numpy reference captures."""

    def __init__(self, runs, n_layers, cfg, numpy_capture: bool, keep_full: bool):
        self.runs, self.cfg, self.numpy_capture, self.keep_full = runs, cfg, numpy_capture, keep_full
        self.np_scores = [None] * n_layers
        self.official = [None] * n_layers
        self.full_keys = [None] * n_layers
        self.k_check = []

    def hook(self, module, args, kwargs, output):
        l = module.layer_idx
        cache = kwargs["past_key_values"]
        layer = cache.layers[l]
        full_k, full_v = layer.keys, layer.values
        if self.keep_full:
            self.full_keys[l] = full_k.detach().clone()
        if self.numpy_capture:
            H, Hkv, d = self.cfg
            nl = NumpyLayer(module, kwargs, H, Hkv, d, WINDOW)
            mk = full_k[0].to(torch.float64).numpy()
            self.k_check.append(float(np.max(np.abs(nl.K - mk)) / np.max(np.abs(mk))))
            self.np_scores[l] = {
                "official": nl.snapkv_scores(WINDOW, KERNEL, "max", "sum"),
                "kvpress_snap": nl.snapkv_scores(WINDOW, KERNEL, "avg", "mean"),
                "tova": nl.tova_scores(),
                "knorm": nl.knorm_scores(),
                "keydiff": nl.keydiff_scores(),
                "official_max_per_query_head": nl.snapkv_scores(WINDOW, KERNEL, "max", "sum", gqa_mean=False),
                "official_avg_per_query_head": nl.snapkv_scores(WINDOW, KERNEL, "avg", "sum", gqa_mean=False),
            }
            self.official[l] = official_selections(module, kwargs, full_k, full_v, H, Hkv, d, nl.L)
        rowmaps = make_rowmaps(full_k) if any(not r.is_ada for r in self.runs) else None
        for run in self.runs:
            run.apply(module, args, kwargs, output, full_k, full_v, rowmaps)
        layer.keys, layer.values = full_k, full_v
        return output


def official_selections(module, kwargs, full_k, full_v, H, Hkv, d, L):
    """{(pool, C): (per query head the positions the authors' SnapKVCluster.update_kv keeps, its
    fp32 prefix scores [H, L-W], heads whose choice among exactly tied scores was re-made)}, run as
    the authors run it on a GQA model: keys and values repeated per query head (repeat_kv), full
    post-RoPE queries of the layer, fp32. Positions come back by matching the kept key rows. The
    scores are the tensor update_kv passes to topk (captured on the way); torch.topk's order among
    equal values is unspecified, so within the boundary's tie group the lower positions are kept, as
    the numpy cases and snapkv do (max pooling makes plateaus of equal scores)."""
    if str(OFFICIAL_SNAPKV) not in sys.path:
        sys.path.insert(0, str(OFFICIAL_SNAPKV))
    import snapkv_utils
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    hs = kwargs["hidden_states"]
    q = module.q_proj(hs).view(1, L, H, d).transpose(1, 2)
    cos, sin = kwargs["position_embeddings"]
    q, _ = apply_rotary_pos_emb(q, q, cos, sin)
    G = H // Hkv
    k, v = snapkv_utils.repeat_kv(full_k, G), snapkv_utils.repeat_kv(full_v, G)
    maps = make_rowmaps(full_k)
    out = {}
    topk, seen = torch.Tensor.topk, []

    def recording_topk(t, *a, **kw):
        seen.append(t.detach().clone())
        return topk(t, *a, **kw)

    for pool in ("max", "avg"):
        for C in CAPACITIES:
            cluster = snapkv_utils.SnapKVCluster(window_size=WINDOW, max_capacity_prompt=C, kernel_size=KERNEL,
                                                 pooling=pool + "pool")
            seen.clear()
            torch.Tensor.topk = recording_topk
            try:
                kc, _ = cluster.update_kv(k, q, v, None, G)
            finally:
                torch.Tensor.topk = topk
            assert len(seen) == 1
            scores = seen[0][0].numpy().astype(np.float64)  # [H, L-W]
            rows = kc[0].detach().contiguous().numpy()
            kept, retied = [], 0
            for h in range(H):
                pos = np.sort([maps[h // G][r.tobytes()] for r in rows[h]])
                prefix, win = pos[pos < L - WINDOW], pos[pos >= L - WINDOW]
                assert len(win) == WINDOW and len(prefix) == C - WINDOW
                canon = topk_sorted(scores[h], C - WINDOW)  # ties: lower position first
                assert np.array_equal(np.sort(scores[h][canon]), np.sort(scores[h][prefix])), "not a tie reorder"
                retied += int(not np.array_equal(canon, prefix))
                kept.append(np.concatenate([canon, win]))
            out[(pool, C)] = (kept, scores, retied)
    return out


def prefill(model, ids):
    from transformers import DynamicCache

    cache = DynamicCache()
    with torch.inference_mode():
        model.model(input_ids=torch.tensor([ids], dtype=torch.long), past_key_values=cache)
    return cache


def run_multiplexed(model, ids, specs, numpy_capture, keep_full):
    cfg = model.config
    n_layers = cfg.num_hidden_layers
    runs = [PressRun(s, n_layers) for s in specs]
    for r in runs:  # what press.__call__ does before registering its hooks (no-op for these presses)
        r.press.post_init_from_model(model)
    mux = Multiplexer(runs, n_layers, (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim), numpy_capture, keep_full)
    for layer in model.model.layers:  # press.__call__ does this too (ExpectedAttentionPress reads it)
        layer.self_attn.rotary_emb = model.model.rotary_emb
    hooks = [layer.self_attn.register_forward_hook(mux.hook, with_kwargs=True) for layer in model.model.layers]
    try:
        cache = prefill(model, ids)
    finally:
        for h in hooks:
            h.remove()
    for l in range(n_layers):  # the multiplexer left the full cache in place
        assert cache.layers[l].keys.shape[2] == len(ids)
    return runs, mux


def verify_context_manager(model, ids, runs, full_keys) -> int:
    """Re-run each press alone with kvpress's own `with press(model):` and compare kept sets."""
    n_checked = 0
    for run in runs:
        spec = (run.reference, run.options, run.kvpress_args, None)
        press = make_press_like(run)
        with press(model):
            cache = prefill(model, ids)
        for l, layer in enumerate(model.model.layers):
            mod = layer.self_attn
            if run.is_ada:
                kept = kept_from_layer(mod, cache.layers[l].keys, full_keys[l], None, True)
            else:
                kept = kept_from_layer(mod, cache.layers[l].keys, full_keys[l], make_rowmaps(full_keys[l]), False)
            for j, (a, b) in enumerate(zip(kept, run.kept[l])):
                if not np.array_equal(a, b):
                    raise SystemExit(f"{spec[0]} {run.options}: context-manager run differs at layer {l} head {j}")
        n_checked += 1
        print(f"  context manager agrees: {run.reference} C={run.options['capacity']}", flush=True)
    return n_checked


def make_press_like(run):
    import kvpress as kp

    a = dict(run.kvpress_args)
    cls = a.pop("class")
    if "press" in a:  # a wrapper (AdaKVPress, CriticalKVPress) around a scorer
        inner = dict(a.pop("press"))
        inner_cls = inner.pop("class")
        return getattr(kp, cls)(press=getattr(kp, inner_cls)(**inner), **a)
    return getattr(kp, cls)(**a)


# ----------------------------------------------------------------------------------------
# encoding


def delta_encode(pos) -> list[int]:
    """Sorted positions -> [first, d1, d2, ...] with d = differences; a run of r >= 2 consecutive
    differences equal to 1 is written as the single entry -r."""
    pos = np.asarray(pos, dtype=np.int64)
    if len(pos) == 0:
        return []
    out = [int(pos[0])]
    diffs = np.diff(pos)
    i = 0
    while i < len(diffs):
        if diffs[i] == 1:
            j = i
            while j < len(diffs) and diffs[j] == 1:
                j += 1
            out.append(1 if j - i == 1 else -(j - i))
            i = j
        else:
            out.append(int(diffs[i]))
            i += 1
    return out


def delta_decode(enc: list[int]) -> list[int]:
    if not enc:
        return []
    out = [enc[0]]
    for x in enc[1:]:
        if x > 0:
            out.append(out[-1] + x)
        else:
            assert x <= -2
            out.extend(range(out[-1] + 1, out[-1] + 1 - x))
    return out


def n_diff(a: list, b: list) -> int:
    """Positions kept by one selection and not the other, summed over heads (symmetric difference / 2)."""
    return int(sum(len(np.setxor1d(x, y)) for x, y in zip(a, b)) // 2)


def case_record(prompt_idx, reference, options, kvpress_args, kept, bounds, extra=None):
    """bounds: per layer (gaps per head, band counts) or None."""
    rec = {
        "prompt": prompt_idx, "reference": reference, "options": options, "kvpress_args": kvpress_args,
        "n_kept": [[int(len(k)) for k in heads] for heads in kept],
    }
    if extra:
        rec.update(extra)
    if bounds is not None:
        rec["boundary_gap"] = [[None if g is None else sig(g, 3) for g in gaps] for gaps, _ in bounds]
        rec["boundary_band"] = [band for _, band in bounds]
        rec["boundary_band_total"] = [int(sum(b[e] for _, b in bounds)) for e in range(len(BAND_EPS))]
        rec["n_exact_tie_heads"] = int(sum(1 for gaps, _ in bounds for g in gaps if g == 0.0))
    else:
        rec["boundary_gap"] = rec["boundary_band"] = rec["boundary_band_total"] = rec["n_exact_tie_heads"] = None
    rec["kept_delta"] = [[delta_encode(k) for k in heads] for heads in kept]
    for heads, enc in zip(kept, rec["kept_delta"]):
        for k, e in zip(heads, enc):
            assert delta_decode(e) == [int(x) for x in k]
    return rec


# ----------------------------------------------------------------------------------------


def fixture_parser(doc: str, default_out: Path, essays: bool = True) -> argparse.ArgumentParser:
    """The options of every press fixture script: --model, --essays (unless essays=False), --out,
    --threads."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    if essays:
        ap.add_argument("--essays", type=Path, default=DEFAULT_ESSAYS)
    ap.add_argument("--out", type=Path, default=default_out)
    ap.add_argument("--threads", type=int, default=2)
    return ap


def fixture_args(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed options, with torch's thread count set from --threads."""
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    return args


def main() -> int:
    ap = fixture_parser(__doc__, DEFAULT_OUT)
    ap.add_argument("--h2o-prompts", type=int, default=2, help="ObservedAttentionPress (eager, L x L weights) on the first N prompts")
    ap.add_argument("--no-verify", action="store_true", help="skip re-running prompt 0 with kvpress's context manager")
    ap.add_argument("--prompts", type=int, default=len(PROMPTS), help="only the first N prompts (debugging)")
    args = fixture_args(ap)

    t_start = time.time()
    torch.manual_seed(0)
    import kvpress  # noqa: F401  (patches transformers' attention functions at import)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()

    model_path = args.model.resolve()
    add_bos = gguf_add_bos(model_path)
    if add_bos:
        raise SystemExit("this script assumes the GGUF adds no BOS")
    tok = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    plain_pre = tok.backend_tokenizer.pre_tokenizer
    restore_smollm_pretokenizer(tok)
    tok_check = check_tokenizer(tok)
    prompts = build_prompts(tok, args.essays)[: args.prompts]
    tok.backend_tokenizer.pre_tokenizer = plain_pre
    tok_check["prompt_ids_changed_by_restoring_digits_step"] = [
        p["tokens"] != tok(p["text"], add_special_tokens=False)["input_ids"] for p in prompts]
    restore_smollm_pretokenizer(tok)
    for p in prompts:
        print(f"prompt {p['name']}: {p['n_tokens']} tokens, {p['context_chars']} context chars", flush=True)

    def load(attn):
        m = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                 dtype=torch.float32, attn_implementation=attn)
        m.eval()
        assert m.config._attn_implementation == attn
        assert all(p.dtype == torch.float32 for p in m.parameters())
        return m

    model = load("sdpa")
    cfg = model.config
    n_layers, H, Hkv, d = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    print(f"model: {n_layers} layers, {H} heads, {Hkv} kv heads, head_dim {d}, rope {getattr(cfg, 'rope_parameters', None)}", flush=True)

    cases, checks, timings = [], {"k_rel_err_max": 0.0}, {}
    for pi, p in enumerate(prompts):
        ids, L = p["tokens"], p["n_tokens"]
        t0 = time.time()
        specs = make_specs(L, eager=False)
        runs, mux = run_multiplexed(model, ids, specs, numpy_capture=True, keep_full=(pi == 0 and not args.no_verify))
        timings[f"{p['name']}_sdpa_forward_s"] = round(time.time() - t0, 1)
        checks["k_rel_err_max"] = max(checks["k_rel_err_max"], max(mux.k_check))
        print(f"{p['name']}: sdpa forward + {len(runs)} presses in {time.time() - t0:.1f}s, "
              f"numpy K vs model K rel err {max(mux.k_check):.2e}", flush=True)

        # numpy official SnapKV (one case per C)
        for C in CAPACITIES:
            kept_all, gaps_all, tie_diff = [], [], 0
            for l in range(n_layers):
                s = mux.np_scores[l]["official"]
                if L <= C:
                    kept = [np.arange(L) for _ in range(Hkv)]
                    g = ([None] * Hkv, [0] * len(BAND_EPS))
                else:
                    kept = select_window(s, C - WINDOW, L, WINDOW)
                    g = layer_boundary_prefix(np.concatenate([s, np.full((Hkv, WINDOW), np.inf)], axis=1), kept, L - WINDOW)
                    # how much the tie rule matters: torch.topk (CPU, float64) on the same scores
                    tk = [np.sort(torch.from_numpy(s[h]).topk(C - WINDOW).indices.numpy()) for h in range(Hkv)]
                    tie_diff += n_diff(tk, [k[:-WINDOW] for k in kept])
                kept_all.append(kept)
                gaps_all.append(g)
            cases.append(case_record(pi, "numpy.official_snapkv",
                                     {"press": "snapkv", "window": WINDOW, "kernel": KERNEL, "pool": "max", "gqa": "mean", "capacity": C},
                                     None, kept_all, gaps_all,
                                     {"numpy": {"dtype": "float64", "window_rows": "sum", "pool_padding": "-inf",
                                                "gqa_reduce": "mean after pooling", "ties": "lower position first",
                                                "rope_tables": "the model's fp32 cos/sin", "skip_if_L_le_C": True},
                                      "cross_check": {"torch_topk_tie_order_positions_differing": tie_diff}}))

        # the authors' code, one selection per query head (one case per pooling and C)
        for pool in ("max", "avg"):
            for C in CAPACITIES:
                kept_all, gaps_all, np_diff = [], [], 0
                retied = 0
                for l in range(n_layers):
                    kept, s32, r = mux.official[l][(pool, C)]
                    retied += r
                    gaps_all.append(layer_boundary_prefix(np.concatenate([s32, np.full((H, WINDOW), np.inf)], axis=1),
                                                          kept, L - WINDOW))
                    s = mux.np_scores[l][f"official_{pool}_per_query_head"]
                    np_diff += n_diff(select_window(s, C - WINDOW, L, WINDOW), kept)
                    kept_all.append(kept)
                cases.append(case_record(pi, "official.SnapKVCluster",
                                         {"press": "snapkv", "window": WINDOW, "kernel": KERNEL, "pool": pool,
                                          "gqa": "per_query_head", "capacity": C},
                                         None, kept_all, gaps_all,
                                         {"official": {"code": "shared/reference/official-snapkv/snapkv_utils.py",
                                                       "call": "SnapKVCluster(window_size, max_capacity_prompt=C, kernel_size, "
                                                               "pooling).update_kv(repeat_kv(K), Q, repeat_kv(V), None, G)",
                                                       "dtype": "float32", "ties": "torch.topk order"},
                                          "cross_check": {"numpy_float64_positions_differing": np_diff,
                                                          "heads_whose_exact_ties_were_reordered": retied}}))

        for run in runs:
            cases.append(finish_kvpress_case(pi, run, mux, L, n_layers, Hkv))
        if pi == 0 and not args.no_verify:
            t0 = time.time()
            checks["context_manager_sdpa"] = verify_context_manager(model, ids, runs, mux.full_keys)
            timings["verify_context_manager_sdpa_s"] = round(time.time() - t0, 1)
        del runs, mux

        if pi < args.h2o_prompts:
            t0 = time.time()
            eager = load("eager")
            e_runs, e_mux = run_multiplexed(eager, ids, make_specs(L, eager=True), numpy_capture=False, keep_full=False)
            for run in e_runs:
                cases.append(finish_kvpress_case(pi, run, e_mux, L, n_layers, Hkv))
            timings[f"{p['name']}_eager_forward_s"] = round(time.time() - t0, 1)
            print(f"{p['name']}: eager forward + ObservedAttentionPress in {time.time() - t0:.1f}s", flush=True)
            if pi == 0 and not args.no_verify:
                checks["context_manager_eager"] = verify_context_manager(eager, ids, e_runs, _full_keys(eager, ids))
            del eager, e_runs, e_mux

    checks["rope_tables"] = rope_table_diagnostic(model, max(p["n_tokens"] for p in prompts))
    checks["tokenizer"] = tok_check

    for c in cases:
        heads = H if c["options"].get("gqa") == "per_query_head" else Hkv
        check_counts(c, prompts[c["prompt"]]["n_tokens"], n_layers, heads)
    checks["official_vs_kvpress_snapkv_positions_differing"] = compare_cases(
        cases, prompts, "numpy.official_snapkv", "kvpress.SnapKVPress")
    checks["kvpress_pyramidkv_vs_snapkv_positions_differing"] = compare_cases(
        cases, prompts, "kvpress.PyramidKVPress", "kvpress.SnapKVPress")

    fixture = {
        "description": DESCRIPTION,
        "generator": "tools/reference/make_press_fixture.py",
        "model_file": "models/" + model_path.name,
        "model_sha256": sha256_file(model_path),
        "versions": versions(["kvpress", "torch", "transformers", "numpy", "tokenizers", "gguf", "accelerate"]),
        "model": {"n_layers": n_layers, "n_heads": H, "n_kv_heads": Hkv, "head_dim": d,
                  "dtype": "float32 (GGUF dequantized by transformers)", "torch_threads": torch.get_num_threads()},
        "tokenization": {"tokenizer": "transformers AutoTokenizer.from_pretrained(dir, gguf_file=...), add_special_tokens=False, SmolLM2 pre-tokenizer restored (Digits(individual_digits=True) then ByteLevel), as in make_tokenizer_fixture.py",
                         "gguf_add_bos_token": add_bos, "bos_prepended": False,
                         "text_source": "shared/data/niah_paulgraham/PaulGrahamEssays, sorted file names, texts concatenated with nothing between them, cut after a sentence end ([.!?] optionally followed by a quote/bracket, then whitespace), question appended",
                         "question_format": QUESTION_FMT},
        "checks": checks,
        "timings": {**timings, "total_s": round(time.time() - t_start, 1)},
        "prompts": prompts,
        "cases": cases,
    }
    write_fixture(args.out, fixture, row_keys=("prompts", "cases"))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes), {len(cases)} cases, {time.time() - t_start:.0f}s", flush=True)
    return 0


def compare_cases(cases, prompts, ref_a, ref_b) -> dict:
    """{"<prompt>/C=<C>": positions kept by one and not the other (summed over layers and heads)}."""
    out = {}
    for a in cases:
        if a["reference"] != ref_a:
            continue
        for b in cases:
            if b["reference"] == ref_b and b["prompt"] == a["prompt"] and b["options"]["capacity"] == a["options"]["capacity"]:
                ka = [delta_decode(e) for heads in a["kept_delta"] for e in heads]
                kb = [delta_decode(e) for heads in b["kept_delta"] for e in heads]
                out[f"{prompts[a['prompt']]['name']}/C={a['options']['capacity']}"] = n_diff(ka, kb)
    return out


def _full_keys(model, ids):
    cache = prefill(model, ids)
    return [cache.layers[l].keys.detach().clone() for l in range(len(cache.layers))]


def finish_kvpress_case(pi, run, mux, L, n_layers, Hkv):
    """Gaps from the press's own scores, numpy cross-checks of the selection rule."""
    cls = run.kvpress_args["class"]
    C = run.options["capacity"]
    r = run.kvpress_args.get("compression_ratio") or run.kvpress_args["press"]["compression_ratio"]
    gaps, extra = [], {}
    np_kept = []
    for l in range(n_layers):
        s, kept = run.scores[l], run.kept[l]
        nps = mux.np_scores[l] if mux.np_scores[l] is not None else None
        if cls in ("SnapKVPress", "PyramidKVPress"):
            gaps.append(layer_boundary_prefix(s, kept, L - WINDOW))
            if nps is not None:
                n = C if cls == "SnapKVPress" else pyramid_budget(l, n_layers, L, r, WINDOW, BETA)
                np_kept.append(select_window(nps["kvpress_snap"], n - WINDOW, L, WINDOW))
        elif cls == "AdaKVPress":
            inner = run.kvpress_args["press"]["class"]
            window = WINDOW if inner == "SnapKVPress" else 0
            gaps.append(layer_boundary_ada(s, kept, C, ALPHA, window))
            ref, _ = adakv_select(s, C, ALPHA)  # the rule, applied to kvpress's own scores
            for a, b in zip(ref, kept):
                if not np.array_equal(a, b):
                    raise SystemExit(f"AdaKV selection rule not reproduced at layer {l}")
            if nps is not None and inner == "SnapKVPress":
                sp = nps["kvpress_snap"]
                np_kept.append(adakv_select(np.concatenate([sp, np.full((Hkv, WINDOW), sp.max() + 1)], axis=1), C, ALPHA)[0])
            elif nps is not None:
                np_kept.append(adakv_select(nps["keydiff"], C, ALPHA)[0])
        elif cls == "CriticalKVPress":
            gaps.append(layer_boundary_critical(run.inner_scores[l], s, kept, L - WINDOW, C))
        elif cls == "TOVAPress":
            gaps.append(layer_boundary_prefix(s, kept, L - 1))
            if nps is not None:
                t = nps["tova"]
                np_kept.append([np.concatenate([topk_sorted(t, C - 1), [L - 1]]) for _ in range(Hkv)])
        elif cls in ("KnormPress", "KeyDiffPress"):
            gaps.append(layer_boundary_prefix(s, kept, L))
            if nps is not None:
                name = "knorm" if cls == "KnormPress" else "keydiff"
                np_kept.append([topk_sorted(nps[name][h], C) for h in range(Hkv)])
        elif cls in ("ObservedAttentionPress", "ExpectedAttentionPress"):
            gaps.append(layer_boundary_prefix(s, kept, L))
        elif cls == "StreamingLLMPress":
            expect = np.concatenate([np.arange(SINKS), np.arange(L - (C - SINKS), L)])
            for k in kept:
                assert np.array_equal(k, expect), "StreamingLLM keeps something else than sinks + recent"
            gaps = None
        if cls not in ("StreamingLLMPress", "AdaKVPress", "PyramidKVPress", "CriticalKVPress"):
            # a pruning ScorerPress keeps exactly topk(scores, n_kept): check with the captured scores
            for h, k in enumerate(kept):
                top = set(torch.from_numpy(s[h]).topk(len(k)).indices.tolist())
                assert top == set(k.tolist()) or _tie_ok(s[h], k), f"{cls}: kept != topk(scores) at layer {l} head {h}"
    if cls == "PyramidKVPress":
        counts = [len(run.kept[l][0]) for l in range(n_layers)]
        formula = [pyramid_budget(l, n_layers, L, r, WINDOW, BETA) for l in range(n_layers)]
        assert counts == formula, (counts, formula)
        extra["n_kept_per_layer"] = counts
    if np_kept:
        kp_scores = np.stack([run.scores[l] for l in range(n_layers)]) if cls == "SnapKVPress" else None
        cc = {"numpy_float64_same_rule_positions_differing": n_diff(sum(np_kept, []), sum(run.kept, [])),
              "layer_heads_differing": int(sum(1 for a, b in zip(sum(np_kept, []), sum(run.kept, [])) if not np.array_equal(a, b)))}
        if kp_scores is not None:
            nps_all = np.stack([mux.np_scores[l]["kvpress_snap"] for l in range(n_layers)])
            diff = np.abs(kp_scores[:, :, : L - WINDOW] - nps_all)
            cc["score_abs_err_max_rel"] = sig(float(diff.max() / np.abs(nps_all).max()), 3)
        extra["cross_check"] = cc
    return case_record(pi, run.reference, run.options, run.kvpress_args, run.kept, gaps, extra)


def _tie_ok(s, k):
    """kept is a valid top-|k| set (ties at the boundary may be broken either way)."""
    m = kept_mask(k, len(s))
    return m.all() or s[m].min() >= s[~m].max()


def check_counts(c, L, n_layers, Hkv):
    C = c["options"]["capacity"]
    nk = c["n_kept"]
    assert len(nk) == n_layers and all(len(h) == Hkv for h in nk)
    press = c["options"]["press"]
    if press == "ada_kv" or c["options"].get("budget") == "ada":
        for heads in nk:
            assert sum(heads) == Hkv * C, heads
    elif press == "pyramidkv":
        for l, heads in enumerate(nk):
            assert len(set(heads)) == 1 and heads[0] == c["n_kept_per_layer"][l]
    else:
        for heads in nk:
            assert all(n == (C if L > C else L) for n in heads), (press, heads)
    for heads in c["kept_delta"]:
        for dl in heads:
            pos = np.array(delta_decode(dl))
            assert (np.diff(pos) > 0).all() and pos[0] >= 0 and pos[-1] < L


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """HF Llama rotate_half RoPE; x [heads, n, d], cos/sin [n, d]."""
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos[None] + rot * sin[None]


def rope_table_diagnostic(model, L: int) -> dict:
    """How far the model's fp32 RoPE tables (used by kvpress and the numpy case) are from exact
    float64 angles."""
    d = model.config.head_dim
    theta = model.config.rope_parameters["rope_theta"]
    pos = torch.arange(L)[None]
    x = torch.zeros(1, L, d)
    cos, sin = model.model.rotary_emb(x, pos)
    inv = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    ang = np.arange(L, dtype=np.float64)[:, None] * inv[None]
    emb = np.concatenate([ang, ang], axis=-1)
    return {"theta": theta, "max_abs_err_cos_sin_vs_float64": sig(max(np.abs(cos[0].double().numpy() - np.cos(emb)).max(),
                                                                    np.abs(sin[0].double().numpy() - np.sin(emb)).max()), 3),
            "positions": L}


DESCRIPTION = (
    "Prompt positions (0-based token indices into prompts[i].tokens) that KV-cache compression presses keep at prefill, "
    "per layer and KV head, on the default model (fp32, GGUF dequantized by transformers). One forward pass over the "
    "prompt's tokens (no BOS), no generation. Each case: kept_delta[layer][kv_head] = the sorted kept positions, "
    "delta-encoded: first entry absolute, then differences to the previous position, except that a run of r >= 2 "
    "consecutive differences of 1 is written as the single entry -r (decode: x > 0 -> next = prev + x; x < 0 -> the "
    "next -x positions are prev+1 .. prev-x). n_kept[layer][kv_head] = their count. capacity C = kept entries per KV "
    "head INCLUDING the protected window (AdaKV: C on average over the KV heads of a layer; PyramidKV: per layer, see "
    "n_kept_per_layer). kvpress cases use the compression_ratio r in kvpress_args (full float precision), for which "
    "compute_n_kept(L, r) = max(1, int(L*(1-r))) = C exactly. Near ties, from the press's own scores (kvpress: fp32 "
    "torch, numpy: float64), over the positions the press chooses among (SnapKV/PyramidKV/AdaKV: [0, L-W), the window "
    "excluded; TOVA: [0, L-1); Knorm/H2O: all L; AdaKV: all non-safeguarded prefix entries of the layer jointly): "
    "boundary_gap[layer][kv_head] = (lowest kept score - highest dropped score) / max |candidate score| (AdaKV: the "
    "joint gap, or the head's safeguard gap when smaller and deciding); boundary_band[layer] = [n(1e-6), n(1e-5), "
    "n(1e-4)], the number of candidates (summed over the layer's KV heads) whose score is within eps * max |score| of "
    "the boundary, i.e. roughly how many positions a relative score error of eps could move in or out; "
    "boundary_band_total = the same summed over layers; n_exact_tie_heads = number of (layer, kv_head) whose boundary "
    "is an exact tie (gap 0: the last kept and the first dropped score are equal, e.g. max-pool plateaus; the numpy "
    "case breaks ties toward the lower position, kvpress's torch.topk order is unspecified). Null for StreamingLLM "
    "(no scores). cross_check = the same "
    "selection rule recomputed in numpy float64 from each layer's hidden states (positions kept by one and not the "
    "other, summed over layers and heads): what fp32 vs fp64 alone does. Semantics of the kvpress presses (0.5.5): "
    "tools/reference/README.md, section 'Press selections'. official.SnapKVCluster cases: the authors' own "
    "SnapKVCluster.update_kv (shared/reference/official-snapkv/snapkv_utils.py, unchanged) run as on a GQA model, "
    "keys and values repeated per query head, so kept_delta[layer] and n_kept[layer] have one entry per QUERY head "
    "(options gqa per_query_head); among exactly tied scores at the boundary the lower positions are kept (torch.topk's "
    "order among equal values is unspecified; max pooling makes plateaus), its near-tie diagnostics come from the fp32 "
    "scores update_kv passes to topk, and cross_check counts the positions where the numpy float64 selection differs "
    "and the heads whose tie order was re-made."
)


if __name__ == "__main__":
    sys.exit(main())
