"""compare, best and cost plan a model without --quant in the format `check` plans it in (choose.quant_ladder starts
from choose.download_quant, check's own default). gpt-oss is released with MXFP4 experts, and its GGUF as published
is that format: ggml-org/gpt-oss-20b-GGUF (https://huggingface.co/ggml-org/gpt-oss-20b-GGUF) holds the one
gpt-oss-20b-mxfp4.gguf, and the Ollama library's gpt-oss:20b tag is that file (https://ollama.com/library/gpt-oss/tags,
14GB). Before, compare / best --best-quant-each / cost tried the GGUF ladder Q8_0 … Q4_K_M — `-hf
ggml-org/gpt-oss-20b-GGUF:Q8_0`, a file that repo does not have — while check planned MXFP4."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.choose import best, cost
from runlocal.compare import compare_devices
from runlocal.hardware.catalog import load_devices
from runlocal.model.catalog import lookup

RELEASED = "MXFP4_MOE"      # llama.cpp's GGUF type for MXFP4 experts (ggml's GGML_TYPE_MXFP4, ftype MOSTLY_MXFP4_MOE)


def test_compare_plans_the_format_check_plans():
    for gpu in ("rtx-3060-12gb", "rtx-4090"):
        plan, _ = check(CheckRequest(model="gpt-oss-20b", gpu=gpu, ram="64G", use_measurements=False))
        assert plan.to_dict()["settings"]["quant"] == RELEASED
        rows = compare_devices([gpu], model="gpt-oss-20b")
        assert rows[0]["quant"] == RELEASED, rows[0]          # before: Q4_K_M on the 3060
        assert ":Q" not in rows[0]["command"]                  # no ladder file of the repo named


def test_best_each_device_and_cost_plan_the_released_format():
    devices = [d for d in load_devices() if d.id in ("rtx-4090", "rtx-4060-ti-16gb", "h100-sxm")]
    result = best(lookup("gpt-oss-20b"), devices=devices, best_quant_each=True, counts=(1,)).to_dict()
    rows = result["ranked"] + result.get("unpriced", [])
    assert rows and {(r.get("settings") or {}).get("quant") or r.get("quant") for r in rows} == {RELEASED}
    run = cost(lookup("gpt-oss-20b"), next(d for d in devices if d.id == "rtx-4090"))["run"]
    assert run["quant"] == RELEASED and ":Q8_0" not in run["command"]     # before: Q8_0, a file not published
