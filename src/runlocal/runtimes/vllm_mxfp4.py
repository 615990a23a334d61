"""vLLM's MXFP4 MoE weights on one rank (gpt-oss): the padding its kernel needs, per GPU, and the bytes it allocates
against the bytes the checkpoint stores (vllm/model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights).
Split out of runtimes/vllm.py, which uses it for the weights line and its explanation."""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..units import round_up

# Blackwell data-centre parts (compute capability 10.x): FlashInfer's MXFP4 MoE backend. Every other
# CUDA GPU runs gpt-oss's experts on Marlin, as both raw H100 logs show (issue #23278: 65.97 GiB loaded for
# gpt-oss-120b, Marlin's padding gives 65.90; #27508's KV memory follows from it); RTX 50 (12.x) is outside
# triton_kernels' 9.0–11.0 range. Hopper builds that pick triton_kernels swizzle instead of padding: llm-d's
# late-2025 table shows 64.38 GiB (benchmarks/accuracy_vllm.py record 18, a known miss of 2.4 %).
_SM100 = ("B100", "B200", "B300", "GB200", "GB300")


def mxfp4_padding(gpu_name: str) -> tuple[int, int, str]:
    """(intermediate multiple, hidden multiple, backend) of vLLM's MXFP4 MoE weights on this GPU
    (vllm/model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights: Marlin needs
    n % 256 and k % 128, so intermediate → multiple of 128 and hidden → 256; FlashInfer on SM100 pads
    both to 256)."""
    if any(tag in gpu_name.upper() for tag in _SM100):
        return 256, 256, "FlashInfer (SM100)"
    return 128, 256, "Marlin"


def mxfp4_expert_bytes(model: ModelSpec, tp: int, gpu_name: str) -> tuple[int, int, str] | None:
    """(bytes the checkpoint's MXFP4 experts and their biases count in the estimate, bytes vLLM allocates for
    them on one rank, backend), or None for a model without 3-D experts. vLLM allocates per layer w13
    [E, 2·I_pad, H_pad/2] u8 + scales [E, 2·I_pad, H_pad/32] + bias [E, 2·I_pad] bf16 and w2 [E, H_pad, I_pad/2]
    + scales [E, H_pad, I_pad/32] + bias [E, H_pad] bf16, where I is the intermediate size per TP rank."""
    from ..quant.formats import _mxfp4

    h = model.hidden_size
    e = model.n_experts or 0
    gate_up = [t for t in model.tensors if t.role == "expert_gate_up" and len(t.shape) == 3]
    if not e or not gate_up:
        return None
    i_mult, h_mult, backend = mxfp4_padding(gpu_name)
    stored = allocated = 0
    for t in gate_up:
        inter = t.numel // (e * h * 2)
        i_pad = round_up(-(-inter // tp), i_mult)
        h_pad = round_up(h, h_mult)
        w13 = e * 2 * i_pad * (h_pad // 2 + h_pad // 32 + 2)
        w2 = e * h_pad * (i_pad // 2 + i_pad // 32 + 2)
        allocated += w13 + w2
    for t in model.tensors:
        if t.role.startswith("expert_"):
            stored += _mxfp4(t)
        elif t.role == "bias" and ".experts." in t.name:
            stored += t.numel * 2
    return stored, allocated, backend


__all__ = ["mxfp4_expert_bytes", "mxfp4_padding"]
