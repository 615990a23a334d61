"""Load evidence the phase-unstated texts carry in forms phase.LOAD does not read (session 22, diagnose22; counted
BEFORE any rule). phase_unstated_signals22.txt found no figure, word or run frame that separates the phases among the
129 tuning texts labelled load / run that diagnose answers "phase not stated"; reading those texts (tuning only) showed
loader frames and start-up lines beside the failing line that no LOAD pattern matches — exllamav2 placing its modules
(load_autosplit, "Insufficient VRAM for model and cache"), a module's weights moved to the card (nn.Module._apply's
``param_applied = fn(param)`` / ``return t.to(``), a weight tensor made (``Parameter(torch.Tensor(``), TurboMind making
its weights, LocalAI's "could not load model", MLC's chat module reloading, TensorRT's builder timing tactics, a
"CUDA-graph capture" spelled with a hyphen, TGI's warm-up refusal. Each form is counted over the 129 (load / run) and
over every tuning text that carries it, by label and by whether diagnose answers it right now: a form can join
phase.LOAD only where no run text carries it (in the 129 or anywhere else in tuning).
Reads the tuning part only (never next/ nor held_out/).
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/phase_unstated_load_forms22.py
"""

from __future__ import annotations

import re

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import PHASE_UNSTATED_ID
from runlocal.evidence import public_errors

LOAD, RUN = "cuda_oom_load", "cuda_oom_long_context"
FORMS = {
    "exllamav2 placing modules (load_autosplit, Insufficient VRAM for model and cache, allocation footprint)":
        r"load_autosplit|insufficient vram (?:in split )?for model and cache|insufficient space in device allocation",
    "a frame in a function named load* ('in load', 'in load_autosplit_gen')": r"\bin load\w*\s*$",
    "the load said as a failure ('could not load model', 'failed to load (the) model', 'error loading model')":
        r"\b(?:could not|couldn't|failed to|unable to|cannot|can't) load (?:the )?model\b|\berror loading model\b",
    "a module's weights moved or cast (nn.Module._apply: 'param_applied = fn(param)', 'in _apply', 'return t.to(')":
        r"param_applied = fn\(param\)|\bin _apply\s*$|return t\.to\(",
    "a weight tensor made (Parameter(torch.Tensor( / torch.empty()": r"parameter\(torch\.(?:tensor|empty)\(",
    "TurboMind making its weights / model instance (create_shared_weights, _create_weight_func, _create_model_instance)":
        r"create_shared_weights|_create_weight_func|_create_model_instance",
    "a model object constructed (a frame 'in __init__' / 'in init')": r"\bin _{0,2}init_{0,2}\s*$",
    "LLaVA's loader (load_pretrained_model without the underscore, builder.py)": r"(?<!_)load_pretrained_model",
    "MLC's chat module (LLMChat::Reload, ChatModule(, 'Initializing the chat module')":
        r"llmchat::reload|chatmodule\(|initiali[sz]ing the chat module",
    "a reload ('during reload', 'reload(')": r"\breload\b",
    "TensorRT's builder timing tactics ('Skipping tactic', 'Tactic Device request', 'Requested amount of GPU memory')":
        r"skipping tactic|tactic device request|requested amount of gpu memory",
    "CUDA graphs captured, hyphenated ('CUDA-graph capture', 'capturing CUDA-graphs')":
        r"cuda-graphs? capture|captur\w* cuda-graphs?",
    "TGI's warm-up refusal ('Not enough memory to handle N total tokens / prefill tokens')":
        r"not enough memory to handle \d+ (?:total|prefill) tokens",
    "a model being converted ('convert model', 'convert.py', 'converting the model')":
        r"\bconvert(?:ing)? (?:the |a )?model\b|\bconvert\.py\b",
    "a question whether the card can load it ('enough to load', 'able to load')": r"\b(?:enough|able) to load\b",
}


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    answered = []
    for r in tuning:
        d = diagnose_text(r["text"])
        answered.append((r, d.entry.id if d.entry else None, d.entry.category if d.entry else "unknown"))
    unstated = [(r, e, c) for r, e, c in answered if e == PHASE_UNSTATED_ID and r["label"] in (LOAD, RUN)]
    print(f"{len(unstated)} tuning texts labelled load / run answered 'phase not stated' "
          f"({sum(r['label'] == LOAD for r, _, _ in unstated)} load, {sum(r['label'] == RUN for r, _, _ in unstated)} run)")
    print(f"\n{'form':112s} {'load':>4s} {'run':>4s}   every tuning text carrying it: label -> answer (texts)")
    for name, pattern in FORMS.items():
        compiled = re.compile(pattern, re.I | re.M)
        a = sum(bool(compiled.search(r["text"])) for r, _, _ in unstated if r["label"] == LOAD)
        b = sum(bool(compiled.search(r["text"])) for r, _, _ in unstated if r["label"] == RUN)
        seen: dict[str, int] = {}
        for r, _, category in answered:
            if compiled.search(r["text"]):
                key = f"{r['label']} -> {category}"
                seen[key] = seen.get(key, 0) + 1
        where = "; ".join(f"{k} {n}" for k, n in sorted(seen.items(), key=lambda kv: -kv[1])) or "none"
        print(f"{name:112s} {a:4d} {b:4d}   {where}")
    every_form = re.compile("|".join(f"(?:{p})" for p in FORMS.values()), re.I | re.M)
    a = sum(bool(every_form.search(r["text"])) for r, _, _ in unstated if r["label"] == LOAD)
    b = sum(bool(every_form.search(r["text"])) for r, _, _ in unstated if r["label"] == RUN)
    runs = sum(bool(every_form.search(r["text"])) for r, _, _ in answered if r["label"] == RUN)
    print(f"\nany form above: {a} load, {b} run of the {len(unstated)}; tuning texts labelled the run carrying one: {runs}")


if __name__ == "__main__":
    main()
