"""Why a llama.cpp prompt on an NVIDIA unified-memory chip (the speed model's soc/cuda class: DGX Spark / GB10) is not
predicted (review22 finding 7).

The GB10's tensor figures are set from NVIDIA's own (devices.json dgx-spark: 48 SMs at the 2.52 GHz its 31 TFLOPS FP32
implies, at the RTX 50 per-SM rates: 61.9 fp16 / 247.7 int8, 8 × fp8 = NVIDIA's 1 PFLOP FP4 sparse). No prompt record
of the class is fitted (speed_fit.json has no soc/cuda entry), so a plan would price the prompt at the all-device
entry's share of the fp16 peak. Scored once, after the figures were set, against llama.cpp's own Spark measurements
(benches/dgx-spark.md at 4c7e9893, build b6918; held out in measurements/speed/held_out/round9.jsonl), that figure
was 71–89 % low at a 2,048-token prompt: gpt-oss-120b 215.5 against 1,937.5 t/s, gpt-oss-20b 1,081.2 against 3,782.8,
Qwen3-30B-A3B Q8_0 758.4 against 3,175.6 (measurements/speed/held_out/gb10_prefill_first_run.txt). So the plan says why
no figure is given, as it does for the Vulkan MoE prompt, until a soc/cuda prompt share is fitted on tuning rows of its
own and scored on a round held out from it.
"""

from __future__ import annotations

# the share the class would borrow is the all-device entry's ("*"); the held-out check above failed it
SOC_CUDA_PROMPT_APPLIED = False


def soc_cuda_gap(dev, klass: str, fitted: bool) -> str | None:
    """The reason a prompt on an NVIDIA chip of the soc class is not predicted where soc/cuda has no fitted entry
    (``fitted``); None elsewhere. Every runtime: vLLM, SGLang and transformers borrow llama.cpp's rate on the card,
    the figure that failed the check."""
    if SOC_CUDA_PROMPT_APPLIED or klass != "soc" or fitted or dev is None or (dev.vendor or "").lower() != "nvidia":
        return None
    why = f"not predicted on the {dev.name}: no prompt records of a CUDA unified-memory chip are fitted"
    if not dev.fp16_tflops:
        return why + ", and the catalog has no tensor figures for it (NVIDIA quotes sparse FP4/FP8 or TOPS only)"
    return (why + ", and for llama.cpp the all-device share of its spec tensor figures scored 71–89 % below its own "
            "pp2048 on a DGX Spark (benches/dgx-spark.md, b6918: gpt-oss-120b 1,937.5, gpt-oss-20b 3,782.8, "
            "Qwen3-30B-A3B Q8_0 3,175.6 t/s; hardware/soc_prompt.py)")
