"""How a llama-server build spells the options runlocal prints, so that a command runs as pasted on the build
the user named (`--runtime llama.cpp==b6000`); unversioned means the current build.

Each boundary is (the last build known to take the old spelling, the first known to take the new one); a build
between the two gets the new spelling, as runtimes/versions.py does for the defaults.
"""

from __future__ import annotations

# --n-cpu-moe N (the experts of the first N layers on the CPU): ggml-org/llama.cpp PR #15077, released in b6089
# (oobabooga/textgen issue #7178 names the release). Before it, the same placement is an -ot override.
N_CPU_MOE_BUILDS = (6088, 6089)
# --flash-attn on|off|auto: PR #15434 (opened 2025-08-19) turned the switch -fa into a value; a PR #15077 comment
# of 2025-08-07 runs the bare switch on a build with --n-cpu-moe (≥ b6089), and WasmEdge PR #4343 bumping to b6343
# reads "the type of flash attention is changed from bool to string".
FLASH_ATTN_VALUE_BUILDS = (6089, 6343)
# the tensors --n-cpu-moe keeps on the CPU (common/arg.cpp llm_ffn_exps_block_regex)
_EXPS = r"\.ffn_(up|down|gate)_exps"


def llamacpp_build(version: str | None) -> int | None:
    """'b6000' → 6000; None (the current build) → None."""
    if not version:
        return None
    digits = version.lstrip("b")
    return int(digits) if digits.isdigit() else None


def _older(build: int | None, boundary: tuple[int, int]) -> bool:
    return build is not None and build <= boundary[0]


def flash_attn_args(value: str, build: int | None) -> list[str]:
    """--flash-attn VALUE; before PR #15434 the switch -fa (on) or nothing (off was the default, auto unknown)."""
    if _older(build, FLASH_ATTN_VALUE_BUILDS):
        return ["-fa"] if value == "on" else []
    return ["--flash-attn", value]


def n_cpu_moe_args(n: int, build: int | None) -> list[str]:
    """--n-cpu-moe N; before it, the -ot override it stands for: the experts of layers 0 … N-1 on the CPU."""
    if _older(build, N_CPU_MOE_BUILDS):
        layers = "|".join(str(i) for i in range(n))
        return ["-ot", f"'blk\\.({layers}){_EXPS}=CPU'"]
    return ["--n-cpu-moe", str(n)]


__all__ = ["flash_attn_args", "llamacpp_build", "n_cpu_moe_args"]
