"""Read a GGUF file's header — metadata and tensor infos — and describe the model it holds.

We parse the header ourselves instead of using gguf-py's GGUFReader because the reader
memory-maps the whole file and needs the tensor data present; we must work from the header
bytes alone (a truncated download, an HTTP range). The constants (value types, quant block
sizes) come from the `gguf` package itself.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ModelFormatError, ModelNotFoundError
from .limits import (
    CONTEXT,
    EXPERTS,
    FFN,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    KERNEL,
    LAYERS,
    MAX_TENSOR_ELEMENTS,
    STATE,
    Bound,
    check_flag,
    check_heads,
    check_int,
    check_ints,
    check_spec,
    fail,
    printable,
)
from .spec import AttentionSpec, LayerSpec, ModelSpec, RecurrentSpec, TensorInfo

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Bounds that no real file comes near; past them a header is hostile or corrupt, refused before the
# bytes it claims are read or allocated.
# DeepSeek-V3's GGUF holds ~1,100 tensors (experts fused), legacy unfused Mixtral-8x22B ~1,900; 2^16 is 34× that.
MAX_TENSORS = 1 << 16
MAX_KV = 1 << 16
# llama.cpp's own caps are 1 GiB per string and 2^30 array items (ggml/src/gguf.cpp GGUF_MAX_STRING_LENGTH,
# GGUF_MAX_ARRAY_ELEMENTS); the whole header is capped far lower below, and strings longer than KEEP_STRING
# (chat templates are KBs) are skipped, not copied.
MAX_STRING = 1 << 26
MAX_ARRAY = 1 << 24           # the longest real arrays are tokenizer vocabularies and merges, < 300,000 items
MAX_DIMS = 4                  # GGML_MAX_DIMS: gguf.cpp refuses more
MAX_NAME = 256                # gguf.cpp refuses tensor names of GGML_MAX_NAME (64) bytes or more
MAX_KEY = 4096                # metadata keys are dotted names under 100 bytes
# The largest real headers are ~10–20 MB: a 262k-token vocabulary with scores and types (Gemma 3) or
# 280k BPE merges (Llama 3) plus ~1,000 tensor infos. 64 MiB is 3× that, read in well under a second.
MAX_HEADER_BYTES = 64 << 20
# Arrays up to this length are kept (per-layer hyperparameters); longer ones keep only their length.
KEEP_ARRAY = 4096
KEEP_STRING = 1 << 16
# llama.cpp refuses arrays of arrays (gguf.cpp: "key has invalid GGUF type"); gguf-py writes them, so we
# walk them, two levels and 65,536 items at most, and keep only their length.
MAX_NESTING = 2
MAX_NESTED_ITEMS = 1 << 16

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
    """A metadata array (or string) too long to keep (tokenizer tokens, scores, merges): its type and length."""

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
    """Reads a header front to back. Over a fixed buffer it raises NeedMoreData at its end; with
    ``read_at`` it fetches more itself (each fetch at least half again the bytes held), never past the
    file's size or MAX_HEADER_BYTES, so a length the file cannot hold is refused before it is read."""

    __slots__ = ("buf", "pos", "end", "name", "read_at", "size", "nested")

    def __init__(self, buf: bytes | bytearray | memoryview, name: str, endian: str,
                 read_at: Callable[[int, int], bytes] | None = None, size: int | None = None):
        self.buf, self.pos, self.end, self.name = buf, 0, endian, name
        self.read_at, self.size, self.nested = read_at, size, 0

    def need(self, end: int, what: str = "header") -> None:
        """Make bytes [0, end) available."""
        if end <= len(self.buf):
            return
        if self.read_at is None:
            raise NeedMoreData(end)
        if self.size is not None and end > self.size:
            raise ModelFormatError(f"{self.name}: {what}: needs {end:,} bytes but the file has {self.size:,} "
                                   "(truncated or corrupt GGUF header)")
        if end > MAX_HEADER_BYTES:
            raise ModelFormatError(f"{self.name}: {what} would take the GGUF header past {MAX_HEADER_BYTES >> 20} MiB "
                                   "(expected a header of a few MB); file is corrupt")
        want = min(max(end + (256 << 10), len(self.buf) * 3 // 2), MAX_HEADER_BYTES)
        if self.size is not None:
            want = min(want, self.size)
        assert isinstance(self.buf, bytearray)
        while len(self.buf) < end:
            chunk = self.read_at(len(self.buf), want - len(self.buf))
            if not chunk:
                raise ModelFormatError(f"{self.name}: file ends inside the GGUF header ({len(self.buf):,} bytes; "
                                       f"truncated before {what} ends)")
            self.buf += chunk

    def take(self, fmt: str, what: str = "header") -> Any:
        size = struct.calcsize(fmt)
        self.need(self.pos + size, what)
        (value,) = struct.unpack_from(self.end + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self, what: str, limit: int = MAX_STRING) -> bytes | ArrayInfo:
        n = self.take("Q", what)
        if n > limit:
            raise ModelFormatError(f"{self.name}: {what[:100]} claims a {n}-byte string (limit {limit}); file is corrupt")
        self.need(self.pos + n, what)
        if n > KEEP_STRING:
            self.pos += n
            return ArrayInfo(_STRING, n)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw

    def text(self, what: str, limit: int = MAX_STRING) -> str | ArrayInfo:
        raw = self.string(what, limit)
        return raw if isinstance(raw, ArrayInfo) else raw.decode("utf-8", errors="replace")

    def skip_strings(self, count: int, what: str) -> None:
        pos, unpack, done = self.pos, struct.Struct(self.end + "Q").unpack_from, 0
        while done < count:
            buf, size = self.buf, len(self.buf)
            while done < count and pos + 8 <= size:
                (n,) = unpack(buf, pos)
                if n > MAX_STRING:
                    raise ModelFormatError(f"{self.name}: {what} holds a {n}-byte string; file is corrupt")
                pos += 8 + n
                done += 1
            if done < count:
                self.need(pos + 8, what)
        self.need(pos, what)
        self.pos = pos


def _value(cur: _Cursor, vtype: int, key: str, depth: int = 0) -> Any:
    key = printable(key)    # only shown in messages
    if vtype in _SCALAR:
        return cur.take(_SCALAR[vtype], key)
    if vtype == _STRING:
        return cur.text(key)
    if vtype == _ARRAY:
        item_type = cur.take("I", key)
        length = cur.take("Q", key)
        if length > MAX_ARRAY:
            raise ModelFormatError(f"{cur.name}: metadata '{key}' claims {length} items (limit {MAX_ARRAY}); file is corrupt")
        if item_type in _SCALAR:
            fmt = _SCALAR[item_type]
            nbytes = struct.calcsize(fmt) * length
            cur.need(cur.pos + nbytes, f"metadata '{key}'")
            if length <= KEEP_ARRAY:
                items = list(struct.unpack_from(f"{cur.end}{length}{fmt}", cur.buf, cur.pos))
                cur.pos += nbytes
                return items
            cur.pos += nbytes
            return ArrayInfo(item_type, length)
        if item_type == _STRING:
            cur.need(cur.pos + 8 * length, f"metadata '{key}'")   # each string has at least its length
            if length <= 64:
                return [cur.text(key) for _ in range(length)]
            cur.skip_strings(length, key)
            return ArrayInfo(item_type, length)
        if item_type == _ARRAY:  # nested arrays: llama.cpp refuses them; walk a few to stay in sync
            cur.nested += length
            if depth + 1 >= MAX_NESTING or cur.nested > MAX_NESTED_ITEMS:
                raise ModelFormatError(f"{cur.name}: metadata '{key}' nests arrays {depth + 2} deep or holds "
                                       f"over {MAX_NESTED_ITEMS} nested arrays (llama.cpp reads none)")
            for _ in range(length):
                _value(cur, _ARRAY, key, depth + 1)
            return ArrayInfo(item_type, length)
        raise ModelFormatError(f"{cur.name}: metadata '{key}' has unknown array item type {item_type}")
    raise ModelFormatError(f"{cur.name}: metadata '{key}' has unknown value type {vtype}")


def parse_header(buf: bytes | bytearray | memoryview, name: str = "<gguf>", *,
                 read_at: Callable[[int, int], bytes] | None = None, size: int | None = None) -> GGUFHeader:
    """Parse a GGUF header from the first bytes of a file.

    Raises NeedMoreData when ``buf`` ends inside the header (with ``read_at``, it fetches more instead),
    ModelFormatError when the bytes are not a sane GGUF header.
    """
    if len(buf) < 24 and read_at is None:
        if len(buf) >= 4 and bytes(buf[:4]) != MAGIC:
            raise ModelFormatError(f"{name}: not a GGUF file (magic {bytes(buf[:4])!r}, expected b'GGUF')")
        raise NeedMoreData(24)
    cur = _Cursor(buf, name, "<", read_at, size)
    cur.need(24, "the GGUF preamble")
    buf = cur.buf
    if bytes(buf[:4]) != MAGIC:
        raise ModelFormatError(f"{name}: not a GGUF file (magic {bytes(buf[:4])!r}, expected b'GGUF')")
    (version,) = struct.unpack_from("<I", buf, 4)
    if version & 0xFFFF == 0 and version != 0:  # a big-endian file reads its small version number byte-swapped
        cur.end = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in (2, 3):
        raise ModelFormatError(f"{name}: unsupported GGUF version {version} (expected 2 or 3)")
    cur.pos = 8
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    if n_tensors > MAX_TENSORS:
        raise ModelFormatError(f"{name}: header claims {n_tensors} tensors (limit {MAX_TENSORS}); file is corrupt")
    if n_kv > MAX_KV:
        raise ModelFormatError(f"{name}: header claims {n_kv} metadata entries (limit {MAX_KV}); file is corrupt")
    # each metadata entry takes at least 12 bytes and each tensor info 24: refuse counts the file cannot hold
    if read_at is not None:
        cur.need(cur.pos + 12 * n_kv + 24 * n_tensors, f"the header's counts ({n_kv} metadata entries, {n_tensors} tensors)")

    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.text("metadata key", MAX_KEY)
        vtype = cur.take("I", printable(key))
        metadata[str(key)] = _value(cur, vtype, str(key))

    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # deferred: gguf pulls in numpy

    tensors: list[TensorInfo] = []
    offsets: list[int] = []
    for _ in range(n_tensors):
        tname = str(cur.text("tensor name", MAX_NAME))
        tn = printable(tname)
        n_dims = cur.take("I", tn)
        if n_dims > MAX_DIMS:
            raise ModelFormatError(f"{name}: tensor '{tn}' claims {n_dims} dimensions (limit {MAX_DIMS})")
        dims = [cur.take("Q", tn) for _ in range(n_dims)]
        ttype = cur.take("I", tn)
        offsets.append(cur.take("Q", tn))
        try:
            qtype = GGMLQuantizationType(ttype)
        except ValueError:
            raise ModelFormatError(f"{name}: tensor '{tn}' has unknown ggml type {ttype}") from None
        block, type_size = GGML_QUANT_SIZES[qtype]
        numel = 1
        for d in dims:
            numel *= d
        if numel > MAX_TENSOR_ELEMENTS:
            raise ModelFormatError(f"{name}: tensor '{tn}' claims {numel:,} elements "
                                   f"(limit {MAX_TENSOR_ELEMENTS:,}); file is corrupt")
        if dims and dims[0] % block:
            raise ModelFormatError(f"{name}: tensor '{tn}' row of {dims[0]} is not a multiple of {qtype.name}'s block {block}")
        role, layer = tensor_role(tname)
        # GGUF stores dims innermost first (ne0 = row length); we keep PyTorch order, outermost first.
        tensors.append(TensorInfo(tname, tuple(reversed(dims)), role, layer, qtype.name, numel // block * type_size))

    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    # gguf.cpp requires a power of two; 2^20 is past any real value (32 by default)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or not 0 < alignment <= 1 << 20 \
            or alignment & (alignment - 1):
        raise ModelFormatError(f"{name}: general.alignment must be a power of two up to 2^20, got {alignment!r}")
    data_offset = (cur.pos + alignment - 1) // alignment * alignment
    return GGUFHeader(version, metadata, tensors, data_offset, cur.pos, cur.end == "<", offsets)


def read_header_incrementally(read_at: Callable[[int, int], bytes], name: str, *, first: int = 1 << 20,
                              size: int | None = None) -> GGUFHeader:
    """Parse a header through ``read_at(offset, length)``, fetching more bytes only as needed.

    The same parser serves local files and HTTP range requests: one pass, each fetch at least half
    again the bytes held, so round trips stay logarithmic and nothing is fetched twice.
    """
    first = min(first, size) if size is not None else first
    return parse_header(bytearray(read_at(0, first)), name, read_at=read_at, size=size)


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


@lru_cache(maxsize=16384)
def tensor_role(name: str) -> tuple[str, int | None]:
    """'blk.3.attn_q.weight' → ('attn_q', 3); norms and biases by suffix; vision by prefix. Kept by name: the
    converter (quant/gguf_convert.py) asks it of every tensor of each model it converts, and the names repeat across
    models (~1.3 ms of a 1,700-tensor MoE's first plan)."""
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


# The {arch}.* hyperparameters read, with the bounds of limits.py (0 allowed where llama.cpp reads 0 as
# "none": Mamba writes head_count 0, hybrids a per-layer head_count_kv of 0 for recurrent layers).
_KEYS: dict[str, Bound] = {
    "block_count": LAYERS, "embedding_length": HIDDEN, "context_length": CONTEXT,
    "feed_forward_length": Bound(0, FFN.hi, FFN.what),
    "attention.head_count": Bound(0, HEADS.hi, HEADS.what), "attention.head_count_kv": Bound(0, HEADS.hi, HEADS.what),
    "attention.key_length": HEAD_DIM, "attention.value_length": HEAD_DIM,
    "attention.key_length_mla": HEAD_DIM, "attention.value_length_mla": HEAD_DIM,
    "attention.sliding_window": Bound(0, CONTEXT.hi, CONTEXT.what),
    "attention.sliding_window_pattern": Bound(1, LAYERS.hi, "a layer period"),
    "attention.kv_lora_rank": Bound(0, HEAD_DIM.hi, HEAD_DIM.what), "rope.dimension_count": Bound(0, HEAD_DIM.hi, HEAD_DIM.what),
    "ssm.inner_size": Bound(0, FFN.hi, FFN.what), "ssm.state_size": Bound(0, STATE.hi, STATE.what),
    "ssm.conv_kernel": Bound(0, KERNEL.hi, KERNEL.what), "ssm.group_count": Bound(0, HEADS.hi, HEADS.what),
    "expert_count": EXPERTS, "expert_used_count": EXPERTS,
    "full_attention_interval": Bound(1, LAYERS.hi, "a layer period"),
}
_PER_LAYER = {"feed_forward_length", "attention.head_count", "attention.head_count_kv", "expert_used_count"}


def _hyperparameters(md: dict[str, Any], arch: str, where: str) -> dict[str, Any]:
    """The {arch}.* keys this reader uses, each an int (or a per-layer list of ints) within its bounds."""
    hp: dict[str, Any] = {}
    n_layers = check_int(md.get(f"{arch}.block_count"), f"{arch}.block_count", LAYERS, where)
    for key, bound in _KEYS.items():
        full = f"{arch}.{key}"
        value = md.get(full)
        if value is None:
            continue
        if isinstance(value, list) and key in _PER_LAYER:
            hp[key] = check_ints(value, full, bound, where, length=n_layers)
        elif isinstance(value, list) and key == "attention.sliding_window_pattern":
            hp[key] = [check_flag(v, f"{full}[{i}]", where) for i, v in enumerate(value[:n_layers + 1])]
            if len(value) != n_layers:
                raise fail(where, full, f"a list of {len(value)}", f"one flag per layer ({n_layers})")
        else:
            hp[key] = check_int(value, full, bound, where)
    for key in ("embedding_length", "attention.head_count"):
        if key not in hp:
            raise fail(where, f"{arch}.{key}", None, _KEYS[key].describe())
    return hp


def _per_layer(value: int | list[int], n_layers: int) -> list[int]:
    return list(value) if isinstance(value, list) else [value] * n_layers


def _head_layout(hp: dict[str, Any], n_layers: int, arch: str, where: str) -> tuple[list[int], list[int]]:
    """Query and KV heads per layer; KV heads may be 0 (a recurrent layer) and otherwise divide the heads."""
    heads = _per_layer(hp["attention.head_count"], n_layers)
    kv_heads = _per_layer(hp.get("attention.head_count_kv", hp["attention.head_count"]), n_layers)
    for il, (h, kv) in enumerate(zip(heads, kv_heads)):
        if kv and not h:
            raise ModelFormatError(f"{where}: layer {il} has {kv} KV heads and 0 attention heads "
                                   f"(expected {arch}.attention.head_count ≥ head_count_kv)")
        if kv:
            check_heads(h, kv, where, (f"{arch}.attention.head_count", f"{arch}.attention.head_count_kv"))
    return heads, kv_heads


# Architectures whose llama.cpp loader makes a layer MLA only when the file has {arch}.attention.key_length_mla and
# value_length_mla (hparams.is_mla(); src/llama-model.cpp reads them as optional "for compatibility with existing
# DeepSeek V2 and V2.5 GGUFs"): a file converted before PR #12801 caches head_count_kv × key_length K and × value_length
# V per layer in every build (DeepSeek-V2-Lite: 16 × (192 + 128) × 2 B × 27 layers = 276,480 B per token in f16).
_MLA_KEYED = ("deepseek2",)


# Hybrids whose layers are a Mamba-2 mixer, attention or an FFN alone: llama.cpp marks a layer recurrent only where it
# has neither KV heads nor an FFN (src/llama-model.cpp, LLM_ARCH_NEMOTRON_H / _MOE: recurrent_layer_arr[i] =
# n_head_kv(i) == 0 && n_ff(i) == 0), so an FFN / MoE layer there holds no state
_FFN_LAYER_HYBRIDS = ("nemotron_h", "nemotron_h_moe")
# Gated delta-net hybrids: every head count is written for all layers, and which layers are recurrent follows
# {arch}.full_attention_interval (default 4): layer il is linear attention unless (il + 1) % interval == 0
# (src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp load_arch_hparams). The MTP block Qwen3.5's converter
# appends ({arch}.nextn_predict_layers) is loaded but not run and gets no cache: n_layer = block_count − nextn.
_DELTA_NET = ("qwen3next", "qwen35", "qwen35moe")


def _delta_net_layers(md: dict[str, Any], hp: dict[str, Any], arch: str, layers: list[LayerSpec], where: str
                      ) -> tuple[int, list[LayerSpec]]:
    nextn = md.get(f"{arch}.nextn_predict_layers")
    n_main = len(layers) - (check_int(nextn, f"{arch}.nextn_predict_layers", Bound(0, len(layers) - 1,
                                                                                   "fewer than block_count"), where)
                            if nextn is not None else 0)
    interval = hp.get("full_attention_interval", 4)
    d_inner, d_state, d_conv = hp.get("ssm.inner_size"), hp.get("ssm.state_size"), hp.get("ssm.conv_kernel")
    n_group = hp.get("ssm.group_count", 0)
    if not (d_inner and d_state and d_conv and n_group):
        raise fail(where, f"{arch}.ssm.inner_size / state_size / conv_kernel / group_count", None,
                   "the gated delta-net sizes (positive integers)")
    channels = d_inner + 2 * n_group * d_state
    # llama_hparams::n_embd_r / n_embd_s: (d_conv − 1) × channels conv values, d_state × d_inner state values
    rec = RecurrentSpec((d_conv - 1) * channels, d_state * d_inner, "gated_deltanet", channels, ssm_dtype="float32")
    out = [LayerSpec(None, rec, la.moe) if (il + 1) % interval else la for il, la in enumerate(layers[:n_main])]
    return n_main, out


def spec_from_header(header: GGUFHeader, *, id: str, source: str) -> ModelSpec:
    md = header.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str) or not 0 < len(arch) <= 64:
        raise ModelFormatError(f"{source}: GGUF metadata lacks general.architecture (expected a short name)")
    hp = _hyperparameters(md, arch, source)
    n_layers, hidden = hp["block_count"], hp["embedding_length"]
    heads, kv_heads = _head_layout(hp, n_layers, arch, source)
    n_heads = max(heads)
    k_dim = hp.get("attention.key_length") or (hidden // n_heads if n_heads else 0)
    v_dim = hp.get("attention.value_length") or k_dim
    window = hp.get("attention.sliding_window") or None
    pattern = hp.get("attention.sliding_window_pattern")
    kv_lora = hp.get("attention.kv_lora_rank")
    if arch in _MLA_KEYED and not (hp.get("attention.key_length_mla") and hp.get("attention.value_length_mla")):
        kv_lora = None      # converted before PR #12801: ordinary K/V heads in every build (runtimes/llamacpp_layout)
    rope_dim = hp.get("rope.dimension_count")

    swa_layers: list[bool]
    if not window:
        swa_layers = [False] * n_layers
    elif isinstance(pattern, list):          # explicit per-layer flags (newer converters)
        swa_layers = pattern
    elif isinstance(pattern, int):
        swa_layers = [(il % pattern) < pattern - 1 for il in range(n_layers)]
    elif arch in _SWA_PATTERN:
        p = _SWA_PATTERN[arch]
        swa_layers = [(il % p) < p - 1 for il in range(n_layers)]
    else:
        swa_layers = [False] * n_layers

    d_inner, d_state, d_conv = hp.get("ssm.inner_size"), hp.get("ssm.state_size"), hp.get("ssm.conv_kernel")
    n_group = hp.get("ssm.group_count", 0)
    n_experts = hp.get("expert_count", 0)
    used = hp.get("expert_used_count", 0)
    n_used = max(used) if isinstance(used, list) else used

    layers = []
    for il in range(n_layers):
        attention = recurrent = None
        if kv_lora:
            # MLA as llama.cpp caches it: one latent head of kv_lora_rank + rope dims (src/llama-model.cpp, deepseek2)
            attention = AttentionSpec("mla", 1, kv_lora + (rope_dim or 0), kv_lora)
        elif kv_heads[il] > 0 and heads[il] > 0:
            attention = (AttentionSpec("sliding", kv_heads[il], k_dim, v_dim, window) if swa_layers[il]
                         else AttentionSpec("full", kv_heads[il], k_dim, v_dim, None))
        ffn_only = arch in _FFN_LAYER_HYBRIDS and isinstance(ff := hp.get("feed_forward_length"), list) and ff[il] > 0
        if d_inner and d_state and (attention is None or arch in ("falcon-h1",)) and not ffn_only:
            # llama.cpp hparams.n_embd_r()/n_embd_s(): conv and SSM state per sequence
            recurrent = RecurrentSpec((d_conv - 1) * (d_inner + 2 * n_group * d_state) if d_conv else 0, d_state * d_inner)
        layers.append(LayerSpec(attention, recurrent, moe=bool(n_experts)))
    if arch in _DELTA_NET:
        n_layers, layers = _delta_net_layers(md, hp, arch, layers, source)

    tokens = md.get(_VOCAB_KEY)
    vocab = tokens.length if isinstance(tokens, ArrayInfo) else len(tokens) if isinstance(tokens, list) else 0
    embd = next((t for t in header.tensors if t.role == "embed"), None)
    if embd is not None and embd.shape:
        vocab = embd.shape[0]
    file_type = md.get("general.file_type")
    return check_spec(ModelSpec(
        id=id,
        architecture=arch,
        family=arch,
        hidden_size=hidden,
        n_layers=n_layers,
        n_heads=n_heads,
        vocab_size=vocab,
        layers=tuple(layers),
        tensors=tuple(header.tensors),
        intermediate_size=ff if isinstance(ff := hp.get("feed_forward_length"), int) and ff else None,
        max_position_embeddings=hp.get("context_length"),
        tie_word_embeddings=not any(t.role == "lm_head" for t in header.tensors),
        n_experts=n_experts,
        n_experts_active=n_used,
        source=source,
        repo_id=url if isinstance(url := md.get("general.base_model.0.repo_url"), str) and url else None,
        file_quant=FILE_TYPES.get(file_type, f"type{file_type}") if isinstance(file_type, int) else None,
        notes=(f"GGUF v{header.version}, {len(header.tensors)} tensors, header {header.data_offset:,} bytes",),
    ))


# The largest split GGUFs published are tens of parts (DeepSeek-V3 at BF16: 30 parts of ~45 GB);
# llama.cpp stores split.count as a u16.
MAX_SPLITS = 1024
_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")


def split_names(name: str, *, where: str | None = None, max_parts: int = MAX_SPLITS) -> list[str]:
    """'x-00001-of-00003.gguf' → the names of all three parts; any other name → [name]. ``where`` names the file
    in the error (its path or URL); ``max_parts``: a reader may bound the parts tighter (each one a request)."""
    m = _SPLIT.match(name)
    if not m:
        return [name]
    i, n = int(m.group("i")), int(m.group("n"))
    if not 1 <= i <= n <= max_parts:
        raise ModelFormatError(f"{where or name}: split name says part {i} of {n} (expected part 1 … N "
                               f"of N parts, N from 1 to {max_parts})")
    return [f"{m.group('stem')}-{k:05d}-of-{n:05d}.gguf" for k in range(1, n + 1)]


def split_siblings(path: Path) -> list[Path]:
    """'x-00001-of-00003.gguf' → all three parts (they must exist); any other name → [path]."""
    names = split_names(path.name, where=str(path))
    if len(names) == 1 and names[0] == path.name:
        return [path]
    parts = [path.with_name(n) for n in names]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise ModelNotFoundError(f"{path}: split GGUF is missing part(s) {', '.join(missing)}")
    return parts


def merge_split_headers(headers: list[GGUFHeader]) -> GGUFHeader:
    """Split files carry the metadata in the first part and tensors spread over all parts."""
    if not headers:
        raise ModelFormatError("a split GGUF of 0 parts (expected a name like x-00001-of-00003.gguf)")
    first = headers[0]
    tensors = [t for h in headers for t in h.tensors]
    return GGUFHeader(first.version, first.metadata, tensors, first.data_offset,
                      sum(h.header_bytes for h in headers), first.little_endian)


def read_gguf(path: str | Path) -> ModelSpec:
    p = Path(path)
    parts = split_siblings(p)
    header = merge_split_headers([read_local_header(part) for part in parts])
    return spec_from_header(header, id=p.name, source=str(p))
