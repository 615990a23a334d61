"""A Plan as terminal output: the verdict line, a breakdown table, a stacked bar, --explain steps."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..hardware.catalog import without_cited_sources
from ..hardware.host_link import PAGEABLE_NOTE
from ..hardware.speed import weight_reads
from ..plan import Plan, all_layers_on_gpu, concurrency_phrase, kv_per_token_phrase, ram_condition, weights_held
from ..runtimes import engine
from ..runtimes.arch_support import CANNOT_LOAD, NO_BUILD_LOADS, OTHER_RUNTIMES
from ..runtimes.base import PARALLEL_AUTO, Allocation, DeviceMemory
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


def device_groups(devices: Iterable[DeviceMemory]) -> list[tuple[DeviceMemory, int]]:
    """Runs of identical devices (the same name and figures: 16 ranks of one tensor-parallel group) as
    (device, count), so that a 16-GPU plan reads as one row."""
    groups: list[tuple[DeviceMemory, int]] = []
    for d in devices:
        if groups and groups[-1][0] == d:
            groups[-1] = (d, groups[-1][1] + 1)
        else:
            groups.append((d, 1))
    return groups


# One meaning per word: what each verdict says, printed under it (plan.py TIGHT_SHARE is the 90 % line).
VERDICT_MEANING = {
    "fits": "fits: starts and runs these settings with every GPU under 90 % full — the rest is room for the "
            "display, other programs and the runtime's spikes",
    "tight": "tight: starts, but a device is above 90 % full or something is given up (said below) — "
             "another program or a spike can tip it into out-of-memory",
    "does_not_fit": "does not fit: the runtime refuses to start, or runs out of memory, at these settings",
    "unknown": "unknown: a device's memory size is not known",
}
STARTS_BUT_REJECTS = ("does not fit: the runtime starts, but its KV pool cannot hold one request of the context "
                      "asked, so such a request is rejected")
CPU_ONLY_MEANING = {
    "fits": "fits: starts and runs these settings using under 90 % of the RAM — the rest is room for the "
            "system and other programs",
    "tight": "tight: starts, but uses over 90 % of the RAM or the runtime gave something up (said below) — "
             "other programs can push it into swapping or the out-of-memory killer",
}


NVME_BYTES_PER_S = 7e9   # a PCIe 4.0 x4 NVMe drive's sequential read (about 7 GB/s; 7.9 GB/s is the link's limit)
READING_SPEED = 5.0    # tokens/s: about 250 words a minute read silently (≈ 1.3 tokens a word), below it one waits


def _all_layers_on_gpu(plan: Plan) -> bool:
    """A llama.cpp plan whose -ngl (the user's or --fit's) puts every layer and the output on the GPU, no experts
    held back."""
    s = plan.settings.llamacpp
    return (all_layers_on_gpu(plan.model, s.n_gpu_layers, s.n_cpu_moe)
            and not any(buf == "CPU" for _, buf in s.override_tensor))   # -ot rules (--fit's on several GPUs) to RAM


def offload_phrase(plan: Plan) -> str | None:
    """What a plan with weights in system memory beside a GPU is: it runs, from RAM, at that speed — said
    plainly rather than left inside "tight"."""
    a = plan.allocation
    gpus = [d for d in a.devices if d.kind != "cpu"]
    in_ram = float(sum(d.weights for d in a.devices if d.kind == "cpu"))
    if plan.verdict not in ("fits", "tight") or not gpus or not in_ram:
        return None
    on_disk = plan.weights.total - sum(d.weights for d in a.devices)
    if on_disk > 0.01 * plan.weights.total:
        return (f"runs from disk — {format_bytes(on_disk)} of the weights on disk and {format_bytes(in_ram)} in RAM, "
                f"read back for every token: about {on_disk / NVME_BYTES_PER_S:,.0f} s a token (7 GB/s NVMe), "
                "far slower than a person reads")
    share = in_ram / max(1, sum(d.weights for d in a.devices))
    s = plan.settings
    ngl = s.llamacpp.n_gpu_layers
    # a compromise that left every layer on the GPU (--fit cutting only the context) moved no weights
    moved = ((a.compromise and not _all_layers_on_gpu(plan)) or s.llamacpp.n_cpu_moe
             or any(buf == "CPU" for _, buf in s.llamacpp.override_tensor)     # -ot between GPUs moves none to RAM
             or (ngl is not None and 0 <= ngl <= plan.model.n_layers))
    # llama.cpp / Ollama with no layer moved hold only the input layer on the host (the token embeddings: a token
    # reads one row of them), however large its share (gemma 3's 262K vocabulary: 11-22 % of the weights)
    if not moved and (share < 0.10 or engine(s.runtime).ggml):
        return None
    if not plan.model.n_experts:     # what a token reads there: of the input embedding in RAM one row (speed.py)
        reads = weight_reads(plan.model, a, s.quant)
        in_ram = sum(reads.matmul_bytes(d) for d in a.devices if d.kind == "cpu") or in_ram
        share = in_ram / max(1, sum(d.weights for d in a.devices))
    decode = plan.speed.get("decode_tokens_per_s")
    pace = ""
    if decode:
        # "a person reads", not "reading": the sentence is about weights read from RAM (review23 #18)
        pace = f": {decode:,.1f} tokens/s decode" + (", slower than a person reads (about 5 tokens/s)"
                                                       if decode < READING_SPEED else "")
    read = ("held in RAM, each token reading its routed experts there" if plan.model.n_experts
            else "read from RAM for every token")
    return f"runs partly from system memory — {format_bytes(in_ram)} of the weights ({share:.0%}) {read}{pace}"


def verdict_meaning(plan: Plan) -> str:
    """The one-line definition printed under the verdict (CPU-only plans speak of RAM, not GPUs; a server that
    starts but rejects the context asked — SGLang's short pool — is not said to refuse to start)."""
    if plan.rejects:
        return STARTS_BUT_REJECTS
    cpu_only = all(d.kind == "cpu" for d in plan.allocation.devices)
    return fit_margin_meaning(plan) or (CPU_ONLY_MEANING if cpu_only else VERDICT_MEANING).get(
        plan.verdict, VERDICT_MEANING[plan.verdict])


def fit_margin_meaning(plan: Plan) -> str | None:
    """A llama-server plan tight only by llama-server --fit's own design: every layer on the GPUs, each GPU keeping
    --fit's 1 GiB (common/common.h fit_params_target; fit.cpp measures the devices' free memory at start-up and sizes
    the launch to keep it), and tight only for the context --fit shortened and/or a GPU above the 90 % line. Said as
    that, not as "another program or a spike can tip it into out-of-memory" (review23 #15: 12 of 15 newcomer screens
    read "tight", most for --fit's designed behaviour). None for any other plan: layers or experts in RAM, a GPU short
    of the margin (fit.cpp's linear estimate, llamacpp_fit.with_estimate_short), -c and -ngl both the user's (--fit
    sizes nothing), a unified machine's RAM above the line together (over_shared_share)."""
    from ..hardware.unified_memory import over_shared_share
    from ..runtimes.llamacpp_layout import FIT_MARGIN
    from ..verdict import TIGHT_SHARE, weights_in_ram

    a, s = plan.allocation, plan.settings
    gpus = [d for d in a.devices if d.kind != "cpu"]
    # --fit sized this launch (its steps: "context (-c 0, --fit)", "layers (--fit)"): not where -c and -ngl are the user's
    sized = any(st.label.endswith("--fit)") for st in a.steps)
    if (plan.verdict != "tight" or not engine(plan.runtime).fit_offload or not s.llamacpp.fit or not sized or not gpus
            or weights_in_ram(a, plan.model) or over_shared_share(a.devices, TIGHT_SHARE)
            or any(d.capacity <= 0 or d.capacity - d.total < FIT_MARGIN for d in gpus)):
        return None
    said = a.compromise or ""
    cut = "context shortened" in said and "system memory" not in said
    full = any(d.total > TIGHT_SHARE * d.capacity for d in gpus)
    if a.compromise and not cut:
        return None
    why = " and ".join([*(["the context --fit shortened (said below)"] if cut else []),
                        *(["a GPU above 90 % full"] if full else [])])
    if not why:
        return None
    return (f"tight: starts, every layer on the GPU with llama-server --fit's own 1 GiB margin kept free (measured at "
            f"start-up) — tight only for {why}")


NARROW = 100     # below this many columns the table prints GiB numbers without units, so device names keep room


def fix_command_shown(run: str, command: str) -> str:
    """A fix's command as the terminal prints it. Where the run: line is a program of "; "-joined statements
    (transformers' one-line Python) and the fix's differs in some of them only, those statements after "…; " — the
    change, as a fix of llama-server is one flag (review19 section 13: "Reduce context to 512" printed the whole
    program); the rest is the run: line's. --json, the API and the site carry the whole program."""
    base, new = run.split("; "), command.split("; ")
    if len(base) < 3 or len(new) != len(base):
        return command
    changed = [n for n, b in zip(new, base) if n != b]
    return "…; " + "; ".join(changed) if 0 < len(changed) < len(new) else command


def _weights_label(plan: Plan) -> str:
    """The type the command runs, and the type sized where they differ (`-q UD-Q4_K_XL`: planned as Q4_K_M's mix);
    a checkpoint the runtime holds in another type says both (plan.weights_held)."""
    run, sized = plan.quant_run, plan.weights.quant
    if run != sized:
        return f"{run} (sized as {sized}'s mix) weights"
    words = weights_held(plan)[0]
    return words if plan.allocation.weights_as_run else f"{words} weights"


def _render_header(plan: Plan, console: Console) -> None:
    """The verdict line, what it means, and the conditions, warnings, refusal and compromise under it."""
    m, s, a = plan.model, plan.settings, plan.allocation
    style, label = VERDICT_STYLE[plan.verdict]
    params = f"{format_count(m.params)} params" + (f", {format_count(m.active_params)} active" if m.n_experts else "")
    if m.vision_params:
        params += f", of which {format_count(m.vision_params)} vision/audio tower"
    # not given: llama-server's auto slots; vLLM's / SGLang's own default says nothing (their pool line does); a
    # pooled engine's 1 is asked (--max-num-seqs 1), llama.cpp's the old spelling of one slot
    pooled = plan.planner is not None and plan.planner.pools_kv
    slots = (f" · parallel {s.parallel}" if s.parallel > 1 or pooled and s.parallel == 1 else
             f" · parallel auto ({AUTO_SLOTS} slots, one KV cache)"
             if s.parallel == PARALLEL_AUTO and engine(plan.runtime).ggml else "")   # kept auto: llama-server's
    label += ram_condition(plan)       # the site's verdict badge carries the same words (web/site.py)
    console.print(Text.assemble((label, style), f"  {m.id} ({m.family}, {params}) · {plan.runtime} · "
                                f"ctx {s.ctx:,} · {_weights_label(plan)} · KV {s.cache_type_k}/{s.cache_type_v}"
                                + slots))
    _say(console, Text(f"{verdict_meaning(plan)}", style="dim"))
    offload = offload_phrase(plan)
    if offload:
        _say(console, Text(f"{offload}", style="bold yellow"))
    for condition in getattr(plan, "conditions", ()):
        _say(console, Text(f"{condition}", style="bold yellow"))
    for st in plan.steps:
        if st.label == "trained context":     # a quality warning, shown whether or not --explain is given
            _say(console, Text(f"⚠ {st.formula}", style="yellow"))
        elif st.label == "checkpoint":        # which checkpoint vLLM / SGLang pull, and the published alternatives
            _say(console, Text(st.formula, style="dim"))
    if a.refusal or plan.rejects:
        _say(console, Text(f"{a.refusal or plan.rejects}", style="red"))
    if a.compromise:
        _say(console, Text(f"{a.compromise}", style="yellow"))



def _render_devices(a: Allocation, console: Console) -> None:
    """Each device's memory as a table and a stacked bar."""
    narrow = console.width < NARROW
    size = (lambda n: "" if n is None else f"{n / 2**30:.2f}") if narrow else format_bytes
    heads = ("device", "weights", "KV cache", "compute", "overhead", "total", "capacity", "free")
    groups = device_groups(a.devices)
    rows = []
    for d, n in groups:
        free = d.capacity - d.total if d.capacity else None
        name = _short_name(d.name) if narrow else d.name      # the full name is on its bar below
        rows.append([name if n == 1 else f"{n} × {name}", size(d.weights), size(d.kv_cache), size(d.compute),
                     size(d.overhead), size(d.total), size(d.capacity or None), size(free)])
    # two spaces between columns, or one where two would wrap the device's name ("2 × RTX 4060 Ti 16GB" at 80)
    cells = sum(max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)) if rows else 0
    table = Table(box=None, pad_edge=False, show_edge=False, collapse_padding=cells + 2 * (len(heads) - 1) > console.width,
                  title=("per device, GiB" if narrow else None), title_justify="left", title_style="dim")
    table.add_column("device", ratio=1, min_width=12)
    for col in heads[1:]:
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        free_text = Text(r[-1], style="red" if r[-1].startswith("-") else "green")
        table.add_row(*r[:-1], free_text)
    console.print(table)
    if any(n > 1 for _, n in groups):
        _say(console, Text("(n × device: the figures are each device's, not their sum)", style="dim"))
    bars = Table.grid(padding=(0, 1))
    bars.add_column(ratio=1, min_width=10)          # the name wraps rather than being cut
    bars.add_column(no_wrap=True)
    labels = [("  " + (d.name if n == 1 else f"{n}× {d.name}"), d) for d, n in groups if d.total or d.capacity]
    # the bar gives way to the longest name, down to 16 cells, before the name wraps
    longest = max((len(label) for label, _ in labels), default=0)
    width = max(16, min(48, console.width - 34, console.width - 1 - longest))
    for label, d in labels:
        bars.add_row(label, stacked_bar(d, width))
    console.print(bars)
    console.print(Text.assemble("  ", ("█ weights ", "blue"), ("█ KV cache ", "magenta"), ("█ compute ", "cyan"),
                                ("█ overhead ", "white"), ("░ free", "green")))


def render_plan(plan: Plan, console: Console, *, explain: bool = False, notes: list[str] | None = None) -> None:
    _render_header(plan, console)
    _render_devices(plan.allocation, console)

    _say(console, Text(" · ".join(limit_phrases(plan))))
    speed = speed_phrase(plan)
    if speed:
        _say(console, Text(f"speed: {speed}"))
    if plan.measured and plan.measured.get("max_context_ok"):
        ran = plan.measured
        console.print(f"  measured here: ran at ctx {ran['max_context_ok']:,}"
                      + (f" × {ran['max_concurrency_ok']} concurrent requests" if ran.get("max_concurrency_ok") else ""),
                      highlight=False)
    if plan.speed.get("not_predicted") == NO_BUILD_LOADS:     # a command that cannot load the model is not shown
        _say(console, Text(f"run: none — no {plan.runtime} build loads this model (above)"))
    else:
        console.print(Text.assemble("  run: ", (plan.command, "bold")), soft_wrap=True)

    if plan.verdict == "does_not_fit" and not plan.fixes:
        _say(console, Text(no_fix_phrase(plan), style="bold"))
    if plan.fixes:
        console.print("\nFixes, least given up first:")
        for i, f in enumerate(plan.fixes, 1):
            _say(console, Text(f"{i}. {f.title} — {f.effect}"), indent=2, hang=3)
            console.print(Text.assemble("     ", ("$", "dim"), f" {fix_command_shown(plan.command, f.command)}"),
                          soft_wrap=True)
    if explain:
        console.print("\nHow these numbers were computed:")
        for st in plan.steps:
            src = f"  [dim]({st.source})[/dim]" if st.source else ""
            console.print(f"  • {st.label}: {st.formula} = [bold]{st.value}[/bold]{src}", highlight=False)
        for note in plan.allocation.assumptions:
            console.print(f"  • assumption: {note}", highlight=False)
    for note in notes or []:     # the catalog's cited addresses with --explain (JSON: whole), not on the first screen
        shown = note if explain else without_cited_sources(note)
        console.print(f"  [dim]note: {shown}[/dim]", highlight=False)


def no_fix_phrase(plan: Plan) -> str:
    """Why no fix is listed: nothing this runtime lets one change makes it fit on this hardware; what it needs."""
    if plan.speed.get("not_predicted") == CANNOT_LOAD:
        return f"No fix: no setting makes {plan.runtime} {plan.runtime_version[0]} load this model — update it (above)."
    if plan.speed.get("not_predicted") == NO_BUILD_LOADS:
        return f"No fix: no setting or update makes {plan.runtime} load this model — another runtime (above)."
    if OTHER_RUNTIMES in (plan.allocation.refusal or ""):     # a refusal no memory setting gets past (SGLang on RDNA)
        return f"No fix: no setting {plan.runtime} offers gets past its refusal here — another runtime (above)."
    over = [d for d in plan.allocation.devices if d.capacity and d.total > d.capacity]
    worst = max(over or plan.allocation.devices, key=lambda d: d.total - d.capacity)
    # the shortfall itself: what more memory (or a smaller model) has to make up — review22 #12, where context and
    # quant fixes that could not close a 27.5 GiB gap were offered by diagnose
    need = (f": it needs {format_bytes(worst.total)} on {worst.name}, which gives {format_bytes(worst.capacity)} "
            f"({format_bytes(worst.total - worst.capacity)} short)" if over else "")
    more = (" — a machine with more unified memory" if worst.kind == "unified"
            else " — more RAM, or a GPU that holds part of it" if worst.kind == "cpu" and len(plan.allocation.devices) == 1
            else " — more or larger devices")
    return f"No fix: no setting {plan.runtime} offers makes it fit here{need}{more}, or a smaller model."


def _short_name(name: str) -> str:
    """A device name without the vendor's brand words, for a narrow table: "NVIDIA GeForce RTX 4090" → "RTX 4090"."""
    for brand in ("NVIDIA GeForce ", "NVIDIA ", "AMD Radeon ", "AMD Instinct ", "Intel Arc "):
        if name.startswith(brand):
            return name[len(brand):]
    return name


def _say(console: Console, text: Text, indent: int = 2, hang: int = 0) -> None:
    """A paragraph indented by ``indent``, its wrapped lines by ``hang`` more (rich wraps it to the width)."""
    from rich.padding import Padding

    if hang:
        lines = text.wrap(console, max(20, console.width - indent - hang))
        for i, line in enumerate(lines):
            console.print(Padding(line, (0, 0, 0, indent + (hang if i else 0)), expand=False))
        return
    console.print(Padding(text, (0, 0, 0, indent), expand=False))


# what the max context counts, one reading per plan whatever -c was asked (plan.Plan.max_context_basis): the same words
# in check, compare and the site
MAX_CONTEXT_BASIS = {
    "all_on_gpu": "every layer on the GPU: the largest -c at which llama-server --fit moves nothing to system memory; "
                  "past it --fit moves layers there, slower",
    "layers_in_ram": "with layers in system memory: no context keeps every layer on the GPU; the largest -c that "
                     "starts, --fit moving what it must",
    "starts": "the largest that starts",
    "measured": "a verified run stored here ran at it",
}


def limit_phrases(plan: Plan) -> list[str]:
    """The limits line, each figure with what it counts: per GPU or in all, per request or in all."""
    a = plan.allocation
    out = [kv_per_token_phrase(plan)]
    if a.kv_cache_tokens is not None:
        logged = getattr(plan.planner, "pool_words", lambda _: None)(a)   # vLLM: a hybrid model's per-group count
        out.append(f"KV pool {a.kv_cache_tokens:,} tokens " + (logged or "shared by all requests"))
    if plan.speed.get("not_predicted") in (CANNOT_LOAD, NO_BUILD_LOADS):
        out.append("max context: none (the build cannot load the model)")
    elif not plan.max_context:
        out.append("max context: none fits")
    else:
        cut = a.compromise and "context shortened" in a.compromise
        out.append(f"max context {plan.max_context:,} per request ({MAX_CONTEXT_BASIS[plan.max_context_basis or 'starts']}"
                   + (f"; without -c, --fit chose {plan.settings.ctx:,}" if cut else "")
                   # past the edge only by fit.cpp's linear estimate, every layer kept (review23 #16: -c 61,952 asked
                   # is measured and moves a layer; -c 0 lands there unmeasured): llamacpp_fit.with_estimate_short
                   + (", past this edge by its linear estimate, every layer kept (above)"
                      if cut and (plan.settings.ctx or 0) > plan.max_context and "linear estimate" in (a.compromise or "")
                      else "")
                   + ")")
    concurrency = concurrency_phrase(plan)
    if concurrency:
        out.append(concurrency)
    return out


def _seconds(t: float) -> str:
    """A time to first token as read: 0.42 s, 3.8 s, 95 s, 3 min 20 s."""
    if t >= 120:
        return f"{int(t // 60)} min {t % 60:.0f} s"
    return f"{t:.2g} s" if t < 10 else f"{t:.0f} s"


def speed_phrase(plan: Plan) -> str | None:
    """Speeds with the context they assume, and the short-context single-request figure scoreboards quote."""
    sp = plan.speed
    if plan.verdict == "does_not_fit":
        return None      # no speed for a setup that does not start
    on_disk = plan.weights.total - sum(d.weights for d in plan.allocation.devices)
    if on_disk > 0.01 * plan.weights.total:
        # the speed model reads GPU and RAM bandwidth; weights on disk are read back per token at the drive's speed
        return (f"not predicted — {format_bytes(on_disk)} of weights are read back from disk for every token: "
                f"about {on_disk / NVME_BYTES_PER_S:,.0f} s a token from a {NVME_BYTES_PER_S / 1e9:g} GB/s NVMe drive")
    parts = []
    sp_source = sp.get("source")
    measured = plan.measured and sp_source == "measured"
    if measured:      # what the stored runs measured, at their own contexts: no predicted labels beside it
        sp = {k: sp.get(k) for k in ("decode_tokens_per_s", "prefill_tokens_per_s")}
    if sp.get("decode_tokens_per_s"):
        at = sp.get("decode_at_context")
        parts.append(f"{sp['decode_tokens_per_s']:,.1f} tokens/s decode"
                     + (f" with {at:,} tokens in the KV cache (half the context)" if at else ""))
        if sp.get("decode_short_tokens_per_s") and sp.get("decode_short_context") != at:
            parts.append(f"{sp['decode_short_tokens_per_s']:,.1f} tokens/s at a short context "
                         f"({sp['decode_short_context']:,} tokens, one request)")
    if sp.get("prefill_tokens_per_s"):
        parts.append(f"{sp['prefill_tokens_per_s']:,.1f} tokens/s prefill"
                     + (f" ({sp['prefill_prompt_tokens']:,}-token prompt)" if sp.get("prefill_prompt_tokens") else "")
                     + (" (unvalidated: --explain says why)" if sp.get("prefill_unvalidated") else ""))
        ttft = sp.get("time_to_first_token_s")
        if ttft:
            parts.append(f"first token after {_seconds(ttft)}")
    elif sp.get("prefill_range_tokens_per_s"):   # no validated figure: the range instead (speed_explain.speed_figures)
        low, high = cast("list[float]", sp["prefill_range_tokens_per_s"])
        why = ("the weights in RAM cross to the GPU from mmap'd memory, at a rate measured on one server only"
               if str(sp.get("prefill_not_predicted", "")).startswith(PAGEABLE_NOTE[:40]) else
               "no MoE prompt figure on this backend passed its held-out round")
        parts.append(f"prefill {low:,.0f}–{high:,.0f} tokens/s (a range, unvalidated: {why}; --explain says why)")
    elif sp.get("prefill_not_predicted"):
        why = str(sp["prefill_not_predicted"]).split(":")[0]      # "not modelled for … on vulkan"
        parts.append(f"prefill {why} (--explain says why)")
    if not parts:
        return None
    how = "predicted"
    if plan.measured and sp_source in ("measured", "mixed"):
        m = plan.measured
        ids = ", ".join(str(i) for i in m["ids"][:5])
        where = (f"{m['records']} stored run(s) on {m['device']} (id {ids}; latest {str(m.get('latest') or '?')[:10]})")
        how = f"measured: {where}" if measured else f"decode predicted, prefill measured: {where}"
    return " · ".join(parts) + f" ({how})"
