"""review23 #19: `runlocal check --help` states each engine's defaults as the plans take them. The figures are the
source-cited tables the planners read: vLLM's --gpu-memory-utilization 0.9, 0.92 from v0.20.0 (vllm/config/cache.py;
runtimes/versions.VLLM_UTILIZATION_DEFAULTS — the current release's is what every plan without `==X` uses), V0's
max_num_seqs 256 and V1 `vllm serve`'s 1024 on a large GPU (engine/arg_utils.py _set_default_args; runtimes/vllm.py),
SGLang's mem_fraction_static lowered for a vision model (adjust_mem_fraction_for_vlm, runtimes/sglang_versions.py)."""

from __future__ import annotations

from typer.testing import CliRunner

from runlocal.cli import app as cli
from runlocal.runtimes.versions import VLLM_UTILIZATION_DEFAULTS
from runlocal.runtimes.vllm import SERVE_LIMITS_LARGE, SERVE_LIMITS_SMALL, V0_MAX_NUM_SEQS


def _help() -> str:
    return " ".join(CliRunner().invoke(cli, ["check", "--help"], env={"COLUMNS": "400"}).output.split())


def test_the_help_gives_each_default_as_planned():
    out = _help()
    (_, before), (first, current) = VLLM_UTILIZATION_DEFAULTS
    assert f"{current:g} from {'.'.join(map(str, first))}.0 and in the current release, {before:g} before" in out
    assert "0.9 in most" not in out
    assert V0_MAX_NUM_SEQS == SERVE_LIMITS_SMALL[1] == 256 and SERVE_LIMITS_LARGE[1] == 1024
    assert "vLLM's --max-num-seqs default: 256, on V1 1024 on a GPU of ≥ 70 GiB" in out
    assert "(default: SGLang's, by GPU memory, lowered for a vision model)" in out
