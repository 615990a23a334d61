"""vLLM on an AMD GPU: which quantization methods the named release accepts on ROCm, and whether it counts the chip
as having FP8 compute — read in each release's sdist (measurements/vllm_rocm: sha256 and the lists as read).

Where the check lives: a deny list ``rocm_not_supported_quantization`` in vllm/config.py up to 0.3.x (["awq"] in
0.2.x, ["awq", "marlin"] in 0.3.x), an allow list ``rocm_supported_quantization`` there 0.4.1 – 0.6.4, and
RocmPlatform.supported_quantization in vllm/platforms/rocm.py from 0.6.6 (Platform.verify_quantization). A method
outside it stops the engine with "{method} quantization is currently not supported in ROCm." (config.py; "in rocm."
from the platform's device_name, 0.6.6 on). The methods runlocal plans and the first release accepting each (the
read release before it lacks it):

  gptq                never refused on ROCm (in every list read; not in the 0.2.x / 0.3.x deny lists)
  fp8                 0.5.5 (0.5.4 config.py:210 lists gptq, squeezellm only)
  awq                 0.6.0 (denied 0.2.x – 0.3.x; absent 0.4.1 – 0.5.5)
  compressed-tensors  0.6.2 (0.6.1 config.py:283 lacks it)
  bitsandbytes        0.17.0 – 0.27.1 (0.16.0 rocm.py:237 lacks it; 0.28.0 rocm.py:513 dropped it)
  modelopt_fp4        0.20.0 (0.19.1 rocm.py:356 lacks it; 0.20.0 rocm.py:406 lists it) — ModelOpt's NVFP4

FP8 compute (RocmPlatform.supports_fp8, by the chip's gcnArchName): 0.8.0 – 0.19.x "gfx94", "gfx95", "gfx12"
substrings; 0.20.0 – 0.26.x on_gfx9 (gfx90a, gfx942, gfx950) or gfx12; 0.27.x on_cdna (gfx9*, gfx1250) or gfx12;
0.28.0 – 0.32.x on_cdna or RDNA4 (gfx1200, gfx1201); 0.33.0 on_cdna or on_rdna (gfx11*, gfx12*). Before 0.8.0
rocm.py has no supports_fp8: taken as 0.8.0's. AWQ runs vLLM's Triton kernels on ROCm (verify_quantization sets
VLLM_USE_TRITON_AWQ=1, every platform-era release read); GPTQ the plain GPTQ kernel (no Marlin on ROCm).
The current release is the newest read, 0.33.0 (versions.VLLM_READ).
"""

from __future__ import annotations

from .versions import VLLM_READ, release_text

# method → (first release accepting it on ROCm, first release refusing it again or None), with where each is read
ROCM_QUANT: dict[str, tuple[tuple[int, ...], tuple[int, ...] | None, str]] = {
    "gptq": ((0,), None, "vllm 0.4.1 config.py:128 … 0.33.0 platforms/rocm.py:668"),
    "fp8": ((0, 5, 5), None, "vllm 0.5.4 config.py:210 (without), 0.5.5 config.py:267 (with)"),
    "awq": ((0, 6, 0), None, "vllm 0.3.3 config.py:159 rocm_not_supported_quantization, 0.5.5 config.py:267 "
                             "(without), 0.6.0 config.py:278 (with)"),
    "compressed-tensors": ((0, 6, 2), None, "vllm 0.6.1 config.py:283 (without), 0.6.2 config.py:264 (with)"),
    "bitsandbytes": ((0, 17, 0), (0, 28, 0), "vllm 0.16.0 platforms/rocm.py:237 (without), 0.17.0 :324 and 0.27.1 "
                                             ":495 (with), 0.28.0 :513 (without)"),
    "modelopt_fp4": ((0, 20, 0), None, "vllm 0.19.1 platforms/rocm.py:356 (without), 0.20.0 :406 (with)"),
}
PLATFORM_FROM = (0, 6, 6)        # RocmPlatform.supported_quantization (device_name "rocm"); config.py's "ROCm" before
# (first release, gcnArchName substrings RocmPlatform.supports_fp8 accepts, where read)
FP8_TARGETS: tuple[tuple[tuple[int, ...], tuple[str, ...], str], ...] = (
    ((0,), ("gfx94", "gfx95", "gfx12"), "vllm 0.8.0 platforms/rocm.py:236 (no supports_fp8 before: taken as 0.8.0's)"),
    ((0, 20, 0), ("gfx90a", "gfx942", "gfx950", "gfx12"), "vllm 0.20.0 platforms/rocm.py:803 on_gfx9 or on_gfx12x"),
    ((0, 27, 0), ("gfx9", "gfx1250", "gfx12"), "vllm 0.27.0 platforms/rocm.py:920 on_cdna or on_gfx12x"),
    ((0, 28, 0), ("gfx9", "gfx1250", "gfx1200", "gfx1201"), "vllm 0.28.0 platforms/rocm.py:972 on_cdna or on_rdna4"),
    ((0, 33, 0), ("gfx9", "gfx1250", "gfx11", "gfx12"), "vllm 0.33.0 platforms/rocm.py:1255 on_cdna or on_rdna"),
)


def rocm_method(quant: str) -> str | None:
    """The quant_method vLLM verifies for weights planned in ``quant`` (runlocal's quant key), or None."""
    q = quant.lower()
    if q == "modelopt-nvfp4":
        return "modelopt_fp4"
    if q in ("ct-nvfp4", "fp8-channel", "w4a16"):
        return "compressed-tensors"
    if q in ("nf4", "fp4"):          # vLLM's in-flight bitsandbytes (published.vllm_bnb_at_load)
        return "bitsandbytes"
    return next((m for m in ("awq", "gptq", "fp8") if q.startswith(m)), None)


def accepted(method: str, release: tuple[int, ...]) -> bool:
    first, until, _ = ROCM_QUANT[method]
    return release >= first and (until is None or release < until)


def fp8_compute(gfx: str, release: tuple[int, ...]) -> tuple[bool, str]:
    """(RocmPlatform.supports_fp8 for this chip at this release, where read)."""
    targets, where = [(t, w) for first, t, w in FP8_TARGETS if release >= first][-1]
    return any(t in gfx for t in targets), where


def rocm_kernel_check(quant: str, gfx: str, release: tuple[int, ...] | None = None) -> tuple[str | None, str | None]:
    """(vLLM's refusal, a note) for weights in ``quant`` on an AMD GPU of ROCm target ``gfx`` at vLLM ``release``
    (None: the current release, the newest read)."""
    key = (release or VLLM_READ[1]) + (0, 0, 0)
    key, text = key[:3], release_text(release or VLLM_READ[1])
    method = rocm_method(quant)
    if method is not None and not accepted(method, key):
        first, until, where = ROCM_QUANT[method]
        words = "ROCm" if key < PLATFORM_FROM else "rocm"
        span = (f"accepted from {release_text(first)} until {release_text(until)} dropped it" if until else
                f"accepted from vLLM {release_text(first)}")
        return (f"{quant} weights ({method}) are refused by vLLM {text} on ROCm: \"{method} quantization is currently "
                f"not supported in {words}.\" ({span}; {where})"), None
    if method is not None and (method == "modelopt_fp4" or quant.lower() == "ct-nvfp4"):
        return None, (f"NVFP4 weights ({quant}) on ROCm: {method} accepted by vLLM {text} (from "
                      f"{release_text(ROCM_QUANT[method][0])}); no FP4 GEMM on {gfx}: the Linears run vLLM's emulation "
                      "(0.33.0 kernels/linear/__init__.py:610, EmulationNvFp4LinearKernel, the only NVFP4 kernel for "
                      "ROCm: dequantized to bf16 at each matmul) — the bytes as stored, far slower than FP4 compute")
    if method == "awq":
        return None, ("AWQ on ROCm runs vLLM's Triton AWQ kernels (verify_quantization sets VLLM_USE_TRITON_AWQ=1; no "
                      "Marlin on ROCm) — the same bytes, slower than on a CUDA GPU")
    if method == "gptq":
        return None, ("GPTQ on ROCm runs the plain GPTQ kernel (no Marlin on ROCm: the list's gptq_marlin, 0.14 – 0.24, "
                      "\"will be overwritten with gptq\") — the same bytes")
    if method in ("fp8", "compressed-tensors") and quant.lower().startswith("fp8"):
        has, where = fp8_compute(gfx, key)
        if not has:
            return None, (f"FP8 weights on {gfx}: vLLM {text}'s ROCm FP8 compute (supports_fp8, {where}) does not "
                          "count this chip; not checked further here")
    return None, None


__all__ = ["FP8_TARGETS", "ROCM_QUANT", "accepted", "fp8_compute", "rocm_kernel_check", "rocm_method"]
