"""An architecture vLLM dropped (runtimes/arch_support.VLLM_LAST: Mllama, Llama 3.2 Vision) is refused under every vLLM
release past its last one — the current release too — in vLLM's own words, naming the last release that loads it and
the other runtimes that do; that release and older ones down to the first still plan it.

Independent sources (read for this test, not taken from the code under test):
- measurements/vllm_gone/gone.txt (read_gone.py over the 38 sdists 0.9.2–0.33.0, sha256 in releases.txt): per release,
  the catalog architectures vllm/model_executor/models/registry.py's _PREVIOUSLY_SUPPORTED_MODELS lists and the last
  release it gives, e.g. for 0.11.0 "catalog: MllamaForConditionalGeneration (last 0.10.2, :343; still in the
  registry's tables: False): llama-3.2-11b-vision".
- registry.py _raise_for_unsupported (0.10.1–0.33.0): f"Model architecture {arch} was supported in vLLM until
  v{previous_version}, and is not supported anymore. Please use an older version of vLLM if you want to use this model
  architecture."
- vllm-project/vllm#27198 (vLLM 0.11.0, transformers 4.57.1, `vllm serve meta-llama/Llama-3.2-11B-Vision`):
  "AttributeError: 'MllamaProcessor' object has no attribute '_get_num_multimodal_tokens'" — the Transformers-backend
  fallback, tried before that message, took the architecture; huggingface/transformers#41749: "It works on vllm
  0.10.2".
- The 0.6.2 sdist registers MllamaForConditionalGeneration (vllm/model_executor/models/__init__.py:104), 0.6.1.post2's
  does not; vllm-project/vllm#8826 serves the model on 0.6.2.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from asking import ask

from runlocal.runtimes.arch_support import NO_BUILD_LOADS, VLLM_LAST

GONE = Path(__file__).resolve().parents[2] / "measurements" / "vllm_gone" / "gone.txt"
ATTRIBUTE_LINE = "AttributeError: 'MllamaProcessor' object has no attribute '_get_num_multimodal_tokens'"
# registry.py's f-string with arch = MllamaForConditionalGeneration, previous_version = 0.10.2 filled in by hand
REGISTRY_LINE = ("Model architecture MllamaForConditionalGeneration was supported in vLLM until v0.10.2, and is not "
                 "supported anymore.")


def _listed_by_release() -> dict[str, dict[str, str]]:
    """gone.txt: release → {catalog architecture: last release}."""
    out: dict[str, dict[str, str]] = {}
    release = ""
    for line in GONE.read_text().splitlines():
        if line.startswith("== "):
            release = line.split()[1]
            out[release] = {}
        elif m := re.match(r"\s+catalog: (\w+) \(last ([\d.]+),", line):
            out[release][m.group(1)] = m.group(2)
    return out


def test_every_release_past_0_10_2_and_the_current_refuse_mllama_in_vllms_words():
    for runtime in ("vllm", "vllm==0.11.0", "vllm==0.12.0", "vllm==0.19.1", "vllm==0.33.0"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu h100")
        refusal = plan.allocation.refusal or ""
        assert plan.verdict == "does_not_fit", runtime
        assert ATTRIBUTE_LINE in refusal and "#27198" in refusal, runtime
        # the AttributeError was reported on 0.11.0 only; past it the stop is read from source and says so (review22b #11)
        assert "seen on 0.11.0 (vllm-project/vllm#27198); later releases read from source, not run" in refusal
        assert REGISTRY_LINE in refusal and "--model-impl vllm" in refusal
        assert "--runtime vllm==0.10.2" in refusal and "pip install 'vllm==0.10.2'" in refusal
        # the runtimes that load it, each from its own source (test_no_llama_cpp_arch.py's docstring)
        assert "transformers 4.45" in refusal and "mlx-vlm" in refusal and "Ollama v0.4.0–v0.24.0" in refusal
        assert plan.speed["not_predicted"] == NO_BUILD_LOADS and plan.speed["decode_tokens_per_s"] is None
        assert plan.fixes == () and plan.max_context is None
        # a server that cannot load the model sizes no KV pool: none is said (review23 #10d), the memory table stays
        assert plan.allocation.kv_cache_tokens is None and plan.max_concurrency is None
        step = next(s for s in plan.steps if s.label == "architecture")
        assert step.value == "MllamaForConditionalGeneration" and "registry.py" in step.formula


def test_releases_that_serve_it_still_plan_it():
    # --parallel 32 (vLLM's --max-num-seqs) as vllm-project/vllm#9445 started it: at the default 256 V0's start-up
    # profile encodes 256 dummy images and leaves no KV cache (test_vllm_mllama_profile.py)
    for runtime in ("vllm==0.6.2", "vllm==0.10.2", "vllm==0.10"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu h100 --ctx 4096 --parallel 32")
        assert plan.allocation.refusal is None and plan.verdict == "fits", runtime
    plan, _ = ask("runlocal check llama-3.2-11b-vision --runtime vllm==0.6.1 --gpu h100 --ctx 4096")
    assert plan.verdict == "does_not_fit" and "First served by vLLM 0.6.2" in plan.allocation.refusal


def test_other_models_are_not_touched_under_the_current_release():
    plan, _ = ask("runlocal check llama-3.2-3b --runtime vllm --gpu h100 --ctx 4096")
    assert plan.allocation.refusal is None and plan.verdict == "fits"


def test_the_table_holds_every_catalog_architecture_the_releases_list():
    """By script over gone.txt: each catalog architecture listed in a release's _PREVIOUSLY_SUPPORTED_MODELS is a
    VLLM_LAST row with that last release, dropped from the first release that lists it; no row is listed nowhere."""
    listed = _listed_by_release()
    assert len(listed) == 38 and listed["0.10.2"] == {} and listed["0.33.0"]
    first_listed: dict[str, str] = {}
    for release, rows in listed.items():
        for arch, last in rows.items():
            first_listed.setdefault(arch, release)
            assert VLLM_LAST[arch]["last"] == last, (release, arch)
    assert sorted(first_listed) == sorted(VLLM_LAST) == ["MllamaForConditionalGeneration"]
    assert all(VLLM_LAST[a]["dropped"] == r for a, r in first_listed.items())
    # listed in every release read from 0.11.0 on: no later release brought it back
    assert all("MllamaForConditionalGeneration" in rows for r, rows in listed.items()
               if tuple(map(int, r.split("."))) >= (0, 11))


def test_best_refuses_it_and_the_fitting_list_would_leave_it_out_under_vllm():
    best = subprocess.run([sys.executable, "-m", "runlocal", "best", "llama-3.2-11b-vision", "--runtime", "vllm"],
                          capture_output=True, text=True, timeout=300)
    assert best.returncode == 2 and "was supported in vLLM until v0.10.2" in best.stderr + best.stdout
    assert "Traceback" not in best.stderr
    # the sweep holds no vLLM lines today (models --fits lists none under vllm); its filter is checked on its own
    from runlocal.fits_here import _never_loaded
    from runlocal.runtimes import get_runtime

    for runtime, refused in (("vllm", True), ("vllm==0.11.0", True), ("vllm==0.10.2", False)):
        assert _never_loaded("llama-3.2-11b-vision", get_runtime(runtime)) is refused, runtime
        assert _never_loaded("llama-3.2-3b", get_runtime(runtime)) is False
