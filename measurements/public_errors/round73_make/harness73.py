"""Round 73's fixtures beyond round 63's ``harness.py`` (which it re-exports: ``tiny_gguf``, ``tiny_hf``, ``ENVSETUP``):
a zero LoRA adapter GGUF for the tiny llama layout, and a ~420 MB F32 GGUF of that layout."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "round63_make"))
from harness import ENVSETUP, tiny_gguf, tiny_hf  # noqa: E402,F401


def big_gguf(path: Path) -> int:
    """The tiny llama layout at n_embd 1024, 4 layers, vocabulary 32,000, F32: about 420 MB of zero weights
    (token_embd and output 2 x 131 MB, each layer 40 MB)."""
    return tiny_gguf(path, n_layer=4, n_embd=1024)


def lora_gguf(path: Path, n_layer: int = 2, n_embd: int = 256, rank: int = 2048) -> int:
    """A zero LoRA adapter GGUF for ``tiny_gguf``'s layout (general.type adapter, adapter.type lora): lora_a
    [n_in, rank] and lora_b [rank, n_out] in ggml order for each layer's attention q, k, v and output — the shapes
    llama.cpp's adapter loader (llama-adapter.cpp) checks against the base model's tensors."""
    from gguf import GGMLQuantizationType as QT

    from runlocal.evidence.zero_gguf import write_zero_gguf
    kv = {"general.name": "tiny-lora", "general.type": "adapter", "adapter.type": "lora",
          "adapter.lora.alpha": 16.0}
    tensors = []
    for i in range(n_layer):
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensors += [(f"blk.{i}.{t}.weight.lora_a", [n_embd, rank], QT.F32),
                        (f"blk.{i}.{t}.weight.lora_b", [rank, n_embd], QT.F32)]
    return write_zero_gguf(path, "llama", kv, tensors)
