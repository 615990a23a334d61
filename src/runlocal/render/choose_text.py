"""Plain-text tables for `best`, `compare`, `models --fits` and `cost` (the JSON is choose.py's objects as-is)."""

from __future__ import annotations

from typing import Any

from ..fits_here import DEGRADED_WORDS
from ..units import format_bytes


def _wrapped(lines: list[str], width: int | None = None) -> str:
    """Lines wider than the terminal wrapped with a hanging indent (rich laid the tables out to its width already);
    a line carrying a command stays whole, so that a copy from the terminal pastes as one line."""
    import textwrap

    from rich.console import Console

    width = width or Console().width
    out: list[str] = []
    for line in lines:
        if len(line) > width and not line.startswith(("run the first: ", "runs it: ")):   # commands: one line
            out += textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False)
        else:
            out.append(line)
    return "\n".join(out)


# what a compare row's max context counts (plan.Plan.max_context_basis; check's words: render/text.py)
CONTEXT_BASIS_SHORT = {"all_on_gpu": "all on GPU", "layers_in_ram": "layers in RAM"}


def _num(v: Any, fmt: str = "{:,.1f}", none: str = "—") -> str:
    return none if v is None else fmt.format(v)


def _prefill_cell(row: dict) -> str:
    """A row's prompt rate: its figure, or the unvalidated range check prints instead (a MoE prompt on Vulkan / SYCL /
    ROCm's fallback, weights in RAM copied from mmap'd memory: speed_explain.speed_figures), marked as a range."""
    rng = row.get("prefill_range_tokens_per_s")
    if row.get("prefill_tokens_per_s") is None and rng:
        return f"{rng[0]:,.0f}–{rng[1]:,.0f} (range)"
    return _num(row.get("prefill_tokens_per_s"))


def _table(headers: list[str], rows: list[list[str]], width: int | None = None,
           min_widths: dict[str, int] | None = None, no_wrap: bool = False) -> list[str]:
    """A table laid out by rich for the terminal's width (COLUMNS when piped; 80 by default): cells wrap at
    word boundaries inside their column rather than the terminal wrapping whole lines. ``min_widths``: columns
    (by header) kept at least that wide, the others wrapping first. ``no_wrap``: one line a row (cells sized by
    the caller; rich's ellipsis only where the terminal is narrower still)."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    width = width or Console().width
    # one line a row: a space of padding after each cell and the box's space between (two in all, _fit_model_names)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0) if no_wrap else (0, 1),
                  header_style="")
    for h in headers:
        table.add_column(h, overflow="ellipsis" if no_wrap else "fold", no_wrap=no_wrap,
                         min_width=(min_widths or {}).get(h))
    for r in rows:
        table.add_row(*r)
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    console.print(table)
    text = console.file.getvalue()                         # type: ignore[attr-defined]
    return [line.rstrip() for line in text.splitlines()]


def render_best(doc: dict[str, Any], top: int = 15) -> str:
    m = doc["model"]
    out = [f"{m['id']} · {doc['runtime']} · ctx {doc['ctx']:,} · ranked by decode tokens/s per 1000 USD"
           f" ({doc['price_basis']} prices" + (f", budget {doc['budget_usd']:,.0f} USD" if doc["budget_usd"] else "")
           + ")", ""]
    rows = [[str(r["rank"]), r["spec"], r["quant"], r["verdict"].replace("_", " "), _num(r["decode_tokens_per_s"]),
             _num(r["price_usd"], "{:,.0f}")
             + ("*" if r["price_kind"] == "used" else "") + (f" ({r['price_as_of']})" if r.get("price_as_of") else ""),
             _num(r["tokens_per_s_per_1000_usd"], "{:,.2f}"),
             f"{r['peak_bytes'] / 2**30:.3g}/{r['capacity_bytes'] / 2**30:.3g} GiB"]
            for r in doc["ranked"][:top]]
    if rows:
        out += _table(["#", "device", "quant", "verdict", "tok/s", "USD", "per 1k USD", "peak/cap."], rows)
        if any(r["price_kind"] == "used" for r in doc["ranked"][:top]):
            out.append("* used-market price (its date beside it); other prices: new, at launch (the year beside it)")
        if len(doc["ranked"]) > top:
            out.append(f"… {len(doc['ranked']) - top} more (--top N, or --json)")
        out += ["", f"run the first: {doc['ranked'][0]['command']}"]
    else:
        out.append("no priced catalog device runs it whole at this context" +
                   (" within the budget" if doc["budget_usd"] else ""))
    if doc["unpriced"]:
        names = ", ".join(f"{r['spec']} ({_num(r['decode_tokens_per_s'])} tok/s)" for r in doc["unpriced"][:6])
        out += ["", f"also runs it, no price in the catalog: {names}"
                + (f" … {len(doc['unpriced']) - 6} more" if len(doc["unpriced"]) > 6 else "")]
    out += [""] + [f"note: {n}" for n in doc["notes"]]
    if doc["budget_usd"] and doc["price_basis"] == "launch" and doc.get("over_budget"):
        # the budget is held against launch prices, for every card alike; say how to count cards bought used
        out.append("note: the budget is compared with launch prices; --used compares the used-market price where "
                   "the catalog has one (e.g. an RTX 3090)")
    return _wrapped(out)


def _decode_label(rows: list[dict[str, Any]]) -> str:
    """The decode row names the KV cache it assumes (half the context), beside the short-context row."""
    at = {r.get("decode_at_context") for r in rows if r.get("decode_at_context")}
    return f"decode tok/s, {at.pop():,} cached" if len(at) == 1 else "decode tok/s, half ctx cached"


def render_compare(rows: list[dict[str, Any]]) -> str:
    fields: list[tuple[str, Any]] = [
        ("memory", lambda r: format_bytes(r["memory_bytes"])),
        ("usable by the GPU", lambda r: format_bytes(r["usable_bytes"])),
        ("bandwidth GB/s", lambda r: _num(r["bandwidth_gbs"], "{:,.0f}")),
        ("fp16 TFLOPS", lambda r: _num(r["fp16_tflops"])),
        ("TDP W", lambda r: _num(r["tdp_w"], "{:,.0f}")),
        ("new (launch) USD", lambda r: _num(r.get("launch_price_usd"), "{:,.0f}")
         + (f" ({r.get('launch_price_as_of') or r['launch_year']})" if r.get("launch_year") and r.get("launch_price_usd")
            else "")),
        ("used USD", lambda r: _num(r.get("used_price_usd"), "{:,.0f}")
         + (" *" if r.get("used_price_usd") and r.get("used_price_source") else "")
         + (f" ({r['used_price_as_of']})" if r.get("used_price_usd") and r.get("used_price_as_of") else "")),
        ("price used here", lambda r: _num(r["price_usd"], "{:,.0f}")
         + (f" ({r['price_kind']})" if r.get("price_kind") else "")),
        ("largest catalog model", lambda r: (f"{r['largest_model']['alias']} {r['largest_model']['quant']} @ "
                                             f"{r['largest_model']['ctx']:,}") if r.get("largest_model") else "—"),
    ]
    if rows and "verdict" in rows[0]:
        fields += [
            ("quant", lambda r: r.get("quant") or "—"),
            *([("best quant alone", lambda r: r.get("best_quant") or "—")] if any(
                r.get("best_quant") not in (None, r.get("quant")) for r in rows) else []),
            ("verdict", lambda r: r.get("verdict") or "—"),
            ("max context", lambda r: _num(r.get("max_context"), "{:,}")
             + (f" ({CONTEXT_BASIS_SHORT[r['max_context_basis']]})" if r.get("max_context") and
                r.get("max_context_basis") in CONTEXT_BASIS_SHORT else "")),
            (_decode_label(rows), lambda r: _num(r.get("decode_tokens_per_s"))),
            ("decode, short ctx", lambda r: _num(r.get("decode_short_tokens_per_s"))),
            ("prefill tok/s", _prefill_cell),
            ("tok/s per 1k USD", lambda r: _num(r.get("tokens_per_s_per_1000_usd"), "{:,.2f}")),
        ]
    table = [[label, *(fn(r) for r in rows)] for label, fn in fields]
    out = _table(["", *(r["spec"] for r in rows)], table)
    for note in dict.fromkeys(n for r in rows for n in r.get("variant_notes") or ()):
        out.append(f"note: {note}")
    for r in rows:     # what a verdict holds under, as `check` says it ("runs, tight, if RAM ≥ 33 GiB; …")
        out += [f"note: {r['spec']}: {c}" for c in r.get("conditions") or ()]
    if any(r.get("id") is None and r.get("verdict") for r in rows):
        out.append("a VRAM figure has no bandwidth, so no speed")
    for rules in dict.fromkeys(r["runtime_rules"] for r in rows if r.get("runtime_rules")):
        out.append(f"rules: {rules}")      # which release's rules the plans used (--runtime vllm==0.19.0)
    for src in dict.fromkeys(r["used_price_source"] for r in rows if r.get("used_price_usd")
                             and r.get("used_price_source")):
        out.append(f"* used price: {src}")
    if any(r.get("best_quant") not in (None, r.get("quant")) for r in rows):
        out.append("one quant for all (the file people download, or the best every device fits), so the speeds "
                   "compare the hardware (--best-quant-each: each device's own best)")
    return _wrapped(out)


def render_fits(doc: dict[str, Any], top: int = 25) -> str:
    devs = ", ".join(f"{d['name']} ({format_bytes(d['capacity_bytes'])})" for d in doc["devices"])
    # the sum only where there is something to add up (one device: its figure once, review18 #13)
    total = f" · {format_bytes(doc['capacity_bytes'])} in all" if len(doc["devices"]) > 1 else ""
    out = [f"{devs}{total} · ctx {doc['ctx']:,} · {doc['runtime']}", ""]
    shown = doc["models"][:top]
    # a type below Q4_K_M is starred: ranked after every model at Q4_K_M or better (fits_here.below_chosen)
    rows = [[str(r["rank"]), r["alias"] + (f" (+{len(r['alike'])})" if r.get("alike") else ""),
             r["quant"] + (" *" if r.get("degraded") else ""),
             format_bytes(r["weights_bytes"]), format_bytes(r["peak_bytes"]), r.get("verdict", ""),
             _num(r.get("decode_tokens_per_s"))] for r in shown]
    if rows:
        # "free" is the header's memory less the peak (--json has it): the verdict column took its place
        headers = ["#", "model", "quant", "weights", "peak", "verdict", "tok/s"]
        cut = _fit_model_names(headers, rows, shown)
        out += _table(headers, rows, no_wrap=True)
        if cut:
            out.append(f"… {cut} name{'s' if cut > 1 else ''} cut to the terminal's width: whole in --json or "
                       "a wider terminal")
        out.append(f"tok/s: predicted decode with {doc['ctx'] // 2:,} tokens cached (half the context), one request")
        if any(r.get("degraded") for r in shown):
            out.append(f"* {DEGRADED_WORDS}: listed after every model at Q4_K_M or a more accurate type (llama.cpp's "
                       "quantize table: Q2_K adds 3.52 to Llama-3-8B's perplexity, Q3_K_M 0.66, Q4_K_M 0.18)")
        for r in shown:
            if r.get("alike"):
                out.append(f"(+{len(r['alike'])}) {r['alias']} plans the same as: {', '.join(r['alike'])}")
        if len(doc["models"]) > top:
            out.append(f"… {len(doc['models']) - top} more (--top N, or --json)")
    else:
        out.append("no catalog model fits at this context")
    out += [""] + [f"note: {n}" for n in doc["notes"]]
    return _wrapped(out)


def _fit_model_names(headers: list[str], rows: list[list[str]], shown: list[dict[str, Any]]) -> int:
    """Size the model column to its names (a row on one line, no name wrapped: mends19b), the other columns at their
    own widths and two spaces between columns (_table: a space of padding, then SIMPLE_HEAD's space): a name the
    terminal cannot hold whole loses its end to "…", its "(+N)" kept. Returns how many were cut."""
    from rich.console import Console

    i = headers.index("model")
    others = sum(max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(headers) if k != i)
    room = max(len(headers[i]) + 4, Console().width - others - 2 * (len(headers) - 1) - 1)   # the last pad
    cut = 0
    for r, m in zip(rows, shown):
        if len(r[i]) > room:
            tail = r[i][len(m["alias"]):]                          # " (+N)" or ""
            r[i] = m["alias"][:max(1, room - len(tail) - 1)] + "…" + tail
            cut += 1
    return cut


def render_cost(doc: dict[str, Any]) -> str:
    a, own, rent = doc["assumptions"], doc["own"], doc["rent"]
    run = doc["run"]
    out = [f"{doc['model']} on {doc['spec']} · {a['hours_per_day']:g} h/day · {a['years']:g} years · "
           f"{a['kwh_price_usd']:g} USD/kWh · utilisation {a['utilization']:g}"]
    if run:
        out.append(f"runs it: {run['quant']}, {_num(run['decode_tokens_per_s'])} tokens/s decode  ({run['command']})")
    usd = lambda v: _num(v, "{:,.2f}")  # noqa: E731
    offer = rent.get("offer") or {}
    # no purchase price: the owning column says why in its first cell instead of a bare dash
    no_price = "— (no catalog price: --price USD)" if own.get("purchase_usd") is None else None
    why = next((n.split("no price in the catalog: ", 1)[1].split(" (set --price)")[0] for n in doc["notes"]
                if "no price in the catalog: " in n), None)
    if no_price and why:
        no_price = f"— ({why}; give yours with --price USD)"
    rows = [
        ["purchase", no_price or usd(own["purchase_usd"]) + (f" ({own['price_kind']}"
                                                  + (f", {own['price_as_of']}" if own.get("price_as_of") else "")
                                                  + ")" if own.get("price_kind") else ""),
         ""],
        ["per hour", "", usd(rent["usd_per_hour"]) + (f" ({offer.get('provider')})" if offer else "")],
        ["amortised / year", usd(own["amortised_per_year_usd"]), ""],
        ["electricity / year", usd(own["electricity_per_year_usd"])
         + (f" ({own['kwh_per_year']:,.0f} kWh)" if own.get("kwh_per_year") else ""), ""],
        ["total / year", usd(own["per_year_usd"]), usd(rent["per_year_usd"])],
        ["per million tokens", _num(own["per_million_tokens_usd"], "{:,.3f}"),
         _num(rent["per_million_tokens_usd"], "{:,.3f}")],
    ]
    out += [""] + _table(["", "own", "rent"], rows)
    if doc["cheaper"]:
        pays = doc.get("breakeven_hours_per_day")
        out += ["", f"cheaper: {doc['cheaper']}" + (f" · owning pays off above {pays:g} h/day" if pays else "")]
    if offer.get("url"):
        out.append(f"rent price: {offer.get('provider')} {offer['usd_per_gpu_hour']:g} USD/GPU-h, {offer['url']}"
                   f" (price {offer.get('price_date') or 'undated'}, read {offer.get('read_on')})")
    out += [f"note: {n}" for n in doc["notes"]]
    return _wrapped(out)
