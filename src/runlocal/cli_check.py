"""`runlocal check` without the CLI framework: the command users run most, started without importing Typer/Click.

The `runlocal` entry point (and `python -m runlocal`) reads a plain `check MODEL [--flag VALUE | --switch]…` here,
with the flags, types and defaults of the request contract (runlocal/request.py) that cli.py turns into Typer
options; anything else — `--help`, `--flag=value`, a value starting with '-', an unknown flag, no model, another
command — goes to the Typer app (cli.py), which answers as it always did. Both call :func:`run_check` with the same
arguments (tests/unit/test_cli_check.py asks both parsers the same command lines). Typer's import is about a fifth
of a cold `check` (benchmarks/startup.py).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn


def run_check(model: str, explain: bool, as_json: bool, **options) -> None:
    """Will MODEL run on this hardware with these settings? Memory per device, verdict, limits, fixes."""
    from .check import CheckRequest
    from .check import check as run
    from .errors import RunlocalError
    from .request import parse_ngl

    try:
        options["n_gpu_layers"] = parse_ngl(options.get("n_gpu_layers"))
        options["override_tensor"] = tuple(options.get("override_tensor") or ())
        if options.get("attn_implementation"):
            options["attn_implementation"] = options["attn_implementation"].strip().lower()
        plan, notes = run(CheckRequest(model=model, **options))
    except RunlocalError as e:
        if os.environ.get("RUNLOCAL_DEBUG"):
            raise
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        if as_json:
            from .check import check_document

            print(json.dumps(check_document(plan, notes), indent=2, allow_nan=False))
        else:
            from rich.console import Console

            from .render.text import render_plan

            class PipeConsole(Console):
                def on_broken_pipe(self) -> None:     # rich's own ends with SystemExit(1)
                    self.quiet = True
                    closed_stdout()

            render_plan(plan, PipeConsole(highlight=False), explain=explain, notes=notes)
        sys.stdout.flush()
    except BrokenPipeError:
        closed_stdout()


def closed_stdout() -> NoReturn:
    """The reader closed the pipe early (`runlocal check … | head -1`): not an error of the user's input. Exits
    128 + SIGPIPE = 141, what a shell reports for a C tool that SIGPIPE ended (`yes | head -1`), so that scripts
    under `set -o pipefail` see the one status they already know; the Python docs' "Note on SIGPIPE" exits 1, which
    here would read as a failed check. stdout goes to /dev/null first, as that note does, so the interpreter's
    last flush at exit raises nothing (no traceback, no "Exception ignored")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(128 + 13)       # 13: SIGPIPE on Linux and macOS (signal.SIGPIPE; Windows has none)


def command_options() -> list[tuple[str, tuple[str, ...], str, Any]]:
    """(parameter, flags, kind, default) for each option of `check`, in order: kind is the command-line type — "str",
    "int", "float", "switch" (a flag without a value) or "many" (repeatable) — as cli.py declares it to Typer."""
    from dataclasses import MISSING, fields

    from .request import CheckRequest, options

    table = options()
    out = []
    for f in fields(CheckRequest):
        opt = table.get(f.name)
        if opt is None or f.name == "model":
            continue
        annotation = str(f.type)
        default = None if f.default is MISSING or "tuple" in annotation else f.default
        kind = command_kind(annotation, opt.kind)
        if kind == "str" and default is not None:   # Typer hands a text option's default over as text (512 → "512")
            default = str(default)
        out.append((f.name, tuple(opt.flags), kind, default))
    out += [("explain", ("--explain",), "switch", False), ("as_json", ("--json",), "switch", False)]
    return out


def command_kind(annotation: str, kind: str) -> str:
    """A request field's command-line type: text for sizes, token counts and -ngl (auto/all), as typed."""
    if "tuple" in annotation:
        return "many"
    base = annotation.split(" | ")[0]
    if kind in ("tokens", "ngl", "size", "sizes"):
        base = "str"
    return {"str": "str", "int": "int", "float": "float", "bool": "switch"}[base]


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The arguments of run_check for a plain `check` command line, or None for anything to leave to Typer."""
    if len(argv) < 2 or argv[0] != "check":
        return None
    spec = command_options()
    values: dict[str, Any] = {name: default for name, _, _, default in spec}
    by_flag = {flag: (name, kind) for name, flags, kind, _ in spec for flag in flags}
    model = None
    words = iter(argv[1:])
    for word in words:
        if word in by_flag:
            name, kind = by_flag[word]
            if kind == "switch":
                values[name] = True
                continue
            value = next(words, None)
            if value is None or value.startswith("-"):
                return None
            try:
                parsed = {"str": str, "int": int, "float": float, "many": str}[kind](value)
            except ValueError:
                return None            # Typer says which flag and why
            values[name] = [*(values[name] or ()), parsed] if kind == "many" else parsed
        elif word.startswith("-") or model is not None:
            return None
        else:
            model = word
    if model is None:
        return None
    return {"model": model, **values}


def main() -> None:
    args = parse(sys.argv[1:])
    if args is None:
        from .cli import main as typer_main

        typer_main()
        return
    try:
        run_check(**args)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
