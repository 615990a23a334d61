"""Unsloth's dynamic GGUF quants: `-q UD-Q4_K_XL` (also `Q4_K_XL`, `UD-IQ2_XXS` …).

Unsloth picks each layer's type itself ("Dynamic 2.0 … selectively adjusts the quantization type" per layer, per model:
unsloth.ai/docs/basics/unsloth-dynamic-2.0-ggufs), and llama-quantize has no such file type: the types are in the
file only. So a GGUF file given (a path, hf://…) is planned from its own header; a model named without one is planned
as llama.cpp's own mix of the base type (the rule below), and the plan says so. Checked against Unsloth's published
sizes (tests/unit/test_unsloth_quants.py): DeepSeek-R1 (unsloth.ai/blog/deepseekr1-dynamic: UD-IQ1_S 131 GB, UD-IQ1_M
158 GB, UD-IQ2_XXS 183 GB, UD-Q2_K_XL 212 GB) and MiniMax-M2.1 (huggingface.co/unsloth/MiniMax-M2.1-GGUF discussion #7:
Q4_K_M 138 GB, Q4_K_XL 131 GB — "Our dynamic quants are actually usually smaller").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec

# The base type each Unsloth name is planned as without the file: the llama-quantize file type of the same bits
# (the _XL K-quants as llama.cpp's _M mix, Q2_K_XL as Q2_K, Q6_K_XL as Q6_K, Q8_K_XL as Q8_0; IQ names as themselves)
BASE = {"Q2_K_XL": "Q2_K", "Q3_K_XL": "Q3_K_M", "Q4_K_XL": "Q4_K_M", "Q5_K_XL": "Q5_K_M", "Q6_K_XL": "Q6_K",
        "Q8_K_XL": "Q8_0", "IQ1_S": "IQ1_S", "IQ1_M": "IQ1_M", "IQ2_XXS": "IQ2_XXS", "IQ2_M": "IQ2_M",
        "IQ3_XXS": "IQ3_XXS", "IQ4_XS": "IQ4_XS", "IQ4_NL": "IQ4_NL"}
# published size / runlocal's size of the base mix, as the test computes them (for the plan's own words)
CHECKED = ("DeepSeek-R1 UD-IQ1_S +2 %, UD-IQ1_M −6 %, UD-IQ2_XXS −5 %, UD-Q2_K_XL +15 % (Q2_K's mix above Unsloth's "
           "212 GB); MiniMax-M2.1 UD-Q4_K_XL +6 % (Q4_K_M's 138 GB against Unsloth's 131 GB)")
_NAME = re.compile(r"^(UD-)?([A-Z0-9_]+)$")


def unsloth_name(quant: str | None) -> tuple[str, str] | None:
    """(Unsloth's name, the llama.cpp type planned without the file) for `UD-…` or a `…_K_XL` name; else None (an IQ
    name without UD- is llama.cpp's own type)."""
    if not quant:
        return None
    m = _NAME.match(quant.strip().upper())
    if not m or m.group(2) not in BASE or not (m.group(1) or m.group(2).endswith("_XL")):
        return None
    return "UD-" + m.group(2), BASE[m.group(2)]


def from_its_file(spec: ModelSpec, name: str) -> bool:
    """Whether ``spec`` was read from a GGUF file (its header, ``file_bytes`` set) whose file name (or folder, for
    split files) carries this Unsloth name: then its own tensor types are planned, not the base type's mix."""
    return spec.file_bytes is not None and name.removeprefix("UD-").upper() in spec.source.upper()
