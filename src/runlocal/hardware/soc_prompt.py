"""A llama.cpp prompt on an NVIDIA unified-memory chip (the speed model's soc/cuda class: DGX Spark / GB10): where a plan
prices it from the soc/cuda fit entry, and where it says why not.

History. The GB10's tensor figures are set from NVIDIA's own (devices.json dgx-spark: 48 SMs at the 2.52 GHz its 31 TFLOPS
FP32 implies, at the RTX 50 per-SM rates: 61.9 fp16 / 247.7 int8). Session 22 (review22 finding 7) priced the prompt
at the all-device entry's share of that peak and scored it once against llama.cpp's own Spark table: 71–89 % low
(measurements/speed/held_out/gb10_prefill_first_run.txt), so no figure was given.

Session 23 (rule measurements/speed/held_out/spark_queries.md, committed before any query) fitted the soc/cuda entry's
quantized-weight prompt share on that table's rows (measurements/speed/spark_2026.jsonl: llama.cpp benches/dgx-spark.md
at 4c7e9893, build b6918, five models at depth 0 — gpt-oss-20b / 120b MXFP4, Qwen3-Coder-30B-A3B and Qwen2.5-Coder-7B
Q8_0, gemma-3-4b Q4_0): 0.533 of the 61.9 TFLOPS fp16 peak the catalog gives the class (speed.published_peak), in
sample 3.3 % MdAPE at depth 0 (p90 28.3 %: Qwen3-Coder-30B +27.2 %, gemma-3-4b −24.6 %), 9.1 % over its 19 rows at
depth (their attention the FA term's, its share fitted on other cards), leave-one-model-out 5.3 %
(evidence/speed_fit_spark.py). The held-out round (held_out/spark.jsonl) found one source only, the table author's own
b6767 run: scored once (held_out/spark_first_run.txt), 7.9 % MdAPE over its 4 gpt-oss-20b rows (+7.1 … +10.3 %), too few
sources to judge by the rule's pass. Under the threshold its amendment 1 fixed before the score (≤ 25 %), so plans apply
the share, saying it is unvalidated (soc_cuda_words, --explain).

What stays unpredicted where the entry is applied: float weights (no F16 / BF16 prompt record of the chip: its float
share would be the parent's) and runtimes other than llama.cpp / Ollama (their kernels on this chip are not llama.cpp's
and no record of theirs is fitted)."""

from __future__ import annotations

# spark_queries.md amendment 1, fixed before the score: applied (with an "unvalidated" note) only if the four held-out
# rows score MdAPE ≤ 25 % — they scored 7.9 % (held_out/spark_first_run.txt)
SOC_CUDA_PROMPT_APPLIED = True
FITTED_CC = "12.1"      # the GB10 (every DGX Spark box): the only chip of the class with tuning rows
ROUND_WORDS = ("fitted on llama.cpp's own DGX Spark table (benches/dgx-spark.md, b6918: five models at depth 0, "
               "in sample −24.6 … +27.2 %); unvalidated — its held-out round found one source, the same author's b6767 "
               "gpt-oss-20b run, 7.9 % off (measurements/speed/held_out/spark_first_run.txt)")


def soc_cuda_gap(dev, klass: str, fitted: bool, float_weights: bool = False, ggml: bool = True) -> str | None:
    """The reason a prompt on an NVIDIA chip of the soc class is not predicted; None where it is (the soc/cuda entry
    ``fitted`` and applied, quantized weights, a llama.cpp / Ollama plan) and off the class."""
    if klass != "soc" or dev is None or (dev.vendor or "").lower() != "nvidia":
        return None
    where = f"not predicted on the {dev.name}"
    if not dev.fp16_tflops:
        return (where + ": the catalog has no tensor figures for it (NVIDIA quotes sparse FP4/FP8 or TOPS only), and no "
                "prompt record of a CUDA unified-memory chip other than the DGX Spark is fitted")
    if not fitted or dev.compute_capability != FITTED_CC:
        return where + ": no prompt records of this CUDA unified-memory chip are fitted"
    if not SOC_CUDA_PROMPT_APPLIED:
        return (where + ": the soc/cuda prompt share (" + ROUND_WORDS + ") is not applied to plans "
                "(hardware/soc_prompt.py)")
    if not ggml:
        return (where + " for this runtime: its prompt kernels on this chip are not llama.cpp's, and the soc/cuda share "
                "is fitted on llama.cpp rows only")
    if float_weights:
        return (where + " for float weights: no F16 / BF16 prompt record of the chip is fitted (the soc/cuda share is "
                "fitted on quantized weights)")
    return None


def soc_cuda_words(klass: str, vendor: str | None) -> str:
    """--explain's note on what an applied soc/cuda prompt figure rests on; empty off the class."""
    if klass != "soc" or (vendor or "").lower() != "nvidia" or not SOC_CUDA_PROMPT_APPLIED:
        return ""
    return "; the soc/cuda share " + ROUND_WORDS
