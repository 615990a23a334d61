"""The `runlocal` command: parse, call the library, render. No domain logic lives here."""

from __future__ import annotations

import json
import os
import sys

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


RUNTIMES_HELP = "llama.cpp | ollama | vllm | sglang | transformers | mlx"   # the six planners (runtimes/)


def check(model: str, explain: bool, as_json: bool, **options) -> None:
    """Will MODEL run on this hardware with these settings? Memory per device, verdict, limits, fixes."""
    from .cli_check import run_check

    run_check(model, explain, as_json, **options)     # also run without Typer by the `runlocal` entry (cli_check.py)


def _with_request_options(command):
    """``command``'s signature: MODEL, then one typer option per field of the request contract (runlocal/request.py:
    its flags, help and default), then --explain and --json. Bounds are checked by the contract itself, so the CLI,
    the API and the library give the same one-line error."""
    import inspect
    from dataclasses import MISSING, fields

    from .request import CheckRequest, options

    table = options()
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("model", kind, annotation=str, default=typer.Argument(..., help=table["model"].help))]
    for f in fields(CheckRequest):
        opt = table.get(f.name)
        if opt is None or f.name == "model":
            continue
        annotation = _cli_type(str(f.type), opt.kind)
        default = None if f.default is MISSING or "tuple" in str(f.type) else f.default
        params.append(inspect.Parameter(f.name, kind, annotation=annotation,
                                        default=typer.Option(default, *opt.flags, help=opt.help or None)))
    params += [inspect.Parameter("explain", kind, annotation=bool,
                                 default=typer.Option(False, "--explain", help="print every formula with its numbers")),
               inspect.Parameter("as_json", kind, annotation=bool,
                                 default=typer.Option(False, "--json", help="print one JSON object"))]
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return command


def _cli_type(annotation: str, kind: str):
    """The command-line type of a request field: text for sizes, token counts and -ngl (auto/all), as typed."""
    if "tuple" in annotation:
        return list[str] | None
    base = annotation.split(" | ")[0]
    if kind in ("tokens", "ngl", "size", "sizes"):
        base = "str"
    py = {"str": str, "int": int, "float": float, "bool": bool}[base]
    return py | None if "None" in annotation else py


app.command("check")(_with_request_options(check))


def _models_option(name: str):
    """A typer option of `runlocal models` from the contract (request.ModelsRequest): its flags, help and default."""
    from dataclasses import fields

    from .request import ModelsRequest, options

    opt, default = options(ModelsRequest)[name], {f.name: f.default for f in fields(ModelsRequest)}[name]
    return typer.Option(default, *opt.flags, help=opt.help or None)


@app.command("models")
def models_cmd(
    as_json: bool = typer.Option(False, "--json"),
    query: str | None = _models_option("query"),
    fits: bool = _models_option("fits"),
    gpu: str = _models_option("gpu"),
    vram: str | None = _models_option("vram"),
    ram: str | None = _models_option("ram"),
    ctx: str | None = _models_option("ctx"),
    top: int = typer.Option(25, "--top", help="with --fits: rows shown in the text table"),
) -> None:
    """List the embedded model catalog (works offline); --fits: what runs here, ranked."""
    from .errors import RunlocalError
    from .fits_here import models_answer
    from .request import ModelsRequest

    try:
        # the table shows the first `top` rows: only theirs need a speed
        doc = models_answer(ModelsRequest(query=query, fits=fits, gpu=gpu, vram=vram, ram=ram, ctx=ctx),
                            speed_rows=None if as_json or not fits else top)
    except RunlocalError as e:
        _fail(e)
        return
    if as_json:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
    elif fits:
        from .render.choose_text import render_fits

        typer.echo(render_fits(doc, top=top))
    else:
        for entry in doc:
            typer.echo(f"{entry['alias']:<32} {entry['repo_id']}")


@app.command()
def system(as_json: bool = typer.Option(False, "--json")) -> None:
    """This machine: GPUs with free memory now, and system RAM."""
    from dataclasses import asdict

    from .hardware.detect import detect_system

    info = detect_system()
    if as_json:
        typer.echo(json.dumps(asdict(info), indent=2, allow_nan=False))
        return
    from .units import format_bytes

    for g in info.gpus:
        typer.echo(f"GPU {g.index}: {g.name}  {format_bytes(g.free)} free of {format_bytes(g.total)}"
                   f"  ({format_bytes(g.used_by_others)} held by other processes)")
    typer.echo(f"RAM: {format_bytes(info.ram_available)} available of {format_bytes(info.ram_total)}")
    for n in info.notes:
        typer.echo(n)


@app.command()
def hardware(
    words: list[str] | None = typer.Argument(None, help="words in a device's id, name or alias: 4090, 'm3 max', "
                                             "'strix halo' (none: the whole catalog)"),
    min_memory: str | None = typer.Option(None, "--min-memory", help="at least this much memory as marketed, e.g. "
                                          "24G (a unified-memory system's whole RAM)"),
    kind: str | None = typer.Option(None, "--kind", help="gpu (desktop) | laptop | apple | unified | cpu, as "
                                    "best --form and the site's /hardware page"),
    vendor: str | None = typer.Option(None, "--vendor", help="nvidia | amd | intel | apple | generic (CPU RAM)"),
    as_json: bool = typer.Option(False, "--json", help="the records GET /api/v1/hardware answers"),
) -> None:
    """List or search the device catalog: memory, bandwidth, launch price and dated cloud rent per GPU-hour."""
    from .cli_hardware import run_hardware
    from .errors import RunlocalError

    try:
        code = run_hardware(words, min_memory, kind, vendor, as_json)
    except RunlocalError as e:
        _fail(e)
        return
    if code:
        raise typer.Exit(code)


@app.command()
def diagnose(
    file: str = typer.Argument("-", help="a log file, or - for standard input"),
    runtime: str | None = typer.Option(None, "--runtime", "-r"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Name the failure in a pasted error or a whole log, and compute the fix from its numbers."""
    from .diagnose.fixes import with_computed_fixes
    from .errors import InputError, RunlocalError

    try:
        if file == "-":
            if sys.stdin.isatty():
                raise InputError("file: paste a log on standard input, or give a file path")
            result = _diagnose_stream(getattr(sys.stdin, "buffer", sys.stdin), runtime, "standard input")  # bytes
        else:
            from pathlib import Path

            if not Path(file).exists():
                raise InputError(f"file: no such file '{file}'")
            if Path(file).is_dir():
                raise InputError(f"file: '{file}' is a folder; give a log file")
            try:
                with open(file, "rb") as f:
                    result = _diagnose_stream(f, runtime, f"'{file}'")
            except OSError as e:
                raise InputError(f"file: cannot read '{file}': {e.strerror or e}") from None
    except RunlocalError as e:
        _fail(e)
        return
    doc = with_computed_fixes(result, runtime)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        return
    typer.echo(f"{doc['title']}  [{doc['category']}]")
    if doc.get("cause"):
        typer.echo(f"\n{doc['cause']}")
    figures = {k: v for k, v in doc.get("extracted", {}).items() if v not in (None, "", [])
               and not (k == "runtime" and doc.get("runtime_note"))}  # a guessed runtime is not read from the log
    if figures:
        from .units import format_bytes

        typer.echo("\nFrom the log: " + ", ".join(
            f"{k}={format_bytes(v) if k.endswith('_bytes') and isinstance(v, int) else v}" for k, v in figures.items()))
    if doc.get("runtime_note"):
        typer.echo(f"\nRuntime: {doc['runtime_note']}")
    if doc["fixes"]:
        typer.echo("\nFixes:")
        for i, f in enumerate(doc["fixes"], 1):
            typer.echo(f"  {i}. {f['title']}" + (f" — {f['effect']}" if f.get("effect") else ""))
            if f.get("command"):
                typer.echo(f"     $ {f['command']}")


def _diagnose_stream(stream, runtime: str | None, where: str):
    """Diagnose a log read from ``stream`` in chunks; an input with no text (nothing, or only blank lines) is refused
    rather than answered with "none of the known failures matched"."""
    from .diagnose.reading import diagnose_lines, iter_lines
    from .errors import InputError

    seen_text = False

    def lines():
        nonlocal seen_text
        for line in iter_lines(stream):
            seen_text = seen_text or bool(line.strip())
            yield line

    result = diagnose_lines(lines(), runtime)
    if not seen_text:
        raise InputError(f"file: {where} is empty; paste the error message or the log lines around it")
    return result


@app.command("errors")
def errors_cmd(words: list[str] | None = typer.Argument(None, help="words to search for, or an entry's id"),
               as_json: bool = typer.Option(False, "--json")) -> None:
    """List or search the errors knowledge base."""
    from dataclasses import asdict

    from .diagnose import kb

    # `runlocal errors cuda out of memory` as typed: the words are one query (review18: it was a usage error)
    query = " ".join(words) if words else None
    exact = [e for e in kb.load_entries() if query and e.id == query.strip().lower()]
    if exact:                 # `runlocal errors ID`: that entry in full
        from .render.kb_entry import render_entry

        typer.echo(json.dumps(exact[0].to_dict(), indent=2, default=str) if as_json else render_entry(exact[0]))
        return
    entries = kb.search(query) if query else kb.load_entries()
    if as_json:
        typer.echo(json.dumps([e.to_dict() if hasattr(e, "to_dict") else asdict(e) for e in entries], indent=2,
                              default=str))
        return
    if not entries:
        typer.echo(f"no entry matches '{query}'", err=True)
        raise typer.Exit(1)
    for e in entries:
        typer.echo(f"{e.id:<36} {e.category:<24} {e.title}")


@app.command()
def explain(
    topic: str = typer.Argument(..., help="oom"),
    model: str | None = typer.Option(None, "--model", "-m", help="fill in this model's numbers"),
    gpu: str | None = typer.Option(None, "--gpu"),
    vram: str | None = typer.Option(None, "--vram"),
    ctx: str | None = typer.Option(None, "--ctx"),
    runtime: str = typer.Option("llama.cpp", "--runtime", "-r", help=RUNTIMES_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Explain a topic: `oom` shows the GPU memory stack and how to read nvidia-smi."""
    from .errors import InputError, RunlocalError
    from .render.oom import explain_oom

    try:
        if topic.lower() != "oom":
            raise InputError(f"topic: unknown topic '{topic}' (expected: oom)")
        plan = None
        if model:
            from .check import CheckRequest
            from .check import check as run_check

            plan, _ = run_check(CheckRequest(model=model, gpu=gpu, vram=vram, ctx=ctx, runtime=runtime))
    except RunlocalError as e:
        _fail(e)
        return
    text = explain_oom(plan)
    if as_json:
        stack = None
        if plan is not None:
            dev = next((d for d in plan.allocation.devices if d.kind != "cpu"), plan.allocation.devices[0])
            stack = {"device": dev.name, "capacity": dev.capacity, "overhead": dev.overhead, "weights": dev.weights,
                     "kv_cache": dev.kv_cache, "compute": dev.compute, "free": dev.capacity - dev.total}
        typer.echo(json.dumps({"topic": "oom", "stack": stack, "plan": plan.to_dict() if plan else None,
                               "text": text}, indent=2, allow_nan=False))
        return
    typer.echo(text)


@app.command()
def probe(
    url: str = typer.Option(..., "--url", help="base URL of a running server, e.g. http://127.0.0.1:8080"),
    api: str = typer.Option("openai", "--api", help="openai | ollama"),
    model: str | None = typer.Option(None, "--model", "-m", help="model name the server expects"),
    max_context: int | None = typer.Option(None, "--max-context", help="stop the context ladder here"),
    max_concurrency: int = typer.Option(32, "--max-concurrency"),
    max_tokens: int = typer.Option(32, "--max-tokens", help="tokens generated per request"),
    step_timeout: float = typer.Option(120.0, "--step-timeout"),
    time_budget: float = typer.Option(600.0, "--time-budget", help="seconds for the whole probe"),
    token_ids: bool = typer.Option(False, "--token-ids", help="send token ids (models without a tokenizer)"),
    pid: int | None = typer.Option(None, "--pid", help="server process, for RSS when there is no GPU"),
    predict: str | None = typer.Option(None, "--predict", help="MODEL for runlocal check's prediction beside"),
    runtime: str = typer.Option("llama.cpp", "--runtime"),
    gpu: str | None = typer.Option(None, "--gpu"),
    device: str | None = typer.Option(None, "--device", help="device name stored with the result"),
    store: bool = typer.Option(True, "--store/--no-store", help="keep the result in the local benchmark store"),
    submit: str | None = typer.Option(None, "--submit", help="also POST the result to a runlocal server"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Measure a live server: growing prompts, then growing concurrency, until the first failure."""
    from .probe.report import probe_command

    try:
        ok = probe_command(url=url, api=api, model=model, max_context=max_context, max_concurrency=max_concurrency,
                      max_tokens=max_tokens, step_timeout=step_timeout, time_budget=time_budget, token_ids=token_ids,
                      pid=pid, predict=predict, runtime=runtime, gpu=gpu, device=device, store=store, submit=submit,
                      as_json=as_json)
    except Exception as e:  # RunlocalError and bad options; ProbeError steps are kept inside the result
        from .errors import RunlocalError

        if isinstance(e, (RunlocalError, ValueError)):
            _fail(e)
        raise
    if not ok:
        raise typer.Exit(1)


@app.command()
def snapshot(
    file: str = typer.Argument(..., help="a torch.cuda.memory._dump_snapshot pickle"),
    as_json: bool = typer.Option(False, "--json"),
    plot: str | None = typer.Option(None, "--plot", help="write a stacked-area SVG of the timeline here"),
    device: int | None = typer.Option(None, "--device", help="CUDA device index (default: the busiest)"),
    max_size: str = typer.Option("2G", "--max-size", help="refuse files larger than this"),
    points: int = typer.Option(200, "--points", help="timeline points kept"),
) -> None:
    """What held GPU memory in a PyTorch memory snapshot: weights, KV cache, activations, other."""
    from .errors import RunlocalError
    from .snapshot import load_snapshot, render_svg, render_text, summarize
    from .units import parse_size

    try:
        doc = summarize(load_snapshot(file, max_bytes=parse_size(max_size, field="max-size")), device=device,
                        points=points)
        if plot:
            try:
                with open(plot, "w", encoding="utf-8") as f:
                    f.write(render_svg(doc, title=f"GPU memory by origin — {os.path.basename(file)}"))
            except OSError as e:
                from .errors import InputError

                raise InputError(f"plot: cannot write '{plot}': {e.strerror}") from None
    except RunlocalError as e:
        _fail(e)
        return
    doc = {"file": file, **doc}
    if as_json:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
    else:
        render_text(doc, _console(), path=file)
        if plot:
            typer.echo(f"\nplot written to {plot}")


@app.command()
def best(
    model: str = typer.Argument(..., help="alias, config.json/folder, .gguf path or URL, hf://…, owner/name, or a "
                                "size (30B: the catalog model nearest it)"),
    ctx: str | None = typer.Option(None, "--ctx", "-c", help="context per request (default 8192)"),
    runtime: str | None = typer.Option(None, "--runtime", "-r", help=RUNTIMES_HELP),
    budget: float | None = typer.Option(None, "--budget", help="leave out configurations priced above this (USD)"),
    vendor: str | None = typer.Option(None, "--vendor", help="nvidia | amd | intel | apple | generic (CPU RAM)"),
    form: str | None = typer.Option(None, "--form", help="gpu (desktop) | laptop | apple | unified | cpu"),
    used: bool = typer.Option(False, "--used", help="price by the used market where the catalog has a price"),
    quant: str | None = typer.Option(None, "--quant", "-q", help="fix the weight format instead of the best that fits"),
    users: int = typer.Option(1, "--users", help="requests of --ctx served at once (the KV cache for all of them)"),
    top: int = typer.Option(15, "--top", help="rows shown in the text table"),
    best_quant_each: bool = typer.Option(False, "--best-quant-each",
                                         help="plan each device at the best quant it holds whole (default: one "
                                              "quant for all, the file people download)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Catalog devices (and 2×/4×/8× of one card) that run MODEL, ranked by decode tokens/s per dollar."""
    from .errors import RunlocalError
    from .render.choose_text import render_best
    from .shopping import best_for
    from .units import parse_tokens

    try:
        doc = best_for(model, vendor=vendor, form=form, ctx=parse_tokens(ctx) if ctx is not None else None,
                       runtime=runtime, budget_usd=budget, used=used, quant=quant, users=users,
                       best_quant_each=best_quant_each)
    except RunlocalError as e:
        _fail(e)
        return
    typer.echo(json.dumps(doc, indent=2, allow_nan=False) if as_json else render_best(doc, top=top))


@app.command()
def compare(
    devices: list[str] = typer.Argument(..., help="catalog names or specs: 4090 '2x3090' 'm3 max 64gb'"),
    model: str | None = typer.Option(None, "--model", "-m", help="plan this model on each"),
    ctx: str | None = typer.Option(None, "--ctx", "-c", help="context per request (default 8192)"),
    runtime: str | None = typer.Option(None, "--runtime", "-r", help=RUNTIMES_HELP),
    quant: str | None = typer.Option(None, "--quant", "-q"),
    used: bool = typer.Option(False, "--used", help="price by the used market where the catalog has a price"),
    best_quant_each: bool = typer.Option(False, "--best-quant-each",
                                         help="plan each device at the best quant it fits (default: one for all)"),
    ram: str | None = typer.Option(None, "--ram", help="the host's RAM, as check --ram (default: each row says "
                                                        "what it needs where its verdict turns on it)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Devices side by side: capacity, bandwidth, price, the largest catalog model, and MODEL's speed. A device may be
    a VRAM figure (20G, 2x24G)."""
    from .compare import compare_devices
    from .errors import RunlocalError
    from .render.choose_text import render_compare
    from .units import parse_tokens

    try:
        rows = compare_devices(devices, model=model, ctx=parse_tokens(ctx) if ctx is not None else None,
                               runtime=runtime, quant=quant, used=used, best_quant_each=best_quant_each, ram=ram)
    except RunlocalError as e:
        _fail(e)
        return
    typer.echo(json.dumps(rows, indent=2, allow_nan=False) if as_json else render_compare(rows))


@app.command()
def cost(
    model: str = typer.Argument(..., help="the model the tokens/s and the cost per token are for"),
    gpu: str = typer.Option(..., "--gpu", help="catalog device, or N of one: '4090', '2x3090'"),
    hours_per_day: float = typer.Option(8.0, "--hours-per-day", help="hours a day the GPU runs"),
    kwh_price: float = typer.Option(0.18, "--kwh-price", help="electricity, USD per kWh"),
    years: float = typer.Option(3.0, "--years", help="years the purchase price is spread over"),
    utilization: float = typer.Option(1.0, "--utilization", help="share of TDP drawn while running (0-1]"),
    used: bool = typer.Option(False, "--used", help="buy used where the catalog has a used price"),
    price: float | None = typer.Option(None, "--price", help="purchase price of one device, USD"),
    rent_price: float | None = typer.Option(None, "--rent-price", help="cloud price per GPU-hour, USD"),
    ctx: str | None = typer.Option(None, "--ctx", "-c"),
    runtime: str | None = typer.Option(None, "--runtime", "-r", help=RUNTIMES_HELP),
    quant: str | None = typer.Option(None, "--quant", "-q"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Owning the GPU(s) (price over N years + electricity) against renting them by the hour, per year and per token."""
    from .errors import RunlocalError
    from .render.choose_text import render_cost
    from .shopping import cost_for
    from .units import parse_tokens

    try:
        doc = cost_for(model, gpu, ctx=parse_tokens(ctx) if ctx is not None else None, runtime=runtime, quant=quant,
                       hours_per_day=hours_per_day, kwh_price=kwh_price, years=years, utilization=utilization,
                       used=used, price_usd=price, rent_usd_per_hour=rent_price)
    except RunlocalError as e:
        _fail(e)
        return
    typer.echo(json.dumps(doc, indent=2, allow_nan=False) if as_json else render_cost(doc))


@app.command()
def serve(host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8000, "--port"),
          db: str | None = typer.Option(None, "--db", help="SQLAlchemy URL of the benchmark store"),
          workers: int = typer.Option(1, "--workers", min=1, max=64, help="worker processes sharing the store"),
          submitter_token: list[str] = typer.Option([], "--submitter-token", help="a token whose benchmark "
                                                    "submissions count at once (repeatable; visible in `ps`: "
                                                    "prefer --submitter-tokens-file)"),
          submitter_tokens_file: str | None = typer.Option(None, "--submitter-tokens-file",
                                                              help="a file of submitter tokens, one a line"),
          allow_local_dir: str | None = typer.Option(
              None, "--allow-local-dir", help="read model files given as paths, only inside this folder (default: none)"),
          allow_remote_host: list[str] | None = typer.Option(
              None, "--allow-remote-host", help="read GGUF URLs from this host (repeatable; default: none)"),
          use_hf_token: bool = typer.Option(False, "--use-hf-token",
                                            help="send this machine's HF_TOKEN to the Hub for callers' repos"),
          allowed_host: list[str] | None = typer.Option(
              None, "--allowed-host", help="Host header accepted (repeatable; default: localhost and --host)"),
          plan_workers: int = typer.Option(2, "--plan-workers", min=1, max=256, help="plans computed at once"),
          plan_deadline: float = typer.Option(20.0, "--plan-deadline", min=0.1, max=3600,
                                              help="seconds before a plan is answered 503 Retry-After"),
          writes_per_minute: float = typer.Option(30.0, "--writes-per-minute", min=0.1, max=1e6,
                                                  help="benchmark submissions per client address")) -> None:
    """Start the HTTP API and the web site (FastAPI on uvicorn).

    Callers are anonymous: by default the server resolves catalog aliases and Hugging Face repo ids only."""
    import json

    import uvicorn

    from .config import default_allowed_hosts
    from .errors import RunlocalError
    from .model.policy import ReadPolicy

    try:   # checked here, once, so a bad option fails before any worker starts
        ReadPolicy.server(local_dir=allow_local_dir, remote_hosts=allow_remote_host or (), use_hf_token=use_hf_token)
    except (RunlocalError, OSError) as e:
        _fail(e if isinstance(e, RunlocalError) else ValueError(f"allow-local-dir: {e.strerror or e}"))
        return
    # Workers are separate processes that build the app from the environment (create_app's defaults
    # read config.py, the serve options travel as one JSON variable read by app.create_app_from_environment).
    if db:
        os.environ["RUNLOCAL_DB_URL"] = db
    if submitter_token:
        os.environ["RUNLOCAL_SUBMITTER_TOKENS"] = ",".join(
            [*submitter_token, *filter(None, os.environ.get("RUNLOCAL_SUBMITTER_TOKENS", "").split(","))])
    if submitter_tokens_file:
        if not os.path.isfile(submitter_tokens_file):
            raise typer.BadParameter(f"no file {submitter_tokens_file}", param_hint="--submitter-tokens-file")
        os.environ["RUNLOCAL_SUBMITTER_TOKENS_FILE"] = os.path.abspath(submitter_tokens_file)
    os.environ["RUNLOCAL_SERVE_OPTIONS"] = json.dumps({
        "local_dir": allow_local_dir, "remote_hosts": allow_remote_host or [], "use_hf_token": use_hf_token,
        "allowed_hosts": allowed_host or default_allowed_hosts(host), "plan_workers": plan_workers,
        "plan_deadline_s": plan_deadline, "writes_per_minute": writes_per_minute})
    uvicorn.run("runlocal.api.app:create_app_from_environment", factory=True, workers=workers, host=host, port=port,
                log_level="warning")


@app.command("mcp")
def mcp_cmd(
    transport: str = typer.Option("stdio", "--transport", help="stdio (for a local agent) | http (streamable HTTP "
                                                                 "on 127.0.0.1, at /mcp)"),
    port: int = typer.Option(8765, "--port", help="with --transport http"),
    allow_local_dir: str | None = typer.Option(None, "--allow-local-dir",
                                                  help="http: read model files given as paths, only inside this folder"),
    allow_remote_host: list[str] | None = typer.Option(None, "--allow-remote-host",
                                                          help="http: read GGUF URLs from this host (repeatable)"),
    use_hf_token: bool = typer.Option(False, "--use-hf-token", help="http: send this machine's HF_TOKEN to the Hub"),
) -> None:
    """Serve runlocal's answers to agents over the Model Context Protocol (tools, resources, a prompt)."""
    from .errors import RunlocalError

    try:
        from .mcp_server import serve as serve_mcp

        serve_mcp(transport, port=port, allow_local_dir=allow_local_dir, allow_remote_hosts=allow_remote_host,
                  use_hf_token=use_hf_token)
    except RunlocalError as e:
        _fail(e)


def click_errors():
    """The exception module of the Click that parses (typer ≥ 0.28 carries its own copy, earlier ones use click's),
    found from typer's public BadParameter so that either works."""
    usage = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    return sys.modules[usage.__module__]


def usage_line(err, argv: list[str]) -> str:
    """Click's usage error as the one line every other bad input gets (README: "Bad input gets one line naming the
    field"), not Typer's boxed usage text. An unknown single-dash word is named whole: Click splits `-xyz` into
    short options and reports `-x`, an option nobody typed."""
    errors = click_errors()
    command = next((a for a in argv if not a.startswith("-")), None)
    helps = f"runlocal {command} --help" if command in app_commands() else "runlocal --help"
    if isinstance(err, errors.NoSuchOption):
        typed = mistyped_word(err, argv)
        maybe = f" (did you mean {', '.join(sorted(err.possibilities))}?)" if err.possibilities else ""
        return f"{typed}: no such option{maybe}; {helps} lists them"
    if isinstance(err, errors.MissingParameter) and err.param is not None:
        what = getattr(err.param, "help", None) or err.param.human_readable_name
        return f"{err.param.name}: missing; expected {what} ({helps})"
    return " ".join(err.format_message().split()) + f" ({helps})"


def mistyped_word(err, argv: list[str]) -> str:
    """The word the user typed that Click could not parse: one that starts with the option Click names and is not an
    option the command declares (`-np 4 -ngx 5`: Click names `-n`, and `-np` is declared), else Click's own name."""
    command = getattr(getattr(err, "ctx", None), "command", None)
    declared = {o for p in getattr(command, "params", ()) for o in (*p.opts, *p.secondary_opts)}
    words = (a.split("=")[0] for a in argv)
    return next((w for w in words if w.startswith(err.option_name) and w not in declared), err.option_name)


def app_commands() -> set[str]:
    return {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if c.callback}


def main() -> None:
    errors = click_errors()
    try:
        code = app(standalone_mode=False)
    except errors.NoArgsIsHelpError as e:               # bare `runlocal`: the help, as before
        e.show()
        sys.exit(e.exit_code)
    except errors.UsageError as e:
        print(f"error: {usage_line(e, sys.argv[1:])}", file=sys.stderr)
        sys.exit(2)
    except errors.ClickException as e:
        print(f"error: {' '.join(e.format_message().split())}", file=sys.stderr)
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    if isinstance(code, int):                           # typer.Exit(n): without standalone mode, returned
        sys.exit(code)


if __name__ == "__main__":
    main()
