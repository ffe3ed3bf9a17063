#!/usr/bin/env python3
"""Writes the tokenizer reference fixtures in tests/fixtures/ from Hugging Face `tokenizers`.

Reference, not ourselves: token ids come from the HF fast tokenizer that transformers builds from
the GGUF (AutoTokenizer.from_pretrained(dir, gguf_file=...)), with the pipeline pieces that
transformers' GGUF converter does not carry over restored from the original model repositories'
tokenizer.json (see PRE_TOKENIZERS below). For each vocabulary the script first checks the rebuilt
tokenizer against llama.cpp's own test vectors (models/ggml-vocab-*.gguf.inp/.out, produced by
llama.cpp's convert_hf_to_gguf_update.py with the original HF tokenizers) when they are available,
and stops if they disagree. SentencePiece vocabularies are additionally checked against the
`sentencepiece` library itself, fed a model proto rebuilt from the GGUF.

Setup (throw-away venv, no torch):
    python3 -m venv tools/reference/.venv-tok
    tools/reference/.venv-tok/bin/pip install "transformers>=4.46,<5" gguf tokenizers \
        sentencepiece protobuf jinja2
    tools/reference/.venv-tok/bin/python tools/reference/make_tokenizer_fixture.py

transformers 5 needs torch to read GGUF metadata, so 4.x is pinned; 4.x refuses to read GGUF
without torch although the tokenizer path never touches it, which the script works around by
telling that one module torch is present (no tensor is read).

Inputs: models/SmolLM2-135M-Instruct.Q4_1.gguf and models/vocab/ggml-vocab-{llama-bpe,qwen2,
gpt-2,llama-spm}.gguf (+ .inp/.out), both put there by the setup script in scripts/.
Outputs: tests/fixtures/tokenizer_smollm2.json, tokenizer_llama_bpe.json, tokenizer_qwen2.json,
tokenizer_gpt2.json, tokenizer_llama_spm.json, tokenizer_chat_templates.json.

Gemma 3 (models/gemma-3-270m-q4_k_m.gguf from scripts/download_model.sh gemma3) is a separate
run, since only transformers 5 reads that GGUF (tools/reference/.venv has it):
    tools/reference/.venv/bin/python tools/reference/make_tokenizer_fixture.py --only gemma3
It writes tests/fixtures/tokenizer_gemma3.json (see load_gemma3 for what is restored).
"""
import argparse
import json
import os
import pathlib
import random
import sys
import unicodedata
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]

from tokenizers import AddedToken, Regex, Tokenizer, pre_tokenizers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

try:
    # transformers 4.x reads GGUF only when torch is importable, although tokenizer loading with
    # return_tensors=False never uses it.
    import transformers.modeling_gguf_pytorch_utils as _gguf_utils
    import transformers.integrations.ggml as _ggml
    _skeleton = _ggml.GGUFTokenizerSkeleton
except (ImportError, AttributeError):  # transformers 5 (make_gemma3 only): neither is needed
    _skeleton = None

if _skeleton is not None:
    _gguf_utils.is_torch_available = lambda: True

    # transformers rebuilds SentencePiece merges with `piece in tokens` on a Python list
    # (quadratic: hours for 32000 pieces). Same answer, set-backed membership.
    _orig_skeleton_init = _skeleton.__init__

    class _FastList(list):
        def __init__(self, items):
            super().__init__(items)
            self._set = set(items)

        def __contains__(self, x):
            return x in self._set

    def _skeleton_init(self, dict_):
        if "tokens" in dict_ and "merges" not in dict_:
            dict_ = dict(dict_)
            dict_["tokens"] = _FastList(dict_["tokens"])
        _orig_skeleton_init(self, dict_)

    _skeleton.__init__ = _skeleton_init

# The pre-tokenizers of the original repositories' tokenizer.json, keyed by tokenizer.ggml.pre.
# transformers' GGUF converter replaces every byte-level one with a plain GPT-2 ByteLevel.
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level_after_split(regex):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])


PRE_TOKENIZERS = {
    # HuggingFaceTB/SmolLM2-*: Digits(individual) then GPT-2 ByteLevel.
    "smollm": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ]),
    # bigcode/starcoder: the same rules (used only to check the Digits pipeline on its .out).
    "starcoder": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ]),
    "gpt-2": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                              use_regex=True),
    "llama-bpe": lambda: byte_level_after_split(LLAMA3_RE),
    "qwen2": lambda: byte_level_after_split(QWEN2_RE),
}
# meta-llama/Meta-Llama-3-8B sets "ignore_merges": true (a whole word found in the vocabulary is
# one token, whatever the merges say).
IGNORE_MERGES = {"llama-bpe"}


def gguf_meta(path):
    import gguf
    r = gguf.GGUFReader(str(path))
    out = {}
    for k in ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template"):
        f = r.fields.get(k)
        out[k] = f.contents() if f is not None else None
    return out


def load_hf(gguf_path):
    """The transformers-built fast tokenizer, with the original pipeline restored."""
    meta = gguf_meta(gguf_path)
    hf = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    backend = json.loads(hf.backend_tokenizer.to_str())
    model = meta["tokenizer.ggml.model"]
    pre = meta["tokenizer.ggml.pre"]
    if model == "gpt2":
        backend["pre_tokenizer"] = json.loads(PRE_TOKENIZERS[pre]().__getstate__())
        backend["model"]["ignore_merges"] = pre in IGNORE_MERGES
        # Byte-level decoding only; the converter's "▁" replacement is a SentencePiece leftover.
        backend["decoder"] = {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": False, "use_regex": False}
        backend["normalizer"] = None
    backend["post_processor"] = None
    tk = Tokenizer.from_str(json.dumps(backend))
    return tk, hf, meta


def encode(tk, text, parse_special=True):
    tk.encode_special_tokens = not parse_special
    try:
        return tk.encode(text, add_special_tokens=False).ids
    finally:
        tk.encode_special_tokens = False


def llama_cpp_vectors(gguf_path):
    inp = pathlib.Path(str(gguf_path) + ".inp")
    out = pathlib.Path(str(gguf_path) + ".out")
    if not inp.exists() or not out.exists():
        return []
    texts = inp.read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    ids = out.read_text(encoding="utf-8").split("\n")
    texts[-1] = texts[-1].removesuffix("\n__ggml_vocab_test__\n").removesuffix(
        "\n__ggml_vocab_test__")
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts, ids)]


def check_against_llama_cpp(tk, gguf_path):
    vectors = llama_cpp_vectors(gguf_path)
    bad = [(t, want, encode(tk, t)) for t, want in vectors if encode(tk, t) != want]
    print(f"  llama.cpp test vectors: {len(vectors) - len(bad)}/{len(vectors)} agree")
    for t, want, got in bad[:5]:
        print(f"    MISMATCH {t!r}: want {want} got {got}")
    if bad:
        sys.exit(f"{gguf_path.name}: the rebuilt HF tokenizer disagrees with llama.cpp's vectors")
    return [t for t, _ in vectors]


def essay_excerpt(n_paragraphs=3):
    d = pathlib.Path(os.environ.get("SNAPKV_DATA", ROOT.parent / "shared" / "data"))
    text = (d / "niah_paulgraham" / "PaulGrahamEssays" / "addiction.txt").read_text(encoding="utf-8")
    return "\n".join(text.split("\n")[:n_paragraphs * 6])


def base_strings():
    """Varied text; every string is plain UTF-8 (JSON cannot carry invalid UTF-8)."""
    s = [
        "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n", "\t\n \t", "a", "A",
        "Hello world", " Hello world", "Hello World", "Hello, world!", "hello   world",
        "trailing space ", "trailing spaces   ", "trailing newline\n", "  leading spaces",
        "tabs\tin\tthe\tmiddle", "mixed \t \n whitespace \r\n run", "a\n\n\nb", "a \n b",
        "line1\nline2\n\nline4", "many          spaces", "\u00a0non-breaking\u00a0space",
        "ideographic\u3000space", "en\u2002quad", "thin\u2009space", "line\u2028separator",
        "mongolian\u180evowel", "zero\u200bwidth", "form\x0cfeed", "vertical\x0btab", "nul\x00byte",
        "bell\x07char", "\x1c\x1d\x1e\x1f separators",
        # contractions and apostrophes
        "it's", "It's", "IT'S", "don't", "DON'T", "Don'T", "we're", "WE'RE", "they've", "I'm",
        "I'M", "you'll", "YOU'LL", "he'd", "HE'D", "'s", "'t", "''", "'", "rock 'n' roll",
        "the dog's bone", "O'Neil's", "ma'am", "y'all'd've", "it\u2019s (curly)", "'ſ long s",
        "'S 'T 'RE 'VE 'M 'LL 'D", "word's's", "'hello'", "\"quoted\"",
        # digits and numbers
        "0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "1,000,000", "-17",
        "+3e-10", "0x1F", "2024-01-15", "10:45:00", "v1.2.3", "abc123def", "123abc", "a1b2c3",
        "12 34 56", " 1 2 3", "99 bottles", "1st 2nd 3rd", "$100.00", "50%",
        "31415926535897932384626433832795028841971693993751", "٣٤٥ Arabic-Indic digits",
        "१२३ Devanagari digits", "½ ¾ ² ³ Ⅻ", "①②③", "１２３ fullwidth",
        # scripts
        "日本語のテキストです。", "中文文本测试，包括标点符号。", "한국어 텍스트", "Привет, мир!",
        "Съешь же ещё этих мягких французских булок", "Ελληνικά γράμματα: αβγδε",
        "مرحبا بالعالم", "العربية: ١٢٣", "שלום עולם", "नमस्ते दुनिया", "हिन्दी भाषा का पाठ",
        "สวัสดีชาวโลก", "ภาษาไทย", "ქართული", "Հայերեն", "தமிழ்", "বাংলা", "ગુજરાતી", "ᚠᚢᚦᚨᚱᚲ",
        "Ελληνικά and English mixed with 中文 and العربية", "Äpfel", "Ölfaß", "straße", "ﬁ ligature",
        "Ǆ titlecase", "İstanbul", "ΣΊΣΥΦΟΣ",
        # combining marks
        "e\u0301", "cafe\u0301", "n\u0303o", "a\u0308\u0301", "Z\u0351\u0358a\u0336\u0323l\u0316go",
        "\u0301 leading combining", "क्षत्रिय", "\u05e9\u05c1\u05b8",
        # emoji
        "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "👩‍💻 coding", "🏳️‍🌈", "🇺🇸🇫🇷🇯🇵", "🦙.cpp",
        "I ❤️ Unicode", "☕ and ♥", "🧑🏿‍🚀", "text🙂text", "🙂 🙂  🙂",
        # code
        "def f(x):\n    return x * 2\n",
        "for i in range(10):\n\tprint(i)\n",
        "class Foo:\n    def __init__(self):\n        self.x = {'a': 1, \"b\": [2, 3]}\n",
        "#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  return v[0];\n}\n",
        "template <typename T> T max(T a, T b) { return a > b ? a : b; }",
        "if (a && b || !c) { x += 1; } else { y -= 2; }",
        '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
        '[\n  {"id": 1},\n  {"id": 2}\n]', "SELECT * FROM users WHERE id = 42;",
        "<div class=\"x\">Hello</div>", "x = a->b; y = c::d; z = e ?: f;", "i++; --j; k <<= 2;",
        "    indented four", "\t\tindented tabs", "// comment\n/* block */",
        "$ ls -la | grep '.txt' > out.log 2>&1", "regex: ^[a-z]+\\d{2,}$",
        # URLs, emails, paths
        "https://www.example.com/path/to/page?query=1&b=2#frag",
        "http://localhost:8080/api/v1/users", "mailto:someone@example.org",
        "/usr/local/bin/python3", "C:\\Windows\\System32", "user@example.com",
        # punctuation
        "!!!", "???", "...", "…", "—", "-- --- ----", "(a) [b] {c} <d>", "@#$%^&*", "a.b.c",
        "«guillemets»", "「括弧」", "¿Qué?", "¡Hola!",
        # long words
        "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "supercalifragilisticexpialidocious" * 4, "a" * 300, "ab" * 150, " " * 50, "\n" * 20,
        "x" * 100 + " " + "y" * 100, "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
        "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft",
        # misc
        "The quick brown fox jumps over the lazy dog.",
        "THE QUICK BROWN FOX", "CamelCaseIdentifier", "snake_case_identifier",
        "kebab-case-identifier", "Mr. Smith went to Washington.", "e.g. i.e. etc.",
        "A sentence.  Two spaces.   Three spaces.", "\u2581 lower one eighth block", "▁▁▁",
        "<0x41> looks like a byte token", "<unk>", "<s>", "</s>", "[INST] hi [/INST]",
        "\ufeffBOM at start", "\ufffd replacement char", "\U0001d400 math bold A",
        "\U00020000 CJK extension B", "private\ue000use", "tag\U000e0041chars",
    ]
    return s


def smollm_specials():
    return [
        "<|im_start|>user\nHello!<|im_end|>\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n",
        "text<|endoftext|>more text", "<|endoftext|>", "<|im_end|><|im_end|>",
        " <|im_start|> spaced <|im_end|> ", "<|im_start|", "<|im_start|>>", "<<|im_end|>",
        "a<|im_start|>b<|im_end|>c", "<|im_start|>assistant\n<think>x</think>",
        "<repo_name>snapkv<file_sep>main.cpp", "<|IM_START|> not special",
    ]


def essay_strings():
    e = essay_excerpt()
    return [e, e.split("\n")[0], "\n".join(e.split("\n")[:4])]


def fuzz_strings(n, seed):
    """Random mixtures of the pieces that stress pre-tokenizers (deterministic)."""
    rnd = random.Random(seed)
    atoms = [" ", "  ", "\t", "\n", "\r\n", "a", "Z", "é", "ß", "日", "🙂", "1", "23", "456", "'s",
             "'T", "'re", ".", ",", "!", "-", "_", "(", ")", "{", "}", "\u00a0", "\u3000",
             "\u0301", "👨‍👩‍👧", "ab", "CD", "word", "Word", "WORD", "x1", "٣", "Ⅻ", "'", "\"",
             "\\", "/", "<", ">", "|", "$", "%", "==", "->", "::", "...", "?!"]
    return ["".join(rnd.choice(atoms) for _ in range(rnd.randint(1, 24))) for _ in range(n)]


def case_entry(tk, text, with_plain):
    ids = encode(tk, text, parse_special=True)
    entry = {"text": text, "ids": ids, "decoded": tk.decode(ids, skip_special_tokens=False)}
    if with_plain:
        plain = encode(tk, text, parse_special=False)
        if plain != ids:
            entry["ids_plain"] = plain
    return entry


def write_fixture(path, header, cases):
    doc = dict(header)
    doc["cases"] = cases
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"  wrote {path.relative_to(ROOT)}: {len(cases)} cases")


def header_for(gguf_rel, hf, meta, extra=None):
    h = {
        "generator": "tools/reference/make_tokenizer_fixture.py (HF tokenizers "
                     f"{__import__('tokenizers').__version__}, transformers "
                     f"{__import__('transformers').__version__})",
        "gguf": gguf_rel,
        "model": meta["tokenizer.ggml.model"],
        "pre": meta["tokenizer.ggml.pre"],
        "n_vocab": len(hf),
    }
    if extra:
        h.update(extra)
    return h


def make_smollm2(out_dir):
    path = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    print(f"{path.name}")
    tk, hf, meta = load_hf(path)
    texts = base_strings() + smollm_specials() + essay_strings() + fuzz_strings(40, 1)
    # Which strings plain transformers-from-GGUF (GPT-2 regex, no Digits step) would get wrong.
    plain_tk = hf.backend_tokenizer
    diff = [t for t in texts if encode(plain_tk, t) != encode(tk, t)]
    print(f"  transformers' own GGUF conversion differs from the original pipeline on {len(diff)}"
          f" of {len(texts)} strings: {diff[:5]!r}")
    cases = [case_entry(tk, t, with_plain=True) for t in texts]
    write_fixture(out_dir / "tokenizer_smollm2.json",
                  header_for("models/SmolLM2-135M-Instruct.Q4_1.gguf", hf, meta), cases)
    return hf, meta


def make_vocab(out_dir, name, fixture_name, specials):
    path = ROOT / "models" / "vocab" / f"ggml-vocab-{name}.gguf"
    print(path.name)
    tk, hf, meta = load_hf(path)
    if meta["tokenizer.ggml.model"] == "gpt2":
        vectors = check_against_llama_cpp(tk, path)
    else:
        vectors = check_spm(tk, path)
    texts = vectors + base_strings()[::3] + specials + fuzz_strings(20, zlib.crc32(name.encode()))
    seen = set()
    texts = [t for t in texts if not (t in seen or seen.add(t))]
    if name == "qwen2":
        # Qwen2's tokenizer.json normalizes to NFC first; snapkv (like llama.cpp) does not, so
        # only NFC-stable strings are compared.
        texts = [t for t in texts if unicodedata.normalize("NFC", t) == t]
    cases = [case_entry(tk, t, with_plain=True) for t in texts]
    write_fixture(out_dir / fixture_name,
                  header_for(f"models/vocab/{path.name}", hf, meta), cases)


def gguf_vocab(path):
    """(tokens, scores, token types) as the GGUF stores them."""
    import gguf
    f = gguf.GGUFReader(str(path)).fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8")
              for i in f["tokenizer.ggml.tokens"].data]
    scores = [float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0])
             for i in f["tokenizer.ggml.token_type"].data]
    return tokens, scores, types


def spm_processor(tokens, scores, types, add_dummy_prefix):
    """The `sentencepiece` library on a BPE model proto rebuilt from a GGUF vocabulary."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.vocab_size = len(tokens)
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = add_dummy_prefix
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for t, s, ty in zip(tokens, scores, types):
        p = m.pieces.add()
        p.piece, p.score, p.type = t, s, ty
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def spm_disagreements(sp, tk, texts, tokens, types):
    """Texts on which sentencepiece and the HF tokenizer give different ids (printed)."""
    # sentencepiece never matches control tokens in text; HF does (added tokens), so strings
    # that contain one are left to HF alone.
    controls = [t for t, ty in zip(tokens, types) if ty in (2, 3)]
    texts = [t for t in texts if not any(c in t for c in controls)]
    bad = [t for t in texts if sp.encode(t) != encode(tk, t)]
    print(f"  sentencepiece agrees with HF on {len(texts) - len(bad)}/{len(texts)} strings")
    for t in bad[:5]:
        print(f"    MISMATCH {t!r}: spm {sp.encode(t)} hf {encode(tk, t)}")
    return bad


def check_spm(tk, path):
    """HF (transformers' SentencePiece-to-BPE conversion) against sentencepiece itself."""
    tokens, scores, types = gguf_vocab(path)
    sp = spm_processor(tokens, scores, types, add_dummy_prefix=True)
    vectors = llama_cpp_vectors(path)
    bad = spm_disagreements(sp, tk, [t for t, _ in vectors] + base_strings(), tokens, types)
    vec_bad = [t for t, want in vectors if encode(tk, t) != want]
    print(f"  llama.cpp test vectors: {len(vectors) - len(vec_bad)}/{len(vectors)} agree")
    if bad or vec_bad:
        sys.exit(f"{path.name}: references disagree")
    return [t for t, _ in vectors]


def load_gemma3(path):
    """Gemma 3's tokenizer as its original tokenizer.json has it (transformers' GemmaConverter
    output: normalizer Replace(" ", "▁"), no pre-tokenizer, BPE with byte fallback and merges
    ordered by the sentencepiece scores, every control and user-defined piece an added token with
    normalized=False), rebuilt from what transformers 5 makes of the GGUF. Returns the rebuilt
    tokenizer, transformers' tokenizer, its backend as it is, a sentencepiece processor on the
    same pieces and (pieces, token types)."""
    from transformers.tokenization_utils_base import generate_merges

    hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    tokens, scores, types = gguf_vocab(path)
    # The GGUF spells the user-defined space runs with real spaces and gives every control and
    # user-defined piece the score -1000 (llama.cpp's converter); sentencepiece writes "▁" runs
    # and score 0 for those.
    pieces = ["\u2581" * len(t) if ty == 4 and t and not t.strip(" ") else t
              for t, ty in zip(tokens, types)]
    spm_scores = [0.0 if ty in (3, 4) else s for s, ty in zip(scores, types)]
    backend = json.loads(hf.backend_tokenizer.to_str())
    vocab = {t: i for i, t in enumerate(pieces)}
    assert backend["model"]["vocab"] == vocab, "transformers spelled the vocabulary differently"
    # transformers 5 orders the merges by token position; the score-0 space runs then merge in
    # another order than in the original, which shows on runs of more than 31 spaces.
    backend["model"]["merges"] = [list(m) for m in generate_merges(vocab, dict(zip(pieces,
                                                                                spm_scores)))]
    backend["pre_tokenizer"] = None  # Split(" ") after Replace(" ", "▁") is a no-op anyway
    backend["post_processor"] = None
    tk = Tokenizer.from_str(json.dumps(backend))
    # transformers 5 adds the user-defined pieces under the GGUF's spelling, so "  ".."▁"*31
    # are missing (they matter for text that holds "▁" itself).
    have = {a["content"] for a in backend["added_tokens"]}
    tk.add_tokens([AddedToken(p, normalized=False, special=False)
                   for p, ty in zip(pieces, types) if ty == 4 and p not in have])
    sp = spm_processor(pieces, spm_scores, types, add_dummy_prefix=False)
    plain = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    plain.post_processor = None
    return tk, hf, plain, sp, (pieces, types)


def gemma3_strings():
    specials = [
        "<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
        "<bos><start_of_turn>user\nWrite a haiku.<end_of_turn>\n<start_of_turn>model\nSure:\n",
        "text<eos>more", "<end_of_turn><end_of_turn>", " <start_of_turn> spaced <end_of_turn> ",
        "<start_of_turn", "<start_of_turn>>", "<<end_of_turn>", "<pad><unk><mask>",
        "<unused0> and <unused6241>", "<start_of_image><end_of_image>", "[multimodal]",
        "<table><tr><td>cell</td></tr></table>", "<h1>Title</h1>\n<p>para</p>",
        "<START_OF_TURN> not special", "<start_of_turn>model\n  indented\n\tand tabbed",
    ]
    runs = ([" " * n for n in (4, 8, 16, 30, 31, 32, 33, 45, 62, 63, 64, 100)] +
            ["\t" * n for n in (2, 5, 31, 32, 40)] + ["\n" * n for n in (4, 31, 32, 47)] +
            ["a" + " " * n + "b" for n in (2, 3, 31, 32, 45, 64)] +
            ["x" + "\t" * n + "y" for n in (1, 3, 33)] + ["x" + "\n" * n + "y" for n in (2, 40)] +
            [" \n  \n   \t\t x", "x  \t  y", " \t \t", "\n \n \n", "\t\n\t\n", "\r\n\r\n",
             "if x:\n\tif y:\n\t\treturn 1\n", "def f():\n        return 1\n",
             "    four\n        eight\n            twelve", "▁▁▁ literal", "▁ ▁", " ▁", "x▁▁y",
             "▁" * 40])
    cjk_emoji = ["我爱北京天安门。", "東京都の天気は晴れです", "こんにちは世界", "안녕하세요 세계",
                 "繁體中文與简体中文", "𠜎𠜱𠝹 rare CJK", "🤖🚀✨", "😀 😃\t😄\n😁", "🇯🇵🇰🇷🇨🇳",
                 "emoji👍🏻👍🏼👍🏽👍🏾👍🏿skin", "❤️‍🔥 ❤︎ ❤", "ascii😀中文mixed한국어"]
    return specials + runs + cjk_emoji


def gemma3_fuzz(n, seed):
    """Random mixtures weighted to whitespace runs, byte-fallback characters and specials."""
    rnd = random.Random(seed)
    atoms = [" ", "  ", "   ", " " * 31, "\t", "\t\t", "\n", "\n\n", "\r", "a", "the", "Word", "é",
             "日本", "中", "🙂", "🦙", "\u2581", "\u00a0", "\u3000", "\u0301", "\x00", "\x7f",
             "<start_of_turn>", "<end_of_turn>", "<td>", "<", ">", "1", "234", ".", "'", "\"", "{", "}",
             "\U0001f1fa\U0001f1f8", "\uffff", "\U0010fffd", "ÿ", "~"]
    return ["".join(rnd.choice(atoms) for _ in range(rnd.randint(1, 30))) for _ in range(n)]


def make_gemma3(out_dir):
    """Gemma 3 (models/gemma-3-270m-q4_k_m.gguf, scripts/download_model.sh gemma3); needs
    transformers 5 (tools/reference/.venv), whose GGUF loader knows the architecture."""
    path = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"
    print(path.name)
    tk, hf, plain_tk, sp, (pieces, types) = load_gemma3(path)
    meta = gguf_meta(path)
    texts = (base_strings() + gemma3_strings() + essay_strings() + fuzz_strings(40, 3) +
             gemma3_fuzz(60, 4))
    seen = set()
    texts = [t for t in texts if not (t in seen or seen.add(t))]
    diff = [t for t in texts if encode(plain_tk, t) != encode(tk, t)]
    print(f"  transformers' own GGUF conversion differs from the original pipeline on {len(diff)}"
          f" of {len(texts)} strings: {diff[:3]!r}")
    # HF matches the "▁" runs (added tokens) in the raw text, sentencepiece after spaces became
    # "▁": the two differ where a literal "▁" meets a space, so those strings are HF's alone.
    if spm_disagreements(sp, tk, [t for t in texts if "\u2581" not in t], pieces, types):
        sys.exit(f"{path.name}: references disagree")
    cases = [case_entry(tk, t, with_plain=True) for t in texts]
    write_fixture(out_dir / "tokenizer_gemma3.json",
                  header_for("models/gemma-3-270m-q4_k_m.gguf", hf, meta), cases)


def make_chat(out_dir, hf_smollm):
    """ChatML expectations from transformers' apply_chat_template with each GGUF's template."""
    conversations = [
        [{"role": "user", "content": "Hello!"}],
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}],
        [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
         {"role": "user", "content": "And 3+3?"}],
        [{"role": "system", "content": ""}, {"role": "user", "content": " spaced \n"}],
        [{"role": "user", "content": "multi\nline\n\ncontent"}],
        [{"role": "assistant", "content": "I start."}],
    ]
    cases = []
    for name, gguf_rel, hf in [("smollm2", "models/SmolLM2-135M-Instruct.Q4_1.gguf", hf_smollm),
                               ("qwen2", "models/vocab/ggml-vocab-qwen2.gguf", None)]:
        if hf is None:
            hf = AutoTokenizer.from_pretrained(str(ROOT / pathlib.Path(gguf_rel).parent),
                                               gguf_file=pathlib.Path(gguf_rel).name)
        for msgs in conversations:
            for gen in (True, False):
                cases.append({
                    "gguf": gguf_rel, "template": name, "messages": msgs,
                    "add_generation_prompt": gen,
                    "expected": hf.apply_chat_template(msgs, tokenize=False,
                                                       add_generation_prompt=gen),
                })
    write_fixture(out_dir / "tokenizer_chat_templates.json",
                  {"generator": "tools/reference/make_tokenizer_fixture.py (transformers "
                                f"{__import__('transformers').__version__} apply_chat_template)"},
                  cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=str(ROOT / "tests" / "fixtures"))
    ap.add_argument("--only", choices=["gemma3"],
                    help="write only this fixture (gemma3 needs transformers 5, the others 4.x)")
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out_dir)
    if args.only == "gemma3":
        make_gemma3(out_dir)
        return
    hf_smollm, _ = make_smollm2(out_dir)
    make_vocab(out_dir, "llama-bpe", "tokenizer_llama_bpe.json",
               ["<|begin_of_text|>Hello<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nHi",
                "a<|reserved_special_token_5|>b", "<|eot_id|><|eot_id|>"])
    make_vocab(out_dir, "qwen2", "tokenizer_qwen2.json",
               ["<|im_start|>user\nHello<|im_end|>\n", "x<|endoftext|>y", "<|im_end|>"])
    make_vocab(out_dir, "gpt-2", "tokenizer_gpt2.json",
               ["text<|endoftext|>more", "<|endoftext|><|endoftext|>"])
    make_vocab(out_dir, "llama-spm", "tokenizer_llama_spm.json",
               ["<s>Hello</s>", "a</s>b", " <s> x", "<s>"])
    make_chat(out_dir, hf_smollm)


if __name__ == "__main__":
    main()
