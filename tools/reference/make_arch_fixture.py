#!/usr/bin/env python3
"""Reference logits for each supported architecture, on small random-weight models.

Writes tests/fixtures/architectures.json. Run inside tools/reference/.venv (transformers and
llama-cpp-python):

    tools/reference/.venv/bin/python tools/reference/make_arch_fixture.py

For each architecture below, a model of a few layers is described by GGUF metadata and by
tensors whose values come from a seeded generator (`weights`): the tests rebuild the same GGUF
from the fixture with the same generator (tests/support/arch_models.h), so no model file is
committed. The vocabulary is a real one (llama.cpp's ggml-vocab-*.gguf in models/vocab, from
scripts/download_vocab.sh): the embedding and output matrices have its size, and llama.cpp
tokenizes the text with it.

References, on the same weights:
- transformers in fp32: the model built from an explicit config (rope scaling, head size and
  biases as declared) with the GGUF's tensors converted to the HF layout here (llama's Q/K rows
  un-permuted, as llama.cpp's converter permutes them), not through transformers' GGUF loader,
  which drops rope_freqs and attention.key_length for some of these architectures.
- llama.cpp (llama-cpp-python) on the GGUF written here, with the vocabulary's metadata copied in,
  f32 KV cache, every position's logits, at the context size recorded as the architecture's
  "n_ctx" (which picks LongRoPE's factors; the tests load the model for the same context).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_io import sig, versions, write_fixture  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VOCAB = REPO / "models" / "vocab"
ESSAYS = Path(os.environ.get("SNAPKV_SHARED", REPO.parent / "shared")) / "data" / "niah_paulgraham" / "PaulGrahamEssays"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "architectures.json"
SEED = 20261127

# ---------------------------------------------------------------------------------------------
# The generator, mirrored in tests/support/arch_models.h: element i of tensor `name` is
# offset + scale * (2 u - 1), u = the top 24 bits of splitmix64's (i + 1)-th output from the state
# seed ^ fnv1a64(name), over 2^24; computed in double, stored as f32.

M64 = (1 << 64) - 1


def fnv1a64(s: str) -> int:
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def weights(name: str, n: int, scale: float, offset: float = 0.0) -> np.ndarray:
    state = np.uint64(SEED ^ fnv1a64(name))
    z = state + (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return (offset + scale * (2.0 * u - 1.0)).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The architectures: small shapes, each exercising what the architecture adds.

ARCHS = [
    # Llama-3.x: BPE vocabulary, tied output, GQA 2:1, llama3 rope scaling (rope_freqs), with an
    # original context small enough that the scaling moves most of the rotated pairs.
    dict(name="llama3", arch="llama", vocab="ggml-vocab-llama-bpe.gguf", n_layer=2, n_embd=128, n_head=4,
         n_head_kv=2, head_dim=32, n_ff=320, rope_base=500000.0, tied=True,
         llama3_rope=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=256)),
    # Qwen2 / Qwen2.5: Q/K/V biases, NEOX rope, tied output.
    dict(name="qwen2", arch="qwen2", vocab="ggml-vocab-qwen2.gguf", n_layer=2, n_embd=128, n_head=4, n_head_kv=2,
         head_dim=32, n_ff=320, rope_base=1000000.0, tied=True, qkv_bias=True),
    # Qwen2.5 with YaRN rope scaling (factor 4 over an original context of 1024), as the long-context
    # Qwen2.5 GGUFs declare it.
    dict(name="qwen2_yarn", arch="qwen2", vocab="ggml-vocab-qwen2.gguf", n_layer=2, n_embd=128, n_head=4,
         n_head_kv=2, head_dim=32, n_ff=320, rope_base=1000000.0, tied=True, qkv_bias=True,
         yarn=dict(factor=4.0, original_max_position_embeddings=1024)),
    # Qwen3: per-head RMSNorm of queries and keys, a head size other than n_embd / n_head.
    dict(name="qwen3", arch="qwen3", vocab="ggml-vocab-qwen2.gguf", n_layer=2, n_embd=128, n_head=8, n_head_kv=2,
         head_dim=32, n_ff=320, rope_base=1000000.0, tied=True, qk_norm=True),
    # Mistral (GGUF architecture "llama"): SentencePiece vocabulary, untied output, GQA 4:1 and an
    # explicit head size, as Mistral-Nemo declares.
    dict(name="mistral", arch="llama", vocab="ggml-vocab-llama-spm.gguf", n_layer=2, n_embd=128, n_head=8,
         n_head_kv=2, head_dim=32, n_ff=320, rope_base=1000000.0, tied=False),
    # Phi-3: fused QKV and gate/up matrices, NEOX rope, untied output.
    dict(name="phi3", arch="phi3", vocab="ggml-vocab-llama-spm.gguf", n_layer=2, n_embd=128, n_head=4,
         n_head_kv=4, head_dim=32, n_ff=320, rope_base=10000.0, tied=False, fused=True),
    # Phi-3 128K / Phi-3.5 / Phi-4-mini: LongRoPE, two sets of per-pair divisors and an attention
    # factor from the ratio of the context to the original one. Both references pick the long set
    # when the context is past the original: llama.cpp by its context size (n_ctx), transformers by
    # the sequence's length. The essay's 160 tokens are past an original context of 128 and within
    # one of 256.
    dict(name="phi3_longrope_long", arch="phi3", vocab="ggml-vocab-llama-spm.gguf", n_layer=2, n_embd=128,
         n_head=4, n_head_kv=4, head_dim=32, n_ff=320, rope_base=10000.0, tied=False, fused=True,
         longrope=dict(original_max_position_embeddings=128), n_ctx=512),
    dict(name="phi3_longrope_short", arch="phi3", vocab="ggml-vocab-llama-spm.gguf", n_layer=2, n_embd=128,
         n_head=4, n_head_kv=4, head_dim=32, n_ff=320, rope_base=10000.0, tied=False, fused=True,
         longrope=dict(original_max_position_embeddings=256), n_ctx=256),
    # Gemma-3: sliding-window layers (a window of 24 over the essay's 160 tokens, every third layer
    # global as the file's pattern says, their own rope base), query/key norms, norms on the
    # attention and FFN outputs, GeGLU, scaled embeddings and a final logit soft-cap of 3 (which
    # moves these logits by about 1).
    dict(name="gemma3", arch="gemma3", vocab="ggml-vocab-llama-spm.gguf", n_layer=6, n_embd=128, n_head=4,
         n_head_kv=2, head_dim=32, n_ff=320, rope_base=1000000.0, tied=True, qk_norm=True,
         gemma3=dict(window=24, pattern=3, rope_base_swa=20000.0, softcap=3.0)),
]

RMS_EPS = 1e-5
N_CTX = 4096


def llama3_rope_factors(spec: dict) -> np.ndarray:
    """llama.cpp's converter's rope_freqs for rope_type llama3 (a divisor per rotated pair)."""
    p = spec["llama3_rope"]
    d, base = spec["head_dim"], spec["rope_base"]
    freqs = 1.0 / (base ** (np.arange(0, d, 2, dtype=np.float32) / d))
    low_wavelen = p["original_max_position_embeddings"] / p["low_freq_factor"]
    high_wavelen = p["original_max_position_embeddings"] / p["high_freq_factor"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(p["factor"])
        else:
            smooth = (p["original_max_position_embeddings"] / wavelen - p["low_freq_factor"]) / (
                p["high_freq_factor"] - p["low_freq_factor"])
            out.append(1.0 / ((1 - smooth) / p["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def longrope_attn_factor(spec: dict) -> float:
    """The factor on rope's cosines and sines that llama.cpp's converter and transformers derive."""
    scale = N_CTX / spec["longrope"]["original_max_position_embeddings"]
    return math.sqrt(1 + math.log(scale) / math.log(spec["longrope"]["original_max_position_embeddings"]))


def describe(spec: dict, n_vocab: int) -> tuple[list, list]:
    """The GGUF's architecture metadata and tensors: [key, type, value] and
    {name, ne, scale, offset} (generated) or {name, ne, values} (given)."""
    a, e, d, ff = spec["arch"], spec["n_embd"], spec["head_dim"], spec["n_ff"]
    nq, nkv = spec["n_head"] * d, spec["n_head_kv"] * d
    meta = [
        ["general.architecture", "string", a],
        [f"{a}.block_count", "u32", spec["n_layer"]],
        [f"{a}.context_length", "u32", N_CTX],
        [f"{a}.embedding_length", "u32", e],
        [f"{a}.feed_forward_length", "u32", ff],
        [f"{a}.attention.head_count", "u32", spec["n_head"]],
        [f"{a}.attention.head_count_kv", "u32", spec["n_head_kv"]],
        [f"{a}.attention.key_length", "u32", d],
        [f"{a}.attention.value_length", "u32", d],
        [f"{a}.rope.dimension_count", "u32", d],
        [f"{a}.rope.freq_base", "f32", spec["rope_base"]],
        [f"{a}.attention.layer_norm_rms_epsilon", "f32", RMS_EPS],
    ]
    if "yarn" in spec:
        meta += [[f"{a}.rope.scaling.type", "string", "yarn"],
                 [f"{a}.rope.scaling.factor", "f32", spec["yarn"]["factor"]],
                 [f"{a}.rope.scaling.original_context_length", "u32", spec["yarn"]["original_max_position_embeddings"]]]
    if "gemma3" in spec:
        g = spec["gemma3"]
        meta += [[f"{a}.attention.sliding_window", "u32", g["window"]],
                 [f"{a}.attention.sliding_window_pattern", "u32", g["pattern"]],
                 [f"{a}.rope.freq_base_swa", "f32", g["rope_base_swa"]],
                 [f"{a}.final_logit_softcapping", "f32", g["softcap"]]]
    if "longrope" in spec:
        meta += [[f"{a}.rope.scaling.attn_factor", "f32", longrope_attn_factor(spec)],
                 [f"{a}.rope.scaling.original_context_length", "u32",
                  spec["longrope"]["original_max_position_embeddings"]]]

    def mat(name, n_in, n_out):  # uniform with std 1/sqrt(n_in): activations stay O(1)
        return {"name": name, "ne": [n_in, n_out], "scale": math.sqrt(3.0 / n_in), "offset": 0.0}

    def norm(name, n):
        return {"name": name, "ne": [n], "scale": 0.2, "offset": 1.0}

    tensors = [{"name": "token_embd.weight", "ne": [e, n_vocab], "scale": 0.3, "offset": 0.0},
               norm("output_norm.weight", e)]
    if not spec["tied"]:
        tensors.append({"name": "output.weight", "ne": [e, n_vocab], "scale": 0.3, "offset": 0.0})
    if "llama3_rope" in spec:
        tensors.append({"name": "rope_freqs.weight", "ne": [d // 2],
                        "values": [float(x) for x in llama3_rope_factors(spec)]})
    if "longrope" in spec:  # divisors in [1, 7] (long) and [1, 1.5] (short), as in Phi-3's
        tensors += [{"name": "rope_factors_long.weight", "ne": [d // 2], "scale": 3.0, "offset": 4.0},
                    {"name": "rope_factors_short.weight", "ne": [d // 2], "scale": 0.25, "offset": 1.25}]
    for il in range(spec["n_layer"]):
        p = f"blk.{il}."
        tensors += [norm(p + "attn_norm.weight", e), norm(p + "ffn_norm.weight", e)]
        if spec.get("fused"):
            tensors.append(mat(p + "attn_qkv.weight", e, nq + 2 * nkv))
        else:
            tensors += [mat(p + "attn_q.weight", e, nq), mat(p + "attn_k.weight", e, nkv),
                        mat(p + "attn_v.weight", e, nkv)]
        if spec.get("qkv_bias"):
            for t, n in (("q", nq), ("k", nkv), ("v", nkv)):
                tensors.append({"name": f"{p}attn_{t}.bias", "ne": [n], "scale": 0.2, "offset": 0.0})
        if spec.get("qk_norm"):
            tensors += [norm(p + "attn_q_norm.weight", d), norm(p + "attn_k_norm.weight", d)]
        if "gemma3" in spec:
            tensors += [norm(p + "post_attention_norm.weight", e), norm(p + "post_ffw_norm.weight", e)]
        tensors.append(mat(p + "attn_output.weight", nq, e))
        if spec.get("fused"):
            tensors.append(mat(p + "ffn_up.weight", e, 2 * ff))
        else:
            tensors += [mat(p + "ffn_gate.weight", e, ff), mat(p + "ffn_up.weight", e, ff)]
        tensors.append(mat(p + "ffn_down.weight", ff, e))
    return meta, tensors


def tensor_values(t: dict) -> np.ndarray:
    """The tensor as numpy, shaped [ne[-1], ..., ne[0]] (GGUF's row-major order)."""
    if "values" in t:
        v = np.array(t["values"], dtype=np.float32)
    else:
        v = weights(t["name"], int(np.prod(t["ne"])), t["scale"], t["offset"])
    return v.reshape(list(reversed(t["ne"])))


# ---------------------------------------------------------------------------------------------
# GGUF for llama.cpp: the vocabulary's tokenizer metadata plus the model's.

def write_gguf(path: Path, spec: dict, meta: list, tensors: list, arrays: dict) -> None:
    import gguf

    vocab = gguf.GGUFReader(str(VOCAB / spec["vocab"]))
    w = gguf.GGUFWriter(str(path), spec["arch"])
    for key, typ, val in meta:
        if key == "general.architecture":
            continue  # written by GGUFWriter
        {"u32": w.add_uint32, "f32": w.add_float32, "string": w.add_string}[typ](key, val)
    for field in vocab.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    for t in tensors:
        w.add_tensor(t["name"], arrays[t["name"]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# transformers: the same weights in the HF layout.

def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of llama.cpp's converter's permute of Q/K rows (adjacent pairs -> halves)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_model(spec: dict, n_vocab: int, arrays: dict):
    import torch
    import transformers as tf

    common = dict(vocab_size=n_vocab, hidden_size=spec["n_embd"], intermediate_size=spec["n_ff"],
                  num_hidden_layers=spec["n_layer"], num_attention_heads=spec["n_head"],
                  num_key_value_heads=spec["n_head_kv"], rms_norm_eps=RMS_EPS, max_position_embeddings=N_CTX,
                  tie_word_embeddings=spec["tied"])
    rope = {"rope_type": "default", "rope_theta": spec["rope_base"]}
    if "llama3_rope" in spec:
        rope = {"rope_type": "llama3", "rope_theta": spec["rope_base"], **spec["llama3_rope"]}
    if "yarn" in spec:
        rope = {"rope_type": "yarn", "rope_theta": spec["rope_base"], **spec["yarn"]}
    if "longrope" in spec:
        rope = {"rope_type": "longrope", "rope_theta": spec["rope_base"], **spec["longrope"],
                "long_factor": [float(x) for x in arrays["rope_factors_long.weight"]],
                "short_factor": [float(x) for x in arrays["rope_factors_short.weight"]]}
    if spec["name"] in ("llama3", "mistral"):
        cfg = tf.LlamaConfig(**common, head_dim=spec["head_dim"], rope_parameters=rope)
        cls = tf.LlamaForCausalLM
    elif spec["arch"] == "qwen2":
        cfg = tf.Qwen2Config(**common, rope_parameters=rope, use_sliding_window=False)
        cls = tf.Qwen2ForCausalLM
    elif spec["arch"] == "qwen3":
        cfg = tf.Qwen3Config(**common, head_dim=spec["head_dim"], rope_parameters=rope, use_sliding_window=False)
        cls = tf.Qwen3ForCausalLM
    elif spec["arch"] == "gemma3":
        g = spec["gemma3"]
        types = ["full_attention" if il % g["pattern"] == g["pattern"] - 1 else "sliding_attention"
                 for il in range(spec["n_layer"])]
        rope = {"full_attention": {"rope_type": "default", "rope_theta": spec["rope_base"]},
                "sliding_attention": {"rope_type": "default", "rope_theta": g["rope_base_swa"]}}
        cfg = tf.Gemma3TextConfig(**common, head_dim=spec["head_dim"], hidden_activation="gelu_pytorch_tanh",
                                  query_pre_attn_scalar=spec["head_dim"], sliding_window=g["window"],
                                  layer_types=types, rope_parameters=rope, final_logit_softcapping=g["softcap"],
                                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cls = tf.Gemma3ForCausalLM
    elif spec["arch"] == "phi3":
        extra = {"original_max_position_embeddings": spec["longrope"]["original_max_position_embeddings"]} \
            if "longrope" in spec else {}
        cfg = tf.Phi3Config(**common, rope_parameters=rope, pad_token_id=0, bos_token_id=1, eos_token_id=2, **extra)
        cls = tf.Phi3ForCausalLM
    else:
        raise ValueError(spec["name"])
    cfg._attn_implementation = "eager"
    model = cls(cfg).to(torch.float32).eval()

    # Gemma's RMSNorm multiplies by 1 + w, whose sum llama.cpp's converter stores in the GGUF.
    gemma = spec["arch"] == "gemma3"
    norm = (lambda name: arrays[name] - 1) if gemma else (lambda name: arrays[name])
    sd = {"model.embed_tokens.weight": arrays["token_embd.weight"], "model.norm.weight": norm("output_norm.weight")}
    sd["lm_head.weight"] = arrays["token_embd.weight" if spec["tied"] else "output.weight"]
    permuted = spec["arch"] == "llama"
    for il in range(spec["n_layer"]):
        g, h = f"blk.{il}.", f"model.layers.{il}."
        sd[h + "input_layernorm.weight"] = norm(g + "attn_norm.weight")
        if gemma:
            sd[h + "post_attention_layernorm.weight"] = norm(g + "post_attention_norm.weight")
            sd[h + "pre_feedforward_layernorm.weight"] = norm(g + "ffn_norm.weight")
            sd[h + "post_feedforward_layernorm.weight"] = norm(g + "post_ffw_norm.weight")
        else:
            sd[h + "post_attention_layernorm.weight"] = arrays[g + "ffn_norm.weight"]
        sd[h + "self_attn.o_proj.weight"] = arrays[g + "attn_output.weight"]
        sd[h + "mlp.down_proj.weight"] = arrays[g + "ffn_down.weight"]
        if spec.get("fused"):
            sd[h + "self_attn.qkv_proj.weight"] = arrays[g + "attn_qkv.weight"]
            sd[h + "mlp.gate_up_proj.weight"] = arrays[g + "ffn_up.weight"]
        else:
            q, k = arrays[g + "attn_q.weight"], arrays[g + "attn_k.weight"]
            if permuted:
                q, k = unpermute(q, spec["n_head"]), unpermute(k, spec["n_head_kv"])
            sd[h + "self_attn.q_proj.weight"] = q
            sd[h + "self_attn.k_proj.weight"] = k
            sd[h + "self_attn.v_proj.weight"] = arrays[g + "attn_v.weight"]
            sd[h + "mlp.gate_proj.weight"] = arrays[g + "ffn_gate.weight"]
            sd[h + "mlp.up_proj.weight"] = arrays[g + "ffn_up.weight"]
        if spec.get("qkv_bias"):
            for t in "qkv":
                sd[h + f"self_attn.{t}_proj.bias"] = arrays[g + f"attn_{t}.bias"]
        if spec.get("qk_norm"):
            sd[h + "self_attn.q_norm.weight"] = norm(g + "attn_q_norm.weight")
            sd[h + "self_attn.k_norm.weight"] = norm(g + "attn_k_norm.weight")
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (spec["tied"] and m == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"{spec['name']}: missing {missing}, unexpected {unexpected}")
    if spec["tied"]:
        model.tie_weights()
    return model


def top(row: np.ndarray, k: int = 5) -> list[int]:
    idx = np.argpartition(-row, k)[:k]
    return [int(i) for i in idx[np.argsort(-row[idx], kind="stable")]]


def lse(row: np.ndarray) -> float:
    m = float(row.max())
    return m + math.log(float(np.exp(row.astype(np.float64) - m).sum()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-tokens", type=int, default=160)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    import torch
    from llama_cpp import Llama

    torch.manual_seed(0)
    text = (ESSAYS / sorted(os.listdir(ESSAYS))[0]).read_text(encoding="utf-8")
    out_archs = []
    for spec in ARCHS:
        import gguf

        n_vocab = len(gguf.GGUFReader(str(VOCAB / spec["vocab"])).fields["tokenizer.ggml.tokens"].data)
        meta, tensors = describe(spec, n_vocab)
        arrays = {t["name"]: tensor_values(t) for t in tensors}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{spec['name']}.gguf"
            write_gguf(path, spec, meta, tensors, arrays)
            n_ctx = spec.get("n_ctx", 512)
            llm = Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, logits_all=True, n_threads=2,
                        type_k=0, type_v=0, flash_attn=False, verbose=False)
            ids = llm.tokenize(text.encode(), add_bos=True, special=False)[: args.n_tokens]
            llm.eval(ids)
            cpp = np.array(llm.scores[: len(ids)], dtype=np.float32)
            del llm
        model = hf_model(spec, n_vocab, arrays)
        with torch.no_grad():
            hf = model(torch.tensor([ids])).logits[0].float().numpy()

        positions = []
        agree = 0
        for i in range(len(ids)):
            r, c = hf[i], cpp[i]
            t5 = top(r)
            c5 = top(c)
            agree += t5[0] == c5[0]
            positions.append({
                "argmax": t5[0], "margin": sig(r[t5[0]] - r[t5[1]]), "top5_ids": t5,
                "top5_logits": [sig(r[j], 6) for j in t5], "lse": sig(lse(r), 7),
                "llamacpp_argmax": c5[0], "llamacpp_margin": sig(c[c5[0]] - c[c5[1]]),
                "llamacpp_top5_logits": [sig(c[j], 6) for j in t5], "llamacpp_lse": sig(lse(c), 7),
            })
        diff = float(np.max(np.abs(hf - cpp)))
        print(f"{spec['name']}: {len(ids)} ids, vocab {n_vocab}, transformers vs llama.cpp: top-1 {agree}/{len(ids)}, "
              f"max |logit diff| {diff:.3g}, logit std {float(hf.std()):.3g}")
        out_archs.append({"name": spec["name"], "vocab": spec["vocab"], "seed": SEED, "n_ctx": n_ctx, "metadata": meta,
                          "tensors": tensors, "input_ids": ids, "positions": positions,
                          "transformers_vs_llamacpp_max_diff": sig(diff)})

    fixture = {
        "description": "Per architecture: a small random-weight model (metadata and seeded tensors, rebuilt by "
                       "tests/support/arch_models.h), token ids of an essay, and per position transformers' fp32 "
                       "top-5 logits with llama.cpp's logits for the same ids.",
        "generator": "tools/reference/make_arch_fixture.py",
        "versions": versions(["torch", "transformers", "gguf", "llama-cpp-python", "numpy"]),
        "architectures": out_archs,
    }
    write_fixture(args.out, fixture)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
