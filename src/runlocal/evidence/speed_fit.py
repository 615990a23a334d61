"""Speed model vs public measurements: decode and prefill tokens/s per record, error per device class.

Reads measurements/speed/*.jsonl (llama-bench results from public tables, each record with its
source_url), predicts every record with runlocal.hardware.speed, and prints predicted vs measured,
the median absolute % error per device class for decode (tg) and prefill (pp), and the same error
leave-one-device-out: each device's records predicted from constants fitted without that device.

Target: median absolute decode error <= 15% in every device class.

The tables are printed by runlocal.evidence.speed_report (python benchmarks/speed_accuracy.py [--fit|--write|--quiet]).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, fields
from functools import cache

from runlocal.hardware import recurrent_speed as RS
from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.hardware import ubatch_speed as UB
from runlocal.hardware.backend_speed import fits_parent, moe_prefill_gap
from runlocal.hardware.catalog import Device, find_device
from runlocal.hardware.nvidia_peak import prompt_matmul_type, tensor_core_gap, watts_per_tops
from runlocal.kv import kv_bytes
from runlocal.model.catalog import lookup
from runlocal.plan import estimate

from ..hardware.build_era import FA_KV_FACTOR, prefill_entry
from . import MEASUREMENTS
from .speed_fit_era import arch_prefill_entries, era_consts, fa_read, fit_decode_fa, split_eras
from .speed_fit_fa import FA_EFF_START, at_depth, attn_at_factor, fa_priced, fa_seconds, fa_term, fit_fa_eff
from .speed_fit_knees import apply_knees, fit_power_knees, knee_floors

DATA = MEASUREMENTS / "speed"
DECODE_TARGET = 0.15
# A class or class/backend gets constants of its own only with this much data; otherwise it inherits its parent's
# (class → all devices): three decode constants from a handful of records would fit noise. A prefill efficiency
# is one constant and is fitted from two records or more.
MIN_DEVICES = 2
MIN_RECORDS = 6


# fit scopes whose records no entry of this fit reads: "recurrent" fits the recurrent-layer terms only
# (speed_fit_hybrid.py); "scored_apart" fits nothing (a refit that failed its held-out round, kept as evidence:
# speed_fit_history.report_scored_apart); "fa_pair" fits nothing either: a flash-attention off / on pair scored as a
# ratio by speed_fit_faoff.py (faoff_2026.jsonl)
UNFITTED_SCOPES = ("recurrent", "scored_apart", "fa_pair", "moe_prefill")


def load_records(include_outliers: bool = False, holdout: bool | None = False, scope: str | None = None) -> list[dict]:
    """Records of measurements/speed; ``holdout``: False → the fitted ones, True → the held-out ones
    (partial offload, never fitted), None → all; ``scope``: one of UNFITTED_SCOPES → only that scope's records
    (otherwise they are left out)."""
    recs = []
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                r["_file"] = path.name
                if not (r.get("fit_scope") == scope if scope else r.get("fit_scope") not in UNFITTED_SCOPES):
                    continue
                if (include_outliers or not r.get("outlier")) and (holdout is None or bool(r.get("holdout")) == holdout):
                    recs.append(r)
    if holdout is False and scope is None:
        recs += round_tuning_records()
    return recs


# held-out rounds scored once whose records of some devices are tuning data since; they fit their class/backend entry
# only (as "fit_scope": "backend"): round 7's Radeon 8060S rows (PR #18280, scored in session 14), with the strixhalo
# round's tuning part (strixhalo_2026.jsonl, rule held_out/strixhalo_queries.md) since session 15
ROUND_TUNING_DEVICES = {"round7": ("ryzen-ai-max-395-128gb", "ryzen-ai-max-395-64gb")}


def round_tuning_records() -> list[dict]:
    return [{**r, "fit_scope": "backend"} for name, devices in ROUND_TUNING_DEVICES.items()
            for r in load_held_out(name) if r["device"] in devices and not r.get("outlier")]


def predict_via_plan(rec: dict) -> float | None:
    """Decode tokens/s the CLI reports for this record's setup: make_plan on the catalog GPU and a RAM target
    at the record's RAM bandwidth, with its -ngl / --n-cpu-moe, a short context (a chat turn)."""
    from runlocal.plan import make_plan
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.options import LlamaCppOptions

    dev, ram = find_device(rec["device"]), find_device(rec["ram_device"])
    targets = [Target(dev.name, "gpu", dev.memory_bytes, dev.bandwidth_gbs, dev.memory_bytes),
               Target("CPU RAM", "cpu", int(rec.get("ram_gib", 64) * 2**30), ram.bandwidth_gbs)]
    settings = Settings(ctx=512, quant=rec["quant"], llamacpp=LlamaCppOptions(n_gpu_layers=rec.get("n_gpu_layers"),
                                                                              n_cpu_moe=rec.get("n_cpu_moe", 0)))
    return make_plan(record_model(rec["model"]), settings, targets, with_fixes=False).speed["decode_tokens_per_s"]


def parse_test(test: str) -> tuple[str, int, int]:
    """'tg128' → ('tg', 128, 0); 'pp2048@d4096' → ('pp', 2048, 4096)."""
    m = re.fullmatch(r"(tg|pp)(\d+)(?:@d(\d+))?", test)
    if not m:
        raise ValueError(f"unknown test {test!r}")
    return m.group(1), int(m.group(2)), int(m.group(3) or 0)


@cache
def record_model(alias: str):
    return lookup(alias)


@cache
def _weights(alias: str, quant: str) -> float:
    return float(estimate(record_model(alias), quant).total)


@dataclass
class Row:
    rec: dict
    device: Device
    klass: str
    backend: str
    kind: str                 # "tg" | "pp"
    measured: float
    n_devices: int
    quant: str
    n_layers: int = 0
    w_read: float = 0.0       # decode: weight bytes read per token (all devices)
    kv_read: float = 0.0      # decode: KV bytes read per token
    mm_flops: float = 0.0     # prefill: matmul FLOPs per token
    attn_flops: float = 0.0   # prefill: attention FLOPs per token (average over the prompt)
    peak: float | None = None  # prefill: the datasheet peak TFLOPS/TOPS it is measured against
    cores: int | None = None   # Apple M3+ (no datasheet peak): the GPU cores its peak is cores × a fitted rate of
    gen: str | None = None     # … this chip generation ("m3")
    variant: str | None = None  # SYCL on Intel: "<arch>[-dmmv]" (speed.backend_variant)
    n_experts: int = 0          # a mixture of experts: its prefill is not predicted on some backends (backend_speed)
    ubatch: int = TW.UBATCH      # prefill: the micro-batch it ran at (hardware/ubatch_speed.py)
    fa: bool = False            # flash attention on: "fa": 1 as published (llama-bench's default was off until b9437)
    #                             or "flash_attn": true (the own runs, measurements/speed/h100_bench.py)
    attn_products: tuple[float, float] = (0.0, 0.0)   # prefill: its Q·Kᵀ and softmax·V FLOPs (flash-attention term)
    extra_layers: float = 0.0   # decode: the recurrent layers' extra kernels as layers (hardware/recurrent_speed.py)
    scan_s: float = 0.0         # prefill: seconds a prompt token's recurrent scan takes (hardware/recurrent_speed.py)

    @property
    def base_key(self) -> str:
        return f"{self.klass}/{self.backend}"

    @property
    def key(self) -> str:
        return f"{self.base_key}:{self.variant}" if self.variant else self.base_key

    @property
    def default_path(self) -> bool:
        """The kernel path a plan assumes (speed.backend_variant's default): not a decode with the SYCL reorder off."""
        return not (self.variant or "").endswith("-dmmv")


def record_build(rec: dict) -> int | None:
    """The llama.cpp build number a speed record's "build" names ("b7946", "137435ff (8192)"); None where it names none
    (its graph is then counted at the modelled build)."""
    m = re.search(r"(?:\bb|\()(\d{4,5})\b", str(rec.get("build", "")))
    return int(m.group(1)) if m else None


def recurrent_build(rec: dict) -> int | None:
    """The build a record's recurrent state passes are counted at: the one it names, else — for a record published
    before CUDA / HIP's delta-net cache fusion was merged (RS.CUDA_GDN_CACHE_MERGED) — the last build without it, which
    its build is no newer than (every gate in recurrent_speed.py then reads it as before the fusion)."""
    build = record_build(rec)
    if build is None and str(rec.get("date", "9999")) < RS.CUDA_GDN_CACHE_MERGED:
        return RS.CUDA_GDN_CACHE_BUILDS[0]
    return build


def build_rows(recs: list[dict]) -> list[Row]:
    rows = []
    for r in recs:
        dev = find_device(r["device"])
        model = record_model(r["model"])
        kind, n, depth = parse_test(r["test"])
        wbytes = r["model_gib"] * 2**30 if r.get("model_gib") else _weights(r["model"], r["quant"])
        row = Row(r, dev, S.device_class(dev), r["backend"], kind, r["tokens_per_s"], r.get("n_devices", 1),
                  r["quant"], model.n_layers,
                  variant=S.backend_variant(dev, r["backend"], decode=kind == "tg", reorder=r.get("sycl_reorder", True)),
                  n_experts=model.n_experts)
        if kind == "tg":
            # the recurrent state as the record's build and backend move it (its "gdn_path"; plans: the fused graph)
            row.w_read = wbytes * TW.read_fraction(model, r["quant"]) + RS.recurrent_state_traffic(
                model, r.get("gdn_path", RS.PLANNED_GDN_PATH), r["backend"], recurrent_build(r))
            row.extra_layers = (RS.extra_layers(model, r.get("gdn_path", RS.PLANNED_GDN_PATH))
                                if r["backend"] != "cpu" else 0.0)
            row.kv_read = kv_bytes(model, depth + n // 2)
        else:
            # routed experts on CUDA: their MMQ tiles padded (backend_speed.expert_tile_factor) at the record's micro-batch
            ubatch = min(n, int(r.get("n_ubatch") or TW.UBATCH))
            row.mm_flops = TW.prefill_matmul_flops(model, dev, r["quant"], r["backend"], ubatch, r.get("vk_coopmat2"))
            row.ubatch = ubatch
            row.attn_flops = TW.attention_flops_per_token(model, depth + n / 2)
            row.attn_products = TW.attention_product_flops(model, depth + n / 2)
            row.fa = r.get("fa") == 1 or r.get("flash_attn") is True
            # the weights as the prompt's matmuls see them: F16 where ggml-cuda's MMQ rule sends the batch to cuBLAS
            row.quant = prompt_matmul_type(r["quant"], True, dev, r["backend"], ubatch) or r["quant"]
            row.peak = S.reachable_peak(dev, row.quant, r["backend"])     # Hopper: the mma.sync share (MMQ)
            row.scan_s = RS.scan_seconds(model, dev.bandwidth_gbs)
        if S.published_peak(dev, r["quant"]) is None:      # Apple M3+: scored on its cores × its generation's rate
            row.gen, row.cores = S.apple_generation(dev), r.get("gpu_cores") or dev.gpu_cores
        rows.append(row)
    return rows


# --- prediction: the formulas of runlocal.hardware.speed with explicit constants ------------------------------

def fit_for(row: Row, consts: dict[str, S.Fit]) -> S.Fit:
    return (consts.get(row.key) or consts.get(row.base_key) or consts.get(row.klass) or consts.get("*")
            or S.PRIOR)


def parent_key(key: str) -> str:
    """What a fit entry falls back to: "intel/sycl:xe2" → "intel/sycl" → "intel" → "*"."""
    if ":" in key:
        return key.split(":")[0]
    return key.split("/")[0] if "/" in key else "*"


def predict_row(row: Row, consts: dict[str, S.Fit], split_ms: float) -> float | None:
    consts = era_consts(row, consts)    # an older build's record: its own era's entry (speed_fit_era.py)
    fit = fit_for(row, consts)
    if row.kind == "tg":
        n = row.n_devices      # llama.cpp layer split: each device reads 1/n of the bytes in turn
        parts = [S.Part(row.w_read / n, row.kv_read / n, row.device.bandwidth_gbs, fit, row.n_layers / n,
                        extra_layers=row.extra_layers / n) for _ in range(n)]
        saved, S.SPLIT_OVERHEAD_MS = S.SPLIT_OVERHEAD_MS, split_ms
        try:
            return S.decode_speed(parts)
        finally:
            S.SPLIT_OVERHEAD_MS = saved
    if row.n_devices > 1 or unmodelled_prefill(row):    # pipelined prefill over a layer split is not modelled either
        return None
    fa = fa_term(row, S.FA_MMA_EFF)     # flash attention on CUDA: the MMA kernel's term (hardware/fa_prefill.py)
    return prefill_row(row, consts, fa.seconds_per_token if fa else None)


def prefill_row(row: Row, consts: dict[str, S.Fit], attn_seconds: float | None) -> float | None:
    """A prefill row's prediction with its attention at ATTN_FACTOR (``attn_seconds`` None) or priced apart at
    ``attn_seconds`` a token (the flash-attention term; 0.0: the rest of the token's time alone)."""
    consts = era_consts(row, consts)
    fit = fit_for(row, consts)
    fit = prefill_entry(row.base_key, row.device.compute_capability, consts) or fit     # hardware/build_era.py
    peak, eff = row_peak(row), S.prefill_eff(fit, row.quant)
    attn = attn_at_factor(row) if attn_seconds is None else 0.0
    speed = S.prefill_speed(flops_per_token=row.mm_flops + attn, peak_tflops=peak, eff=eff,
                            n_layers=row.n_layers, layer_us=fit.prefill_layer_us, attn_seconds=attn_seconds or 0.0)
    dev = row.device    # the micro-batch term, where it is applied (ubatch_speed.APPLIED) or scored with it on
    term = UB.plan_term(record_model(row.rec["model"]), dev, not TW.is_float_quant(row.quant), row.backend, True, row.ubatch,
                        (peak or 0.0) * (eff or 0.0) * 1e12)
    return RS.with_scan(UB.with_term(speed, term), row.scan_s)


def unmodelled_prefill(row: Row) -> bool:
    """A prefill row runlocal does not predict: a GTX 16xx's (nvidia_peak.tensor_core_gap), a mixture of experts on
    SYCL, or on ROCm where the record's build sends its experts to the per-expert fallback on an RDNA3/3.5/4
    GPU, or on CUDA where ggml-cuda's MMQ rule does (a Volta card at 64+ tokens: hardware/backend_speed.py)."""
    if row.kind != "pp":
        return False
    if tensor_core_gap(row.device, row.backend, True):      # a GTX 16xx: tensor-core kernels without tensor cores
        return True
    if not row.n_experts:
        return False
    quant = row.rec["quant"]    # the file's own types (row.quant may be the cuBLAS path's F16)
    types = TW.routed_expert_types(record_model(row.rec["model"]), quant) if row.backend == "rocm" else None
    return moe_prefill_gap(row.n_experts, row.backend, gfx_target=row.device.gfx_target, quant=quant,
                           ubatch=row.ubatch, build=record_build(row.rec), expert_types=types,
                           compute_capability=row.device.compute_capability) is not None


def row_peak(row: Row) -> float | None:
    """The datasheet peak, or for Apple M3+ the record's GPU cores × its generation's rate (S.APPLE_CORE_TFLOPS)."""
    if row.peak is not None:
        return row.peak
    rate = S.APPLE_CORE_TFLOPS.get(row.gen or "")
    return row.cores * rate if rate and row.cores else None


# --- fitting ------------------------------------------------------------------------------------------------------

def fit_decode(rows: list[Row], fallback: S.Fit | None, keep: str = "") -> tuple[float, float, float]:
    """(eff, per-layer µs, KV factor) minimising Σ(predicted/measured seconds − 1)² over single-device rows,
    t = a·W/BW + c·layers + d·KV/BW (a = 1/eff, d = KV factor/eff). A coefficient the rows cannot pin down
    (one model size → no per-layer cost; one context → no KV slope) or that comes out negative is taken
    from ``fallback`` (the all-device fit) and the rest refitted; so is every coefficient named in ``keep``."""
    import numpy as np

    bw = np.array([r.device.bandwidth_gbs * 1e9 for r in rows])
    t = np.array([1.0 / r.measured for r in rows])
    # a recurrent layer's extra kernels count as layers of fixed cost (hardware/recurrent_speed.py extra_layers)
    cols = {"a": np.array([r.w_read for r in rows]) / bw, "c": np.array([r.n_layers + r.extra_layers for r in rows]),
            "d": np.array([r.kv_read for r in rows]) / bw}
    fb = {"a": 1 / fallback.decode_eff, "c": fallback.layer_us / 1e6,
          "d": fallback.kv_factor / fallback.decode_eff} if fallback else {}
    fixed: dict[str, float] = {k: fb[k] for k in keep}
    if fallback:
        if len({(r.rec["model"], r.rec["quant"]) for r in rows}) < 2:
            fixed["c"] = fb["c"]
        kv = cols["d"] / cols["a"]
        if kv.max() - kv.min() < 0.03:
            fixed["d"] = fb["d"]
    while True:
        free = [k for k in "acd" if k not in fixed]
        target = t - sum((cols[k] * v for k, v in fixed.items()), np.zeros_like(t))
        A = np.stack([cols[k] / t for k in free], axis=1)
        sol, *_ = np.linalg.lstsq(A, target / t, rcond=None)
        coef = dict(zip(free, sol))
        neg = [k for k in free if coef[k] < 0]
        if not neg:
            break
        if neg[0] == "a" and "a" not in fb:      # a bandwidth share below zero, and no fit to fall back on
            raise ValueError("decode fit: the weight-read coefficient came out negative and no fallback fit is given")
        fixed[neg[0]] = fb.get(neg[0], 0.0)
    coef.update(fixed)
    a = coef["a"]
    return 1 / a, coef["c"] * 1e6, coef["d"] / a


def fit_memory_share(rows: list[Row], parent: S.Fit) -> float:
    """A pre-Volta memory class's one constant (backend_speed.pre_volta_decode_variant): the share of bandwidth a
    minimising Σ(predicted/measured seconds − 1)² with the parent entry's per-layer cost c and KV factor k,
    t = (W + k·KV)/(a·BW) + c·layers: closed form in 1/a, Σ x(1 − c·L/t)/t ÷ Σ (x/t)², x = (W + k·KV)/BW."""
    x = [(r.w_read + parent.kv_factor * r.kv_read) / (r.device.bandwidth_gbs * 1e9) for r in rows]
    rest = [1.0 - (r.n_layers + r.extra_layers) * parent.layer_us / 1e6 * r.measured for r in rows]
    inv = sum(xi * r.measured * ri for xi, r, ri in zip(x, rows, rest)) / sum((xi * r.measured) ** 2
                                                                                for xi, r in zip(x, rows))
    return 1.0 / inv


def prefill_rows(rows: list[Row], floats: bool) -> list[Row]:
    """The single-device prefill rows of one weight kind a prefill constant is fitted on: not CUDA's run with ``-fa 0``
    (a plan's llama.cpp default, ``-fa auto`` since PR #15434, runs flash attention; they are scored). Vulkan's prompt
    constants keep their one ``-fa 0`` row (backends_2026.jsonl's RTX 3090): they were fitted and held-out-checked
    (backends2) with it, and are fitted on every era's records, most of which do not say the setting."""
    return [r for r in rows if r.kind == "pp" and r.peak and r.n_devices == 1 and TW.is_float_quant(r.quant) == floats
            and not unmodelled_prefill(r) and not (r.rec.get("fa") == 0 and r.backend == "cuda")
            and not vulkan_moe_prompt(r)]


def vulkan_moe_prompt(r: Row) -> bool:
    """A MoE prompt row on Vulkan: priced by backend_speed.vulkan_expert_factor since session 19 and scored by
    evidence/speed_fit_moe.py, but fitted by no dense entry (it was unpredicted when those were fitted)."""
    return r.kind == "pp" and bool(r.n_experts) and r.backend == "vulkan"


def peak_seconds(r: Row) -> float:
    """Seconds a prompt token's FLOPs take at the row's peak (a prefill_rows row: it has one)."""
    assert r.peak is not None
    return (r.mm_flops + attn_at_factor(r)) / (r.peak * 1e12)


def fit_prefill(rows: list[Row], floats: bool, layer_us: float = 0.0) -> float | None:
    """Median (in log) of (seconds a token's FLOPs take at the peak) / (its measured seconds less the fixed cost of
    its layers, ``layer_us`` each) over single-device rows of one weight kind; rows the fixed cost alone explains
    are left out."""
    ratios = []
    for r in prefill_rows(rows, floats):
        left = 1.0 / r.measured - r.n_layers * layer_us / 1e6 - fa_seconds(r)
        if left > 0:
            ratios.append(peak_seconds(r) / left)
    return math.exp(statistics.median(math.log(x) for x in ratios)) if ratios else None


SHORT_PROMPT = 512                  # the prompts fit_prefill_layer_us is fitted on: pp512 or shorter, no depth
PREFILL_LAYER_US_GRID = [x / 20 for x in range(201)]     # 0 … 10 µs a layer per token


def short_prompt(r: Row) -> bool:
    """A prefill row of at most SHORT_PROMPT tokens after an empty cache."""
    _, n, depth = parse_test(r.rec["test"])
    return n <= SHORT_PROMPT and depth == 0


def fit_prefill_layer_us(rows: list[Row], fallback: float) -> float:
    """The fixed cost per layer per prompt token (Fit.prefill_layer_us) that, with the integer-quantized rows'
    efficiency refitted at each value (fit_prefill), minimises Σ log²(predicted / measured) over those rows; a
    grid from 0 (no cost below zero). Only short prompts at no depth (pp512 and shorter) fit it: across models of
    unlike size they measure it, where the prompt-length sweeps would trade it against ATTN_FACTOR's attention
    slope (fitted without it). Rows that cannot pin it — one model, or models whose layers per matmul FLOP differ by
    less than a quarter — take ``fallback`` (the parent entry's)."""
    pq = [r for r in prefill_rows(rows, False) if short_prompt(r)]
    share = [r.n_layers / r.mm_flops for r in pq]
    if len({r.rec["model"] for r in pq}) < 2 or max(share) < 1.25 * min(share):
        return fallback
    best = (float("inf"), fallback)
    for c in PREFILL_LAYER_US_GRID:
        eff = fit_prefill(pq, False, c)
        if eff is None:
            continue
        err = 0.0
        for r in pq:
            t = peak_seconds(r) / eff + r.n_layers * c / 1e6 + fa_seconds(r)
            err += math.log(t * r.measured) ** 2
        best = min(best, (err, c))
    return best[1]


def fit_core_rates(rows: list[Row], consts: dict[str, S.Fit]) -> dict[str, float]:
    """Apple M3+ (no datasheet peak): per generation, the per-core rate r (TFLOPS per GPU core) that makes
    eff × cores × r explain the single-device prefill rows of ``rows``: the median (in log) of
    measured × FLOPs per token / (eff × cores), eff being the Apple class's fitted prefill efficiency for the
    record's weights (fitted on datasheet-peak chips only, so M1/M2 anchor the units)."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.kind == "pp" and r.n_devices == 1 and r.peak is None and r.gen and r.cores:
            eff = S.prefill_eff(fit_for(r, consts), r.quant)
            left = 1.0 / r.measured - r.n_layers * fit_for(r, consts).prefill_layer_us / 1e6
            if eff and left > 0:
                ratios[r.gen].append(math.log((r.mm_flops + attn_at_factor(r)) / left
                                              / (eff * r.cores * 1e12)))
    return {g: round(math.exp(statistics.median(v)), 4) for g, v in sorted(ratios.items())}


def knee_rows(rows: list[Row]) -> dict[str, list[Row]]:
    """Per compute capability, the rows a power knee is fitted on: single-device CUDA prompt rows of short prompts
    (pp512 and shorter, no depth) on GDDR NVIDIA cards (HBM parts are left out: their records come from unlike builds
    and memory systems, so a knee there would fit those) with a datasheet peak and a board power."""
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if (r.kind == "pp" and r.n_devices == 1 and r.backend == "cuda" and r.klass == "nvidia-gddr" and r.peak
                and not backend_scoped(r) and not unmodelled_prefill(r) and short_prompt(r)
                and watts_per_tops(r.device) and r.device.compute_capability):
            out[r.device.compute_capability].append(r)
    return out


def fit_split_ms(rows: list[Row], consts: dict[str, S.Fit]) -> float:
    """Per extra device in a layer split: median of (measured − predicted without it) / (devices − 1)."""
    extra = []
    for r in rows:
        if r.kind == "tg" and r.n_devices > 1:
            p = predict_row(r, consts, 0.0)
            assert p is not None        # a decode row always has a prediction
            extra.append((1 / r.measured - 1 / p) * 1e3 / (r.n_devices - 1))
    return round(statistics.median(extra), 3) if extra else S.SPLIT_OVERHEAD_MS


def fit_attn_factor(rows: list[Row]) -> float:
    """The weight of attention FLOPs against matmul FLOPs that best explains the prompt-length sweeps:
    minimises the spread of log(measured × FLOPs) within each device/model/quant series."""
    series: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:      # a flash-attention row's attention is the term's (speed_fit_fa.py), not this factor's
        if r.kind == "pp" and r.n_devices == 1 and not backend_scoped(r) and not fa_priced(r):
            series[(r.rec["device"], r.rec["model"], r.rec["quant"], r.rec["source_url"])].append(r)
    series = {k: v for k, v in series.items() if len(v) > 1}
    best = (float("inf"), 1.0)
    for f in [x / 4 for x in range(4, 81)]:
        err = 0.0
        for rs in series.values():
            logs = [math.log(r.measured * (r.mm_flops + f * r.attn_flops)) for r in rs]
            mean = statistics.mean(logs)
            err += sum((x - mean) ** 2 for x in logs)
        best = min(best, (err, f))
    return best[1]


def backend_scoped(row: Row) -> bool:
    """A record added to measure one backend (``"fit_scope": "backend"``, measurements/speed/README.md): it fits its
    class/backend entry only, not the class, the all-device entry or the attention factor, so adding Vulkan, ROCm
    or Metal records never moves a figure of another backend."""
    return row.rec.get("fit_scope") == "backend"


def fit_all(rows: list[Row]) -> tuple[dict[str, S.Fit], float]:
    """Constants for "*" (all devices), every class and every class/backend in ``rows``; the split overhead."""
    single = [r for r in rows if r.n_devices == 1]
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in single:
        groups[r.key].append(r)
        # a variant's rows on the default path also fit its backend entry (not a pre-Volta memory class's)
        if r.variant and r.default_path and fits_parent(r.variant):
            groups[r.base_key].append(r)
        if not backend_scoped(r):
            groups[r.klass].append(r)

    # fitted on current builds only: the older builds' rows are history there, other architectures' prompt rows their own
    arch_rows = split_eras(groups)

    def enough(rs: list[Row]) -> bool:
        return len({r.rec["device"] for r in rs}) >= MIN_DEVICES and len(rs) >= MIN_RECORDS

    def one(rs: list[Row], fallback: S.Fit | None) -> S.Fit:
        tg = [r for r in rs if r.kind == "tg"]
        pp = [r for r in rs if r.kind == "pp"]
        fa = bool(tg) and all(fa_read(r) for r in tg)     # the KV factor derived, not fitted (speed_fit_era.py)
        if fallback and not enough(tg):
            dec = (fallback.decode_eff, fallback.layer_us, FA_KV_FACTOR if fa else fallback.kv_factor)
        elif fa and fallback:
            dec = fit_decode_fa(tg, fallback, fit_decode)
        else:
            dec = fit_decode(tg, fallback)
        pq = [r for r in pp if not TW.is_float_quant(r.quant)]
        pf = [r for r in pp if TW.is_float_quant(r.quant)]
        # the fixed cost per layer first (it changes what the FLOPs are left to explain), then the efficiencies at it;
        # a class's own (its memory system and kernels), none for all devices at once ("*": peaks of unlike kinds)
        c = (fit_prefill_layer_us(pq, fallback.prefill_layer_us) if len(pq) >= 2 else fallback.prefill_layer_us) \
            if fallback else 0.0
        vals = [*dec, fit_prefill(pq, False, c) if not fallback or len(pq) >= 2 else fallback.prefill_eff_quant,
                fit_prefill(pf, True, c) if not fallback or len(pf) >= 2 else fallback.prefill_eff_float, c]
        # the decode constants are always fitted; only a prefill efficiency may be None
        return S.Fit(*(None if v is None else round(float(v), 3) for v in vals))  # type: ignore[arg-type]

    def variant(rs: list[Row], key: str, parent: S.Fit) -> S.Fit:
        """A variant has one or two devices by nature, so it fits little: an architecture ("intel/sycl:xe2") only
        its share of bandwidth, a kernel path ("…-dmmv") that and its per-layer cost (fit_decode, the rest from
        the backend entry); a prefill efficiency from two rows or more, at the backend entry's fixed cost per layer."""
        tg = [r for r in rs if r.kind == "tg"]
        keep = "d" if key.endswith("-dmmv") else "cd"
        dec = fit_decode(tg, parent, keep) if tg else (parent.decode_eff, parent.layer_us, parent.kv_factor)
        if tg and not fits_parent(key.partition(":")[2]):     # a pre-Volta memory class: its share alone
            dec = (fit_memory_share(tg, parent), parent.layer_us, parent.kv_factor)
        pq = [r for r in rs if r.kind == "pp" and r.peak and not TW.is_float_quant(r.quant)]
        pf = [r for r in rs if r.kind == "pp" and r.peak and TW.is_float_quant(r.quant)]
        c = parent.prefill_layer_us
        vals = [*dec, (fit_prefill(pq, False, c) if len(pq) >= 2 else None) or parent.prefill_eff_quant,
                (fit_prefill(pf, True, c) if len(pf) >= 2 else None) or parent.prefill_eff_float, c]
        return S.Fit(*(None if v is None else round(float(v), 3) for v in vals))  # type: ignore[arg-type]

    glob = one([r for r in single if not backend_scoped(r)], None)
    consts = {"*": glob}
    for key, rs in sorted(groups.items(), key=lambda kv: (kv[0].count("/") + kv[0].count(":"), kv[0])):
        parent = consts.get(parent_key(key), glob)
        if ":" in key:
            parent = consts.get(parent_key(key)) or consts.get(parent_key(parent_key(key)), glob)
        consts[key] = variant(rs, key, parent) if ":" in key else one(rs, parent)
    consts.update(arch_prefill_entries(arch_rows, consts, lambda rs, c: fit_prefill(rs, False, c)
                                       if len(prefill_rows(rs, False)) >= 2 else None))
    return consts, fit_split_ms(rows, consts)


def refit(rows: list[Row], core_tuning: list[Row] | None = None, fa_tuning: list[Row] | None = None
          ) -> tuple[dict[str, S.Fit], float, float, dict[str, float], dict[str, float], dict[str, float], float]:
    """Everything speed.py holds as fitted: FIT (minus entries equal to their fallback), SPLIT_OVERHEAD_MS,
    ATTN_FACTOR (fitted first: the prefill efficiencies depend on it), APPLE_CORE_TFLOPS (from ``rows`` and the
    Apple tuning records, after the class efficiencies), POWER_KNEE_W_PER_TOPS and POWER_KNEE_FLOOR (after
    ATTN_FACTOR, before the efficiencies; the rows' peaks are left taken with them), FA_MMA_EFF (last: the rest of a
    flash-attention row's time is the other constants'). Flash-attention rows at depth (speed_fit_fa.fa_priced, with
    ``fa_tuning``'s) fit FA_MMA_EFF alone; those at no depth, where the attention is a sliver of the time, fit the rest
    with their attention at the term (so the two are fitted in turn, from FA_EFF_START, until FA_MMA_EFF repeats)."""
    fa_rows = fa_share_rows(rows + (fa_tuning or []))
    rows = [r for r in rows if not (fa_priced(r) and at_depth(r))]
    saved = S.ATTN_FACTOR, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR, S.FA_MMA_EFF
    try:
        S.FA_MMA_EFF = fa_eff = FA_EFF_START
        for _ in range(5):
            S.ATTN_FACTOR = attn = fit_attn_factor(rows)
            by_arch = knee_rows(rows)
            knees = fit_power_knees(by_arch)
            floors = knee_floors(by_arch, knees)
            apply_knees(knees, rows + (core_tuning or []) + fa_rows, floors)
            consts, split_ms = fit_all(rows)
            rates = fit_core_rates(rows + (core_tuning or []), consts)
            S.FA_MMA_EFF, fa_eff = fit_fa_eff(fa_rows, consts, prefill_row, fa_eff), S.FA_MMA_EFF
            if S.FA_MMA_EFF == fa_eff:
                break
        fa_eff = S.FA_MMA_EFF
    finally:
        S.ATTN_FACTOR, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR, S.FA_MMA_EFF = saved
    kept = {}
    for k, v in consts.items():
        parent = None
        if k != "*":
            parent = consts.get(parent_key(k)) or consts.get(parent_key(parent_key(k)))
        if v != parent:     # an entry equal to its fallback adds nothing
            kept[k] = v
    return kept, split_ms, attn, rates, knees, floors, fa_eff


def fa_share_rows(rows: list[Row]) -> list[Row]:
    """The rows FA_MMA_EFF is fitted on: flash-attention prompt rows at depth (speed_fit_fa.fa_priced), not a
    backend-scoped record's — it fits its class/backend entry only (the DGX Spark's: evidence/speed_fit_spark.py)."""
    return [r for r in rows if fa_priced(r) and at_depth(r) and not backend_scoped(r)]


def fit_document(consts: dict[str, S.Fit], split_ms: float, attn: float, rates: dict[str, float],
                 knees: dict[str, float], floors: dict[str, float], fa_eff: float) -> dict:
    """What ``src/runlocal/data/speed_fit.json`` holds: the fitted constants, in the order refit makes them."""
    return {"_source": S.FIT_SOURCE,
            "fit": {k: {f.name: getattr(v, f.name) for f in fields(v)} for k, v in consts.items()},
            "split_overhead_ms": split_ms, "attn_factor": attn, "apple_core_tflops": rates,
            "power_knee_w_per_tops": knees, "power_knee_lowest_fitted_w_per_tops": floors, "fa_mma_eff": fa_eff}


def fit_json(doc: dict) -> str:
    """The file's text: one line per device class, so a refit's diff reads per class."""
    fit = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in doc["fit"].items())
    return (f'{{\n  "_source": {json.dumps(doc["_source"])},\n  "fit": {{\n{fit}\n  }},\n'
            f'  "split_overhead_ms": {json.dumps(doc["split_overhead_ms"])},\n'
            f'  "attn_factor": {json.dumps(doc["attn_factor"])},\n'
            f'  "apple_core_tflops": {json.dumps(doc["apple_core_tflops"])},\n'
            f'  "power_knee_w_per_tops": {json.dumps(doc["power_knee_w_per_tops"])},\n'
            f'  "power_knee_lowest_fitted_w_per_tops": {json.dumps(doc["power_knee_lowest_fitted_w_per_tops"])},\n'
            f'  "fa_mma_eff": {json.dumps(doc["fa_mma_eff"])}\n}}\n')


def write_fit(text: str) -> None:
    S.FIT_PATH.write_text(text, encoding="utf-8")


# --- the held-out and tuning-only records -------------------------------------------------------------

HELD_OUT = DATA / "held_out"     # set aside before any fit: never fitted, scored on their own (README.md there)
CORE_TUNING = DATA / "apple_cores"   # Apple M3+ tuning records: fit the per-core prefill rates and nothing else


# held-out rounds scored once and tuning since, whose flash-attention rows fit FA_MMA_EFF (speed_fit_fa.py): round 7
# (prompt and decode at depth; scored in session 14, its first run in held_out/round7_first_run.txt)
FA_TUNING_ROUNDS = ("round7",)


def load_fa_tuning() -> list[Row]:
    """The flash-attention tuning rows: the FA_TUNING_ROUNDS' records whose attention the term prices."""
    return [r for name in FA_TUNING_ROUNDS for r in build_rows(load_held_out(name)) if fa_priced(r)]


def load_core_tuning() -> list[Row]:
    recs = []
    for path in sorted(CORE_TUNING.glob("*.jsonl")):
        recs += [{**json.loads(line), "_file": f"apple_cores/{path.name}"}
                 for line in path.read_text().splitlines() if line.strip()]
    return build_rows(recs)


# later held-out rounds not named round<N> (held_out/<name>.jsonl, rule in <name>_queries.md; pascal2's rule sits at
# measurements/speed/pascal2_queries.md beside its tuning file; spark: the GB10 prompt round, speed_fit_spark.py): kept out
# of round 1's
LATER_ROUNDS = ("newbuilds", "newbuilds2", "newbuilds3", "backends2", "backends3", "backends4", "strixhalo",
                "pascal", "pascal2", "moeprefill", "moeprefill2", "moeprefill3", "spark")


def load_held_out(round_name: str | None = None) -> list[dict]:
    """Round 1's held-out records (every held_out/*.jsonl but the later rounds' files), or one later round's
    (``round_name`` = "round2" → held_out/round2.jsonl, collected by the rule in held_out/round2_queries.md)."""
    recs = []
    for path in sorted(HELD_OUT.glob("*.jsonl")):
        if (path.stem != round_name) if round_name else (path.stem.startswith(("round", "hybrid"))
                                                          or path.stem in LATER_ROUNDS):
            continue
        recs += [{**json.loads(line), "_file": f"held_out/{path.name}"}
                 for line in path.read_text().splitlines() if line.strip()]
    return recs
