"""fixes.py's last resort left unplanned where none of its fixes could be offered: _combined (a smaller GGUF with a
shorter context, or with layers on the CPU) plans, per smaller quant, the longest context that starts — at least a
whole llama-server --fit plan over every GPU, some twenty graph simulations over four (deepseek-v3 at -c 8192 on
4 × RTX 3090: two of its check's six whole plans, a third of its time), and its fixes are then dropped unseen.

A fix is offered only where it improves the plan (fixes_replan._Fixer.improves): a better verdict; or the same one with the
plan's compromise gone and decode at least 10 % faster (a combined fix never gains context). A plan with a
compromise is tight at best (verdict.verdict). A llama.cpp plan whose settings leave the layers, -ts and tensor
overrides to --fit, and in which --fit moves some layer or expert off the GPUs, states that as its compromise
(LlamaCpp._compromise: layers in system memory, or fit.cpp's -ot rules to the CPU, which rule_layers reads back).
So where the plan is tight or fits, a context fix at a quant where --fit surely moves some layer or expert off the
GPUs (llamacpp_fit_bound.every_layer_surely_moved) is at best as tight and never offered; and one whose settings put
every layer on the GPUs themselves (_Fixer.base where --fit had moved some: -ngl past n_layers) never starts where
that surely overflows a GPU (every_layer_surely_over), so it is never tried. Both bounds grow with the context: asked
at the fewest cells a llama.cpp context has (CTX_PAD), they hold at whatever context the fix would end at. The layers
branch sets -ngl below n_layers + 1 itself (no --fit, no compromise said): where it is taken nothing is skipped; GPUs
sharing memory with the host (unified) are left to the planning too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import InputError
from .runtimes.llamacpp_fit_bound import every_layer_surely_moved, every_layer_surely_over
from .runtimes.llamacpp_layout import CTX_PAD
from .weights import estimate

if TYPE_CHECKING:
    from .fixes_replan import _Fixer


def combined_layers_tried(f: _Fixer) -> bool:
    """Whether _combined tries the layers branch (-ngl with a smaller quant): the engine has the lever and both a
    CPU and a GPU, unless llama-server's own --fit already placed every layer the search can return (it stops at
    n_layers: the plan's -ngl unset, auto or at least n_layers), whose answer could not be offered."""
    ngl, n = f.plan.settings.llamacpp.n_gpu_layers, f.model.n_layers
    return bool(f.levers.layer_offload and f.has_cpu and f.has_gpu
                and not (f.all_on_gpu and (ngl is None or ngl < 0 or ngl >= n)))


def combined_unoffered(f: _Fixer) -> bool:
    """Whether none of _combined's fixes could be offered (the module's docstring says why): the plan tight or
    fitting on discrete GPUs, the layers branch not taken, and at every quant the engine offers (the smaller ones
    _combined plans among them) each base a context fix starts from (_Fixer.base, and the plan's settings as the
    max-context search placed them, which _combined adds where --fit placed the layers) surely moving some layer or
    expert off the GPUs under --fit, or surely overflowing a GPU with every layer on them."""
    if (f.plan.verdict not in ("tight", "fits") or any(t.kind not in ("cpu", "gpu") for t in f.targets)
            or combined_layers_tried(f)):
        return False
    bases = [b for b in (f.base, f.plan.searched) if b is not None]
    for q in f.levers.weight_quants:
        try:
            w = estimate(f.model, q)
        except InputError:
            continue
        for b in bases:
            fix = b.with_(quant=q, ctx=CTX_PAD)
            if not (every_layer_surely_moved(f.runtime, f.model, w, fix, f.targets)
                    or every_layer_surely_over(f.runtime, f.model, w, fix, f.targets)):
                return False
    return True
