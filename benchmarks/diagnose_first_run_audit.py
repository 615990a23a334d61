"""Why each held-out round missed what it missed at its first scoring (rounds 4-51): docs/diagnosis-audit.md.

Reads every miss listed in measurements/public_errors/scoring/roundN_first_run.txt (N = 4 … 51; rounds 2 and 3 have
no first-run file), replays each round's texts on the code that scored it (the tree of the commit that added the
round's first-run file: none of those commits changed code, so its src/ is the code that ran), and records for a
generic out-of-memory which step of ``refine_cuda_oom`` answered — in particular its last, no-evidence step (the
load by default). Every replayed answer must equal the recorded one (the script stops if not). Each miss is then put
in one class by the rules in ``classify_miss`` (and, for the look-alikes called memory, by the reading written in
``LOOKALIKE_READING``, one line each); the table goes to scoring/first_run_audit.tsv, the counts per class and era to
stdout. Only tuning files are read (rounds 4-51 are tuning data); held_out/ is not opened.

    python benchmarks/diagnose_first_run_audit.py            # about two minutes: 48 trees are unpacked and replayed
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "measurements" / "public_errors"
SCORING = CORPUS / "scoring"
ROUNDS = range(4, 52)
ERAS = (("4-13", 13), ("14-29", 29), ("30-38", 38), ("39-51", 51))  # neutral; memory-weighted; new families; LLM
PHASES = {"cuda_oom_load", "cuda_oom_long_context"}
HOST = {"oom_killer"}
_MISS = re.compile(r"^\s+(\S+)\s+expected (\S+)\s+got (\S+)")

# run in a subprocess on one old tree: each text's answer, and whether refine_cuda_oom answered by its last step
_REPLAY = r'''
import inspect, json, sys
from runlocal.diagnose import diagnose_text
refine = next(getattr(m, "refine_cuda_oom") for n, m in list(sys.modules.items())
              if n.startswith("runlocal.diagnose") and hasattr(m, "refine_cuda_oom"))
lines, first = inspect.getsourcelines(refine)
default_line = first + max(i for i, s in enumerate(lines) if s.strip() == 'return "cuda_oom_load"')
code, seen = refine.__code__, {}
def tracer(frame, event, arg):
    if frame.f_code is not code:
        return None
    def local(fr, ev, a):
        if ev == "return":
            seen["line"] = fr.f_lineno
        return local
    return local
out = {}
for path in sys.argv[2:]:
    for raw in open(path, encoding="utf-8"):
        if not raw.strip():
            continue
        rec = json.loads(raw)
        seen.clear()
        sys.settrace(tracer)
        try:
            cat = diagnose_text(rec["text"]).category
        finally:
            sys.settrace(None)
        out[rec["id"]] = {"got": cat, "default": seen.get("line") == default_line}
print(json.dumps(out))
'''

# the look-alikes called memory, each read one by one: (class, why)
LOOKALIKE_READING = {
    "mlx-566": ("c", "numbers: a size no machine has"),
    "langchain-chatchat-703": ("c", "numbers: a size no machine has"),
    "paddlenlp-7231": ("c", "numbers: a size no machine has"),
    "paddlenlp-8208": ("c", "numbers: a size no machine has"),
    "unsloth-3371": ("c", "numbers: an empty device refusing one block (a per-allocation cap)"),
    "llama.cpp-pr-26297": ("c", "numbers: one buffer above a card with --fit off"),
    "stcn-132": ("c", "the shared-memory mount (/dev/shm) family"),
    "pytorch-5040": ("c", "the shared-memory mount (/dev/shm) family"),
    "mmsegmentation-1356": ("c", "the shared-memory mount (/dev/shm) family"),
    "ms-swift-3241": ("c", "vLLM's memory-profiling assertion (another tenant) family"),
    "vllm-56830": ("c", "vLLM's memory-profiling assertion (another tenant) family"),
    "ms-swift-9613": ("c", "the cumem allocator's invalid argument family"),
    "tinygrad-3608": ("c", "an HSA resource error family"),
    "tensorrt-llm-287": ("c", "a kernel-launch limit at long context"),
    "trtllm-921": ("c", "a TensorRT tactic refusal under the writer's guess"),
    "tt-inference-server-2913": ("c", '"Too many open files" family'),
    "sglang-2102": ("c", "a flashinfer workspace refusal family"),
    "llama.cpp-15009": ("c", "a Vulkan / unified-memory refusal family"),
    "omlx-862": ("c", "a GPU-driver panic family"),
    "sglang-jax-408": ("c", "a TPU kernel's scoped-memory family"),
    "h2ogpt-812": ("d", "a survived warning (mlock) over the real outcome"),
    "llama-cpp-python-618": ("d", "a survived warning (mlock) over the real outcome"),
    "llama-cpp-python-708": ("d", "a survived warning (mlock) over the real outcome"),
    "gpt4all-1268": ("d", "an app's hint about RAM over the crash it names"),
    "sglang-2468": ("d", "a bare kill after the real error"),
    "gpt-neox-538": ("d", "a bare kill after the real error"),
    "lightseq-515": ("d", "the writer rules memory out beside an illegal access"),
    "modelz-llm-69": ("d", "the writer says memory use was low beside exit 137"),
    "ollama-5517": ("d", "the pinned-allocation line names its own non-memory cause"),
    "vibe-1168": ("d", "a full disk before a bare out of memory"),
    "llama-cpp-4928": ("d", "a freeing bug named beside bad_alloc"),
    "legacy-rocm-build-5902": ("d", "an OOM line whose own footer names a call that allocates nothing"),
    "FastChat-1627": ("d", "a memory word inside another error (a missing attribute)"),
    "llama.cpp-15139": ("d", "an allocation failure after a tool's own fault"),
    "ogam-495": ("d", "a version regression named by the writer"),
    "llamacpp-pr-25584-c": ("d", "an abort after a fault read as a kill"),
    "textgen-429": ("f", "the label rests on the thread (the text is an allocator's refusal)"),
    "llm-tpu-8": ("f", "the label rests on the thread (the text is an allocation failure)"),
    "exllamav2-386": ("f", "the label rests on the thread (the text is a bare MemoryError)"),
    "assimp-2929": ("f", "the label rests on the thread (a bad_alloc fixed by a commit)"),
    "ollama-1413": ("f", "the label rests on the thread (the text is a CUDA OOM)"),
    "llama.cpp-3221": ("f", "the label rests on the thread (a CUDA OOM the maintainer traced to a bug)"),
    "llamafile-501": ("f", "the label rests on the thread (CPU buffers it puts down to Windows, not a lack of RAM)"),
    "sglang-4602": ("f", "a label error, relabelled to memory later"),
}


def era(n: int) -> str:
    return next(name for name, last in ERAS if n <= last)


def first_run_misses() -> list[dict]:
    misses = []
    for n in ROUNDS:
        text = (SCORING / f"round{n}_first_run.txt").read_text(encoding="utf-8")
        held = text[text.index("== held-out (set"):]
        held = held[:held.find("\n== ", 1)] if "\n== " in held else held
        for line in held[held.index("misses:"):].splitlines()[1:]:
            if m := _MISS.match(line):
                misses.append({"round": n, "id": m.group(1), "expected": m.group(2), "got": m.group(3)})
            elif not line.strip():
                break
    return misses


def replay(n: int, workdir: Path) -> dict[str, dict]:
    """Each text of round n answered by the code that scored it."""
    commit = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "-1", "--",
                             str(SCORING / f"round{n}_first_run.txt")],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    tree = workdir / str(n)
    tree.mkdir()
    archive = subprocess.run(["git", "archive", commit, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    files = [str(p) for p in (CORPUS / f"round{n}.jsonl", CORPUS / f"round{n}_pages.jsonl") if p.exists()]
    # the old tree first on the path through the environment (PYTHONPATH precedes site-packages' editable install)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run([sys.executable, "-c", _REPLAY, str(tree / "src"), *files],
                          capture_output=True, text=True, check=True, cwd=workdir, env=env)
    return json.loads(done.stdout)


def today(texts: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """Each text answered by this tree, and whether refine_cuda_oom answered by its last (no-evidence) step."""
    from runlocal.diagnose import classify, cuda_oom, diagnose_text

    seen: dict[str, bool] = {}
    original = cuda_oom.refine_cuda_oom

    def watched(figures, loading, running, line_phase=None, loaded=False, async_allocator=False,
                weights_at_most=None):
        seen["default"] = not cuda_oom.phase_stated(figures, loading, running, line_phase, loaded, async_allocator,
                                                    weights_at_most)
        return original(figures, loading, running, line_phase, loaded, async_allocator, weights_at_most)

    classify.refine_cuda_oom = watched
    try:
        out = {}
        for key, text in texts.items():
            seen.clear()
            out[key] = (diagnose_text(text).category, seen.get("default", False))
        return out
    finally:
        classify.refine_cuda_oom = original


def classify_miss(m: dict, default_then: bool, now: str, default_now: bool) -> tuple[str, str]:
    e, g = m["expected"], m["got"]
    if {e, g} == PHASES:
        if default_then and e == "cuda_oom_long_context" and default_now:
            return "a", "load / run: the text states no phase (the label is the thread's); the default (load) answered"
        if default_then:
            return "b", "phase: no rule of the day read it, the default (load) answered; the run is said in words read later"
        return "b", f"phase: read the other way by the rules of the day ({'load' if g == 'cuda_oom_load' else 'run'} " \
                    "words beside the failing step)"
    if {e, g} == {"llamacpp_alloc_fail", "cuda_oom_long_context"}:
        return "b", "phase: ggml's OOM on a request after the load read as its load-time buffer"
    if g == "unknown":
        if e == "not_memory":
            return "e", "a look-alike answered unknown (no error line recognised)"
        return "e", ("a memory failure answered unknown: its family absent" if now == e
                     else "a memory failure answered unknown: the text holds no memory evidence")
    if e == "not_memory":
        return LOOKALIKE_READING[m["id"]]
    if g == "not_memory":
        return ("c", "a memory family absent (its words or allocator unknown)") if now == e else \
            ("f", "the label rests on the thread: the text names no memory")
    if "fragmentation" in (e, g):
        return "d", "precedence: the figure test for fragmentation over the phase"
    if (e in HOST) != (g in HOST):
        return "c", "host vs device: the host allocator's or the kill's family absent"
    if {e, g} <= {"llamacpp_alloc_fail", "cuda_oom_load", "ollama_system_memory", "rocm_oom"}:
        return "a", "llama.cpp / Ollama / ROCm vs generic CUDA: the label encodes a runtime or back end the text may " \
                    "not name"
    if "vllm_gpu_util" in (e, g):
        return "a", "vLLM's utilisation share vs the load (a wake-up, another tenant)"
    if "sglang_kv_overflow" in (e, g):
        return "c", "SGLang's pool wording absent"
    if "metal_oom" in (e, g):
        return "c", "the device family (MPS / Metal / tt-metal) absent or mistaken"
    return "c", "a host allocator under an offload run"


def main() -> None:
    misses = first_run_misses()
    texts = {}
    for path in sorted(CORPUS.glob("*.jsonl")):  # tuning files only
        for raw in path.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                rec = json.loads(raw)
                texts[rec["id"]] = rec["text"]
    then: dict[str, dict] = {}
    default_bucket: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in ROUNDS:
            answers = replay(n, Path(tmp))
            then.update(answers)
            for key, a in answers.items():
                if a["default"]:
                    default_bucket[(era(n), key)] += 1
    for m in misses:
        if then[m["id"]]["got"] != m["got"]:
            raise SystemExit(f"round {m['round']} {m['id']}: replayed {then[m['id']]['got']}, recorded {m['got']}")
    now = today({m["id"]: texts[m["id"]] for m in misses})
    rows = []
    for m in misses:
        cls, why = classify_miss(m, then[m["id"]]["default"], *now[m["id"]])
        rows.append({**m, "class": cls, "why": why})
    with open(SCORING / "first_run_audit.tsv", "w", encoding="utf-8") as out:
        out.write("round\tid\texpected\tgot_first_run\tclass\twhy\n")
        for r in rows:
            out.write(f"{r['round']}\t{r['id']}\t{r['expected']}\t{r['got']}\t{r['class']}\t{r['why']}\n")
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        table[(r["class"], r["why"])][era(r["round"])] += 1
    names = [name for name, _ in ERAS]
    print(f"{len(rows)} first-run misses, rounds 4-51; per era {' / '.join(names)}, then all:")
    for (cls, why), per in sorted(table.items()):
        print(f"  ({cls}) {' / '.join(str(per[e]) for e in names):>14}  {sum(per.values()):>3}  {why}")
    print("texts the last (no-evidence) step of refine_cuda_oom answered at first sight, by their labels:")
    labels = collections.Counter()
    for (e, key) in default_bucket:
        labels[(e, _label(key))] += 1
    for e in names:
        print(f"  {e:>6}: " + ", ".join(f"{lab} {c}" for (ee, lab), c in sorted(labels.items()) if ee == e))
    print("... the load / run ones by the runtime today's scanner detects in the text:")
    from runlocal.diagnose import diagnose_text
    from runlocal.diagnose.classify import START_UP_RESERVERS
    by_runtime: collections.Counter = collections.Counter()
    for (_, key) in default_bucket:
        if _label(key) in PHASES:
            rt = diagnose_text(texts[key]).runtime
            group = "a serving engine that reserves at start-up" if rt in START_UP_RESERVERS else \
                "no runtime named" if rt is None else "another runtime"
            by_runtime[(group, _label(key))] += 1
    for (group, lab), c in sorted(by_runtime.items()):
        print(f"  {group}: {lab} {c}")


_LABELS: dict[str, str] = {}


def _label(key: str) -> str:
    if not _LABELS:
        for path in sorted(CORPUS.glob("*.jsonl")):
            for raw in path.read_text(encoding="utf-8").splitlines():
                if raw.strip():
                    rec = json.loads(raw)
                    _LABELS[rec["id"]] = rec["label"]
    return _LABELS[key]


if __name__ == "__main__":
    main()
