"""`runlocal hardware [QUERY]`: list or search the device catalog (hardware_list.py), as a table or as the JSON the
API's and MCP's hardware search answer."""

from __future__ import annotations

import json
import re
from typing import Any

import typer

from .units import format_bytes

# shopping.FORM_FACTORS, as the table names them
KIND_LABEL = {"gpu": "GPU", "laptop": "laptop", "apple": "Apple", "unified": "unified", "cpu": "CPU RAM"}


def run_hardware(words: list[str] | None, min_memory: str | None, kind: str | None, vendor: str | None,
                 as_json: bool) -> int:
    """Print the devices; return the exit code: 0 when some device is listed, 1 when the words name devices but the
    filters leave none (as `errors` answers a search that finds nothing; with --json, []). An unknown query or a bad
    filter value raises InputError (the CLI's exit 2, as `check --gpu` answers an unknown device)."""
    from .errors import InputError
    from .hardware_list import close_names, hardware_records

    query = " ".join(words).strip() if words else None
    rows = hardware_records(query, min_memory=min_memory, kind=kind, vendor=vendor)
    if query and not rows and not hardware_records(query):
        close = close_names(query)
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        raise InputError(f"query: no catalog device's id, name or alias holds every word of '{query}'{hint}")
    if as_json:         # an empty list is the answer where the filters leave none, as `errors --json` answers
        typer.echo(json.dumps(rows, indent=2, allow_nan=False))
        return 0
    if not rows:
        typer.echo(f"no catalog device {_what(query, min_memory, kind, vendor)}", err=True)
        return 1
    typer.echo(render_hardware(rows))
    return 0


def _what(query: str | None, min_memory: str | None, kind: str | None, vendor: str | None) -> str:
    said = [f"named '{query}'"] if query else []
    said += [f"with --min-memory {min_memory}"] if min_memory else []
    said += [f"of --kind {kind}"] if kind else []
    said += [f"of --vendor {vendor}"] if vendor else []
    return " ".join(said)


DETAILED = 3        # this many devices or fewer: each in full (every name it answers to, every price's page)


def render_hardware(rows: list[dict[str, Any]]) -> str:
    import textwrap

    from rich.console import Console

    table = len(rows) > DETAILED
    out = _rows_table(rows) if table else _details(rows)
    priced = sum(r["price_usd"] is not None for r in rows)
    rented = sum(r["rent_usd_per_gpu_hour"] is not None for r in rows)
    out += [f"{len(rows)} device{'s' if len(rows) != 1 else ''}; {priced} with a purchase price, {rented} with a rent "
            "price.",
            "price: the launch price, with the " + ("year" if table else "year or announcement date") + " it was set "
            "(a Mac's or a mini PC's: the whole computer in the configuration its page names); not what it sells for "
            "later.",
            *(["used: a dated used-market price (measurements/used_prices/RULE.md), with the "
               + ("month" if table else "date") + " of its page; — where the catalog has none."]
              if any(r.get("used_price_usd") is not None for r in rows) else []),
            "rent: the cheapest on-demand pod or instance of one GPU in the dated cloud price table, with the "
            + ("month" if table else "date") + " its page was read.",
            "memory: as marketed; a unified-memory system's whole RAM" + (", and in brackets the GiB its GPU may use "
                                                                          "by default." if table else
                                                                          ", then what its GPU may use by default.")]
    if table:
        out.append("--json, or a query naming 3 devices or fewer, gives every name a device answers to and each "
                   "price's page.")
    width = Console().width
    wrapped: list[str] = []
    for line in out:      # a page's address is never cut: it stays whole on its line, to be copied
        indent = " " * (16 if line.startswith("  ") else 2)
        wrapped += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                                 break_on_hyphens=False, drop_whitespace=True) if len(line) > width else [line]
    return "\n".join(wrapped)


def _price(r: dict[str, Any], short: bool = False) -> str:
    if r["price_usd"] is None:
        return "—"
    as_of = str(r.get("price_as_of") or "")
    return f"${r['price_usd']:,.0f}" + (f" ({as_of[:4] if short else as_of})" if as_of else "")


def _used(r: dict[str, Any], short: bool = False) -> str:
    """The used-market price with the date of its page (the month in the table); "—" where the catalog has none."""
    if r.get("used_price_usd") is None:
        return "—"
    day = re.search(r"\d{4}-\d\d-\d\d", str(r.get("used_price_as_of") or ""))
    when = (day.group()[:7] if short else str(r["used_price_as_of"])) if day else str(r.get("used_price_as_of") or "")
    return f"${r['used_price_usd']:,.0f}" + (f" ({when})" if when else "")


def _rent(r: dict[str, Any]) -> str:
    """The table's rent: the month its page was read (the day: the detail view and --json)."""
    if r["rent_usd_per_gpu_hour"] is None:
        return "—"
    return f"${r['rent_usd_per_gpu_hour']:.2f} ({r['rent_price_date'][:7]})"


def _memory(r: dict[str, Any], short: bool = False) -> str:
    shown = format_bytes(r["memory_bytes"])
    if r["gpu_usable_bytes"] != r["memory_bytes"]:
        gpu = format_bytes(r["gpu_usable_bytes"])
        shown += f" ({gpu.removesuffix(' GiB')})" if short else f", GPU {gpu}"
    return shown


# the terminal width from which the table has room for the device's name beside its id (the id is what to type)
NAME_COLUMN_FROM = 120


def _rows_table(rows: list[dict[str, Any]]) -> list[str]:
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    width = Console().width
    named = width >= NAME_COLUMN_FROM
    used = any(r.get("used_price_usd") is not None for r in rows)    # the column only where a listed card has one
    headers = ["id", *(["name"] if named else []), "kind", "memory", "GB/s", "price", *(["used"] if used else []),
               "rent/GPU-h"]
    cells = [[r["id"], *([r["name"]] if named else []), KIND_LABEL[r["form_factor"]], _memory(r, short=True),
              f"{r['bandwidth_gbs']:,.0f}", _price(r, short=True), *([_used(r, short=True)] if used else []),
              _rent(r)] for r in rows]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="")
    for i, h in enumerate(headers):
        # the figures keep their width on one line; the id, the name and a unified system's GPU share wrap
        fixed = h in ("kind", "GB/s", "price", "used", "rent/GPU-h")
        table.add_column(h, overflow="fold", no_wrap=fixed,
                         width=max(len(h), *(len(c[i]) for c in cells)) if fixed else None)
    for c in cells:
        table.add_row(*c)
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False, highlight=False,
                      emoji=False)
    console.print(table)
    return [line.rstrip() for line in console.file.getvalue().splitlines()]    # type: ignore[attr-defined]


def _details(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for r in rows:
        out += [f"{r['name']}  [{r['id']}]",
                f"  also called:  {', '.join(r['aliases']) or '—'}",
                f"  kind:         {KIND_LABEL[r['form_factor']]}, {r['vendor']}",
                f"  memory:       {_memory(r)}" + (f", {r['memory_type']}" if r.get("memory_type") else ""),
                f"  bandwidth:    {r['bandwidth_gbs']:,.0f} GB/s",
                "  price:        " + (f"{_price(r)}  {r['price_source'] or ''}"
                                      + (f" — {r['price_note']}" if r.get("price_note") else "")
                                      if r["price_usd"] is not None else r.get("price_note") or "—"),
                "  used:         " + (f"{_used(r)}  {r['used_price_source'] or ''}" if r.get("used_price_usd")
                                      is not None else "— no dated used-market price in the catalog"),
                "  rent:         " + (f"${r['rent_usd_per_gpu_hour']:.2f}/GPU-h ({r['rent_price_date']}), "
                                       f"{r['rent_provider']}  {r['rent_url']}"
                                       + (f" (read via {r['rent_via']})" if r.get("rent_via") else "")
                                       if r["rent_usd_per_gpu_hour"] is not None
                                       else "— no dated on-demand price in the cloud price table"),
                ""]
    return out
