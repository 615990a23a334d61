"""Ollama's multimodal projector: its bytes as Ollama counts them, whether llama-server keeps it on the GPU, and each
release's words for where it goes (runtimes/ollama.py Ollama.projector places it). Split out of runtimes/ollama.py,
unchanged (place_projector too)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..memo import per_model
from ..model.spec import ModelSpec
from .base import DeviceMemory, Step, Target

OLLAMA_REF = "ollama/ollama v0.33.0-rc2 (fb30760)"   # the release runtimes/ollama.py is modelled on
# llm/llama_server.go mmprojOffloadHeadroom: "leaves 1 GiB for backend buffers beyond projector weights"
MMPROJ_HEADROOM = 1 << 30
PROJECTOR_ROLES = ("vision", "projector", "audio")


@per_model
def projector_bytes(model: ModelSpec) -> int:
    """The projector's bytes as Ollama counts them (llm/llama_server.go mmprojMemoryRequirement: the sum of its tensor
    sizes, the v. / mm. / a. tensors where the model file holds them): each tensor's size as read from a file, else at
    the types Ollama's converter writes them (convert/reader.go tensorBase.Kind: F32 for a 1-D tensor, F16 above)."""
    return sum(t.nbytes if t.nbytes is not None else t.numel * (4 if len(t.shape) < 2 else 2)
               for t in model.tensors if t.role in PROJECTOR_ROLES)


def projector_on_gpu(num_gpu: int | None, n_layers: int, gpus: list[Target], projector: int) -> tuple[bool, str]:
    """llm/llama_server.go shouldDisableMMProjOffload: (whether llama-server keeps the projector on the GPU, Ollama's
    reason when it passes --no-mmproj-offload). num_gpu None or < 0 is Ollama's automatic -1."""
    if not gpus or num_gpu == 0:
        return False, "cpu-only"
    if num_gpu is not None and 0 < num_gpu < n_layers + 1:     # modelLayers = BlockCount() + 1
        return False, "partial-text-offload"
    if any(0 < t.capacity < projector + MMPROJ_HEADROOM for t in gpus):
        return False, "limited-vram"
    return True, ""


@dataclass(frozen=True)
class Projector:
    """Where one launch's multimodal projector goes (Ollama.projector): its bytes (0: none), on the first GPU or not,
    Ollama's reason when not, the margin --fit keeps free for it, and the release's rule (versions.py)."""

    size: int
    on_gpu: bool
    why: str
    margin: int
    rule: str


# each rule's words for the projector step: (where, on the GPU; the source)
PROJECTOR_WORDS = {
    "fit-target": ("on {gpu}, the first GPU (--fit kept it free: LLAMA_ARG_FIT_TARGET = projector + 1 GiB)",
                   f"llm/llama_server.go appendMMProjArgs, shouldDisableMMProjOffload, mmprojFitTargetMiB "
                   f"({OLLAMA_REF}); llama.cpp tools/mtmd/clip.cpp clip_ctx"),
    "offload-check": ("on {gpu}, the first GPU (loaded after --fit placed the layers with its 1024 MiB margin: "
                      "no fit target for it before v0.31.2)",
                      "llm/llama_server.go appendMMProjArgs, shouldDisableMMProjOffload (ollama/ollama v0.30.0, "
                      "9db4bda); LLAMA_ARG_FIT_TARGET from v0.31.2 (a6293eb, ollama/ollama#16996)"),
    "first-gpu": ("on {gpu}, the first GPU, taken from its free space before the layers (no headroom of its own)",
                  "llm/server.go \"The vision projector is always loaded on the first GPU if available\" (v0.12.11–v0.29); "
                  "earlier llm/memory.go \"Projectors loaded into GPU0 only\""),
}


__all__ = ["MMPROJ_HEADROOM", "OLLAMA_REF", "PROJECTOR_ROLES", "PROJECTOR_WORDS", "Projector", "place_projector",
           "projector_bytes", "projector_on_gpu"]


def place_projector(model: ModelSpec, projector: Projector,
                    devices: tuple[DeviceMemory, ...]) -> tuple[tuple[DeviceMemory, ...], Step | None]:
    """The projector's bytes on the device llama-server loads it to: the first GPU (tools/mtmd/clip.cpp clip_ctx:
    ggml_backend_init_by_type(GPU), the first GPU device), or system memory where Ollama passes
    --no-mmproj-offload. Counted under overhead: it is read for an image or audio input, not per text token (the
    speed model reads the weights column). Its own compute buffer is not sized: Ollama's 1 GiB headroom is
    for it."""
    size, on_gpu, why = projector.size, projector.on_gpu, projector.why
    at = next((i for i, d in enumerate(devices) if (d.kind != "cpu") == on_gpu), None)
    if not size or at is None:
        return devices, None
    dev = devices[at]
    n = sum(1 for t in model.tensors if t.role in PROJECTOR_ROLES)
    where, source = PROJECTOR_WORDS[projector.rule]
    where = where.format(gpu=dev.name) if on_gpu else (f"in system memory ({why})" if projector.rule == "first-gpu"
                                                       else f"in system memory (--no-mmproj-offload: {why})")
    step = Step("multimodal projector", f"{n:,} vision/audio tensors, F16 (1-D: F32), {where}; under overhead",
                f"{size:,} B", source)
    return devices[:at] + (replace(dev, overhead=dev.overhead + size),) + devices[at + 1:], step
