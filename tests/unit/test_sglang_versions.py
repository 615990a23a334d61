"""`--runtime sglang==X` (issue #18 point 1): release X's mem_fraction_static default, chunked prefill and decode
CUDA-graph batch table, read in its PyPI wheel (measurements/sglang_versions/wheels.txt). Each expected figure is
worked by hand from the wheel's own code, quoted with file:line at that release; none is copied from runlocal."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import InputError
from runlocal.request import CheckRequest
from runlocal.runtimes import get_runtime, runtime_rules
from runlocal.runtimes.sglang import default_mem_fraction_static, gpu_memory_defaults
from runlocal.runtimes.sglang_versions import sglang_rules, tier_defaults

RTX_4090 = 24_564      # MiB, nvidia-smi memory.total (the 24 GB card of docs/runtime-rules.md)
H100 = 81_559
H200 = 143_771
B200 = 183_359


def _fraction(release: str, gpu: float, tp: int = 1, pp: int = 1, mla: bool = False) -> float:
    rules = sglang_rules(tuple(int(x) for x in release.split(".")), release)
    chunked, bs = tier_defaults(rules, gpu, tp, gpu_memory_defaults(gpu, tp))
    return default_mem_fraction_static(gpu, chunked, bs, tp, pp, mla, rules)


@pytest.mark.parametrize("release, gpu, tp, pp, expected", [
    # 0.4.4 server_args.py:204-214: `if self.tp_size >= 16: 0.79 … elif >= 2: 0.87 else: 0.88` — by TP alone
    ("0.4.4", RTX_4090, 1, 1, 0.88), ("0.4.4", H100, 4, 1, 0.85), ("0.4.5", H200, 8, 1, 0.81),
    # 0.4.6 server_args.py:225-238: `if gpu_mem <= 81920:` the table, else `(gpu_mem - 1024 * 13) / gpu_mem`
    ("0.4.6", H100, 2, 1, 0.87), ("0.4.6", H200, 1, 1, (143_771 - 13_312) / 143_771),
    # 0.4.7 server_args.py:254-280: the table by tp_size * pp_size up to 81920, 0.88 above; `gpu_mem > 180 * 1000 and
    # is_cuda()`: 0.79; `gpu_mem > 96 * 1024`: min(f + 48 * 1024 * (1 - f) / gpu_mem, (gpu_mem - 1024 * 18) / gpu_mem)
    ("0.4.7", H100, 2, 2, 0.85), ("0.4.7", B200, 1, 1, 0.79),
    ("0.4.7", H200, 1, 1, min(0.88 + 48 * 1024 * 0.12 / 143_771, (143_771 - 18 * 1024) / 143_771)),
    # 0.4.8 server_args.py:288-313: gpu_mem < 35 * 1024: reserved (2.8 + parallel_size / 10) * 1024;
    # < 90 * 1024: (9.5 + parallel_size / 2) * 1024; round((gpu_mem - reserved_mem) / gpu_mem, 3)
    ("0.4.8", RTX_4090, 1, 1, round((24_564 - 2.9 * 1024) / 24_564, 3)),          # 0.879, docs/runtime-rules.md
    ("0.5.2", H100, 2, 1, round((81_559 - 10.5 * 1024) / 81_559, 3)),
    ("0.4.10", B200, 8, 1, round((183_359 - 32 * 1024) / 183_359, 3)),
    # 0.5.3 server_args.py:574-586 (< 35 * 1024: chunked 2048, cuda_graph_max_bs 16 at tp < 4) and :639-672:
    # reserved = 512 + max(chunked, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 * 1024
    ("0.5.3", RTX_4090, 1, 1, round((24_564 - (512 + 3072 + 32 + 128)) / 24_564, 3)),     # 0.848
    # 0.5.5 server_args.py:717: cuda_graph_max_bs 24 at tp < 4 below 35 GiB
    ("0.5.9", RTX_4090, 1, 1, round((24_564 - (512 + 3072 + 48 + 128)) / 24_564, 3)),     # 0.847
    # 0.5.3 :597-604 (< 90 * 1024: chunked 8192, max bs 256): 512 + 12288 + 512 + 128 = 13440 > 10 GiB
    ("0.5.7", H100, 1, 1, round((81_559 - 13_440) / 81_559, 3)),
    # 0.5.11 :665 disable_piecewise_cuda_graph = False, :1436-1455: + len(piecewise_cuda_graph_tokens) * 8; the
    # tokens (_generate_piecewise_cuda_graph_tokens) up to chunked 2048: 8 (4…32) + 14 (48…256) + 8 (288…512)
    # + 8 (576…1024) + 4 (1280…2048) = 42
    ("0.5.13", RTX_4090, 1, 1, round((24_564 - (512 + 3072 + 48 + 128 + 42 * 8)) / 24_564, 3)),   # 0.833
    # 0.5.21 memory_hook.py:100-116: < 35 * 1024: chunked 4096, max_bs 48; tokens up to 4096: 42 + 8 (2304…4096) = 50
    ("0.5.21", RTX_4090, 1, 1, round((24_564 - (512 + 6144 + 96 + 128 + 50 * 8)) / 24_564, 3)),  # 0.704
])
def test_mem_fraction_static_default_by_release(release, gpu, tp, pp, expected):
    assert _fraction(release, gpu, tp, pp) == pytest.approx(expected, abs=1e-9)


def test_mla_prefill_graphs_reserve_flat_from_0_5_11_not_before():
    # 0.5.11 :1447-1450 `if not self.use_mla_backend(): … else: reserved_mem += 1.5 * 1024`; 0.5.9 has no prefill
    # graphs by default (:604 enable_piecewise_cuda_graph = False): 512 + 3072 + 48 + 128, MLA or not
    assert _fraction("0.5.13", RTX_4090, mla=True) == round((24_564 - (512 + 3072 + 48 + 128 + 1536)) / 24_564, 3)
    assert _fraction("0.5.9", RTX_4090, mla=True) == _fraction("0.5.9", RTX_4090) == 0.847


@pytest.mark.parametrize("release, gpu, tp, expected", [
    # 0.4.4 :217-234: gpu_mem < 25_000: chunked 2048, max bs 8 (tp < 4) / 80; else 8192 and 160
    ("0.4.4", RTX_4090, 1, (2048, 8)), ("0.4.4", RTX_4090, 4, (2048, 80)), ("0.4.5", H100, 1, (8192, 160)),
    # 0.4.6 :260-266 sets no max bs above 25_000: cuda_graph_runner.py's own list, ending at 160
    ("0.4.6", H100, 1, (8192, 160)),
    # 0.4.7 :287-288: gpu_mem > 180_000: chunked 16384
    ("0.4.7", B200, 1, (16384, 160)),
    # 0.4.8 :319-337: < 35 * 1024 2048 (8 / 80), < 160 * 1024 8192, else 16384
    ("0.4.8", RTX_4090, 1, (2048, 8)), ("0.5.2", H200, 1, (8192, 160)),
    # 0.5.3 :574-586 / 0.5.5 :717 / 0.5.21 memory_hook.py:100-116, the 35 GiB tier
    ("0.5.3", RTX_4090, 1, (2048, 16)), ("0.5.19", RTX_4090, 1, (2048, 24)), ("0.5.19", RTX_4090, 4, (2048, 80)),
    ("0.5.21", RTX_4090, 1, (4096, 48)), ("0.5.21", RTX_4090, 4, (4096, 160)),
    # 0.5.3 :597-606: < 90 * 1024: 8192, 256 (tp < 4) / 512 — the same in 0.5.23
    ("0.5.3", H100, 4, (8192, 512)),
])
def test_chunked_prefill_and_graph_batch_by_release(release, gpu, tp, expected):
    rules = sglang_rules(tuple(int(x) for x in release.split(".")), release)
    assert tier_defaults(rules, gpu, tp, gpu_memory_defaults(gpu, tp)) == expected


def test_unread_release_takes_the_one_below_and_says_so():
    rules = sglang_rules((0, 5, 14), "0.5.14")
    assert rules.release == (0, 5, 13) and "0.5.14 not read" in rules.note and "0.5.13" in rules.words()
    assert sglang_rules((0, 6, 0), "0.6.0").release == (0, 5, 23)
    with pytest.raises(InputError, match=r"^runtime: sglang==0.4.3: SGLang releases read are 0.4.4 – 0.5.23"):
        sglang_rules((0, 4, 3), "0.4.3")


def _plan(runtime: str) -> dict:
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=8192, runtime=runtime))
    return plan.to_dict()


def test_plan_uses_the_release_and_says_which():
    """0.5.3 on the RTX 4090 takes 0.848 of the free memory where 0.5.23 takes 0.704: the pool gains
    (0.848 − 0.704) × (25,383,256,719 B free − 620 MiB CUDA context) / 128 KiB a token (Llama-3.1-8B: 32 layers × 8 KV
    heads × 128 × 2 × 2 B) = 24,733,139,599 × 0.144 / 131,072 = 27,172.6 tokens."""
    now, old = _plan("sglang"), _plan("sglang==0.5.3")
    assert "--mem-fraction-static" not in now["command"] or "0.704" in now["command"]
    pre = 25_383_256_719 - 620 * 2**20
    gain = (int(pre * 0.848) - int(pre * 0.704)) / (32 * 8 * 128 * 2 * 2)
    assert round(gain) == 27_173
    assert abs(old["kv_cache_tokens"] - now["kv_cache_tokens"] - gain) <= 1
    assert (now["runtime_version"], old["runtime_version"]) == ("current", "0.5.3")
    assert "sglang 0.5.3 server_args.py:639" in old["runtime_rules"] and "SGLang 0.5.23" in now["runtime_rules"]
    step = next(s for s in old["explain"] if s["label"] == "mem_fraction_static")
    assert step["value"] == "0.848" and "graphs 32 (decode graphs: 2 × max bs)" in step["formula"]
    version, words = runtime_rules(get_runtime("sglang==0.5.3"))
    assert version == "0.5.3" and words == old["runtime_rules"]


def test_0_5_13_to_0_5_16_clamp_the_prefill_graphs_to_the_context_length():
    """0.5.13 server_args.py:1579-1585 / 0.5.16 :4039-4045: "Clamp to context_length if explicitly set" —
    the largest prefill CUDA-graph size is min(chunked_prefill_size, context_length); 0.5.11 (:1407-1432) and 0.5.19
    (arg_groups/memory_hook.py:185-222) have no such clamp. The command runlocal prints passes --context-length.

    By hand, an RTX 4090 at 24,564 MiB and TP 1 (0.5.5 – 0.5.19's table: chunked 2048, decode max bs 24), the
    capture sizes of _generate_piecewise_cuda_graph_tokens (range(4, 33, 4) + range(48, 257, 16) + range(288, 513, 32)
    + range(576, 1025, 64) + range(1280, 4097, 256) + …, those ≤ the max):
      up to 2048: 8 + 14 + 8 + 8 + 4 (1280, 1536, 1792, 2048) = 42 sizes × 8 MiB = 336 MiB;
      up to 1024 (--context-length 1024): 8 + 14 + 8 + 8 = 38 sizes × 8 MiB = 304 MiB.
    reserved = 512 + 1.5 × 2048 + 1 × 1 / 8 × 1024 + 2 × 24 + graphs = 3,760 + graphs (under 60 GiB: no 10 GiB floor).
    """
    assert len(list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
               + list(range(576, 1025, 64))) == 38
    base = 512 + 1.5 * 2048 + 1024 / 8 + 2 * 24
    unclamped, clamped = round((RTX_4090 - base - 42 * 8) / RTX_4090, 3), round((RTX_4090 - base - 38 * 8) / RTX_4090, 3)
    assert (unclamped, clamped) == (0.833, 0.835)

    def fraction(release: str, context: int) -> float:
        rules = sglang_rules(tuple(int(x) for x in release.split(".")), release)
        chunked, bs = tier_defaults(rules, RTX_4090, 1, gpu_memory_defaults(RTX_4090, 1))
        assert (chunked, bs) == ((2048, 24) if release != "0.5.23" else (4096, 48))     # 0.5.21's table48 after
        return default_mem_fraction_static(RTX_4090, chunked, bs, 1, 1, False, rules, context)

    for release in ("0.5.13", "0.5.14", "0.5.16"):
        assert fraction(release, 1024) == clamped, release
        assert fraction(release, 32768) == unclamped, release     # a context above the chunk clamps nothing
    for release in ("0.5.11", "0.5.19"):
        assert fraction(release, 1024) == unclamped, release
    assert fraction("0.5.23", 1024) == fraction("0.5.23", 32768)
    # what the plan says: --explain's formula names the clamp
    plan = check(CheckRequest(model="qwen2.5-0.5b", gpu="rtx-4090", ctx=1024, runtime="sglang==0.5.13",
                              use_measurements=False))[0]
    step = next(s for s in plan.allocation.steps if s.label == "mem_fraction_static")
    assert "prefill graph sizes up to --context-length 1,024" in step.formula


def test_llama2_model_path_caps_the_prefill_graphs_at_4096():
    """Every read release that captures prefill CUDA graphs by default caps their largest size at 4096 for a
    --model-path naming "llama-2": `if "llama-2" in self.model_path.lower(): piecewise_cuda_graph_max_tokens =
    min(…, 4096)` (0.5.11 server_args.py:1424, 0.5.13 :1574; prefill_cuda_graph_config.max_bs at 0.5.16 :4034,
    0.5.19 arg_groups/memory_hook.py:214, 0.5.21 :253, 0.5.23 :260; "TODO(yuwei): remove this after the issue is
    fixed"). Before 0.5.11 no prefill graphs are reserved, so nothing to cap.

    By hand, the capture sizes (range(4, 33, 4) + range(48, 257, 16) + range(288, 513, 32) + range(576, 1025, 64)
    + range(1280, 4097, 256) + range(4608, max + 1, 512)): up to 4096 8 + 14 + 8 + 8 + 12 = 50; up to 8192 50 + 8 =
    58; up to 16384 50 + 24 = 74; each 8 MiB (reserve_for_graph_mb).
    H200 (143,771 MiB) at 0.5.11, chunked 8192, decode max bs 256:
      reserved = 512 + 1.5 × 8192 + 1024 / 8 + 2 × 256 + graphs = 13,440 + graphs
      other models 13,440 + 58 × 8 = 13,904 → round(129,867 / 143,771, 3) = 0.903
      llama-2      13,440 + 50 × 8 = 13,840 → round(129,931 / 143,771, 3) = 0.904
    B200 (183,359 MiB) at 0.5.13, chunked 16384, decode max bs 512: 512 + 24,576 + 128 + 1,024 = 26,240 + graphs
      at --context-length 32768: other models 26,240 + 74 × 8 = 26,832 → 0.854; llama-2 26,240 + 400 = 26,640 →
      0.855; at --context-length 1024 (0.5.13's own clamp, the smaller wins) 38 sizes: 26,240 + 304 = 26,544 →
      round(156,815 / 183,359, 3) = 0.855 for both
    """
    assert len([*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
                *range(1280, 4097, 256)]) == 50
    assert len(range(4608, 8193, 512)) == 8 and len(range(4608, 16385, 512)) == 24
    assert round((H200 - 13_904) / H200, 3) == 0.903 and round((H200 - 13_840) / H200, 3) == 0.904
    assert round((B200 - 26_832) / B200, 3) == 0.854 and round((B200 - 26_640) / B200, 3) == 0.855
    assert round((B200 - 26_544) / B200, 3) == 0.855

    def fraction(release: str, gpu: float, path: str, context: int = 32768) -> float:
        rules = sglang_rules(tuple(int(x) for x in release.split(".")), release)
        chunked, bs = tier_defaults(rules, gpu, 1, gpu_memory_defaults(gpu, 1))
        return default_mem_fraction_static(gpu, chunked, bs, 1, 1, False, rules, context, path)

    llama2, other = "meta-llama/Llama-2-7b-hf", "codellama/CodeLlama-7b-hf"     # CodeLlama: no "llama-2" in it
    assert fraction("0.5.11", H200, other) == 0.903 and fraction("0.5.11", H200, llama2) == 0.904
    assert fraction("0.5.11", H200, "togethercomputer/LLaMA-2-7B-32K") == 0.904             # lower-cased first
    assert fraction("0.5.13", B200, other) == 0.854 and fraction("0.5.13", B200, llama2) == 0.855
    assert fraction("0.5.13", B200, llama2, 1024) == fraction("0.5.13", B200, other, 1024) == 0.855
    for release in ("0.5.16", "0.5.19", "0.5.21", "0.5.23"):
        assert fraction(release, B200, llama2) == 0.855 and fraction(release, B200, other) == 0.854, release
    assert fraction("0.5.9", B200, llama2) == fraction("0.5.9", B200, other)    # no prefill graphs before 0.5.11
    # the plan: the command's own --model-path decides it, and --explain says so (b200: 184,320 MiB here;
    # 512 + 24,576 + 128 + 1,024 + 400 = 26,640 → round(157,680 / 184,320, 3) = 0.855; 26,832 → 0.854)
    plan = check(CheckRequest(model="llama-2-7b", gpu="b200", runtime="sglang", use_measurements=False))[0]
    assert "--model-path meta-llama/Llama-2" in plan.command and "--mem-fraction-static 0.855" in plan.command
    step = next(s for s in plan.allocation.steps if s.label == "mem_fraction_static")
    assert "reserved 26,640 MiB" in step.formula and "model path naming 'llama-2'" in step.formula


def test_post_capture_kv_sizing_is_off_by_default_where_it_exists():
    """Post-capture KV sizing (resize the KV pool to the memory free after CUDA-graph capture) is in the 0.5.16 wheel
    on (absent from 0.5.13's) and off by default in each: `SGLANG_ENABLE_POST_CAPTURE_KV_SIZING = EnvBool(False)` at
    0.5.16 environ.py:337, 0.5.19 :554, 0.5.21 :590, 0.5.23 :640; server_args' post_capture_kv_sizing_planned
    returns False without it, so mem_fraction_static keeps the full graph / activation reserve (not 512 + TP·PP/8
    GiB) — the rule modelled. The plan says which release's default it used."""
    for release, line in (("0.5.16", "environ.py:337"), ("0.5.19", "environ.py:554"), ("0.5.21", "environ.py:590"),
                          ("0.5.23", "environ.py:640")):
        words = sglang_rules(tuple(int(x) for x in release.split(".")), release).words()
        assert f"post-capture sizing off by default (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING False, sglang {release} " \
               f"{line}" in words, release
    assert "post-capture" not in sglang_rules((0, 5, 13), "0.5.13").words()
    assert "post-capture" in runtime_rules(get_runtime("sglang"))[1]     # the current release's words say it too
    # the modelled fraction is the reserve branch's: an H100, Llama-3.1-8B-sized defaults, 0.830 as logged
    # (tests/accuracy/test_runtime_sglang_logs.py), not the post-capture branch's round((81,559 − 640) / 81,559, 3)
    assert round((H100 - 512 - 1024 / 8) / H100, 3) == 0.992
    assert _fraction("0.5.23", H100) == 0.830


def test_prefill_graphs_off_on_amd_with_pp_and_for_mla_by_release():
    """The server turns its prefill CUDA graphs off by itself (so reserve_for_graph_mb / the piecewise term adds none):
    on an AMD GPU in every release (0.5.11 server_args.py:1214 / 0.5.13 :1362 `if is_hip() or …:
    self.disable_piecewise_cuda_graph = True`; 0.5.16 :3705 and 0.5.19 – 0.5.21 cuda_graph_hook.py:185 / :193
    "non-CUDA hardware (HIP/NPU/CPU/MPS/XPU)"; 0.5.23 cuda_graph_config.py:123 `Backend.BREAKABLE if is_cuda() else
    Backend.DISABLED`); with pp_size > 1 in 0.5.11 (:1211), 0.5.13 (:1359) and from 0.5.19 (cuda_graph_hook.py:124,
    "Disabling breakable prefill CUDA graph by default for pipeline parallelism") but not 0.5.16 (breakable's rules
    :3772-3805 have none); for an MLA model in 0.5.16 only (:3774 "MLA attention").

    By hand on an H100 (81,559 MiB), chunked 8192, decode max bs 256 (58 prefill sizes × 8 MiB = 464 MiB):
      PP 2: 512 + 1.5 × 8192 + 2 × 1 / 8 × 1024 + 2 × 256 = 13,568 (+ 464 with graphs = 14,032)
            → round(67,527 / 81,559, 3) = 0.828 with graphs, round(67,991 / 81,559, 3) = 0.834 without
      MLA, TP 1: 512 + 12,288 + 128 + 512 = 13,440 (+ 1,536 MLA graphs = 14,976) → 0.816 with, 0.835 without
    AMD, TP 1 on a 192 GiB card (196,608 MiB): chunked 16384, decode max bs 512, 74 sizes: 512 + 24,576 + 128 + 1,024
      = 26,240 (+ 592 = 26,832) → round(169,776 / 196,608, 3) = 0.864 with, round(170,368 / 196,608, 3) = 0.867 without
    """
    assert round((H100 - 14_032) / H100, 3) == 0.828 and round((H100 - 13_568) / H100, 3) == 0.834
    assert round((H100 - 14_976) / H100, 3) == 0.816 and round((H100 - 13_440) / H100, 3) == 0.835
    big = 196_608
    assert round((big - 26_832) / big, 3) == 0.864 and round((big - 26_240) / big, 3) == 0.867

    def fraction(release: str | None, gpu: float, pp: int = 1, mla: bool = False, amd: bool = False) -> float:
        rules = sglang_rules(tuple(int(x) for x in release.split(".")), release) if release else None
        chunked, bs = (tier_defaults(rules, gpu, 1, gpu_memory_defaults(gpu, 1)) if rules
                       else gpu_memory_defaults(gpu, 1))
        return default_mem_fraction_static(gpu, chunked, bs, 1, pp, mla, rules, 32768, "", amd)

    for release, off in (("0.5.11", True), ("0.5.13", True), ("0.5.16", False), ("0.5.19", True), (None, True)):
        assert fraction(release, H100, pp=2) == (0.834 if off else 0.828), release
    for release, off in (("0.5.11", False), ("0.5.16", True), ("0.5.19", False), (None, False)):
        assert fraction(release, H100, mla=True) == (0.835 if off else 0.816), release
    for release in ("0.5.11", "0.5.16", "0.5.21", None):
        assert fraction(release, big) == 0.864 and fraction(release, big, amd=True) == 0.867, release
    assert fraction("0.5.9", big, amd=True) == fraction("0.5.9", big)       # no prefill graphs before 0.5.11 anyway
    # the plan on an AMD card says why
    plan = check(CheckRequest(model="llama-3.1-8b", gpu="mi300x", runtime="sglang", use_measurements=False))[0]
    step = next(s for s in plan.allocation.steps if s.label == "mem_fraction_static")
    assert "no prefill graphs, an AMD (ROCm) GPU: sglang 0.5.23 model_executor/cuda_graph_config.py:123" in step.formula


def test_vision_model_fraction_reduction_from_0_4_10():
    """adjust_mem_fraction_for_vlm (0.4.10 server_args.py:1946 … 0.5.23 arg_groups/memory_hook.py:417): an unasked
    mem_fraction_static × 0.95 × clamp(1 − 0.1 × (layers × hidden² / (24 × 1024²) − 1), 0.8, 1.05), layers =
    getattr(vision_config, "num_hidden_layers", 24). Qwen3-VL-8B's vision_config has depth 27, hidden_size 1152 and
    no num_hidden_layers (transformers 5.19.0, 0.5.23's pin, aliases only num_attention_heads), so 24 is read:
    24 × 1152² / (24 × 1024²) = 1.265625 → 1 − 0.0265625 = 0.9734375 → × 0.95 = 0.924765625.
    The text rule on the H100 (81,920 MiB): reserved = 512 + 1.5 × 8192 + 1/8 × 1024 + 512 decode graphs (2 × 256;
    no prefill graphs for a multimodal class) = 13,440 ≥ 10 GiB; round(68,480 / 81,920, 3) = 0.836."""
    fraction = 0.836 * 0.924765625                     # 0.7731040625
    plan = check(CheckRequest(model="qwen3-vl-8b", gpu="h100", runtime="sglang", use_measurements=False))[0]
    asked = check(CheckRequest(model="qwen3-vl-8b", gpu="h100", runtime="sglang", use_measurements=False,
                               mem_fraction_static=0.836))[0]
    step = next(s for s in plan.allocation.steps if s.label == "mem_fraction_static")
    assert abs(float(step.value) - fraction) < 1e-6 and "adjust_mem_fraction_for_vlm" in step.formula
    assert f"--mem-fraction-static {fraction:g}" in plan.command
    # the pool loses free-before-weights × (0.836 − 0.7731…) over 36 layers × 8 KV heads × 128 × 2 × 2 B a token
    pre = plan.allocation.devices[0].capacity - 620 * 2**20
    lost = (int(pre * 0.836) - int(pre * fraction)) / (36 * 8 * 128 * 2 * 2)
    assert abs(asked.allocation.kv_cache_tokens - plan.allocation.kv_cache_tokens - lost) <= 1
    asked_step = next(s for s in asked.allocation.steps if s.label == "mem_fraction_static")
    assert asked_step.value == "0.836"                 # an asked fraction is kept (the function runs only when unset)


@pytest.mark.parametrize("model, runtime, factor", [
    # Llama 3.2 Vision (mllama): num_hidden_layers 32, hidden_size 1280: 32 × 1280² / (24 × 1024²) = 2.0833…,
    # 1 − 0.10833… = 0.891666…, × 0.95 = 0.8470833…
    ("llama-3.2-11b-vision", "sglang", 0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1))),
    ("llama-3.2-11b-vision", "sglang==0.4.10", 0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1))),
    ("llama-3.2-11b-vision", "sglang==0.4.8", None),      # not in 0.4.8's server_args.py
    # Gemma 4 E2B: 16 × 768²: ratio 0.375 → 1.0625, clamped to 1.05 → 0.9975; multimodal from 0.5.11 (not in 0.5.9's
    # multimodal_model_archs)
    ("gemma-4-e2b", "sglang", 0.95 * 1.05), ("gemma-4-e2b", "sglang==0.5.9", None),
    ("gemma-3-4b", "sglang", None),                       # Gemma3ForConditionalGeneration: in mm_disabled_models
    ("qwen2.5-vl-7b", "sglang==0.5.3", 0.95 * (1 - 0.1 * (24 * 1280**2 / (24 * 1024**2) - 1))),  # depth 32, not read
])
def test_vision_model_reduction_by_class_and_release(model, runtime, factor):
    from runlocal.model.catalog import lookup
    from runlocal.runtimes.sglang import vlm_reduction

    release = runtime.partition("==")[2]
    rules = sglang_rules(tuple(int(x) for x in release.split(".")), release) if release else None
    got = vlm_reduction(lookup(model), rules)
    assert (got is None) if factor is None else (got is not None and abs(got[0] - factor) < 1e-12)


def test_a_vision_model_outside_the_catalog_is_said_not_modelled():
    """No config.json's vision_config is kept for a model read from the Hub or a folder: the reduction is not applied,
    and the plan says SGLang would apply it (the release and where)."""
    from dataclasses import replace

    from runlocal.model.catalog import lookup
    from runlocal.runtimes.sglang import SGLang, vlm_reduction

    hub = replace(lookup("qwen3-vl-8b"), source="hub:Qwen/Qwen3-VL-8B-Instruct")
    assert vlm_reduction(hub, None) is None
    plan = check(CheckRequest(model="qwen3-vl-8b", gpu="h100", runtime="sglang", use_measurements=False))[0]
    assumptions = SGLang().allocate(hub, plan.weights, plan.allocation.settings.with_(mem_fraction_static=None),
                                    plan.searched_on).assumptions
    assert any("vision model outside the catalog" in a and "adjust_mem_fraction_for_vlm" in a for a in assumptions)


def test_up_to_0_4_8_model_runner_lowers_any_fraction_of_a_multimodal_model():
    """0.4.4 model_runner.py:243 `if self.is_multimodal: self.mem_fraction_static *= 0.95`; 0.4.5 :274 … 0.4.8 :415
    `*= 0.90` — on the value server_args passes, asked or not; not in 0.4.10's model_runner.py. Qwen2.5-VL on the
    H100 (81,920 MiB ≤ 81,920): 0.4.6's table by TP 1 gives 0.88 (server_args.py:224), so the budget takes
    0.88 × 0.9 = 0.792; asked 0.85: 0.765; 0.4.4: 0.88 × 0.95 = 0.836."""
    def budget_fraction(runtime: str, asked: float | None = None) -> tuple[str, str | None]:
        plan = check(CheckRequest(model="qwen2.5-vl-7b", gpu="h100", runtime=runtime, use_measurements=False,
                                  mem_fraction_static=asked))[0]
        steps = {s.label: s.value for s in plan.allocation.steps}
        budget = next(s.formula for s in plan.allocation.steps if s.label == "static budget")
        assert budget.endswith(f"× {steps.get('multimodal reduction') or steps['mem_fraction_static']}")
        return steps["mem_fraction_static"], steps.get("multimodal reduction")

    assert budget_fraction("sglang==0.4.6") == ("0.88", f"{0.88 * 0.9:.6g}")
    assert budget_fraction("sglang==0.4.6", 0.85) == ("0.85", f"{0.85 * 0.9:.6g}")
    assert budget_fraction("sglang==0.4.4") == ("0.88", f"{0.88 * 0.95:.6g}")
    assert budget_fraction("sglang==0.4.10")[1] is None                     # the vision-size rule instead
    text = check(CheckRequest(model="qwen2.5-7b", gpu="h100", runtime="sglang==0.4.6", use_measurements=False))[0]
    assert not any(s.label == "multimodal reduction" for s in text.allocation.steps)


def test_the_vision_reduction_is_worked_out_once_and_is_the_one_applied(monkeypatch):
    """One allocation asks vlm_reduction once: the unasked fraction it lowers and the words --explain prints come from
    the same figure. Llama 3.2 Vision (num_hidden_layers 32, hidden_size 1280), by hand: 0.95 × (1 − 0.1 × (32 ×
    1280² / (24 × 1024²) − 1)) = 0.95 × 0.891666… = 0.8470833…"""
    from runlocal.model.catalog import lookup
    from runlocal.plan import estimate
    from runlocal.runtimes import sglang
    from runlocal.runtimes.base import Settings, Target
    from runlocal.units import GiB

    model, h100 = lookup("llama-3.2-11b-vision"), Target("NVIDIA H100 80GB HBM3", "gpu", 79 * GiB, total=80 * GiB)
    weights, asked = estimate(model, None), Settings(runtime="sglang")
    calls: list[str] = []
    real = sglang.vlm_reduction
    monkeypatch.setattr(sglang, "vlm_reduction", lambda m, r: calls.append(m.architecture) or real(m, r))
    alloc = sglang.SGLang().allocate(model, weights, asked, [h100])
    assert len(calls) == 1
    factor = 0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1))
    assert any(a.startswith(f"vision model: SGLang lowers an unasked mem_fraction_static × {factor:.4f}")
               for a in alloc.assumptions)
    monkeypatch.setattr(sglang, "vlm_reduction", lambda m, r: None)      # the text model's own fraction
    text = sglang.SGLang().allocate(model, weights, asked, [h100])
    assert abs(alloc.settings.sglang.mem_fraction_static / text.settings.sglang.mem_fraction_static - factor) < 1e-9
