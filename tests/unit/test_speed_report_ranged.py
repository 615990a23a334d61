"""speed_accuracy's per-backend tables count a MoE prompt a plan answers with a range as "ranged", not as a row with
no answer (speed20's noticed-and-left: "(+32 none)" ROCm, "(+12 none)" Vulkan, while the ranges section scores those
same rows). The rows the ranges are read from are speed_fit_moe's own selection (its rule: MoE prompt rows on ROCm /
SYCL the record's build sends to the per-expert fallback, and the Vulkan MoE prompt tuning rows), so each must count
as ranged; a row with no figure and no range (a CUDA prompt across several GPUs: multi-GPU prefill is not modelled)
stays "none"."""

from __future__ import annotations

from runlocal.evidence import speed_fit_moe as M
from runlocal.evidence import speed_report as R
from runlocal.evidence.speed_fit import build_rows, load_records
from runlocal.hardware import speed as S


def test_the_ranges_rows_count_as_ranged_not_missing():
    fallback = [r for r in M.fallback_rows() if r.backend == "rocm"]
    assert fallback and all(R.as_range(r) for r in fallback)
    stats = R.backend_errors(fallback, dict(S.FIT), S.SPLIT_OVERHEAD_MS)
    assert stats["rocm/pp"]["ranged"] == len(fallback) and "missing" not in stats["rocm/pp"]
    assert "(+" + str(len(fallback)) + " as ranges)" in R.error_cells(stats, "rocm/")


def test_a_row_without_a_figure_or_a_range_stays_none():
    multi = [r for r in build_rows(load_records()) if r.kind == "pp" and r.backend == "cuda" and r.n_devices > 1]
    assert multi and not any(R.as_range(r) for r in multi)
    stats = R.backend_errors(multi, dict(S.FIT), S.SPLIT_OVERHEAD_MS)
    assert stats["cuda/pp"].get("missing") and "ranged" not in stats["cuda/pp"]
