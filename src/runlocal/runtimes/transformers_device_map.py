"""from_pretrained's device_map strings and the max_memory each hands to infer_auto_device_map.

Read in transformers 5.23.0 (PyPI wheel, sha256 in measurements/transformers_versions/wheels.txt)
integrations/accelerate.py and, before 5.0, transformers 4.35.2 modeling_utils.py with accelerate's utils/modeling.py
(0.20.3 wheel; huggingface/accelerate v0.21.0 and 16cb6eb):
- a string other than "auto", "balanced", "balanced_low_0", "sequential" is a device name: {"": device}
  (5.23.0 check_and_set_device_map :115; 4.35.2 modeling_utils.py:2642) — runlocal plans "cuda", every module on
  GPU 0 (runtimes/transformers.py).
- "auto", "balanced", "balanced_low_0": get_balanced_memory(…, low_zero=(device_map == "balanced_low_0")); only
  "sequential" skips it for get_max_memory alone (5.23.0 _get_device_map :353-362; 4.35.2 modeling_utils.py:3395-3403).
  So "auto" and "balanced" are the same placement.
- get_balanced_memory, one GPU: low_zero is dropped and the GPU gets 90 % of its free memory (5.23.0 :285-292);
  several GPUs: per_gpu = the model's bytes // (n − 1 if low_zero else n) + 1.25 × the largest no-split block or leaf,
  and every GPU but the last is capped at it — GPU 0 under low_zero at its own free memory (:300-331); then, under
  low_zero, GPU 0 gets min(its free memory, max(0, model − Σ GPUs 1 … n−1)) (:333-335): only what the others cannot
  hold, so GPU 0 is left for generate's work.
- "sequential": get_max_memory's figures as they are — every GPU its whole free memory (no 90 % on one GPU), RAM at
  get_max_memory's share — and infer_auto_device_map fills GPU 0 first, then GPU 1 … (5.23.0 :362, :237).
- accelerate before 0.21.0 (transformers before 5.0 calls the installed accelerate's): low_zero on one GPU divides by
  zero (per_gpu = size // (1 − 1)), and on several the cap loop sets GPU 0 to min(0, …) = 0 before min_zero reads it
  (0.20.3 utils/modeling.py:588, :632-636); fixed in 0.21.0 (accelerate #1617 "Ignore low_zero option when only
  device is available", #1634 "fix modeling low zero"). runlocal refuses that pair as an input error rather than plan
  a crash.
"""

from __future__ import annotations

from ..errors import InputError
from .base import Step

DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential", "cuda")
BALANCED = ("auto", "balanced", "balanced_low_0")     # get_balanced_memory's three
LOW_ZERO_FIXED = (0, 21, 0)                             # accelerate #1617, #1634
SOURCE = "transformers 5.23.0 integrations/accelerate.py"


def refuse_low_zero(device_map: str, accelerate: tuple[int, ...] | None) -> None:
    """InputError for balanced_low_0 where the accelerate release whose get_balanced_memory runs (None: transformers'
    own, 5.0 on, or a release from 0.21.0) has the low_zero bugs."""
    if device_map == "balanced_low_0" and accelerate is not None and accelerate < LOW_ZERO_FIXED:
        shown = ".".join(str(x) for x in accelerate)
        raise InputError(f"device-map: balanced_low_0 with accelerate {shown} does not load: its get_balanced_memory "
                         "divides by zero on one GPU and gives GPU 0 no memory on several (utils/modeling.py, fixed in "
                         "0.21.0 by accelerate #1617 and #1634); plan --accelerate 0.21.0 or later, or --device-map "
                         "auto, balanced or sequential")


def balanced_memory(mm: dict[str, float], device_map: str, total: float, biggest: float, leaf_buffer: float,
                    shares: tuple[float, float, str], user_set: bool) -> list[Step]:
    """get_balanced_memory's changes to get_max_memory's figures ``mm`` (device → bytes; GPUs "0", "1" …) in place,
    for ``device_map`` ("sequential": none), with the model's ``total`` placement bytes and its ``biggest`` no-split
    block or leaf; the steps that say so."""
    gpu_share, cpu_share, source = shares
    gpus = sorted((k for k in mm if k.isdigit() and mm[k] > 0), key=int)
    if device_map not in BALANCED:
        if gpus:
            return [Step("max_memory (sequential)", "get_max_memory alone: every GPU its whole free memory (after the "
                         "CUDA context), filled from GPU 0 on", _fmt(mm), f"{SOURCE} _get_device_map")]
        return []
    if len(gpus) == 1:
        if user_set:
            return []
        mm[gpus[0]] *= gpu_share
        return [Step("max_memory", f"one GPU: {gpu_share:.0%} of its free memory (after the CUDA context), "
                     f"{cpu_share:.0%} of available RAM" + ("; low_zero dropped" if device_map == "balanced_low_0"
                                                            else ""), _fmt(mm), source)]
    if len(gpus) < 2:
        return []
    low_zero = device_map == "balanced_low_0"
    per_gpu = total // (len(gpus) - 1 if low_zero else len(gpus)) + int(leaf_buffer * biggest)
    for k in gpus[:-1]:
        mm[k] = min(mm["0"] if low_zero and k == "0" else per_gpu, mm[k])
    how = (f"GPUs but the last: min(free, {total:,.0f} / {len(gpus) - int(low_zero)} + {leaf_buffer} × largest block "
           f"{biggest:,.0f})")
    if low_zero:
        others = sum(mm.get(str(i), 0.0) for i in range(1, len(gpus)))
        mm["0"] = min(max(0.0, total - others), mm["0"])
        how += f"; GPU 0 only what GPUs 1 … {len(gpus) - 1} cannot hold: max(0, {total:,.0f} − {others:,.0f})"
    return [Step("max_memory (balanced_low_0)" if low_zero else "max_memory (balanced)", how, _fmt(mm),
                 f"{SOURCE} get_balanced_memory")]


def _fmt(mm: dict[str, float]) -> str:
    return ", ".join(f"{k}: {v / 2**30:.2f} GiB" for k, v in mm.items())


__all__ = ["BALANCED", "DEVICE_MAPS", "balanced_memory", "refuse_low_zero"]
