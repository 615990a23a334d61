"""Where Ollama puts a multimodal projector, from its own source, and how big it is, from its own logs.

Source (ollama/ollama fb30760, v0.33.0-rc2, llm/llama_server.go): appendMMProjArgs passes the projector to
llama-server as --mmproj, adding --no-mmproj-offload only when shouldDisableMMProjOffload says so — num_gpu 0
("cpu-only"), num_gpu set below BlockCount() + 1 ("partial-text-offload"), or a GPU with less than the projector +
mmprojOffloadHeadroom (1 GiB) ("limited-vram"). Otherwise llama.cpp's clip context loads it on the first GPU
(tools/mtmd/clip.cpp clip_ctx: ggml_backend_init_by_type(GPU)), and Ollama sets LLAMA_ARG_FIT_TARGET =
⌈(projector + 1 GiB) / MiB⌉ MiB (mmprojFitTargetMiB) so --fit leaves it that room instead of 1024 MiB. Earlier
releases also loaded it on the first GPU (v0.12.11–v0.29 llm/server.go: "The vision projector is always loaded on
the first GPU if available"; before, llm/memory.go: "Projectors loaded into GPU0 only"). Before this change runlocal
counted it nowhere.

Size (Ollama's own estimate lines, measurements/public_logs/ollama.jsonl): gemma3:12b's projector.weights="795.9 MiB"
(ollama/ollama#12000, blob sha256-e8ad13ef…) and "806.2 MiB" (ollama/ollama#8430).
"""

from __future__ import annotations

from runlocal.check import check
from runlocal.model.catalog import lookup
from runlocal.request import CheckRequest
from runlocal.runtimes.base import Target
from runlocal.runtimes.ollama import projector_bytes, projector_on_gpu

MiB, GiB = 1 << 20, 1 << 30


def _plan(model: str, **kw):
    plan, _ = check(CheckRequest(model=model, runtime="ollama", gpu="rtx-4090", **kw))
    return plan


def _step(plan, name: str):
    return next(s for s in plan.allocation.steps if s.label == name)


def test_the_projector_is_the_size_ollama_logs_for_gemma3_12b():
    # by hand, from gemma-3-12b-it's config.json: SigLIP vision tower (27 layers, hidden 1152, MLP 4304, 14×14
    # patches of an 896-pixel image = 4,096 positions) and the projector (1152 → 3840, one norm); Ollama's converter
    # keeps tensors of two or more dimensions in F16 and 1-D ones (biases, norms) in F32
    h, ff, layers = 1152, 4304, 27
    matrices = (h * 3 * 14 * 14 + 4096 * h                     # patch embedding (conv), position embedding
                + layers * (4 * h * h + 2 * ff * h)             # q, k, v, o; fc1, fc2
                + h * 3840)                                     # mm_input_projection
    vectors = (h + layers * (4 * h + ff + h + 4 * h)            # patch bias; q/k/v/o, fc1, fc2 biases; 2 layer norms
               + 2 * h + h)                                     # post layer norm; mm_soft_emb_norm
    assert matrices + vectors == 421_290_864                    # the vision/audio tower `check` prints
    size = projector_bytes(lookup("gemma-3-12b"))
    assert size == matrices * 2 + vectors * 4 == 843_383_232   # 804.3 MiB
    for logged_mib in (795.9, 806.2):
        assert abs(size / MiB - logged_mib) / logged_mib < 0.02, (size / MiB, logged_mib)


def test_on_the_first_gpu_with_fit_keeping_projector_plus_1_gib():
    gemma, text_only = _plan("gemma-3-12b"), _plan("llama-3.1-8b")
    gpu, base_gpu = gemma.allocation.devices[0], text_only.allocation.devices[0]
    cpu = gemma.allocation.devices[-1]
    # the projector's 843,383,232 B are on the GPU, beside the same CUDA context a text model has; in RAM only
    # llama-server's output buffer, n_vocab 262,208 × 4 B (src/llama-context.cpp output_reserve)
    assert gpu.overhead - base_gpu.overhead == 843_383_232
    assert cpu.kind == "cpu" and cpu.overhead == 262_208 * 4
    # LLAMA_ARG_FIT_TARGET: (843,383,232 + 1,073,741,824) / 1,048,576 = 1828.3 → 1829 MiB; a text model keeps 1024
    assert "+ 1829 MiB margin" in _step(gemma, "layers (llama-server --fit)").formula
    assert "+ 1024 MiB margin" in _step(text_only, "layers (llama-server --fit)").formula
    assert "the first GPU" in _step(gemma, "multimodal projector").formula


def test_num_gpu_below_the_layers_puts_it_in_system_memory():
    # gemma3 12B: 48 blocks, so Ollama's modelLayers is 49; num_gpu 20 < 49 → --no-mmproj-offload
    plan = _plan("gemma-3-12b", n_gpu_layers=20)
    cpu = plan.allocation.devices[-1]
    assert cpu.kind == "cpu" and cpu.overhead >= 843_383_232
    assert "partial-text-offload" in _step(plan, "multimodal projector").formula


def test_ollamas_offload_rule():
    p = 843_383_232
    big, small = Target("A", "gpu", 20 * GiB), Target("B", "gpu", p + GiB - 1)
    assert projector_on_gpu(None, 48, [big], p) == (True, "")
    assert projector_on_gpu(-1, 48, [big], p) == (True, "")        # -1: Ollama's automatic num_gpu
    assert projector_on_gpu(49, 48, [big], p) == (True, "")        # every layer: 48 blocks + 1
    assert projector_on_gpu(48, 48, [big], p) == (False, "partial-text-offload")
    assert projector_on_gpu(0, 48, [big], p) == (False, "cpu-only")
    assert projector_on_gpu(None, 48, [], p) == (False, "cpu-only")
    # any GPU under projector + 1 GiB (llm/llama_server.go checks every GPU in the list)
    assert projector_on_gpu(None, 48, [big, small], p) == (False, "limited-vram")
    assert projector_on_gpu(None, 48, [Target("C", "gpu", p + GiB)], p) == (True, "")


def test_a_model_without_a_tower_has_no_projector():
    assert projector_bytes(lookup("llama-3.1-8b")) == 0
    assert not any(s.label == "multimodal projector" for s in _plan("llama-3.1-8b").allocation.steps)
