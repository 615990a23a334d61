"""A corpus of hostile model files, generated: malformed GGUFs (raw struct, so every field can lie),
config.json variants (json) and safetensors headers (raw bytes), each a case the readers must refuse
with one clear line. ``build(folder)`` writes them all and returns {case name: path}.

GGUF metadata is written through gguf.GGUFValueType's codes; a file is a real llama header (the same
keys convert_hf_to_gguf.py writes) with one thing changed.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as T


def _checkout() -> Path:
    """The source checkout this module runs from (the corpus builds on its tests/fixtures/configs)."""
    here = Path(__file__).resolve()
    return next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parents[3])


FIXTURES = _checkout() / "tests" / "fixtures" / "configs"

# ------------------------------------------------------------------------------------------------
# raw GGUF

_FMT = {T.UINT8: "B", T.INT8: "b", T.UINT16: "H", T.INT16: "h", T.UINT32: "I", T.INT32: "i", T.FLOAT32: "f",
        T.BOOL: "?", T.UINT64: "Q", T.INT64: "q", T.FLOAT64: "d"}


def _str(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value_bytes(vtype: T, value: Any) -> bytes:
    if vtype == T.STRING:
        return _str(value)
    if vtype == T.ARRAY:
        item_type, items = value
        out = struct.pack("<IQ", item_type, len(items))
        return out + b"".join(value_bytes(item_type, v) for v in items)
    return struct.pack("<" + _FMT[vtype], value)


def gguf_bytes(kv: list[tuple[str, T, Any]], tensors: list[tuple[str, list[int], int]], *,
               version: int = 3, n_tensors: int | None = None, n_kv: int | None = None) -> bytes:
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                len(kv) if n_kv is None else n_kv)
    for key, vtype, value in kv:
        out += _str(key) + struct.pack("<I", vtype) + value_bytes(vtype, value)
    offset = 0
    for name, dims, ttype in tensors:
        out += _str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        offset += 64
    return out


def llama_kv(layers: int = 2, hidden: int = 256, heads: int = 8, kv_heads: int = 2, vocab: int = 300,
             arch: str = "llama") -> list[tuple[str, T, Any]]:
    return [
        ("general.architecture", T.STRING, arch),
        (f"{arch}.block_count", T.UINT32, layers),
        (f"{arch}.context_length", T.UINT32, 8192),
        (f"{arch}.embedding_length", T.UINT32, hidden),
        (f"{arch}.feed_forward_length", T.UINT32, 512),
        (f"{arch}.attention.head_count", T.UINT32, heads),
        (f"{arch}.attention.head_count_kv", T.UINT32, kv_heads),
        (f"{arch}.rope.dimension_count", T.UINT32, hidden // heads),
        ("general.file_type", T.UINT32, 0),
        ("tokenizer.ggml.tokens", T.ARRAY, (T.STRING, [f"t{i}" for i in range(vocab)])),
    ]


def llama_tensors(layers: int = 2, hidden: int = 256, kv_dim: int = 64, vocab: int = 300) -> list:
    t = [("token_embd.weight", [hidden, vocab], Q.F32), ("output_norm.weight", [hidden], Q.F32)]
    for i in range(layers):
        for name, dims in (("attn_q", [hidden, hidden]), ("attn_k", [hidden, kv_dim]), ("attn_v", [hidden, kv_dim]),
                           ("attn_output", [hidden, hidden]), ("ffn_gate", [hidden, 512]), ("ffn_up", [hidden, 512]),
                           ("ffn_down", [512, hidden]), ("attn_norm", [hidden]), ("ffn_norm", [hidden])):
            t.append((f"blk.{i}.{name}.weight", dims, Q.F32))
    return t


def with_kv(key: str, vtype: T | None, value: Any = None, **base: Any) -> bytes:
    """The base llama header with one key set (vtype None: removed)."""
    arch = base.get("arch", "llama")
    full = key if key.startswith(("general.", "tokenizer.")) else f"{arch}.{key}"
    kv = [e for e in llama_kv(**base) if e[0] != full]
    if vtype is not None:
        kv.append((full, vtype, value))
    return gguf_bytes(kv, llama_tensors())


def nested_array(depth: int) -> bytes:
    """A metadata value of arrays nested ``depth`` deep (written by hand: recursion-free)."""
    return struct.pack("<I", T.ARRAY) + struct.pack("<IQ", T.ARRAY, 1) * (depth - 1) + struct.pack("<IQ", T.UINT8, 0)


Cases = dict[str, Callable[[Path], Path]]
Put = Callable[..., None]


def gguf_cases() -> Cases:
    c: Cases = {}

    def put(name: str, data: bytes | Callable[[], bytes], fname: str | None = None) -> None:
        def write(folder: Path) -> Path:
            p = folder / (fname or f"{name}.gguf")
            p.write_bytes(data() if callable(data) else data)
            return p
        c[name] = write

    _gguf_hyperparameter_cases(put)
    _gguf_structure_cases(put)
    _gguf_sparse_cases(c)
    return c


def _gguf_hyperparameter_cases(put: Put) -> None:
    """Hyperparameters of the wrong type, sign or size, or missing."""
    bad_kv: dict[str, list[tuple[T | None, Any]]] = {      # (None, None): the key left out
        "block_count": [(T.UINT32, 0), (T.INT32, -1), (T.UINT64, 1 << 32), (T.UINT32, 10 ** 6), (T.STRING, "32"),
                        (T.BOOL, True), (T.FLOAT32, 32.0), (None, None)],
        "embedding_length": [(T.UINT32, 0), (T.UINT64, 1 << 40), (T.STRING, "256"), (T.INT32, -256), (None, None)],
        "attention.head_count": [(None, None), (T.UINT32, 0), (T.INT32, -8), (T.UINT64, 1 << 63), (T.STRING, "8"),
                                 (T.ARRAY, (T.UINT32, [8])), (T.ARRAY, (T.INT32, [8, -8])),
                                 (T.ARRAY, (T.STRING, ["8", "8"])), (T.FLOAT64, float("nan"))],
        "attention.head_count_kv": [(T.INT32, -8), (T.UINT32, 3), (T.UINT32, 16), (T.UINT32, 0),
                                    (T.ARRAY, (T.UINT32, [2, 2, 2]))],
        "attention.key_length": [(T.INT32, -128), (T.UINT32, 1 << 30), (T.BOOL, True)],
        "attention.value_length": [(T.INT32, -1)],
        "context_length": [(T.INT32, -1), (T.UINT32, 0), (T.FLOAT32, float("nan")), (T.BOOL, True),
                           (T.UINT64, 1 << 40), (T.STRING, "8192")],
        "attention.sliding_window": [(T.INT32, -4096), (T.UINT64, 1 << 40)],
        "feed_forward_length": [(T.INT32, -512), (T.UINT64, 1 << 50)],
        "expert_count": [(T.UINT32, 1 << 20), (T.INT32, -8)],
        "full_attention_interval": [(T.UINT32, 0)],
        "attention.kv_lora_rank": [(T.INT32, -512)],
        "ssm.state_size": [(T.INT32, -16)],
    }
    for key, cases in bad_kv.items():
        for i, (vtype, value) in enumerate(cases):
            put(f"gguf-{key}-{i}", with_kv(key, vtype, value))
    put("gguf-experts-used-over-count", gguf_bytes(llama_kv() + [("llama.expert_count", T.UINT32, 8),
                                                               ("llama.expert_used_count", T.UINT32, 9)],
                                                   llama_tensors()))
    put("gguf-experts-none-used", gguf_bytes(llama_kv() + [("llama.expert_count", T.UINT32, 8)], llama_tensors()))
    put("gguf-all-zero-dims", gguf_bytes([("general.architecture", T.STRING, "llama")] + [
        (f"llama.{k}", T.UINT32, 0) for k in ("block_count", "embedding_length", "attention.head_count",
                                              "attention.head_count_kv", "context_length")], []))
    put("gguf-heads-without-ssm", with_kv("attention.head_count", T.UINT32, 0))
    put("gguf-no-arch", with_kv("general.architecture", None))
    put("gguf-arch-int", with_kv("general.architecture", T.UINT32, 7))
    put("gguf-arch-huge", lambda: with_kv("general.architecture", T.STRING, "a" * (2 << 20)))
    put("gguf-alignment-0", with_kv("general.alignment", T.UINT32, 0))
    put("gguf-alignment-3", with_kv("general.alignment", T.UINT32, 3))
    put("gguf-alignment-2^40", with_kv("general.alignment", T.UINT64, 1 << 40))
    put("gguf-swa-pattern-short", gguf_bytes(llama_kv() + [
        ("llama.attention.sliding_window", T.UINT32, 512),
        ("llama.attention.sliding_window_pattern", T.ARRAY, (T.BOOL, [True]))], llama_tensors()))
    put("gguf-mamba-no-tensors", gguf_bytes([
        ("general.architecture", T.STRING, "mamba"), ("mamba.block_count", T.UINT32, 2),
        ("mamba.embedding_length", T.UINT32, 256), ("mamba.attention.head_count", T.UINT32, 0),
        ("mamba.ssm.inner_size", T.UINT32, 512), ("mamba.ssm.state_size", T.UINT32, 16),
        ("mamba.ssm.conv_kernel", T.UINT32, 4), ("tokenizer.ggml.tokens", T.ARRAY, (T.STRING, ["a", "b"]))], []))
    put("gguf-mamba-norms-only", gguf_bytes([
        ("general.architecture", T.STRING, "mamba"), ("mamba.block_count", T.UINT32, 2),
        ("mamba.embedding_length", T.UINT32, 256), ("mamba.attention.head_count", T.UINT32, 0),
        ("mamba.ssm.inner_size", T.UINT32, 512), ("mamba.ssm.state_size", T.UINT32, 16),
        ("mamba.ssm.conv_kernel", T.UINT32, 4), ("tokenizer.ggml.tokens", T.ARRAY, (T.STRING, ["a", "b"]))],
        [("output_norm.weight", [256], Q.F32)]))
    put("gguf-no-vocab", gguf_bytes([e for e in llama_kv() if e[0] != "tokenizer.ggml.tokens"],
                                    [t for t in llama_tensors() if t[0] != "token_embd.weight"]))


def _gguf_structure_cases(put: Put) -> None:
    """Lengths, counts and nesting that lie."""
    base = llama_kv()
    put("gguf-nested-600", lambda: gguf_bytes([], [], n_kv=1) + _str("x") + nested_array(600))
    put("gguf-nested-3", lambda: gguf_bytes([], [], n_kv=1) + _str("x") + nested_array(3))
    put("gguf-nested-wide", lambda: gguf_bytes([], [], n_kv=1) + _str("x") + struct.pack("<IIQ", T.ARRAY, T.ARRAY,
                                                                                         1 << 20)
        + struct.pack("<IQ", T.UINT8, 0) * (1 << 17))
    put("gguf-string-2^40", gguf_bytes([], [], n_kv=1) + struct.pack("<Q", 1 << 40))
    put("gguf-string-past-eof", gguf_bytes([], [], n_kv=1) + struct.pack("<Q", 50 << 20) + b"x" * 1000)
    put("gguf-array-2^50", gguf_bytes([], [], n_kv=1) + _str("k") + struct.pack("<IIQ", T.ARRAY, T.UINT32, 1 << 50))
    put("gguf-array-past-eof", gguf_bytes([], [], n_kv=1) + _str("k") + struct.pack("<IIQ", T.ARRAY, T.UINT64,
                                                                                    1 << 22))
    put("gguf-strings-past-eof", gguf_bytes([], [], n_kv=1) + _str("k") + struct.pack("<IIQ", T.ARRAY, T.STRING,
                                                                                      1 << 23))
    put("gguf-tensor-count-2^40", gguf_bytes(base, [], n_tensors=1 << 40))
    put("gguf-tensor-count-1M", gguf_bytes(base, [], n_tensors=1 << 20))
    put("gguf-tensor-count-60k-small-file", gguf_bytes(base, [], n_tensors=60000))
    put("gguf-kv-count-2^40", gguf_bytes([], [], n_kv=1 << 40))
    put("gguf-kv-count-60k-small-file", gguf_bytes([], [], n_kv=60000))
    put("gguf-tensor-5-dims", gguf_bytes(base, [("x", [1, 1, 1, 1, 1], Q.F32)]))
    put("gguf-tensor-dim-2^40", gguf_bytes(base, [("token_embd.weight", [1 << 40, 300], Q.F32)]))
    put("gguf-tensor-dims-2^60", gguf_bytes(base, [("x", [1 << 30, 1 << 30, 1 << 30, 1 << 30], Q.F32)]))
    put("gguf-tensor-type-999", gguf_bytes(base, [("x", [32], 999)]))
    put("gguf-tensor-name-10k", lambda: gguf_bytes(base, [("x" * 10000, [32], Q.F32)]))
    put("gguf-tensor-name-newline", gguf_bytes(base, [("a\nb\x1b[31m", [1, 1, 1, 1, 1], Q.F32)]))
    put("gguf-key-newline", gguf_bytes([], [], n_kv=1) + _str("evil\nkey\x1b[2J") + struct.pack("<I", 99))
    put("gguf-tensors-past-eof", gguf_bytes(base, llama_tensors())[:-30])
    put("gguf-empty", b"")
    put("gguf-magic-only", b"GGUF")
    put("gguf-not-gguf", b"PK\x03\x04" + b"\0" * 100)
    put("gguf-version-1", b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    put("gguf-version-2^31", b"GGUF" + struct.pack("<IQQ", 1 << 31, 0, 0))
    put("gguf-value-type-99", gguf_bytes([], [], n_kv=1) + _str("k") + struct.pack("<I", 99))
    put("gguf-array-type-99", gguf_bytes([], [], n_kv=1) + _str("k") + struct.pack("<IIQ", T.ARRAY, 99, 1))
    for part, of in [(1, 0), (0, 2), (3, 2), (1, 99999)]:
        name = f"x-{part:05d}-of-{of:05d}.gguf"
        put(f"gguf-split-{part}-of-{of}", with_kv("block_count", T.UINT32, 2), name)


def _gguf_sparse_cases(c: Cases) -> None:
    """Big claims inside sparse 1 GiB files (cheap to write, costly to believe)."""
    def sparse(folder: Path) -> Path:
        # 144 KB of real header in a 1 GiB sparse file whose strings claim 60 MiB each
        p = folder / "gguf-sparse-60MiB-strings.gguf"
        head = gguf_bytes([], [], n_kv=40) + _str("k0") + struct.pack("<IQ", T.STRING, 60 << 20)
        with open(p, "wb") as f:
            f.write(head + b"\0" * (144_000 - len(head)))
            f.truncate(1 << 30)
        return p
    c["gguf-sparse-60MiB-strings"] = sparse

    def sparse_tokens(folder: Path) -> Path:
        # a vocabulary of 2^24 empty strings claimed inside a sparse 1 GiB file (each is 8 zero bytes)
        p = folder / "gguf-sparse-16M-tokens.gguf"
        with open(p, "wb") as f:
            f.write(gguf_bytes([], [], n_kv=1) + _str("tokenizer.ggml.tokens")
                    + struct.pack("<IIQ", T.ARRAY, T.STRING, 1 << 24))
            f.truncate(1 << 30)
        return p
    c["gguf-sparse-16M-tokens"] = sparse_tokens


# ------------------------------------------------------------------------------------------------
# config.json

def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def config_cases() -> dict[str, Callable[[Path], Path]]:
    c: dict[str, Callable[[Path], Path]] = {}

    def put(name: str, doc: Any | Callable[[], Any], raw: bool = False) -> None:
        def write(folder: Path) -> Path:
            d = folder / name
            d.mkdir()
            value = doc() if callable(doc) else doc
            (d / "config.json").write_bytes(value if raw else json.dumps(value).encode())
            return d
        c[name] = write

    def variant(base: str, **changes: Any) -> dict:
        doc = fixture(base)
        for k, v in changes.items():
            if v is _DROP:
                doc.pop(k, None)
            else:
                doc[k] = v
        return doc

    nan, inf = float("nan"), float("inf")
    llama_bad: dict[str, list[Any]] = {
        "num_key_value_heads": [-8, 0, 3, 64, "8", True, 8.0, 1 << 40],
        "num_attention_heads": [0, -32, _DROP, 10 ** 30, "32", False],
        "hidden_size": [0, 1 << 40, "4096", True, 4096.5, -4096],
        "num_hidden_layers": [100000, -1, 0, True, 10 ** 6],
        "intermediate_size": [-1, 0, 1 << 40, "14336"],
        "vocab_size": [0, 1 << 40, -1],
        "max_position_embeddings": [-1, nan, True, inf, "131072", 0, 1e30, 1 << 40],
        "head_dim": [-128, 1 << 40, "128"],
        "tie_word_embeddings": ["false", 2],
        "attention_bias": ["yes"],
        "model_type": ["x" * 100_000, 7],
    }
    for key, values in llama_bad.items():
        for i, v in enumerate(values):
            put(f"config-llama-{key}-{i}", variant("llama-3.1-8b", **{key: v}))
    put("config-llama-hidden-below-heads", variant("llama-3.1-8b", hidden_size=16))
    put("config-mistral-sliding-window--1", variant("mistral-7b-v0.1", sliding_window=-1))
    put("config-mistral-sliding-window-2^40", variant("mistral-7b-v0.1", sliding_window=1 << 40))
    put("config-qwen3-next-full-attention-interval-0", variant("qwen3-next-80b-a3b", full_attention_interval=0))
    put("config-qwen3-next-full-attention-interval--4", variant("qwen3-next-80b-a3b", full_attention_interval=-4))
    put("config-qwen3-moe-experts-10^6", variant("qwen3-30b-a3b", num_experts=10 ** 6))
    put("config-qwen3-moe-top-k-over-experts", variant("qwen3-30b-a3b", num_experts_per_tok=1000))
    put("config-qwen3-moe-top-k-negative", variant("qwen3-30b-a3b", num_experts_per_tok=-1))
    put("config-qwen3-moe-sparse-step-0", variant("qwen3-30b-a3b", decoder_sparse_step=0))
    put("config-qwen3-moe-mlp-only-layers-strings", variant("qwen3-30b-a3b", mlp_only_layers=["a"]))
    put("config-deepseek-routed-experts-0", variant("deepseek-v3", n_routed_experts=0))
    put("config-deepseek-kv-lora-negative", variant("deepseek-v3", kv_lora_rank=-512))
    put("config-deepseek-first-dense-negative", variant("deepseek-v3", first_k_dense_replace=-3))
    put("config-mamba-state-negative", variant("mamba-2.8b", state_size=-16))
    put("config-mamba-conv-0", variant("mamba-2.8b", conv_kernel=0))
    put("config-mamba-expand-10^6", variant("mamba-2.8b", expand=10 ** 6))
    put("config-gemma3-pattern-0", variant("gemma-2-2b", sliding_window=-1))
    put("config-llama4-no-rope-layers-short", variant("llama-4-scout", text_config={
        **fixture("llama-4-scout")["text_config"], "no_rope_layers": [1]}))
    put("config-llama4-text-config-list", variant("llama-4-scout", text_config=[1, 2]))
    put("config-vision-depth-10^6", variant("qwen2.5-vl-7b", vision_config={
        **fixture("qwen2.5-vl-7b")["vision_config"], "depth": 10 ** 6}))
    put("config-top-level-list", [1, 2, 3])
    put("config-top-level-string", "llama")
    put("config-empty-object", {})
    put("config-not-json", b"{\"hidden_size\": 4096,", raw=True)
    put("config-binary", b"\xff\xfe\x00GGUF" * 100, raw=True)
    put("config-nested-100k", lambda: b"[" * 100_000 + b"]" * 100_000, raw=True)
    put("config-nested-rope-scaling-2000", lambda: json.dumps(variant("llama-3.1-8b")).encode()[:-1]
        + b', "rope_scaling": ' + b"{\"a\":" * 2000 + b"1" + b"}" * 2000 + b"}", raw=True)
    put("config-5000-digit-int", lambda: json.dumps(variant("llama-3.1-8b")).encode()[:-1]
        + b', "hidden_size": 1' + b"0" * 5000 + b"}", raw=True)
    put("config-5MB", lambda: json.dumps(variant("llama-3.1-8b", padding="x" * (5 << 20))).encode(), raw=True)
    put("config-many-values", lambda: json.dumps(variant("llama-3.1-8b", padding=[0] * 2_000_000)).encode(),
        raw=True)
    put("config-nan-literal", lambda: json.dumps(variant("llama-3.1-8b")).encode()[:-1]
        + b', "num_key_value_heads": NaN}', raw=True)
    return c


class _Drop:
    pass


_DROP = _Drop()


# ------------------------------------------------------------------------------------------------
# safetensors headers beside a valid config

def st_header(doc: Any) -> bytes:
    raw = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
    return struct.pack("<Q", len(raw)) + raw


def safetensors_cases() -> dict[str, Callable[[Path], Path]]:
    c: dict[str, Callable[[Path], Path]] = {}
    good = {"model.embed_tokens.weight": {"dtype": "F16", "shape": [128256, 4096], "data_offsets": [0, 128256 * 4096 * 2]}}

    def put(name: str, files: dict[str, bytes | Callable[[], bytes]], *, sparse_to: int | None = None,
            config: dict | None = None) -> None:
        def write(folder: Path) -> Path:
            d = folder / name
            d.mkdir()
            (d / "config.json").write_text(json.dumps(config or fixture("llama-3.1-8b")))
            for fname, data in files.items():
                p = d / fname
                p.write_bytes(data() if callable(data) else data)
                if sparse_to:
                    with open(p, "r+b") as f:
                        f.truncate(sparse_to)
            return d
        c[name] = write

    put("st-header-100MB-claimed", {"model.safetensors": struct.pack("<Q", 100_000_000) + b"{}"})
    put("st-header-100MB-sparse", {"model.safetensors": struct.pack("<Q", 100_000_000) + b"{"}, sparse_to=200 << 20)
    put("st-header-2^63", {"model.safetensors": struct.pack("<Q", 1 << 63)})
    put("st-header-short-file", {"model.safetensors": b"\x01\x02"})
    put("st-header-truncated", {"model.safetensors": struct.pack("<Q", 5000) + b"{}"})
    put("st-header-not-json", {"model.safetensors": st_header(b"{not json")})
    put("st-header-list", {"model.safetensors": st_header([1, 2])})
    put("st-header-nested-100k", {"model.safetensors": lambda: st_header(b"[" * 100_000 + b"]" * 100_000)})
    put("st-header-5000-digit", {"model.safetensors": lambda: st_header(
        b'{"a": {"dtype": "F16", "shape": [1' + b"0" * 5000 + b'], "data_offsets": [0, 2]}}')})
    put("st-header-many-values", {"model.safetensors": lambda: st_header(b"[" + b"0," * 3_000_000 + b"0]")})
    for i, (key, value) in enumerate([("shape", [-1, 4]), ("shape", [True, 4]), ("shape", "4096"),
                                      ("shape", [1 << 40, 1 << 40]), ("dtype", "F128"), ("dtype", 7),
                                      ("data_offsets", [10, 0]), ("data_offsets", [0, 1]),
                                      ("data_offsets", [0.5, 2]), ("shape", [1] * 100)]):
        entry = dict(good["model.embed_tokens.weight"], **{key: value})
        put(f"st-tensor-{key}-{i}", {"model.safetensors": st_header({"model.embed_tokens.weight": entry})})
    put("st-tensor-entry-not-object", {"model.safetensors": st_header({"w": [1, 2]})})
    put("st-tensor-name-newline", {"model.safetensors": st_header({"a\nb": {"dtype": "F128"}})})
    put("st-index-1M-entries", {"model.safetensors.index.json": lambda: json.dumps(
        {"weight_map": {f"t{i}": "a.safetensors" for i in range(1_100_000)}}).encode()})
    put("st-index-path-escape", {"model.safetensors.index.json": json.dumps(
        {"weight_map": {"w": "../../../../etc/passwd"}}).encode()})
    put("st-index-no-weight-map", {"model.safetensors.index.json": b"{}"})
    put("st-index-weight-map-list", {"model.safetensors.index.json": b'{"weight_map": [1]}'})
    put("st-index-2000-shards", {"model.safetensors.index.json": json.dumps(
        {"weight_map": {f"t{i}": f"m-{i}.safetensors" for i in range(2000)}}).encode()})
    put("st-index-60MB", {"model.safetensors.index.json": lambda: b'{"weight_map": {}, "x": "' + b"y" * (60 << 20)
        + b'"}'})
    put("st-kv-heads-negative-with-shards", {"model.safetensors": st_header(good)},
        config=dict(fixture("llama-3.1-8b"), num_key_value_heads=-8))
    return c


# ------------------------------------------------------------------------------------------------
# `runlocal snapshot` inputs: pickles that expand by reference, huge integers, a torch.save zip

def snapshot_cases() -> dict[str, Callable[[Path], Path]]:
    import pickle
    import zipfile

    c: dict[str, Callable[[Path], Path]] = {}
    ev = {"action": "alloc", "addr": 1, "size": 1, "stream": 0, "time_us": 1, "frames": []}
    block = {"address": 1, "size": 1, "requested_size": 1, "state": "active_allocated", "frames": []}

    def put(name: str, make: Callable[[], object], suffix: str = ".pickle") -> None:
        def write(folder: Path) -> Path:
            p = folder / f"{name}{suffix}"
            with open(p, "wb") as f:
                pickle.dump(make(), f, protocol=4)
            return p
        c[name] = write

    # 4 MB: two million references to one event / one block (torch writes each entry once)
    put("snapshot-shared-events-4MB", lambda: {"segments": [], "device_traces": [[ev] * 2_000_000]})
    put("snapshot-shared-blocks-4MB", lambda: {"segments": [{"device": 0, "address": 0, "total_size": 1,
                                                              "blocks": [block] * 2_000_000}], "device_traces": []})
    put("snapshot-huge-ints", lambda: {"segments": [], "device_traces": [[
        dict(ev, size=1 << 100_000, time_us=1 << 200_000), dict(ev, action="free_completed")]]})
    put("snapshot-many-devices", lambda: {"segments": [{"device": d, "blocks": []} for d in range(100_000)],
                                          "device_traces": []})

    def torch_zip(folder: Path) -> Path:
        p = folder / "snapshot-torch-save.pt"
        with zipfile.ZipFile(p, "w") as z:     # the layout torch.save writes since 1.6
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00wq\x01ctorch._utils\n_rebuild\n.")
            z.writestr("archive/version", b"3\n")
        return p
    c["snapshot-torch-save"] = torch_zip
    return c


def snapshot_dag(folder: Path) -> Path:
    """A valid snapshot whose frame filename is a list of 2^200 paths built from shared references:
    str() of it never ends; the reader must not walk it."""
    import pickle

    nested: list = ["x"]
    for _ in range(200):
        nested = [nested, nested]
    frame = {"filename": nested, "line": nested, "name": "f"}
    ev = {"action": "alloc", "addr": 1, "size": 1, "stream": 0, "time_us": 1, "frames": [frame]}
    p = folder / "snapshot-dag.pickle"
    p.write_bytes(pickle.dumps({"segments": [], "device_traces": [[ev]]}))
    return p


def all_cases() -> dict[str, Callable[[Path], Path]]:
    return {**gguf_cases(), **config_cases(), **safetensors_cases()}


def build(folder: Path) -> dict[str, Path]:
    return {name: make(folder) for name, make in all_cases().items()}


# ------------------------------------------------------------------------------------------------
# running one case through the CLI, bounded and measured

AS_LIMIT = 1 << 30          # address space of the child: a reader that tries to allocate more fails loudly


@dataclass
class Outcome:
    name: str
    returncode: int
    stderr: str
    stdout: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float

    @property
    def clean(self) -> bool:
        lines = self.stderr.strip().splitlines()
        return (self.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ")
                and "Traceback" not in self.stderr)


def run_cli(name: str, args: list[str], *, timeout: float = 60.0, env: dict | None = None) -> Outcome:
    """``runlocal <args>`` in a child limited to AS_LIMIT of address space. Its peak RSS is VmHWM of its
    own process image, which the child writes at exit (wait4's ru_maxrss would include the parent's pages,
    copied at fork and counted before exec); its CPU time comes from wait4."""
    import os
    import subprocess
    import sys
    import tempfile
    import threading
    import time

    code = (f"import atexit, os, resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT})); "
            "atexit.register(lambda: open(os.environ['HOSTILE_HWM'], 'w').write(open('/proc/self/status').read())); "
            "sys.argv = ['runlocal'] + sys.argv[1:]; runpy.run_module('runlocal.cli', run_name='__main__')")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".status") as hwm:
        start = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=out, stderr=err,
                             env=dict(env or os.environ, HOSTILE_HWM=hwm.name))
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        peak_kb = next((int(line.split()[1]) for line in hwm.read().splitlines() if line.startswith("VmHWM:")),
                       usage.ru_maxrss)
        return Outcome(name, p.returncode, err.read().decode(errors="replace"), out.read().decode(errors="replace"),
                       wall, usage.ru_utime + usage.ru_stime, peak_kb / 1024)
