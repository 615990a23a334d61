"""The `runlocal` command: parse, call the library, render. No domain logic lives here."""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Will this LLM run here, with these settings — and if not, what to change.")


def _fail(err: Exception) -> None:
    if os.environ.get("RUNLOCAL_DEBUG"):
        raise err
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(2)


def _console():
    from rich.console import Console

    return Console(highlight=False)


@app.command()
def check(
    model: str = typer.Argument(..., help="alias, config.json/folder, .gguf path or URL, hf://…, or owner/name"),
    runtime: str = typer.Option("llama.cpp", "--runtime", "-r", help="llama.cpp | vllm"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="catalog name ('4090', '2x3090'), 'auto', or 'none'"),
    vram: Optional[str] = typer.Option(None, "--vram", help="GPU memory, e.g. 24G"),
    ram: Optional[str] = typer.Option(None, "--ram", help="system RAM, e.g. 64G"),
    ctx: Optional[str] = typer.Option(None, "--ctx", "--max-model-len", "-c", help="context per request (8192, 32k)"),
    quant: Optional[str] = typer.Option(None, "--quant", "-q", help="Q4_K_M, Q8_0, bf16, nf4, awq, fp8 …"),
    kv_cache: Optional[str] = typer.Option(None, "--kv-cache", "--kv-cache-dtype", help="K and V cache type"),
    cache_type_k: Optional[str] = typer.Option(None, "--cache-type-k", "-ctk"),
    cache_type_v: Optional[str] = typer.Option(None, "--cache-type-v", "-ctv"),
    parallel: int = typer.Option(1, "--parallel", "-np", "--max-num-seqs", help="concurrent sequences"),
    flash_attn: str = typer.Option("auto", "--flash-attn", "-fa", help="on | off | auto"),
    batch: Optional[int] = typer.Option(None, "--batch", "-b"),
    ubatch: Optional[int] = typer.Option(None, "--ubatch", "-ub"),
    ngl: Optional[int] = typer.Option(None, "--ngl", "--n-gpu-layers", help="layers offloaded to the GPU"),
    n_cpu_moe: int = typer.Option(0, "--n-cpu-moe", help="keep the experts of the first N layers on the CPU"),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization"),
    tp: int = typer.Option(1, "--tp", "--tensor-parallel-size"),
    enforce_eager: bool = typer.Option(False, "--enforce-eager"),
    explain: bool = typer.Option(False, "--explain", help="print every formula with its numbers"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Will MODEL run on this hardware with these settings? Memory per device, verdict, limits, fixes."""
    from .errors import RunlocalError

    try:
        from .hardware.targets import targets_from_options
        from .kv import normalize_cache_type
        from .model.resolve import resolve_model
        from .plan import make_plan
        from .runtimes import Settings
        from .units import parse_tokens

        if flash_attn not in ("on", "off", "auto"):
            raise _input_error(f"flash-attn: expected on, off or auto, got '{flash_attn}'")
        if kv_cache and (cache_type_k or cache_type_v):
            raise _input_error("kv-cache: give either --kv-cache or --cache-type-k/--cache-type-v, not both")
        kt = normalize_cache_type(cache_type_k or kv_cache or "f16", field="cache-type-k")
        vt = normalize_cache_type(cache_type_v or kv_cache or "f16", field="cache-type-v")
        for name, value in (("parallel", parallel), ("tp", tp)):
            if value < 1:
                raise _input_error(f"{name}: must be at least 1, got {value}")
        if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
            raise _input_error(f"gpu-memory-utilization: must be in (0, 1], got {gpu_memory_utilization}")
        settings = Settings(runtime=runtime, ctx=parse_tokens(ctx) if ctx else None, quant=quant,
                            cache_type_k=kt, cache_type_v=vt, parallel=parallel, batch=batch, ubatch=ubatch,
                            flash_attn=flash_attn, n_gpu_layers=ngl, n_cpu_moe=n_cpu_moe,  # type: ignore[arg-type]
                            gpu_memory_utilization=gpu_memory_utilization, tp=tp, enforce_eager=enforce_eager)
        from .runtimes import get_runtime

        get_runtime(runtime)
        spec = resolve_model(model)
        targets, notes = targets_from_options(gpu, vram, ram)
        plan = make_plan(spec, settings, targets)
    except RunlocalError as e:
        _fail(e)
        return
    if as_json:
        typer.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        from .render.text import render_plan

        render_plan(plan, _console(), explain=explain, notes=notes)


def _input_error(msg: str):
    from .errors import InputError

    return InputError(msg)


@app.command("models")
def models_cmd(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the embedded model catalog (works offline)."""
    from .model import catalog

    entries = catalog.load_entries()
    if as_json:
        typer.echo(json.dumps([{"alias": e["alias"], "repo_id": e["repo_id"],
                                "published_params": e.get("published_params")} for e in entries], indent=2))
        return
    for e in entries:
        typer.echo(f"{e['alias']:<32} {e['repo_id']}")


@app.command()
def system(as_json: bool = typer.Option(False, "--json")) -> None:
    """This machine: GPUs with free memory now, and system RAM."""
    from dataclasses import asdict

    from .hardware.detect import detect_system

    info = detect_system()
    if as_json:
        typer.echo(json.dumps(asdict(info), indent=2))
        return
    from .units import format_bytes

    for g in info.gpus:
        typer.echo(f"GPU {g.index}: {g.name}  {format_bytes(g.free)} free of {format_bytes(g.total)}"
                   f"  ({format_bytes(g.used_by_others)} held by other processes)")
    typer.echo(f"RAM: {format_bytes(info.ram_available)} available of {format_bytes(info.ram_total)}")
    for n in info.notes:
        typer.echo(n)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
