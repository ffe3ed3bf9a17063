#!/usr/bin/env python3
"""Writes tiny GGUF files, one per architecture of tests/fixtures/architectures.json, into the
fuzz corpus of the GGUF reader and model loader (tests/fuzz/corpus/gguf/arch_<name>.gguf), and two
holding only a tokenizer (tok_bpe.gguf, tok_spm.gguf).

A byte-level fuzzer that starts from Llama files alone seldom spells another architecture's name
and tensors, so each loader branch (Qwen2 biases, Qwen3 and Gemma-3 norms, Phi-3 fused matrices
and LongRoPE factors, Gemma-3 sliding windows) gets a seed that loads. The seeds keep each
fixture's metadata and tensor names, with every size cut down (hidden 16, head 8, FFN 32, vocabulary
8) so that a file is a few KB; weights are f32 from a fixed generator. The tokenizers are small
made-up vocabularies of the two kinds snapkv reads: byte-level BPE (all 256 byte symbols, a few
merges, chat control tokens) and SentencePiece (byte fallback tokens, scored pieces). Standard
library only.

    python3 tests/fuzz/make_gguf_seeds.py
"""
import json
import math
import random
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
E, DH, F, V = 16, 8, 32, 8  # hidden, head, FFN, vocabulary of the seeds
ALIGN = 32


def gguf_string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key: str, kind: str, value) -> bytes:
    if kind == "u32":
        return gguf_string(key) + struct.pack("<II", 4, value)
    if kind == "f32":
        return gguf_string(key) + struct.pack("<If", 6, value)
    if kind == "string":
        return gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)
    raise ValueError(kind)


def short(key: str) -> str:
    """A metadata key without its architecture prefix: "llama.block_count" -> "block_count"."""
    return key.split(".", 1)[1] if "." in key else key


def file_bytes(metadata: list, infos: bytes = b"", n_tensors: int = 0, data: bytes = b"") -> bytes:
    """A GGUF v3 file: header, metadata (encoded entries), tensor infos, padding, tensor data."""
    head = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, len(metadata)) + b"".join(metadata) + infos
    return head + b"\0" * (-len(head) % ALIGN) + data


def kv_array(key: str, kind: str, values: list) -> bytes:
    elem = {"u32": (4, "I"), "i32": (5, "i"), "f32": (6, "f")}
    if kind == "string":
        return gguf_string(key) + struct.pack("<IIQ", 9, 8, len(values)) + b"".join(map(gguf_string, values))
    code, fmt = elem[kind]
    return gguf_string(key) + struct.pack(f"<IIQ{len(values)}{fmt}", 9, code, len(values), *values)


def byte_symbols() -> list:
    """Byte-level BPE's printable stand-in for each byte (printable Latin-1 bytes stand for
    themselves, the others take code points from 256 on)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def tokenizer_gguf(kind: str) -> bytes:
    """A GGUF with no tensors and one small tokenizer: "bpe" (gpt2) or "spm" (llama)."""
    if kind == "bpe":
        sym = byte_symbols()
        sp = sym[ord(" ")]
        merges = ["h e", "l l", "l o", "he ll", f"{sp} w", "o r", f"{sp}w or", "l d", f"{sp}wor ld"]
        pieces = [m.replace(" ", "") for m in merges]
        specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
        tokens = sym + pieces + specials
        types = [1] * (len(sym) + len(pieces)) + [3] * len(specials)
        meta = [kv("tokenizer.ggml.model", "string", "gpt2"), kv("tokenizer.ggml.pre", "string", "smollm"),
                kv_array("tokenizer.ggml.merges", "string", merges),
                kv("tokenizer.ggml.bos_token_id", "u32", len(tokens) - 1),
                kv("tokenizer.ggml.eos_token_id", "u32", len(tokens) - 2)]
    else:
        pieces = ["\u2581", "\u2581H", "ello", "\u2581w", "orld", "\u2581wo", "rld", "!"]
        tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
        types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)
        scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
        meta = [kv("tokenizer.ggml.model", "string", "llama"), kv_array("tokenizer.ggml.scores", "f32", scores)]
    meta += [kv_array("tokenizer.ggml.tokens", "string", tokens), kv_array("tokenizer.ggml.token_type", "i32", types)]
    return file_bytes(meta)


def small_metadata(arch: dict) -> tuple[list, dict]:
    """The fixture's metadata with sizes cut down, and the head counts the tensors need."""
    md = {short(key): value for key, _, value in arch["metadata"]}
    n_head, n_kv = md["attention.head_count"], md["attention.head_count_kv"]
    heads = {"q": 2, "kv": 1 if n_kv < n_head else 2}
    new = {
        "embedding_length": E, "feed_forward_length": F, "attention.head_count": heads["q"],
        "attention.head_count_kv": heads["kv"], "attention.key_length": DH, "attention.value_length": DH,
        "rope.dimension_count": DH, "attention.sliding_window": 4,
        "rope.scaling.original_context_length": 64,
    }
    out = []
    for key, kind, value in arch["metadata"]:
        if short(key) == "block_count":
            value = 3 if "attention.sliding_window_pattern" in md else 1
        out.append((key, kind, new.get(short(key), value)))
    return out, heads


def shape(name: str, orig: list, orig_ffn: int, heads: dict) -> list:
    """The cut-down shape of a tensor, from its name (and, for Phi-3's fused up and gate, its size)."""
    base = name.split(".")[-2] if name.startswith("blk.") else name.rsplit(".", 1)[0]
    q, kv_ = heads["q"] * DH, heads["kv"] * DH
    if base in ("token_embd", "output"):
        return [E, V]
    if base.endswith("_norm") and base not in ("attn_q_norm", "attn_k_norm"):
        return [E]
    table = {
        "attn_q_norm": [DH], "attn_k_norm": [DH], "attn_q": [E, q], "attn_k": [E, kv_], "attn_v": [E, kv_],
        "attn_output": [q, E], "attn_qkv": [E, q + 2 * kv_], "ffn_gate": [E, F], "ffn_down": [F, E],
        "rope_freqs": [DH // 2], "rope_factors_long": [DH // 2], "rope_factors_short": [DH // 2],
    }
    if base == "ffn_up":
        return [E, 2 * F if orig[1] == 2 * orig_ffn else F]
    if name.endswith(".bias"):
        return [table[base][1]]
    return table[base]


def gguf(arch: dict) -> bytes:
    metadata, heads = small_metadata(arch)
    orig_ffn = next(v for k, _, v in arch["metadata"] if short(k) == "feed_forward_length")
    n_layer = next(v for k, _, v in metadata if k.endswith(".block_count"))
    names = []
    for t in arch["tensors"]:
        if t["name"].startswith("blk.0."):
            names += [(t["name"].replace("blk.0.", f"blk.{i}.", 1), t["ne"]) for i in range(n_layer)]
        elif not t["name"].startswith("blk."):
            names.append((t["name"], t["ne"]))
    rng = random.Random(arch["name"])
    infos, data = b"", b""
    for name, ne in names:
        dims = shape(name, ne, orig_ffn, heads)
        n = math.prod(dims)
        infos += gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        infos += struct.pack("<IQ", 0, len(data))  # f32, offset
        data += struct.pack(f"<{n}f", *(rng.uniform(-0.5, 0.5) + (1.0 if "norm" in name else 0.0) for _ in range(n)))
        data += b"\0" * (-len(data) % ALIGN)
    return file_bytes([kv(*m) for m in metadata], infos, len(names), data)


def main() -> None:
    fixture = json.loads((ROOT / "tests/fixtures/architectures.json").read_text())
    out = ROOT / "tests/fuzz/corpus/gguf"
    for arch in fixture["architectures"]:
        path = out / f"arch_{arch['name']}.gguf"
        path.write_bytes(gguf(arch))
        print(path.relative_to(ROOT), path.stat().st_size, "bytes")
    for kind in ("bpe", "spm"):
        path = out / f"tok_{kind}.gguf"
        path.write_bytes(tokenizer_gguf(kind))
        print(path.relative_to(ROOT), path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
