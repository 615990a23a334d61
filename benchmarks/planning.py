#!/usr/bin/env python3
"""How long a plan takes: issue 16's grid, in one process and as fresh `runlocal check` processes.

Grid: every catalog model × the six runtimes × context (the runtime's default, 4K, 32K, the trained context)
× hardware (one RTX 4090; an RTX 3060, where big models run partly offloaded). Each row is one
`check(CheckRequest(...))` — the call behind `runlocal check` and /api/v1/check — timed in this process after
the imports and the servers' warm-up plan (_warm_up: a process's first plan imports the planner's modules), rows
run one after the other (as a server would answer them, caches warm from earlier rows), and without stored
measurements (the planner alone). Then a sample of rows as cold processes
(`python -m runlocal check … --json`, the `runlocal` entry point users run), beside `python3 -c pass`
measured in the same run; then `compare` of 5 devices and `best` for a 70B model, cold; then the page's memory
curve, cold, for every catalog model.

Targets (issue 16): in-process median ≤ 20 ms, worst ≤ 100 ms; cold check median ≤ 0.2 s, worst ≤ 0.6 s;
compare/best ≤ 1 s cold; the curve ≤ 300 ms cold.

  python benchmarks/planning.py                      # the whole grid (slow before the speed-up)
  python benchmarks/planning.py --sample 40          # every ~Nth row, a quick subset
  python benchmarks/planning.py --dump plans.jsonl   # also write each row's plan (JSON) to compare two trees
  python benchmarks/planning.py --only inproc|cold|choose|curve|offtable
  python benchmarks/planning.py --full               # the whole grid in process only, with the rows over 100 ms
  python benchmarks/planning.py --table off …        # the same without the shipped compute table

The shipped compute table (runtimes/compute_table.py, data/compute_table/) answers the ggml simulations of the
questions its generator asked (llama.cpp and Ollama × these contexts × RTX 4090/3090/3060/4060/4060 Ti 16 GB, --gpu
none at the default context, the API's default check, the page's curve): a hit is a stored result, not a faster
planner. So the header says whether the table is on, every in-process figure counts the simulations still run and
the table's hits, `--table off` times the planner alone (RUNLOCAL_COMPUTE_TABLE=0, also in the cold processes), and
`--only offtable` times rows the generator never asked (an RTX 3080 10 GB, an A100 80 GB, --ubatch 1024).

In process, the rows run as the API server plans (runlocal.gcfreeze): what each row kept is frozen out of CPython's
cyclic collector after it, and a full collection (a sweep) runs between rows every 2,000 rows (runlocal.gcfreeze.SWEEP_EVERY).
Each row's time in the collector is printed (gc.callbacks); `--gc python` runs with CPython's defaults instead, where
a full collection walks every memo and spec kept so far inside whichever row sets it off.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "mlx")
CONTEXTS = (None, "4096", "32768", "trained")
GPUS = ("rtx-4090", "rtx-3060")
# rows the compute table's generator did not ask (runlocal.compute_table_build: other GPUs, another ubatch)
OFF_TABLE_MODELS = ("llama-3.1-8b", "gemma-3-27b", "qwen3-30b-a3b", "llama-3.3-70b", "gpt-oss-120b", "deepseek-v3",
                    "kimi-k2", "granite-4.0-h-tiny", "qwen3.5-27b", "qwen3-next-80b-a3b")
# (a card with a covered card's memory plans the same simulations — their arguments name no GPU: an RTX 4080 16 GB
# or an RTX 3070 8 GB is answered from the table as an RTX 4060 Ti 16 GB or an RTX 4060 is; so 10 GB and 80 GB)
OFF_TABLE = (("rtx-3080", {}), ("a100", {}), ("rtx-4090", {"ubatch": 1024}))
COMPARE_DEVICES = ("rtx-4090", "rtx-3090", "rtx-3060", "h100", "m3 max 64gb")
BIG_MODEL = "llama-3.1-70b"


class RowTimeout(Exception):
    pass


def grid(sample: int | None, runtimes: tuple[str, ...] = RUNTIMES, gpus: tuple[str, ...] = GPUS,
         models: tuple[str, ...] = ()) -> list[tuple[str, str, str | None, str]]:
    from runlocal.model import catalog

    rows = [(alias, rt, ctx, gpu) for alias in (models or catalog.aliases()) for rt in runtimes for ctx in CONTEXTS
            for gpu in gpus]
    if sample:
        step = max(1, len(rows) // sample)
        rows = rows[::step][:sample]
    return rows


def _ctx(alias: str, ctx: str | None) -> str | None:
    if ctx != "trained":
        return ctx
    from runlocal.model import catalog

    return str(catalog.lookup(alias).max_position_embeddings or 4096)


def _summary(label: str, times: list[float], unit: float = 1000.0, suffix: str = "ms") -> str:
    if not times:
        return f"{label:<28} no rows"
    q = sorted(times)
    p99 = q[min(len(q) - 1, int(0.99 * len(q)))]
    d = 2 if suffix == "s" else 1
    return (f"{label:<28} n {len(q):>5}   median {statistics.median(q) * unit:8.{d}f} {suffix}   "
            f"p99 {p99 * unit:8.{d}f}   worst {q[-1] * unit:8.{d}f}")


class _Collector:
    """CPython's cyclic collector around the rows, timed through gc.callbacks: each row's seconds in it and its
    full (generation-2) collections, so a row slowed by a pass over the whole heap is told from a slow plan.
    Mode "server" freezes after start-up and after each row and sweeps between rows, as the API's planning pool
    does around its plans (runlocal.gcfreeze); "start" freezes after start-up only; "python" leaves CPython's
    defaults."""

    def __init__(self, mode: str) -> None:
        from runlocal import gcfreeze

        self.mode, self._gcfreeze = mode, gcfreeze
        if mode != "python":
            gcfreeze.freeze_long_lived()
        self.seconds, self.full, self._t0 = 0.0, 0, 0.0
        self.row_seconds: list[float] = []
        self.row_full: list[int] = []
        self.sweeps: list[float] = []      # CPU seconds of each sweep (a full collection, between rows)
        gc.callbacks.append(self._on)

    def _on(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.process_time()
        else:
            self.seconds += time.process_time() - self._t0
            self.full += info["generation"] == 2

    def start_row(self) -> None:
        self.seconds, self.full = 0.0, 0

    def end_row(self, kept: bool) -> tuple[float, int]:
        """The row's collector seconds and full collections; then, between rows, what the server does."""
        seconds, full = self.seconds, self.full
        if kept:
            self.row_seconds.append(seconds)
            self.row_full.append(full)
        if self.mode == "server":
            self._gcfreeze.freeze_after_plan()
            s0 = time.process_time()
            if self._gcfreeze.sweep_if_due():
                self.sweeps.append(time.process_time() - s0)
        return seconds, full

    def line(self, cpu_times: list[float]) -> str:
        slow = [i for i, t in enumerate(cpu_times) if t > 0.1]
        secs, full, sw = self.row_seconds, self.row_full, self.sweeps
        mode = {"python": " (CPython's defaults)", "start": " (frozen after start-up)",
                "server": f" (frozen after start-up and after each row; {len(sw)} sweeps between rows, "
                          f"{sum(sw):.2f} s, worst {max(sw, default=0) * 1000:.0f} ms)"}[self.mode]
        return (f"  in the cyclic collector{mode}: "
                f"{sum(secs):.1f} s CPU in all, {sum(full)} full collections, worst row {max(secs) * 1000:.0f} ms; "
                f"rows over 100 ms with a full collection: {sum(full[i] > 0 for i in slow)} of {len(slow)}, "
                f"over 100 ms less their collector time: {sum(cpu_times[i] - secs[i] > 0.1 for i in slow)}; "
                f"objects tracked at the end {len(gc.get_objects()):,}, RSS {_rss_mib():.0f} MiB")


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def in_process(rows, timeout: float, dump: Path | None, label: str = "in-process plan",
               gc_mode: str = "python") -> list[tuple[float, tuple]]:
    from runlocal.check import CheckRequest, check
    from runlocal.errors import InputError

    _warm_up()
    collector = _Collector(gc_mode)

    def alarm(*_):
        raise RowTimeout()

    signal.signal(signal.SIGALRM, alarm)
    sims = _count_simulations()
    hits = _count_table_hits()
    out, skipped, failed = [], [], []
    cpu_times: list[float] = []
    sim_counts: list[int] = []
    hit_counts: list[int] = []
    sink = dump.open("w") if dump else None
    for row in rows:
        alias, rt, ctx, gpu, *extra = row
        req = CheckRequest(model=alias, runtime=rt, gpu=gpu, ctx=_ctx(alias, ctx), use_measurements=False,
                           **(extra[0] if extra else {}))
        signal.setitimer(signal.ITIMER_REAL, timeout)
        sims[0] = 0
        hits[0] = 0
        collector.start_row()
        c0 = time.process_time()
        t0 = time.perf_counter()
        try:
            plan, _ = check(req)
            result = plan.to_dict()
        except InputError as e:
            result = {"input_error": str(e)}
        except RowTimeout:
            skipped.append(row)
            result = {"timeout": timeout}
        except Exception as e:       # a planner bug: counted, named, and the grid goes on
            failed.append((row, repr(e)))
            result = {"error": repr(e)}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
        in_gc, full = collector.end_row("timeout" not in result)
        if "timeout" not in result:
            out.append((dt, row))
            cpu_times.append(cpu)
            sim_counts.append(sims[0])
            hit_counts.append(hits[0])
        if sink:
            sink.write(json.dumps({"row": row, "seconds": round(dt, 4), "cpu_seconds": round(cpu, 4),
                                   "simulations": sims[0], "table_hits": hits[0], "gc_seconds": round(in_gc, 4),
                                   "gc_full": full, "plan": result}) + "\n")
            sink.flush()
    if sink:
        sink.close()
    times = [t for t, _ in out]
    print(_summary(label, times) + "   (target median ≤ 20, worst ≤ 100 ms)")
    # on a shared machine wall time counts the other processes' turns too; the process's own CPU time does not
    print(_summary("  same rows, CPU time", cpu_times)
          + f"   over 100 ms: {sum(t > 0.1 for t in cpu_times)} CPU ({sum(t > 0.1 for t in times)} wall)")
    if cpu_times:
        print(collector.line(cpu_times))
    if sim_counts:
        print(f"  ggml graph simulations run (distinct, each a compute buffer placed): {sum(sim_counts):,} in all, "
              f"worst row {max(sim_counts)}; answered by the compute table: {sum(hit_counts):,}")
    if skipped:
        print(f"  {len(skipped)} rows over the {timeout:g} s limit, left out of the figures: "
              + ", ".join("/".join(str(x) for x in r) for r in skipped[:10]) + (" …" if len(skipped) > 10 else ""))
    for row, err in failed:
        print(f"  error: {'/'.join(str(x) for x in row)}: {err}")
    print("  worst ten:")
    for t, row in sorted(out, key=lambda x: x[0], reverse=True)[:10]:
        alias, rt, ctx, gpu, *extra = row
        more = " ".join(f"--{k} {v}" for k, v in (extra[0] if extra else {}).items())
        print(f"    {t * 1000:9.1f} ms  {alias:<24} {rt:<13} ctx {ctx or 'default':<8} {gpu} {more}".rstrip())
    return out


def _warm_up() -> None:
    """The servers' warm-up before the rows (mcp_server.warm_planner's plan; the site plans the whole catalog's sweep):
    the planner's modules are imported on a process's first plan, and here, where bytecode is not written
    (PYTHONDONTWRITEBYTECODE), that is ~0.1 s of compiling them, which the grid's first row paid (a start-up cost, not a
    plan's: `startup.py` and the cold rows time it). Timed and printed, not counted in the rows."""
    from runlocal.check import CheckRequest, check

    c0 = time.process_time()
    check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=8192, use_measurements=False))
    print(f"  warm-up plan first (the servers' mcp_server.warm_planner: llama-3.1-8b, RTX 4090, 8K; it imports the "
          f"planner): {(time.process_time() - c0) * 1000:.0f} ms CPU, not in the figures")


def _count_simulations() -> list[int]:
    """A counter of the distinct ggml compute simulations the planner runs (the cost a search's plans add up to),
    kept in a one-element list the caller resets per row."""
    from runlocal.runtimes import llamacpp_compute

    count = [0]
    now = getattr(llamacpp_compute, "simulate_now", None)
    if now is None:          # the simulation's entry point moved: no count (the timings stand)
        return count

    def counted(*args, **kwargs):
        count[0] += 1
        return now(*args, **kwargs)
    llamacpp_compute.simulate_now = counted
    return count


def _count_table_hits() -> list[int]:
    """A counter of the simulations the shipped compute table answered (runtimes/compute_table.py)."""
    count = [0]
    try:
        from runlocal.runtimes import compute_table
    except ImportError:      # a tree without the table
        return count
    lookup = compute_table.lookup

    def counted(*args, **kwargs):
        hit = lookup(*args, **kwargs)
        count[0] += hit is not None
        return hit
    compute_table.lookup = counted
    return count


def table_state() -> str:
    """One line: whether the shipped compute table answers, and how much of it this code can use."""
    try:
        from runlocal.runtimes import compute_table
    except ImportError:
        return "compute table: none in this tree"
    if not compute_table.enabled():
        return "compute table: OFF (RUNLOCAL_COMPUTE_TABLE=0): every simulation runs"
    files = sorted(compute_table.TABLE_DIR.glob("*.json.gz"))
    digest = compute_table.code_digest()
    current = sum(json.loads(compute_table.read_text(f))["code"] == digest for f in files)
    return (f"compute table: ON, {current} of {len(files)} model files made by this code (a hit is a stored "
            "simulation; --table off for the planner alone)")


def off_table(timeout: float, dump: Path | None, gc_mode: str = "python") -> None:
    """Rows the compute table's generator never asked: the planner's own speed, table on."""
    rows = [(alias, rt, ctx, gpu, extra) for alias in OFF_TABLE_MODELS for rt in ("llama.cpp", "ollama")
            for ctx in (None, "32768") for gpu, extra in OFF_TABLE]
    print(f"off the table: {len(rows)} rows ({', '.join(OFF_TABLE_MODELS)} × llama.cpp/Ollama × default/32K × "
          "RTX 3080 10 GB / A100 80 GB / RTX 4090 with --ubatch 1024)")
    in_process(rows, timeout, dump, "off-table plan", gc_mode)


def _run(cmd: list[str]) -> float:
    return _run_cpu(cmd)[0]


def _run_cpu(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a cold process: on a shared machine the CPU time is what compares two trees."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def cold(rows, n: int) -> None:
    # an odd step: the grid's last axis is the GPU, so an even step would pick RTX 4090 rows only
    step = max(1, len(rows) // n)
    step -= 1 if step > 1 and step % 2 == 0 else 0
    picked = rows[::step][:n]
    base, times = [], []
    named = []
    _run([sys.executable, "-c", "pass"])
    for alias, rt, ctx, gpu in picked:
        base.append(_run([sys.executable, "-c", "pass"]))
        cmd = [sys.executable, "-m", "runlocal", "check", alias, "--runtime", rt, "--gpu", gpu, "--json"]
        c = _ctx(alias, ctx)
        if c:
            cmd += ["--ctx", c]
        t = _run(cmd)
        times.append(t)
        named.append((t, (alias, rt, ctx, gpu)))
    py = statistics.median(base)
    print(_summary("cold check (process)", times, 1.0, "s") + "   (target median ≤ 0.2, worst ≤ 0.6 s)")
    print(f"  python3 -c pass, same run: median {py:.3f} s → check median {statistics.median(times) / py:.1f}×, "
          f"worst {max(times) / py:.1f}× of it")
    print("  worst ten:")
    for t, (alias, rt, ctx, gpu) in sorted(named, key=lambda x: x[0], reverse=True)[:10]:
        print(f"    {t:7.2f} s  {alias:<24} {rt:<13} ctx {ctx or 'default':<8} {gpu}")


def choose_cold() -> None:
    cli = [sys.executable, "-m", "runlocal"]
    compare = cli + ["compare", *COMPARE_DEVICES, "--model", BIG_MODEL, "--json"]
    best = cli + ["best", BIG_MODEL, "--json"]
    for label, cmd in (("compare 5 devices, 70B", compare), ("best, 70B", best)):
        runs = [_run_cpu(cmd) for _ in range(3)]
        ts = [wall for wall, _ in runs]
        print(f"{label:<28} cold median {statistics.median(ts):.2f} s  (worst {max(ts):.2f}; CPU median "
              f"{statistics.median(cpu for _, cpu in runs):.2f} s)   (target ≤ 1 s)")


def curve_cold(sample: int | None) -> None:
    from runlocal.model import catalog

    aliases = catalog.aliases()
    if sample:
        aliases = aliases[::max(1, len(aliases) // max(1, sample // 10))]
    code = ("import sys,time; t=time.perf_counter(); c=time.process_time(); "
            "from runlocal.check import CheckRequest, curve; "
            "curve(CheckRequest(model=sys.argv[1], gpu='rtx-4090')); print(time.perf_counter()-t, time.process_time()-c)")
    times, cpu = [], []
    for alias in aliases:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        r = subprocess.run([sys.executable, "-c", code, alias], capture_output=True, text=True, env=env)
        try:
            wall, own = r.stdout.strip().splitlines()[-1].split()
            times.append((float(wall), alias))
            cpu.append(float(own))
        except (ValueError, IndexError):
            print(f"  curve {alias}: failed: {r.stderr.strip().splitlines()[-1:]}")
    print(_summary("page curve (cold, in call)", [t for t, _ in times]) + "   (target ≤ 300 ms)")
    print(_summary("  same, CPU time", cpu))
    for t, alias in sorted(times, key=lambda x: x[0], reverse=True)[:5]:
        print(f"    {t * 1000:9.1f} ms  {alias}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, help="time about N rows of the grid, evenly spread")
    ap.add_argument("--cold", type=int, default=40, help="rows run as fresh processes (default 40)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds after which an in-process row is left out")
    ap.add_argument("--dump", type=Path, help="write each row's plan as JSON lines")
    ap.add_argument("--only", choices=("inproc", "cold", "choose", "curve", "offtable"))
    ap.add_argument("--full", action="store_true", help="the whole grid, in process only")
    ap.add_argument("--table", choices=("on", "off"), default="on",
                    help="the shipped compute table (off: RUNLOCAL_COMPUTE_TABLE=0, here and in cold processes)")
    ap.add_argument("--runtime", action="append", choices=RUNTIMES, help="only these runtimes (repeatable)")
    ap.add_argument("--gpu", action="append", help="only these GPUs of the grid (repeatable)")
    ap.add_argument("--model", action="append", help="only these catalog models (repeatable)")
    ap.add_argument("--gc", choices=("server", "start", "python"), default="server",
                    help="the cyclic collector: server (default) = frozen after start-up and after every row, swept "
                         "between rows, as the API server does around its plans (runlocal.gcfreeze); start = frozen "
                         "after start-up only; python = CPython's defaults")
    args = ap.parse_args()
    if args.table == "off":
        os.environ["RUNLOCAL_COMPUTE_TABLE"] = "0"
    if args.full:
        args.sample, args.only = None, "inproc"
    rows = grid(args.sample, tuple(args.runtime or RUNTIMES), tuple(args.gpu or GPUS), tuple(args.model or ()))
    print(f"grid: {len(rows)} rows (catalog models × {len(RUNTIMES)} runtimes × ctx default/4K/32K/trained × "
          f"{'/'.join(GPUS)})")
    print(table_state())
    if args.only in (None, "inproc"):
        in_process(rows, args.timeout, args.dump, gc_mode=args.gc)
    if args.only in (None, "cold"):
        cold(rows, args.cold)
    if args.only in (None, "choose"):
        choose_cold()
    if args.only in (None, "curve"):
        curve_cold(args.sample)
    if args.only in (None, "offtable"):
        off_table(args.timeout, args.dump if args.only == "offtable" else None, args.gc)


if __name__ == "__main__":
    main()
