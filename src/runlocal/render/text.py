"""A Plan as terminal output: the verdict line, a breakdown table, a stacked bar, --explain steps."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..plan import Plan
from ..runtimes.base import PARALLEL_AUTO
from ..runtimes.llamacpp import AUTO_SLOTS
from ..units import format_bytes, format_count

VERDICT_STYLE = {"fits": ("bold green", "✔ fits"), "tight": ("bold yellow", "▲ tight"),
                 "does_not_fit": ("bold red", "✘ does not fit"), "unknown": ("bold", "? unknown")}
PARTS = (("weights", "blue", "█"), ("kv_cache", "magenta", "█"), ("compute", "cyan", "█"), ("overhead", "white", "█"))


def stacked_bar(device, width: int = 48) -> Text:
    cap = max(device.capacity, device.total, 1)
    bar = Text()
    used = 0
    for key, color, glyph in PARTS:
        n = round(getattr(device, key) / cap * width)
        bar.append(glyph * n, style=color)
        used += n
    if device.capacity and device.total <= device.capacity:
        bar.append("░" * max(0, width - used), style="green")
    elif device.capacity:
        bar.append("▌over", style="bold red")
    return bar


def device_groups(devices) -> list[tuple[object, int]]:
    """Runs of identical devices (the same name and figures: 16 ranks of one tensor-parallel group) as
    (device, count), so that a 16-GPU plan reads as one row."""
    groups: list[tuple[object, int]] = []
    for d in devices:
        if groups and groups[-1][0] == d:
            groups[-1] = (d, groups[-1][1] + 1)
        else:
            groups.append((d, 1))
    return groups


def render_plan(plan: Plan, console: Console, *, explain: bool = False, notes: list[str] | None = None) -> None:
    m, s, a = plan.model, plan.settings, plan.allocation
    style, label = VERDICT_STYLE[plan.verdict]
    params = f"{format_count(m.params)} params" + (f", {format_count(m.active_params)} active" if m.n_experts else "")
    if m.vision_params:
        params += f", of which {format_count(m.vision_params)} vision/audio tower"
    console.print(Text.assemble((label, style), f"  {m.id} ({m.family}, {params}) · {plan.runtime} · "
                                f"ctx {s.ctx:,} · {plan.weights.quant} weights · KV {s.cache_type_k}/{s.cache_type_v}"
                                + (f" · parallel {s.parallel}" if s.parallel > 1 else
                                   f" · parallel auto ({AUTO_SLOTS} slots, one KV cache)" if s.parallel == PARALLEL_AUTO else "")))
    if a.refusal:
        console.print(Text(f"  {a.refusal}", style="red"))
    if a.compromise:
        console.print(Text(f"  {a.compromise}", style="yellow"))

    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("device")
    for col in ("weights", "KV cache", "compute", "overhead", "total", "capacity", "free"):
        table.add_column(col, justify="right")
    groups = device_groups(a.devices)
    for d, n in groups:
        free = d.capacity - d.total if d.capacity else None
        table.add_row(d.name if n == 1 else f"{n} × {d.name}", format_bytes(d.weights),
                      format_bytes(d.kv_cache), format_bytes(d.compute),
                      format_bytes(d.overhead), format_bytes(d.total), format_bytes(d.capacity or None),
                      Text(format_bytes(free), style="red" if free is not None and free < 0 else "green"))
    console.print(table)
    if any(n > 1 for _, n in groups):
        console.print(Text("  (n × device: the figures are each device's)", style="dim"))
    for d, n in groups:
        if d.total or d.capacity:
            name = d.name if n == 1 else f"{n}× {d.name}"
            console.print(Text.assemble(f"  {name[:20]:<20} ", stacked_bar(d)))
    console.print(Text.assemble("  ", ("█ weights ", "blue"), ("█ KV cache ", "magenta"), ("█ compute ", "cyan"),
                                ("█ overhead ", "white"), ("░ free", "green")))

    limits = [f"KV {format_bytes(a.kv_bytes_per_token)}/token"]
    if a.kv_cache_tokens is not None:
        limits.append(f"KV pool {a.kv_cache_tokens:,} tokens")
    limits.append(f"max context {plan.max_context:,}" if plan.max_context else "max context: none fits")
    if plan.max_concurrency is not None:
        limits.append(f"max concurrency {plan.max_concurrency:.1f} at ctx {s.ctx:,}")
    console.print("  " + " · ".join(limits))
    sp = plan.speed
    if sp.get("decode_tokens_per_s") or sp.get("prefill_tokens_per_s"):
        parts = [f"{sp[k]:,.1f} tokens/s {label}" for k, label in
                 (("decode_tokens_per_s", "decode"), ("prefill_tokens_per_s", "prefill")) if sp.get(k)]
        how = (f"measured: {plan.measured['records']} stored run(s) on {plan.measured['device']}"
               if plan.measured and sp.get("source") == "measured" else "predicted")
        console.print(f"  speed: {' · '.join(parts)} ({how})", highlight=False)
    if plan.measured and plan.measured.get("max_context_ok"):
        m = plan.measured
        console.print(f"  measured here: ran at ctx {m['max_context_ok']:,}"
                      + (f" × {m['max_concurrency_ok']} concurrent requests" if m.get("max_concurrency_ok") else ""),
                      highlight=False)
    console.print(f"  run: [bold]{plan.command}[/bold]", highlight=False)

    if plan.fixes:
        console.print("\nFixes, least given up first:")
        for i, f in enumerate(plan.fixes, 1):
            console.print(f"  {i}. {f.title} — {f.effect}", highlight=False)
            console.print(f"     [dim]$[/dim] {f.command}", highlight=False)
    if explain:
        console.print("\nHow these numbers were computed:")
        for st in plan.steps:
            src = f"  [dim]({st.source})[/dim]" if st.source else ""
            console.print(f"  • {st.label}: {st.formula} = [bold]{st.value}[/bold]{src}", highlight=False)
        for note in a.assumptions:
            console.print(f"  • assumption: {note}", highlight=False)
    for note in notes or []:
        console.print(f"  [dim]note: {note}[/dim]", highlight=False)
