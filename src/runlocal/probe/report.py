"""`runlocal probe`: run it with progress, print the measured ceiling beside the prediction, store it."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import InputError
from ..measured import stored_record_problem
from .client import Api
from .run import Step, run_probe


def _device_name(explicit: str | None) -> str:
    if explicit:
        return explicit
    from ..hardware.detect import detect_nvidia

    gpus, _ = detect_nvidia()
    return gpus[0].name if gpus else "CPU"


def _refusal(response) -> str:
    """A refusal's detail as one line: FastAPI's [{"loc": [...], "msg": ...}] list, or its text."""
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text[:200]
    if isinstance(detail, list):
        lines = []
        for d in (d for d in detail if isinstance(d, dict)):
            field, msg = str((d.get("loc") or ["?"])[-1]), str(d.get("msg"))
            lines.append(msg if msg.startswith(f"{field}:") else f"{field}: {msg}")      # a message naming its field
        return "; ".join(lines)
    return str(detail)[:200]


def recorded_model(name: str) -> tuple[str, str | None]:
    """(the model a result is stored under, the GGUF type its name carries): a server that names its model by a
    GGUF file (llama-server without --alias: Qwen3-8B-Q4_K_M.gguf) is read as the catalog model and type the file
    name gives (pull_names.read_gguf_file_name); any other name as it is."""
    from ..runtimes.pull_names import read_gguf_file_name

    read = read_gguf_file_name(name) if name.lower().endswith(".gguf") else None
    return (read.alias, read.quant) if read is not None else (name, None)


def to_record(result, *, device: str, runtime: str, model: str | None) -> dict[str, Any]:
    d = result.to_dict()
    ttfts = [s.ttft_s for s in result.steps if s.ok and s.ttft_s is not None]
    name, quant = recorded_model(model or result.model or "unknown")
    # decode_at_context: the depth the decode figure stands for (ProbeResult.decode_depth); a plan uses the figure
    # only near its own depth (measured.DEPTH_MATCH). Each step keeps its prompt_tokens in settings.steps
    return {"device": device, "runtime": runtime, "model": name, **({"quant": quant} if quant else {}),
            "settings": {"api": result.api, "url": result.url, "steps": d["steps"],
                         "decode_at_context": d["decode_at_context"]},
            "decode_tokens_per_s": d["decode_tokens_per_s"],
            "prefill_tokens_per_s": d["prefill_tokens_per_s"],       # the median step's, as the README says
            "ttft_s": min(ttfts) if ttfts else None, "peak_memory_bytes": result.peak_memory_bytes,
            "max_context": result.max_context_ok, "max_concurrency": result.max_concurrency_ok, "source": "probe"}


def probe_command(*, url: str, api: str, model: str | None, max_context: int | None, max_concurrency: int,
                  max_tokens: int, step_timeout: float, time_budget: float, token_ids: bool, pid: int | None,
                  predict: str | None, runtime: str, gpu: str | None, device: str | None, store: bool,
                  submit: str | None, as_json: bool) -> bool:
    """Returns whether any step succeeded."""
    if api not in ("openai", "ollama"):
        raise InputError(f"api: expected openai or ollama, got '{api}'")
    checked_api: Api = "openai" if api == "openai" else "ollama"
    if not url.startswith(("http://", "https://")):
        raise InputError(f"url: expected http://host:port, got '{url}'")
    for name, v in (("max-concurrency", max_concurrency), ("max-tokens", max_tokens)):
        if v < 1:
            raise InputError(f"{name}: must be at least 1, got {v}")

    def progress(step: Step) -> None:
        mark = "ok " if step.ok else "FAIL"
        decode = f"{step.decode_tokens_per_s:.1f}" if step.decode_tokens_per_s else "—"     # none timed: no 0.0
        detail = (f"ttft {step.ttft_s:.2f}s decode {decode} tok/s"
                  if step.ok else f"{step.error_kind}: {step.error}")
        print(f"  [{mark}] {step.phase:<11} prompt {step.prompt_tokens:>7,} × {step.concurrency:<3} {detail}",
              file=sys.stderr, flush=True)

    print(f"probing {url} ({api}) …", file=sys.stderr, flush=True)
    result = run_probe(url, api=checked_api, model=model, max_context=max_context, max_concurrency=max_concurrency,
                       max_tokens=max_tokens, step_timeout=step_timeout, time_budget=time_budget, token_ids=token_ids,
                       pid=pid, progress=progress)
    out = result.to_dict()
    if predict:
        from ..check import CheckRequest, check

        plan, _ = check(CheckRequest(model=predict, runtime=runtime, gpu=gpu or "auto",
                                     ctx=result.max_context_ok or 4096, use_measurements=False))
        out["prediction"] = {"max_context": plan.max_context, "max_concurrency": plan.max_concurrency,
                             "decode_tokens_per_s": plan.speed.get("decode_tokens_per_s"), "verdict": plan.verdict}
    if not (predict or model or result.model):       # the name the server itself gives its model
        from .client import served_model

        result.model = served_model(url, checked_api)
    record = to_record(result, device=_device_name(device), runtime=runtime, model=predict or model)
    measured = any(s.ok for s in result.steps)     # a probe with no successful step measured nothing: keep nothing
    problem = stored_record_problem(record) if measured else None
    out["stored_as"] = {k: record.get(k) for k in ("model", "quant", "device", "runtime")}
    if problem is not None:       # a figure this device cannot produce for this model: not a measurement of it
        out["not_stored"] = f"{problem[0]}: {problem[1]}"
    if store and measured and problem is None:
        from ..api.store import BenchmarkStore

        row, _ = BenchmarkStore().add(record, verified_by="probe")     # measured here by the user: it counts
        out["stored_id"] = row["id"]
    if submit and measured and problem is None:
        out["submitted"] = submitted(record, submit)
    if as_json:
        print(json.dumps(out, indent=2))
        return measured
    decode, depth = out["decode_tokens_per_s"], out["decode_at_context"]
    print(f"measured: max context {out['max_context_ok'] or '—'} tokens, max concurrency "
          f"{out['max_concurrency_ok'] or '—'}, decode {f'{decode:.1f}' if decode else '—'} tok/s"
          + (f" (median, at {depth:,} tokens in the KV cache)" if decode and depth else "")
          + (f", peak memory {out['peak_memory_bytes'] / 2**30:.2f} GiB ({out['memory_source']})"
             if out["peak_memory_bytes"] else ""))
    if "prediction" in out:
        p = out["prediction"]
        print(f"predicted: max context {p['max_context'] or '—'}, max concurrency {p['max_concurrency'] or '—'}, "
              f"decode {p['decode_tokens_per_s'] or '—'} tok/s ({p['verdict']})")
    if result.stopped_because:
        print(f"stopped: {result.stopped_because}")
    print(_stored_words(out) if measured else "nothing stored: no step succeeded")
    return measured


def _stored_words(out: dict[str, Any]) -> str:
    """Under which model, quant and device the result was stored (its id), or why it was not: a server's model
    name read as a catalog model (Qwen3-8B-Q4_K_M.gguf → qwen3-8b Q4_K_M) can be another model behind that name."""
    a = out["stored_as"]
    said = f"{a['model']}{' ' + a['quant'] if a.get('quant') else ''} on {a['device']} ({a['runtime']})"
    if "not_stored" in out:
        return (f"not stored as {said}: {out['not_stored']}. If the server runs another model or quant than its name "
                "says, pass --model with the one it runs")
    if "stored_id" in out:
        return f"stored as {said}, id {out['stored_id']} (runlocal check uses it for that model on that device)"
    return f"read as {said}"


def submitted(record: dict[str, Any], submit: str) -> bool:
    """POST the result to the runlocal server at ``submit``; whether it was stored. A model named by a GGUF file
    that names no catalog model is not sent (a server keeps no such name: api/benchmarks.py): one line says to pass
    --model. A refusal prints the server's reason, field by field."""
    import httpx

    from ..config import submitter_token

    if record["model"].lower().endswith(".gguf"):
        print(f"error: model: the server names its model by the file {record['model']!r}, which names no catalog "
              "model; pass --model with a catalog alias or Hugging Face repo id (owner/name) to submit", file=sys.stderr)
        return False
    try:
        token = submitter_token()     # without one the server stores the result unverified
        r = httpx.post(submit.rstrip("/") + "/api/v1/benchmarks", json=record, timeout=30,
                       headers={"Authorization": f"Bearer {token}"} if token else {})
    except httpx.HTTPError as e:
        print(f"warning: submit to {submit} failed: {e}", file=sys.stderr)
        return False
    if r.status_code not in (200, 201):       # the server's reason, field by field (a model it keeps no name of: 422)
        print(f"warning: {submit} refused the result ({r.status_code}): {_refusal(r)}", file=sys.stderr)
        return False
    return True

