"""Read a GGUF file's header — metadata and tensor infos — and describe the model it holds.

We parse the header ourselves instead of using gguf-py's GGUFReader because the reader
memory-maps the whole file and needs the tensor data present; we must work from the header
bytes alone (a truncated download, an HTTP range). The constants (value types, quant block
sizes) come from the `gguf` package itself.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ModelFormatError, ModelNotFoundError
from .spec import AttentionSpec, LayerSpec, ModelSpec, RecurrentSpec, TensorInfo

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Bounds that no real file comes near; past them a header is hostile or corrupt.
MAX_TENSORS = 1 << 20
MAX_KV = 1 << 16
MAX_STRING = 1 << 26          # 64 MiB: chat templates are KBs, whole-tokenizer JSON a few MB
MAX_ARRAY = 1 << 26
MAX_DIMS = 8
MAX_HEADER_BYTES = 1 << 30
# Arrays up to this length are kept (per-layer hyperparameters); longer ones keep only their length.
KEEP_ARRAY = 4096

# GGUF value types (gguf.GGUFValueType) → struct format, for scalars.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class NeedMoreData(Exception):
    """The buffer ends inside the header; ``needed`` is a lower bound on the total bytes required."""

    def __init__(self, needed: int):
        super().__init__(needed)
        self.needed = needed


@dataclass(frozen=True)
class ArrayInfo:
    """A metadata array too long to keep (tokenizer tokens, scores, merges): its type and length."""

    item_type: int
    length: int


@dataclass
class GGUFHeader:
    version: int
    metadata: dict[str, Any]
    tensors: list[TensorInfo]
    data_offset: int          # where tensor data begins (aligned)
    header_bytes: int         # bytes actually parsed
    little_endian: bool = True
    tensor_offsets: list[int] = field(default_factory=list)


class _Cursor:
    __slots__ = ("buf", "pos", "end", "name")

    def __init__(self, buf: bytes | memoryview, name: str, endian: str):
        self.buf, self.pos, self.end, self.name = buf, 0, endian, name

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise NeedMoreData(self.pos + size)
        (value,) = struct.unpack_from(self.end + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> bytes:
        n = self.take("Q")
        if n > MAX_STRING:
            raise ModelFormatError(f"{self.name}: {what} claims a {n}-byte string (limit {MAX_STRING}); file is corrupt")
        if self.pos + n > len(self.buf):
            raise NeedMoreData(self.pos + n)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw

    def skip_strings(self, count: int, what: str) -> None:
        buf, pos, unpack = self.buf, self.pos, struct.Struct(self.end + "Q").unpack_from
        size = len(buf)
        for _ in range(count):
            if pos + 8 > size:
                raise NeedMoreData(pos + 8)
            (n,) = unpack(buf, pos)
            if n > MAX_STRING:
                raise ModelFormatError(f"{self.name}: {what} holds a {n}-byte string; file is corrupt")
            pos += 8 + n
        if pos > size:
            raise NeedMoreData(pos)
        self.pos = pos


def _value(cur: _Cursor, vtype: int, key: str) -> Any:
    if vtype in _SCALAR:
        return cur.take(_SCALAR[vtype])
    if vtype == _STRING:
        return cur.string(key).decode("utf-8", errors="replace")
    if vtype == _ARRAY:
        item_type = cur.take("I")
        length = cur.take("Q")
        if length > MAX_ARRAY:
            raise ModelFormatError(f"{cur.name}: metadata '{key}' claims {length} items (limit {MAX_ARRAY}); file is corrupt")
        if item_type in _SCALAR:
            fmt = _SCALAR[item_type]
            nbytes = struct.calcsize(fmt) * length
            if cur.pos + nbytes > len(cur.buf):
                raise NeedMoreData(cur.pos + nbytes)
            if length <= KEEP_ARRAY:
                items = list(struct.unpack_from(f"{cur.end}{length}{fmt}", cur.buf, cur.pos))
                cur.pos += nbytes
                return items
            cur.pos += nbytes
            return ArrayInfo(item_type, length)
        if item_type == _STRING:
            if length <= 64:
                return [cur.string(key).decode("utf-8", errors="replace") for _ in range(length)]
            cur.skip_strings(length, key)
            return ArrayInfo(item_type, length)
        if item_type == _ARRAY:  # nested arrays: not used by llama.cpp; walk them to stay in sync
            return [_value(cur, _ARRAY, key) for _ in range(length)]
        raise ModelFormatError(f"{cur.name}: metadata '{key}' has unknown array item type {item_type}")
    raise ModelFormatError(f"{cur.name}: metadata '{key}' has unknown value type {vtype}")


def parse_header(buf: bytes | memoryview, name: str = "<gguf>") -> GGUFHeader:
    """Parse a GGUF header from the first bytes of a file.

    Raises NeedMoreData when ``buf`` ends inside the header (the caller reads more and retries),
    ModelFormatError when the bytes are not a sane GGUF header.
    """
    if len(buf) < 24:
        if len(buf) >= 4 and bytes(buf[:4]) != MAGIC:
            raise ModelFormatError(f"{name}: not a GGUF file (magic {bytes(buf[:4])!r}, expected b'GGUF')")
        raise NeedMoreData(24)
    if bytes(buf[:4]) != MAGIC:
        raise ModelFormatError(f"{name}: not a GGUF file (magic {bytes(buf[:4])!r}, expected b'GGUF')")
    (version,) = struct.unpack_from("<I", buf, 4)
    endian = "<"
    if version & 0xFFFF == 0 and version != 0:  # a big-endian file reads its small version number byte-swapped
        endian = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in (2, 3):
        raise ModelFormatError(f"{name}: unsupported GGUF version {version} (expected 2 or 3)")
    cur = _Cursor(buf, name, endian)
    cur.pos = 8
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    if n_tensors > MAX_TENSORS:
        raise ModelFormatError(f"{name}: header claims {n_tensors} tensors (limit {MAX_TENSORS}); file is corrupt")
    if n_kv > MAX_KV:
        raise ModelFormatError(f"{name}: header claims {n_kv} metadata entries (limit {MAX_KV}); file is corrupt")

    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string("metadata key").decode("utf-8", errors="replace")
        vtype = cur.take("I")
        metadata[key] = _value(cur, vtype, key)

    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # deferred: gguf pulls in numpy

    tensors: list[TensorInfo] = []
    offsets: list[int] = []
    for _ in range(n_tensors):
        tname = cur.string("tensor name").decode("utf-8", errors="replace")
        n_dims = cur.take("I")
        if n_dims > MAX_DIMS:
            raise ModelFormatError(f"{name}: tensor '{tname}' claims {n_dims} dimensions (limit {MAX_DIMS})")
        dims = [cur.take("Q") for _ in range(n_dims)]
        ttype = cur.take("I")
        offsets.append(cur.take("Q"))
        try:
            qtype = GGMLQuantizationType(ttype)
        except ValueError:
            raise ModelFormatError(f"{name}: tensor '{tname}' has unknown ggml type {ttype}") from None
        if any(d > 1 << 40 for d in dims):
            raise ModelFormatError(f"{name}: tensor '{tname}' has an absurd dimension {max(dims)}")
        block, type_size = GGML_QUANT_SIZES[qtype]
        numel = 1
        for d in dims:
            numel *= d
        if dims and dims[0] % block:
            raise ModelFormatError(f"{name}: tensor '{tname}' row of {dims[0]} is not a multiple of {qtype.name}'s block {block}")
        role, layer = tensor_role(tname)
        # GGUF stores dims innermost first (ne0 = row length); we keep PyTorch order, outermost first.
        tensors.append(TensorInfo(tname, tuple(reversed(dims)), role, layer, qtype.name, numel // block * type_size))

    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise ModelFormatError(f"{name}: general.alignment must be a power of two, got {alignment!r}")
    data_offset = (cur.pos + alignment - 1) // alignment * alignment
    return GGUFHeader(version, metadata, tensors, data_offset, cur.pos, endian == "<", offsets)


def read_header_incrementally(read_at: Callable[[int, int], bytes], name: str, *, first: int = 1 << 20,
                              size: int | None = None) -> GGUFHeader:
    """Parse a header through ``read_at(offset, length)``, fetching more bytes only as needed.

    The same loop serves local files and HTTP range requests; each retry grows the range by at least half.
    """
    buf = bytearray()
    want = first
    while True:
        if size is not None:
            want = min(want, size)
        if want > len(buf):
            chunk = read_at(len(buf), want - len(buf))
            buf += chunk
        try:
            return parse_header(memoryview(buf), name)
        except NeedMoreData as more:
            if size is not None and len(buf) >= size or (want > len(buf)):
                raise ModelFormatError(f"{name}: file ends inside the GGUF header ({len(buf)} bytes; "
                                       "truncated before the tensor infos)") from None
            if more.needed > MAX_HEADER_BYTES:
                raise ModelFormatError(f"{name}: GGUF header would exceed {MAX_HEADER_BYTES} bytes; file is corrupt") from None
            # grow by half: round trips stay logarithmic, overshoot stays under half the header
            want = max(more.needed + (256 << 10), len(buf) * 3 // 2)


def read_local_header(path: str | Path) -> GGUFHeader:
    p = Path(path)
    if not p.is_file():
        raise ModelNotFoundError(f"{path}: no such file")
    size = p.stat().st_size
    with p.open("rb") as f:
        def read_at(offset: int, length: int) -> bytes:
            f.seek(offset)
            return f.read(length)
        return read_header_incrementally(read_at, str(path), size=size)


# --------------------------------------------------------------------------------------------
# tensor names → roles

_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")
_ROLE_BY_STEM = {
    "token_embd": "embed", "output": "lm_head", "position_embd": "pos_embed", "token_types": "embed",
    "attn_q": "attn_q", "attn_k": "attn_k", "attn_v": "attn_v", "attn_output": "attn_o", "attn_qkv": "attn_qkv",
    "attn_q_a": "attn_q_a", "attn_q_b": "attn_q_b", "attn_kv_a_mqa": "attn_kv_a", "attn_kv_b": "attn_kv_b",
    "attn_k_b": "attn_kv_b", "attn_v_b": "attn_kv_b", "attn_sinks": "attn_sinks",
    "ffn_gate": "ffn_gate", "ffn_up": "ffn_up", "ffn_down": "ffn_down",
    "ffn_gate_exps": "expert_gate", "ffn_up_exps": "expert_up", "ffn_down_exps": "expert_down",
    "ffn_gate_up_exps": "expert_gate_up",
    "ffn_gate_shexp": "shared_gate", "ffn_up_shexp": "shared_up", "ffn_down_shexp": "shared_down",
    "ffn_gate_inp": "router", "ffn_gate_inp_shexp": "router", "exp_probs_b": "router",
    "ssm_in": "ssm_in", "ssm_out": "ssm_out", "ssm_conv1d": "ssm_conv",
}


def tensor_role(name: str) -> tuple[str, int | None]:
    """'blk.3.attn_q.weight' → ('attn_q', 3); norms and biases by suffix; vision by prefix."""
    if name.startswith(("v.", "mm.", "vision")):
        return "vision" if name.startswith("v") else "projector", None
    layer = None
    m = _BLOCK.match(name)
    rest = name
    if m:
        layer, rest = int(m.group(1)), m.group(2)
    stem, _, suffix = rest.rpartition(".")
    if not stem:
        stem, suffix = suffix, ""
    if suffix == "bias" or stem.endswith("_b") and stem not in _ROLE_BY_STEM:
        return "bias", layer
    if "norm" in stem:
        return "norm", layer
    if stem in _ROLE_BY_STEM:
        return _ROLE_BY_STEM[stem], layer
    if stem.startswith("ssm_"):
        return "ssm_param", layer
    return "other", layer


# --------------------------------------------------------------------------------------------
# metadata → ModelSpec

# llama.cpp hard-codes which layers use the sliding window for some architectures
# (src/llama-model.cpp, llm_load_hparams: hparams.set_swa_pattern(n) → every n-th layer is dense).
_SWA_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4, "gpt-oss": 2, "exaone4": 4}

# Tokenizer metadata: string arrays llama.cpp keeps in the header, used to estimate vocab size.
_VOCAB_KEY = "tokenizer.ggml.tokens"

FILE_TYPES = {  # general.file_type → llama-quantize name (llama.h: enum llama_ftype)
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}


def _per_layer(value: Any, n_layers: int, default: int) -> list[int]:
    if isinstance(value, list):
        if len(value) != n_layers:
            raise ModelFormatError(f"per-layer array has {len(value)} entries for {n_layers} layers")
        return [int(v) for v in value]
    return [int(value if value is not None else default)] * n_layers


def spec_from_header(header: GGUFHeader, *, id: str, source: str) -> ModelSpec:
    md = header.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str):
        raise ModelFormatError(f"{source}: GGUF metadata lacks general.architecture")

    def get(key: str, default: Any = None) -> Any:
        return md.get(f"{arch}.{key}", default)

    n_layers = get("block_count")
    hidden = get("embedding_length")
    if not isinstance(n_layers, int) or n_layers <= 0:
        raise ModelFormatError(f"{source}: GGUF metadata lacks {arch}.block_count (expected a positive integer)")
    if not isinstance(hidden, int) or hidden <= 0:
        raise ModelFormatError(f"{source}: GGUF metadata lacks {arch}.embedding_length (expected a positive integer)")
    heads = _per_layer(get("attention.head_count"), n_layers, 0)
    kv_heads = _per_layer(get("attention.head_count_kv"), n_layers, max(heads) if heads else 0)
    n_heads = max(heads) if heads else 0
    k_dim = get("attention.key_length") or (hidden // n_heads if n_heads else 0)
    v_dim = get("attention.value_length") or k_dim
    window = get("attention.sliding_window")
    pattern = get("attention.sliding_window_pattern")
    kv_lora = get("attention.kv_lora_rank")
    rope_dim = get("rope.dimension_count")

    swa_layers: list[bool]
    if isinstance(pattern, list):            # explicit per-layer flags (newer converters)
        swa_layers = [bool(v) for v in pattern][:n_layers]
    elif window and isinstance(pattern, int) and pattern > 0:
        swa_layers = [(il % pattern) < pattern - 1 for il in range(n_layers)]
    elif window and arch in _SWA_PATTERN:
        p = _SWA_PATTERN[arch]
        swa_layers = [(il % p) < p - 1 for il in range(n_layers)]
    else:
        swa_layers = [False] * n_layers

    d_inner, d_state, d_conv = get("ssm.inner_size"), get("ssm.state_size"), get("ssm.conv_kernel")
    n_group = get("ssm.group_count", 0) or 0

    layers = []
    for il in range(n_layers):
        attention = recurrent = None
        if kv_lora:
            # MLA as llama.cpp caches it: one latent head of kv_lora_rank + rope dims (src/llama-model.cpp, deepseek2)
            attention = AttentionSpec("mla", 1, kv_lora + (rope_dim or 0), kv_lora)
        elif kv_heads[il] > 0 and heads[il] > 0:
            kind = "sliding" if swa_layers[il] else "full"
            attention = AttentionSpec(kind, kv_heads[il], k_dim, v_dim, window if kind == "sliding" else None)
        if d_inner and d_state and (attention is None or arch in ("falcon-h1",)):
            # llama.cpp hparams.n_embd_r()/n_embd_s(): conv and SSM state per sequence
            recurrent = RecurrentSpec((d_conv - 1) * (d_inner + 2 * n_group * d_state) if d_conv else 0, d_state * d_inner)
        layers.append(LayerSpec(attention, recurrent, moe=bool(get("expert_count"))))

    tokens = md.get(_VOCAB_KEY)
    vocab = tokens.length if isinstance(tokens, ArrayInfo) else len(tokens) if isinstance(tokens, list) else 0
    embd = next((t for t in header.tensors if t.role == "embed"), None)
    if embd is not None:
        vocab = embd.shape[0]
    file_type = md.get("general.file_type")
    return ModelSpec(
        id=id,
        architecture=arch,
        family=arch,
        hidden_size=hidden,
        n_layers=n_layers,
        n_heads=n_heads,
        vocab_size=vocab,
        layers=tuple(layers),
        tensors=tuple(header.tensors),
        intermediate_size=get("feed_forward_length") if isinstance(get("feed_forward_length"), int) else None,
        max_position_embeddings=get("context_length"),
        tie_word_embeddings=not any(t.role == "lm_head" for t in header.tensors),
        n_experts=get("expert_count", 0) or 0,
        n_experts_active=get("expert_used_count", 0) or 0,
        source=source,
        repo_id=md.get("general.base_model.0.repo_url") or None,
        file_quant=FILE_TYPES.get(file_type, f"type{file_type}") if isinstance(file_type, int) else None,
        notes=(f"GGUF v{header.version}, {len(header.tensors)} tensors, header {header.data_offset:,} bytes",),
    )


_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")


def split_siblings(path: Path) -> list[Path]:
    """'x-00001-of-00003.gguf' → all three parts (they must exist); any other name → [path]."""
    m = _SPLIT.match(path.name)
    if not m:
        return [path]
    n = int(m.group("n"))
    parts = [path.with_name(f"{m.group('stem')}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise ModelNotFoundError(f"{path}: split GGUF is missing part(s) {', '.join(missing)}")
    return parts


def merge_split_headers(headers: list[GGUFHeader]) -> GGUFHeader:
    """Split files carry the metadata in the first part and tensors spread over all parts."""
    first = headers[0]
    tensors = [t for h in headers for t in h.tensors]
    return GGUFHeader(first.version, first.metadata, tensors, first.data_offset,
                      sum(h.header_bytes for h in headers), first.little_endian)


def read_gguf(path: str | Path) -> ModelSpec:
    p = Path(path)
    parts = split_siblings(p)
    header = merge_split_headers([read_local_header(part) for part in parts])
    return spec_from_header(header, id=p.name, source=str(p))
