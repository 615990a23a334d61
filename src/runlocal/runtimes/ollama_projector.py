"""Ollama's multimodal projector: its bytes as Ollama counts them, whether llama-server keeps it on the GPU, and each
release's words for where it goes (runtimes/ollama.py Ollama.projector places it). Split out of runtimes/ollama.py,
unchanged."""

from __future__ import annotations

from dataclasses import dataclass

from ..memo import per_model
from ..model.spec import ModelSpec
from .base import Target

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


__all__ = ["MMPROJ_HEADROOM", "OLLAMA_REF", "PROJECTOR_ROLES", "PROJECTOR_WORDS", "Projector", "projector_bytes",
           "projector_on_gpu"]
