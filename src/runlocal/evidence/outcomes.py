"""Posted outcomes ("I ran X on Y with Z and it started / ran out of memory / was refused"): the records, their
schema, how a record becomes a `CheckRequest`, and how runlocal's verdict is scored against the outcome (stdlib
only). The collection rule, committed before any record was looked at: measurements/outcomes/README.md.

    from runlocal.evidence.outcomes import load
    tuning, held_out = load("records.jsonl"), load("held_out.jsonl")
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlparse

from ..runtimes.registry import find_engine
from ..runtimes.versions import VERSIONED  # the runtimes `--runtime NAME==VERSION` takes (one list)
from . import MEASUREMENTS

HERE = MEASUREMENTS / "outcomes"
RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "mlx")
OUTCOMES = ("ran", "oom_load", "oom_running", "refused")
VERDICTS = ("fits", "tight", "does_not_fit")
REQUIRED = ("id", "thread", "thread_url", "source", "runtime", "model", "model_arg", "device", "settings",
            "defaulted", "outcome", "evidence", "query", "posted", "posted_from")
# settings a record may carry: CheckRequest field names (README, "Record format")
SETTINGS = ("ctx", "parallel", "n_gpu_layers", "gpu_memory_utilization", "tp", "kv_cache", "flash_attn", "cpu_moe",
            "n_cpu_moe", "max_num_batched_tokens", "enforce_eager", "max_new_tokens", "device_map", "no_mmap",
            "mem_fraction_static", "tensor_split")
# README "Scoring": what each posted outcome agrees with; strict: oom_running only with does_not_fit
AGREES = {"ran": ("fits", "tight"), "oom_load": ("does_not_fit",), "refused": ("does_not_fit",),
          "oom_running": ("does_not_fit", "tight")}
AGREES_STRICT = {**AGREES, "oom_running": ("does_not_fit",)}
# collection batches (README: batch 1, session 16; "Batch 2", session 17; "Batch 3", session 18; "Batch 4",
# session 19; "Batch 5", session 21; "Batch 6", session 22; "Batch 7", session 23); a record without the field is batch 1
BATCHES = (1, 2, 3, 4, 5, 6, 7)
# README "Post dates and the era's release": where a record's `posted` date was read
POSTED_FROM = ("issues", "page", "commit", "evidence", "none")
_DATE = re.compile(r"^20[0-9]{2}-[01][0-9]-[0-3][0-9]$")


class RecordError(ValueError):
    pass


def validate(rec: dict) -> None:
    """One line naming the field and what was expected; raises RecordError."""
    rid = rec.get("id", "?")
    for key in REQUIRED:
        if key not in rec:
            raise RecordError(f"{rid}: {key}: missing (required)")
    if rec["runtime"] not in RUNTIMES:
        raise RecordError(f"{rid}: runtime: expected one of {', '.join(RUNTIMES)}, got {rec['runtime']!r}")
    if rec["outcome"] not in OUTCOMES:
        raise RecordError(f"{rid}: outcome: expected one of {', '.join(OUTCOMES)}, got {rec['outcome']!r}")
    url = urlparse(rec["source"])
    if url.scheme != "https" or not url.netloc:
        raise RecordError(f"{rid}: source: expected an https URL, got {rec['source']!r}")
    if rec["thread_url"] != rec["source"].split("#")[0]:
        raise RecordError(f"{rid}: thread_url: expected the source without its anchor")
    if not isinstance(rec["thread"], int) or rec["thread"] < 1:
        raise RecordError(f"{rid}: thread: expected a positive integer")
    if not (rec.get("gpu_arg") or rec.get("vram_gib")):
        raise RecordError(f"{rid}: gpu_arg / vram_gib: one is required (the device or its memory)")
    unknown = set(rec["settings"]) - set(SETTINGS)
    if unknown:
        raise RecordError(f"{rid}: settings: unknown key(s) {', '.join(sorted(unknown))}")
    if rec["settings"].get("flash_attn", "auto") not in ("on", "off", "auto"):
        raise RecordError(f"{rid}: settings.flash_attn: expected on, off or auto (CheckRequest's values), "
                          f"got {rec['settings']['flash_attn']!r}")
    if rec["outcome"] == "oom_running" and "ctx" not in rec["settings"]:
        raise RecordError(f"{rid}: settings.ctx: an oom_running record needs the context where it failed")
    if rec.get("batch", 1) not in BATCHES:
        raise RecordError(f"{rid}: batch: expected one of {', '.join(map(str, BATCHES))}, got {rec['batch']!r}")
    if not 0 < len(rec["evidence"]) <= 600:
        raise RecordError(f"{rid}: evidence: expected 1 to 600 characters, got {len(rec['evidence'])}")
    _validate_era(rec, rid)


def _validate_era(rec: dict, rid: str) -> None:
    """README "Post dates and the era's release": `posted` a date or "unknown" (with `posted_from` none), and a
    release inferred only for a record that names none and whose date is known."""
    posted, source = rec["posted"], rec.get("posted_from")
    if posted != "unknown" and not _DATE.match(posted):
        raise RecordError(f"{rid}: posted: expected YYYY-MM-DD or 'unknown', got {posted!r}")
    if source not in POSTED_FROM or (source == "none") != (posted == "unknown"):
        raise RecordError(f"{rid}: posted_from: expected one of {', '.join(POSTED_FROM)} ('none' exactly when "
                          f"posted is 'unknown'), got {source!r}")
    if rec.get("runtime_version_inferred") and (rec.get("runtime_version") or posted == "unknown"):
        raise RecordError(f"{rid}: runtime_version_inferred: only where runtime_version is null and posted is a date")


def load(name: str, root: Path = HERE) -> list[dict]:
    """The records of one file, validated; ids unique and each thread in one file only."""
    recs = [json.loads(line) for line in (root / name).read_text().splitlines() if line.strip()]
    seen: set[str] = set()
    for rec in recs:
        validate(rec)
        if rec["id"] in seen:
            raise RecordError(f"{rec['id']}: id: duplicate")
        seen.add(rec["id"])
    return recs


def batch_of(rec: dict) -> int:
    """The collection batch a record came from (README "Batch 2" … "Batch 7"); batch 1's records carry no field."""
    return int(rec.get("batch", 1))


def check_split(tuning: list[dict], held_out: list[dict]) -> None:
    """README "Split": thread n is held out exactly when n % 3 == 0, and a thread's number is its URL's only."""
    by_url: dict[str, int] = {}
    for part, recs in (("tuning", tuning), ("held_out", held_out)):
        for rec in recs:
            if (rec["thread"] % 3 == 0) != (part == "held_out"):
                raise RecordError(f"{rec['id']}: thread: {rec['thread']} does not belong in {part}")
            if by_url.setdefault(rec["thread_url"], rec["thread"]) != rec["thread"]:
                raise RecordError(f"{rec['id']}: thread: {rec['thread_url']} numbered twice")
    numbers = sorted(set(by_url.values()))
    if numbers != list(range(1, len(numbers) + 1)):
        raise RecordError("thread: numbers are not 1..N without gaps")


def agrees(outcome: str, verdict: str, strict: bool = False) -> bool:
    """Whether runlocal's verdict agrees with the posted outcome (README "Scoring")."""
    if outcome not in OUTCOMES:
        raise RecordError(f"outcome: expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    if verdict not in VERDICTS:
        raise RecordError(f"verdict: expected one of {', '.join(VERDICTS)}, got {verdict!r}")
    return verdict in (AGREES_STRICT if strict else AGREES)[outcome]


def release_key(runtime: str, version: str) -> tuple[int, ...]:
    """A release as numbers to compare: llama.cpp 'b6451' → (6451,), '0.6.3' → (0, 6, 3). Build numbers name the
    releases of a ggml engine that is llama.cpp itself, not one that pins a llama.cpp build (Ollama: dotted)."""
    e = find_engine(runtime)
    builds = e is not None and e.ggml and not e.pinned_llama_cpp
    return (int(version.lstrip("b")),) if builds else tuple(int(x) for x in version.split("."))


def release_on(runtime: str, rows: list[list[str]], date: str) -> str | None:
    """The release of ``runtime`` current on ``date``: the highest of ``rows`` ([version, YYYY-MM-DD, …], a
    release_dates.json table) dated on or before it; None when every release is later (README "Post dates and the
    era's release"). The highest, not the newest dated: a patch of an older line can be published after a newer
    release."""
    out = [row[0] for row in rows if row[1] <= date]
    return max(out, key=lambda v: release_key(runtime, v)) if out else None


def release_dates(root: Path = HERE) -> dict[str, list[list[str]]]:
    """measurements/outcomes/release_dates.json (make_release_dates.py): each runtime's dated releases."""
    table = json.loads((root / "release_dates.json").read_text())
    return {rt: rows for rt, rows in table.items() if not rt.startswith("_")}


def era_release(rec: dict, table: dict[str, list[list[str]]]) -> str | None:
    """The release a record is planned at by the era rule: None where it names its own version or its date is
    unknown (planned as before), else the runtime's release current on the post's date."""
    if rec.get("runtime_version") or rec.get("posted", "unknown") == "unknown":
        return None
    return release_on(rec["runtime"], table.get(rec["runtime"], []), rec["posted"])


def request_fields(rec: dict, versioned: bool = True, era: bool = False) -> dict:
    """CheckRequest keyword arguments for a record (README "How a record is given to runlocal").
    ``versioned``: the runtime with its version (``llama.cpp==b3488``) where the record states one; ``era`` too: a
    record that states none is planned at ``runtime_version_inferred`` (README "Post dates and the era's release")."""
    runtime = rec["runtime"]
    version = rec.get("runtime_version") or (rec.get("runtime_version_inferred") if era else None)
    if versioned and version and runtime in VERSIONED:
        runtime = f"{runtime}=={version}"
    fields: dict = {"model": rec["model_arg"], "runtime": runtime, "use_measurements": False}
    if rec.get("gpu_arg"):
        fields["gpu"] = rec["gpu_arg"]
    else:
        count = rec.get("device_count") or 1
        fields["vram"] = f"{count}x{rec['vram_gib']}G" if count > 1 else f"{rec['vram_gib']}G"
    if rec.get("ram_gib"):
        fields["ram"] = f"{rec['ram_gib']}G"
    if rec.get("quant"):
        fields["quant"] = rec["quant"]
    fields.update(rec["settings"])
    return fields
