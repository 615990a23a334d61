"""llama-server -hf's multimodal projector, counted: from b5331 (published.HF_MMPROJ_BUILDS) llama-server pulled with
-hf REPO:QUANT also downloads the projector the Hub's manifest names beside the GGUF (common/arg.cpp
common_params_handle_model, "auto_detected.mmprojFile", PR #13082) and loads it (tools/server, libmtmd, PR #12898)
unless --no-mmproj is given. It loads after common_init_from_params has placed the layers, so --fit's choice leaves it
out — as Ollama's llm/llama_server.go says of mmprojFitTargetMiB, "a stopgap until fit accounts for mmproj memory
directly" — and goes on the first GPU (tools/mtmd/clip.cpp clip_ctx: ggml_backend_init_by_type(GPU), the first GPU
device), in system memory where there is none. Its size is the tower at 16 bits, 1-D tensors F32
(ollama_projector.projector_bytes, as the F16 mmproj files are written); its own compute buffer (one image's graph) is
not sized. Counted under overhead, as Ollama's plan counts its projector (ollama_projector.place_projector): it is read
for an image, not per text token."""

from __future__ import annotations

from dataclasses import replace

from ..model.spec import ModelSpec
from .base import DeviceMemory, Settings, Step

SOURCE = ("llama.cpp common/arg.cpp common_params_handle_model (mmprojFile, PR #13082), tools/mtmd/clip.cpp clip_ctx "
          "(the first GPU), loaded after --fit (b5331 on: PR #12898); --no-mmproj loads none")


def hf_projector_size(model: ModelSpec, settings: Settings, build: int | None) -> int:
    """The bytes of the projector llama-server loads for this plan: 0 with --no-mmproj, a -m file, a text model, or a
    build before b5331."""
    from .ollama_projector import PROJECTOR_ROLES, projector_bytes
    from .published import HF_MMPROJ_BUILDS, llama_server_model

    if not settings.llamacpp.mmproj or (build is not None and build < HF_MMPROJ_BUILDS[1]):
        return 0
    if not any(t.role in PROJECTOR_ROLES for t in model.tensors):
        return 0
    return projector_bytes(model) if llama_server_model(model, settings.quant)[0] == "-hf" else 0


def place_hf_projector(model: ModelSpec, settings: Settings, version: str | None, devices: list[DeviceMemory],
                       steps: list[Step]) -> tuple[list[DeviceMemory], list[Step]]:
    """The devices with the projector's bytes on the first GPU's overhead (the host's where there is no GPU), and the
    steps with its --explain step; both unchanged where none is loaded. ``version``: the llama.cpp release asked."""
    from .flag_spelling import llamacpp_build
    from .ollama_projector import PROJECTOR_ROLES

    size = hf_projector_size(model, settings, llamacpp_build(version))
    at = next((i for i, d in enumerate(devices) if d.kind != "cpu"), None)
    at = next((i for i, d in enumerate(devices) if d.kind == "cpu"), None) if at is None else at
    if not size or at is None:
        return devices, steps
    dev = devices[at]
    n = sum(1 for t in model.tensors if t.role in PROJECTOR_ROLES)
    where = f"on {dev.name}, the first GPU," if dev.kind != "cpu" else "in system memory (no GPU),"
    step = Step("multimodal projector (-hf)",
                f"{n:,} vision/audio tensors of the repo's mmproj, F16 (1-D: F32), {where} loaded after --fit placed "
                "the layers (which leaves it out); under overhead; its compute buffer is not sized; --no-mmproj "
                "serves text only", f"{size:,} B", SOURCE)
    return [*devices[:at], replace(dev, overhead=dev.overhead + size), *devices[at + 1:]], [*steps, step]


def no_mmproj_words(model: ModelSpec, settings: Settings, build: int | None) -> list[str]:
    """--no-mmproj on the command where it keeps out a projector llama-server would otherwise load."""
    if settings.llamacpp.mmproj:
        return []
    return ["--no-mmproj"] if hf_projector_size(model, settings.with_(mmproj=True), build) else []


def hf_projector_note(model: ModelSpec, runtime: str, settings: Settings, build: int | None) -> str | None:
    """Said on a llama.cpp plan whose command pulls a vision / audio model with -hf: llama-server also loads the repo's
    projector, on the first GPU once the layers are placed, and the plan counts it there (llamacpp_mmproj.py: the tower
    at 16 bits, 1-D tensors F32, as ollama_projector.projector_bytes counts it). None for a text model, a -m file,
    another runtime, --no-mmproj, or a build before b5331."""
    size = hf_projector_size(model, settings, build) if runtime == "llama.cpp" else 0
    if not size:
        return None
    return (f"-hf also fetches the repo's multimodal projector (mmproj), where it publishes one, and llama-server loads "
            f"it once the layers are placed (on the first GPU where there is one, after --fit's choice, which leaves it "
            f"out): {size / 2**30:.2f} GiB ({model.vision_params:,} vision/audio parameters at 16 bits), counted in "
            "this plan (--explain: multimodal projector), its compute buffer not; add --no-mmproj to serve text only "
            "(llama.cpp b5331 on, common/arg.cpp; llama.cpp#23265)")
