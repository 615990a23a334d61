"""llama-server -hf also loads a vision model's projector (llama.cpp b5331 on: 33eff402 "server : vision support via
libmtmd"; common/arg.cpp takes the manifest's mmprojFile, PR #13082; a -hf run "Downloading mmproj-BF16.gguf",
ggml-org/llama.cpp#23265). The plan counts it (runtimes/llamacpp_mmproj.py, test_llamacpp_hf_projector.py) and a plan
pulling a vision model with -hf says so, with the projector's size: the tower's parameters at 16 bits, its 1-D tensors
at F32 (what convert_hf_to_gguf.py --mmproj writes at its default f16 outtype)."""

from __future__ import annotations

from runlocal.check import check
from runlocal.model import catalog
from runlocal.request import CheckRequest
from runlocal.runtimes.base import Settings
from runlocal.runtimes.llamacpp_mmproj import hf_projector_note


def notes(model: str, runtime: str = "llama.cpp", **kw) -> list[str]:
    return check(CheckRequest(model=model, gpu="rtx-4090", runtime=runtime, use_measurements=False, **kw))[1]


def projector_notes(model: str, runtime: str = "llama.cpp", **kw) -> list[str]:
    return [n for n in notes(model, runtime, **kw) if n.startswith("-hf also fetches")]


def test_a_vision_model_pulled_with_hf_says_the_projector_it_counts():
    model = catalog.lookup("qwen2.5-vl-7b")
    tower = [t for t in model.tensors if t.role in ("vision", "projector", "audio")]
    # by hand: 2 bytes a parameter of a 2-D (or larger) tensor, 4 of a 1-D one
    size = sum(t.numel * (4 if len(t.shape) == 1 else 2) for t in tower)
    assert model.vision_params == sum(t.numel for t in tower) == 676_550_144
    (note,) = projector_notes("qwen2.5-vl-7b")
    assert f": {size / 2**30:.2f} GiB (676,550,144 vision/audio parameters at 16 bits), counted in this plan" in note
    assert "add --no-mmproj" in note


def test_no_note_for_a_text_model_another_runtime_an_older_build_or_no_mmproj():
    assert projector_notes("qwen3-8b") == []
    assert projector_notes("qwen2.5-vl-7b", "ollama") == []
    assert projector_notes("qwen2.5-vl-7b", no_mmproj=True) == []
    model = catalog.lookup("qwen2.5-vl-7b")
    s = Settings(quant="Q4_K_M")
    assert hf_projector_note(model, "llama.cpp", s, 5330) is None       # before server vision support
    assert hf_projector_note(model, "llama.cpp", s, 5331) is not None
    assert hf_projector_note(model, "llama.cpp", s, None) is not None   # the current build
    assert hf_projector_note(model, "vllm", s, None) is None
    assert hf_projector_note(model, "llama.cpp", s.with_(mmproj=False), None) is None
