"""`runlocal snapshot`: what held GPU memory in a PyTorch allocator snapshot, by stack origin.

A snapshot is what ``torch.cuda.memory._dump_snapshot(path)`` writes after
``torch.cuda.memory._record_memory_history()``: ``pickle.dump`` of a dict built from plain
types only (torch/csrc/cuda/memory_snapshot.cpp, documented in ``torch.cuda.memory._snapshot``)::

    {"segments": [{"device", "address", "total_size", "allocated_size", "active_size",
                   "requested_size", "stream", "segment_type", "segment_pool_id": (int, int),
                   "is_expandable", "frames", "blocks": [{"address", "size", "requested_size",
                   "state": "active_allocated" | "active_pending_free" | "inactive",
                   "frames": [{"filename", "line", "name"}, ...]}]}],
     "device_traces": [[{"action": "alloc" | "free_requested" | "free_completed" | "segment_alloc"
                         | "segment_free" | "segment_map" | "segment_unmap" | "oom" | "snapshot",
                         "addr" (or "device_free" for oom), "size", "stream", "time_us",
                         "frames"}, ...] per device],
     "allocator_settings": {...}}

Frames are innermost first.

Memory counts as held from its ``alloc`` until its ``free_completed`` (a block freed while another
stream still uses it stays held until then), which is what the memory_viz "Active Memory Timeline"
draws; when a trace has no ``free_completed`` at all (skipped actions), ``free_requested`` ends it.
Blocks held before a (ring-buffered) trace begins are found from frees of addresses the trace never
allocated, and from blocks still held at the end that the trace never allocated. Older snapshots are a bare list
of segments, and older blocks carry their stack in ``history[0]["frames"]``; both are read.

Reading a pickle runs whatever it names, so the file is read with an unpickler that refuses every
global: dicts, lists, tuples, str, bytes, int, float, bool and None need none, and a file that names
one is not a snapshot. Nothing is imported or called while loading.
"""

from __future__ import annotations

import io
import os
import pickle
import re
from dataclasses import dataclass
from xml.sax.saxutils import escape

from .errors import InputError, ModelFormatError
from .units import format_bytes

CATEGORIES = ("weights", "kv_cache", "activations", "other")
# CUDA addresses, sizes and microsecond clocks are 64-bit (memory_snapshot.cpp writes them as int64/size_t).
MAX_INT = 1 << 64
# torch numbers devices with a c10::DeviceIndex (int8): at most 127 GPUs in one process.
MAX_DEVICES = 128
DEFAULT_MAX_BYTES = 2 * 1024**3  # snapshots with long traces reach the GB range; raise with --max-size
DEFAULT_POINTS = 200


class SnapshotFormatError(ModelFormatError):
    """The file is not a readable memory snapshot: truncated, not a pickle, or not the snapshot's shape."""


class UnsafeSnapshotError(InputError):
    """The pickle names a class or function; a memory snapshot never does, so nothing was loaded."""


# ---------------------------------------------------------------------------------------------
# Classification by stack origin
#
# Frames are read innermost first; the first frame that any rule matches decides, and within one
# frame the first matching rule in this table wins (so weights beat kv_cache beat activations
# when one function matches several). A rule matches when every pattern it has matches: `file`
# against the frame's filename (with '/' separators), `name` against its function name.
# C++ frames (recorded with stacks="all") have names like "torch::autograd::THPVariable_to",
# so the name patterns are anchored or specific enough not to match them by accident.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    category: str
    file: str | None
    name: str | None
    why: str


RULES: tuple[Rule, ...] = (
    # --- weights: loading, creating or moving parameters --------------------------------------
    Rule("weights", None,
         r"^(from_pretrained|_from_config|load_state_dict|_load_from_state_dict|_load_state_dict_into_meta_model"
         r"|load_checkpoint_and_dispatch|load_checkpoint_in_model|set_module_tensor_to_device|load_weights"
         r"|load_model|create_weights|process_weights_after_loading|weight_loader\w*|load_pretrained_model)$",
         "loader entry points of transformers, accelerate, vLLM and SGLang, and torch's load_state_dict"),
    Rule("weights", r"/transformers/modeling_utils\.py$",
         r"load|from_pretrained|init_weights|initialize_weights|tie_|resize_token|dispatch|warmup",
         "transformers' loader; other functions in this file (attention masks) run inside forward"),
    Rule("weights", r"/safetensors/", None, "safetensors.torch.load_file / safe_open(...).get_tensor"),
    Rule("weights", r"/(vllm|sglang/srt)/model_executor/model_loader/|/sglang/srt/model_loader/", None,
         "vLLM and SGLang model loaders"),
    Rule("weights", r"/torch/serialization\.py$", None, "torch.load(..., map_location='cuda')"),
    Rule("weights", r"/torch/nn/modules/module\.py$", r"^(_apply|to|cuda|convert|to_empty)$",
         "model.to('cuda') / model.cuda(): moving parameters and buffers to the GPU"),
    Rule("weights", r"/accelerate/(big_modeling|utils/modeling|utils/offload)\.py$", None,
         "accelerate's dispatch and offload hooks bringing weights onto the GPU"),
    Rule("weights", r"/bitsandbytes/nn/modules\.py$", r"^(cuda|to|_quantize|from_prequantized)$",
         "bitsandbytes quantizing weights as they move to the GPU"),
    # --- kv_cache: the attention cache, preallocated or grown ----------------------------------
    Rule("kv_cache", r"/transformers/cache_utils\.py$", None, "DynamicCache / StaticCache storage and update()"),
    Rule("kv_cache", None, r"(?i)kv_?cache|past_key_value|_prepare_cache_for_generation",
         "functions named for the cache: vLLM _allocate_kv_cache(_tensors), initialize_kv_cache, ..."),
    Rule("kv_cache", r"/vllm/.*(cache_engine|kv_cache|block_manager|block_pool)", None,
         "vLLM's cache engine and KV block allocation"),
    Rule("kv_cache", r"/sglang/srt/mem_cache/", None, "SGLang's token-to-KV pool"),
    Rule("kv_cache", r"(?i)kv_?cache[^/]*\.py$", None, "any file named for the KV cache"),
    # --- activations: forward, backward and the generation loop ---------------------------------
    Rule("activations", None,
         r"^(forward|_forward|_call_impl|_wrapped_call_impl|backward|_run_ddp_forward|execute_model|_dummy_run"
         r"|profile_run|_dummy_sampler_run|capture_model|generate|_sample|_beam_search|_assisted_decoding)$",
         "module forward/backward, vLLM's model runner, HF generate"),
    Rule("activations", None, r"^nn\.Module: ", "module calls, in snapshots built from a profiler trace"),
    Rule("activations", r"/transformers/generation/", None, "generate(): logits, sampling, stopping criteria"),
    Rule("activations", r"/torch/autograd/", None, "autograd (gradients)"),
    Rule("activations", r"/torch/nn/functional\.py$", None, "torch.nn.functional ops"),
)

_COMPILED = tuple((r.category, re.compile(r.file) if r.file else None, re.compile(r.name) if r.name else None)
                  for r in RULES)


def _short(filename: str) -> str:
    f = filename.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in f:
            return f.rsplit(marker, 1)[1]
    parts = f.rsplit("/", 2)
    return "/".join(parts[-2:]) if len(parts) > 1 else f


def _is_torch_or_native(frame: dict) -> bool:
    filename = _parts(frame)[0]
    return not filename.endswith(".py") or "/torch/" in filename


_PROFILER_NAME = re.compile(r"^(?P<file>[^()]+\.py)\((?P<line>\d+)\): (?P<name>.+)$")


def _parts(frame: dict) -> tuple[str, str, object]:
    """(filename with '/' separators and a leading '/', function name, line) of one frame. Snapshots that
    torch.cuda._memory_viz builds from a profiler trace put "file.py(line): func" in the name instead."""
    # only strings and ints are read: str() of a list a pickle built from shared references can take forever
    filename = _text(frame.get("filename")).replace("\\", "/")
    name = _text(frame.get("name"))
    line = frame.get("line")
    line = line if isinstance(line, int) and not isinstance(line, bool) and -MAX_INT < line < MAX_INT else "?"
    if filename in ("", "none"):
        m = _PROFILER_NAME.match(name)
        if m:
            filename, name, line = m.group("file").replace("\\", "/"), m.group("name"), int(m.group("line"))
    if filename.endswith(".py") and not filename.startswith("/"):
        filename = "/" + filename
    return filename, name, line


def _text(value: object, limit: int = 1000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _origin(frame: dict) -> str:
    filename, name, line = _parts(frame)
    return f"{name or '?'} ({_short(filename).lstrip('/') or '?'}:{line})"


def classify_frames(frames) -> tuple[str, str]:
    """(category, origin) of one allocation's stack. The origin is the deciding frame, or when that is
    inside torch (module.py's _apply, linear.py's forward), the first Python frame outside torch above it."""
    if not isinstance(frames, list):
        return "other", "<no stack>"
    frames = [f for f in frames if isinstance(f, dict)]
    for i, f in enumerate(frames):
        filename, name, _line = _parts(f)
        for category, file_re, name_re in _COMPILED:
            if (file_re is None or file_re.search(filename)) and (name_re is None or name_re.search(name)):
                shown = next((g for g in frames[i:] if not _is_torch_or_native(g)), f)
                return category, _origin(shown)
    # No rule: name the first Python frame outside torch itself, the closest thing to "who asked".
    for f in frames:
        if not _is_torch_or_native(f):
            return "other", _origin(f)
    if frames:
        return "other", _origin(frames[0])
    return "other", "<no stack>"


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


class _PlainUnpickler(pickle.Unpickler):
    """Builds only the types pickle makes without a global; every class or function is refused."""

    def find_class(self, module, name):  # GLOBAL, STACK_GLOBAL, INST, OBJ and uncached EXT1/2/4 land here
        asked = ascii(f"{module}.{name}")[1:-1][:80]  # attacker-chosen text: one line, printable, short
        raise UnsafeSnapshotError(
            f"refusing to load: the pickle asks for '{asked}', and a memory snapshot holds only "
            "plain dicts, lists, strings and numbers (nothing was imported or run)")

    def persistent_load(self, pid):
        raise UnsafeSnapshotError("refusing to load: the pickle uses persistent ids, which a memory snapshot never does")


def _refuse_extension(self):
    raise UnsafeSnapshotError("refusing to load: the pickle uses a copyreg extension code, which names a class; "
                              "a memory snapshot never does (nothing was imported or run)")


class _PyPlainUnpickler(pickle._Unpickler):
    """The pure-Python unpickler with the same refusals, and EXT1/2/4 refused outright: those opcodes
    return an object from copyreg's extension cache without asking find_class."""

    find_class = _PlainUnpickler.find_class
    persistent_load = _PlainUnpickler.persistent_load
    dispatch = dict(pickle._Unpickler.dispatch)
    for _op in (pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _refuse_extension
    del _op


def loads(data: bytes) -> object:
    """Unpickle snapshot bytes with no globals allowed."""
    import copyreg

    # The fast C unpickler is used unless some code in this process registered copyreg extensions
    # (none are by default), since a cached extension object would bypass find_class.
    extensions = getattr(copyreg, "_inverted_registry", None)     # private, so not in typeshed's copyreg
    unpickler = _PyPlainUnpickler if extensions else _PlainUnpickler
    try:
        return unpickler(io.BytesIO(data)).load()
    except UnsafeSnapshotError:
        raise
    except RecursionError:
        raise SnapshotFormatError("not a memory snapshot: the pickle nests too deeply") from None
    except MemoryError:
        raise SnapshotFormatError("not a memory snapshot: the pickle declares an object larger than memory") from None
    except EOFError:
        raise SnapshotFormatError("truncated: the pickle ends before its STOP opcode") from None
    except Exception as e:  # UnpicklingError, ValueError, KeyError, TypeError, IndexError … from bad opcodes
        detail = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        if "truncated" in detail.lower():
            raise SnapshotFormatError("truncated: the pickle data ends early") from None
        raise SnapshotFormatError(f"not a readable pickle ({detail})") from None


def load_snapshot(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Read a ``_dump_snapshot`` file: size-capped, globals refused, shape checked."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError(f"file: '{path}' is a folder; give the pickle that _dump_snapshot wrote")
    if not os.path.isfile(path):
        raise InputError(f"file: no such file '{path}'")
    size = os.path.getsize(path)
    if size > max_bytes:
        raise InputError(f"file: '{path}' is {format_bytes(size)}, above the {format_bytes(max_bytes)} cap "
                         f"(pass --max-size to raise it)")
    if size == 0:
        raise SnapshotFormatError(f"'{path}' is empty")
    if _is_zip(path):
        raise SnapshotFormatError(
            f"'{path}' is a zip archive, the format torch.save writes (a model or state dict), not a memory "
            "snapshot: record one with torch.cuda.memory._record_memory_history() and write it with "
            "torch.cuda.memory._dump_snapshot('snapshot.pickle')")
    try:
        with open(path, "rb") as f:
            data = f.read(min(size, max_bytes) + 1)     # read(n) allocates n bytes up front
    except OSError as e:
        raise InputError(f"file: cannot read '{path}': {e.strerror or e}") from None
    if len(data) > max_bytes:  # grew while we looked
        raise InputError(f"file: '{path}' is above the {format_bytes(max_bytes)} cap (pass --max-size to raise it)")
    return normalize(loads(data))


def _is_zip(path: str) -> bool:
    """torch.save has written zip archives (a 'data.pkl' inside) since torch 1.6."""
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


def _distinct(items: list, where: str, seen: set[int]) -> None:
    """Every event, segment and block torch writes is its own dict. A pickle can instead repeat one object
    by reference millions of times in a few bytes each (memo gets); refusing repeats keeps the work of
    reading a snapshot proportional to its size in bytes."""
    for i, item in enumerate(items):
        if id(item) in seen:
            raise SnapshotFormatError(f"not a memory snapshot: {where}[{i}] repeats an object already read "
                                      "(a pickle of shared references; torch writes each entry once)")
        seen.add(id(item))


def normalize(obj: object) -> dict:
    """Check the top-level shape; accept the old bare-list-of-segments form."""
    if isinstance(obj, list):  # very old snapshots: segments only
        obj = {"segments": obj, "device_traces": []}
    if not isinstance(obj, dict) or "segments" not in obj:
        raise SnapshotFormatError("not a memory snapshot: expected a dict with 'segments' "
                                  "(written by torch.cuda.memory._dump_snapshot)")
    if not isinstance(obj["segments"], list):
        raise SnapshotFormatError("not a memory snapshot: 'segments' is not a list")
    traces = obj.get("device_traces") or []
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise SnapshotFormatError("not a memory snapshot: 'device_traces' is not a list of lists")
    if len(traces) > MAX_DEVICES:
        raise SnapshotFormatError(f"not a memory snapshot: {len(traces)} device traces (torch has at most "
                                  f"{MAX_DEVICES} devices)")
    seen: set[int] = set()
    _distinct(obj["segments"], "segments", seen)
    for i, seg in enumerate(obj["segments"]):
        if not isinstance(seg, dict) or not isinstance(seg.get("blocks", []), list):
            raise SnapshotFormatError(f"not a memory snapshot: segments[{i}] is not a segment dict with 'blocks'")
        dev = seg.get("device", 0)
        if isinstance(dev, bool) or not isinstance(dev, int) or not 0 <= dev < MAX_DEVICES:
            raise SnapshotFormatError(f"not a memory snapshot: segments[{i}].device is not a device index "
                                      f"(expected 0 … {MAX_DEVICES - 1})")
        _distinct(seg.get("blocks", []), f"segments[{i}].blocks", seen)
    for d, trace in enumerate(traces):
        _distinct(trace, f"device_traces[{d}]", seen)
    return {**obj, "device_traces": traces}


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------


def _int(v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SnapshotFormatError(f"not a memory snapshot: {where} is not an integer ({type(v).__name__})")
    if not -MAX_INT < v < MAX_INT:
        raise SnapshotFormatError(f"not a memory snapshot: {where} is an integer of {v.bit_length()} bits "
                                  "(expected 64 at most)")
    return v


def _int_or_none(v):
    return v if isinstance(v, int) and not isinstance(v, bool) and -MAX_INT < v < MAX_INT else None


def _block_frames(b: dict):
    if "frames" in b:
        return b["frames"]
    hist = b.get("history")
    if isinstance(hist, list) and hist and isinstance(hist[0], dict):
        return hist[0].get("frames", [])
    return []


def _block_size(b: dict, where: str) -> int:
    if "requested_size" in b:
        return _int(b["requested_size"], f"{where}.requested_size")
    hist = b.get("history")
    if isinstance(hist, list) and hist and isinstance(hist[0], dict) and "real_size" in hist[0]:
        return _int(hist[0]["real_size"], f"{where}.history[0].real_size")
    return _int(b.get("size"), f"{where}.size")


def _live_blocks(snapshot: dict, device: int) -> dict[int, tuple[int, object]]:
    """addr -> (bytes, frames) for blocks still held (allocated or awaiting free) at snapshot time."""
    out: dict[int, tuple[int, object]] = {}
    for i, seg in enumerate(snapshot["segments"]):
        if seg.get("device", 0) != device:
            continue
        addr = seg.get("address", 0)
        for j, b in enumerate(seg.get("blocks", [])):
            where = f"segments[{i}].blocks[{j}]"
            if not isinstance(b, dict):
                raise SnapshotFormatError(f"not a memory snapshot: {where} is not a dict")
            baddr = b.get("address", addr)
            size = _int(b.get("size", 0), f"{where}.size")
            if b.get("state") in ("active_allocated", "active_pending_free", "active_awaiting_free"):
                out[_int(baddr, f"{where}.address")] = (_block_size(b, where), _block_frames(b))
            addr = (baddr if isinstance(baddr, int) else 0) + size
    return out


def _devices(snapshot: dict) -> list[int]:
    devs = {i for i, t in enumerate(snapshot["device_traces"]) if t}
    devs |= {s.get("device", 0) for s in snapshot["segments"] if isinstance(s.get("device", 0), int)}
    return sorted(devs) or [0]


class _Classifier:
    """classify_frames cached by the identity of the frames list: torch shares one list per unique stack."""

    def __init__(self):
        self._cache: dict[int, tuple[str, str, object]] = {}

    def __call__(self, frames) -> tuple[str, str]:
        hit = self._cache.get(id(frames))
        if hit is not None and hit[2] is frames:
            return hit[0], hit[1]
        cat, origin = classify_frames(frames)
        self._cache[id(frames)] = (cat, origin, frames)
        return cat, origin


def summarize(snapshot: dict, *, device: int | None = None, points: int = DEFAULT_POINTS) -> dict:
    """Bytes held per category at the peak of total allocated memory, at the end, and over time."""
    if points < 2:
        raise InputError("points: need at least 2 points for a timeline")
    snapshot = normalize(snapshot)
    devices = _devices(snapshot)
    if device is None:
        per_dev = {d: _summarize_device(snapshot, d, points) for d in devices}
        device = max(devices, key=lambda d: (per_dev[d]["peak"]["allocated"], -d))
        doc = per_dev[device]
        doc["devices"] = [{"device": d, "peak_allocated": per_dev[d]["peak"]["allocated"],
                           "events": per_dev[d]["events"]} for d in devices]
    else:
        if device not in devices:
            raise InputError(f"device: no device {device} in this snapshot (it has: "
                             f"{', '.join(map(str, devices))})")
        doc = _summarize_device(snapshot, device, points)
        doc["devices"] = [{"device": device, "peak_allocated": doc["peak"]["allocated"], "events": doc["events"]}]
    settings = snapshot.get("allocator_settings")
    if isinstance(settings, dict) and "expandable_segments" in settings:
        doc["expandable_segments"] = bool(settings["expandable_segments"])
    return doc


def _trace_events(trace: list, device: int) -> tuple[list[tuple], list[dict]]:
    """(events, ooms): events (kind, addr, size, frames, time_us) with kind +1 alloc, -1 free; a block counts
    as freed at free_completed, or at free_requested when the trace has no free_completed at all."""
    events = []
    has_completed = any(isinstance(e, dict) and e.get("action") == "free_completed" for e in trace)
    free_action = "free_completed" if has_completed else "free_requested"
    ooms = []
    for i, e in enumerate(trace):
        if not isinstance(e, dict):
            raise SnapshotFormatError(f"not a memory snapshot: device_traces[{device}][{i}] is not a dict")
        action = e.get("action")
        if action == "alloc" or action == free_action:
            where = f"device_traces[{device}][{i}]"
            events.append((1 if action == "alloc" else -1, _int(e.get("addr"), f"{where}.addr"),
                           _int(e.get("size"), f"{where}.size"), e.get("frames", []), _int_or_none(e.get("time_us"))))
        elif action == "oom":
            ooms.append({"event": len(events), "size": _int_or_none(e.get("size")),
                         "device_free": _int_or_none(e.get("device_free")), "time_us": _int_or_none(e.get("time_us"))})
    return events, ooms


def _held_before(events: list[tuple], final: dict) -> dict[int, tuple[int, object]]:
    """What was already held when the (ring-buffered) trace begins: frees of addresses the trace never
    allocated, and blocks still held at the end that the trace never allocated."""
    initial: dict[int, tuple[int, object]] = {}
    live: set[int] = set()
    for kind, addr, size, frames, _t in events:
        if kind > 0:
            live.add(addr)
        elif addr in live:
            live.discard(addr)
        else:
            initial.setdefault(addr, (size, frames))
    for addr, (size, frames) in final.items():
        if addr not in live and addr not in initial:
            initial[addr] = (size, frames)
    return initial


def _summarize_device(snapshot: dict, device: int, points: int) -> dict:
    classify = _Classifier()
    traces = snapshot["device_traces"]
    trace = traces[device] if device < len(traces) else []
    final = _live_blocks(snapshot, device)
    reserved = sum(_int_or_none(s.get("total_size", 0)) or 0 for s in snapshot["segments"] if s.get("device", 0) == device)

    events, ooms = _trace_events(trace, device)
    initial = _held_before(events, final)

    held: dict[int, tuple[int, str, str]] = {}  # addr -> (bytes, category, origin)
    totals = dict.fromkeys(CATEGORIES, 0)
    for addr, (size, frames) in initial.items():
        cat, origin = classify(frames)
        held[addr] = (size, cat, origin)
        totals[cat] += size
    pre_existing = sum(totals.values())

    n = len(events)
    t0 = events[0][4] if events else None
    # bucket b holds the state after events [lo, hi); keep each bucket's highest point, and the start
    nb = min(points - 1, n)
    timeline = [_point(0, None, totals)]
    peak_total, peak_event, peak_cats, peak_time = pre_existing, 0, dict(totals), t0
    best_b = None
    bucket = 0
    bucket_end = (n + nb - 1) // nb if nb else 0
    for k, (kind, addr, size, frames, time_us) in enumerate(events, start=1):
        if kind > 0:
            if addr in held:  # a free the trace did not record
                osize, ocat, _ = held.pop(addr)
                totals[ocat] -= osize
            cat, origin = classify(frames)
            held[addr] = (size, cat, origin)
            totals[cat] += size
        else:
            old = held.pop(addr, None)
            if old is not None:
                totals[old[1]] -= old[0]
        total = totals["weights"] + totals["kv_cache"] + totals["activations"] + totals["other"]
        if total > peak_total:
            peak_total, peak_event, peak_cats, peak_time = total, k, dict(totals), time_us
        if best_b is None or total > best_b[0]:
            best_b = (total, k, time_us, dict(totals))
        if k >= bucket_end:
            timeline.append(_point(best_b[1], best_b[2], best_b[3]))
            best_b = None
            bucket += 1
            bucket_end = (n * (bucket + 1) + nb - 1) // nb
    end_cats = dict(totals)

    # Second pass to the peak, for which stacks held it.
    top = _origins_at(initial, events, peak_event, classify)

    return {
        "device": device,
        "source": "trace" if events else "segments",
        "events": n,
        "pre_existing": pre_existing,
        "categories": list(CATEGORIES),
        "peak": {"event": peak_event, "time_us": peak_time, "allocated": peak_total,
                 "by_category": peak_cats, "top_origins": top},
        "end": {"allocated": sum(end_cats.values()), "by_category": end_cats, "reserved": reserved},
        "timeline": timeline,
        "oom": ooms,
    }


def _point(event: int, time_us, cats: dict) -> dict:
    return {"event": event, "time_us": time_us, "allocated": sum(cats[c] for c in CATEGORIES),
            **{c: cats[c] for c in CATEGORIES}}


def _origins_at(initial, events, upto: int, classify, limit: int = 12) -> list[dict]:
    held = dict(initial)
    for kind, addr, size, frames, _t in events[:upto]:
        if kind > 0:
            held[addr] = (size, frames)
        else:
            held.pop(addr, None)
    agg: dict[tuple[str, str], list[int]] = {}
    for size, frames in held.values():
        cat, origin = classify(frames)
        a = agg.setdefault((cat, origin), [0, 0])
        a[0] += size
        a[1] += 1
    rows = sorted(agg.items(), key=lambda kv: (-kv[1][0], kv[0]))[:limit]
    return [{"category": c, "origin": o, "bytes": b, "allocations": k} for (c, o), (b, k) in rows]


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

COLORS = {"weights": "#4e79a7", "kv_cache": "#f28e2b", "activations": "#59a14f", "other": "#bab0ac"}
LABELS = {"weights": "weights", "kv_cache": "KV cache", "activations": "activations", "other": "other"}


def render_svg(doc: dict, *, title: str = "GPU memory by origin", width: int = 860, height: int = 400) -> str:
    """A self-contained stacked-area SVG of the timeline (no scripts, no external references)."""
    left, right, top, bottom = 78, 150, 36, 44
    pw, ph = width - left - right, height - top - bottom
    pts = doc["timeline"]
    xmax = max(pts[-1]["event"], 1)
    ymax = max(max(p["allocated"] for p in pts), 1)
    ymax = _nice_ceiling(ymax)

    def x(ev):
        return left + pw * ev / xmax

    def y(v):
        return top + ph - ph * v / ymax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<title>{escape(title)}</title>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>']
    for i in range(5):  # y grid
        v = ymax * i / 4
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{escape(format_bytes(v))}</text>')
    lower = [0] * len(pts)
    for cat in CATEGORIES:
        upper = [lo + p[cat] for lo, p in zip(lower, pts)]
        if any(p[cat] for p in pts):
            fwd = " ".join(f"{x(p['event']):.1f},{y(u):.1f}" for p, u in zip(pts, upper))
            back = " ".join(f"{x(p['event']):.1f},{y(lo):.1f}" for p, lo in zip(reversed(pts), reversed(lower)))
            out.append(f'<polygon class="{cat}" points="{fwd} {back}" fill="{COLORS[cat]}" fill-opacity="0.85" '
                       f'stroke="{COLORS[cat]}" stroke-width="0.5"><title>{LABELS[cat]}</title></polygon>')
        lower = upper
    peak = doc["peak"]
    px = x(peak["event"])
    out.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" stroke="#c00" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{px + 4:.1f}" y="{top + 12}" fill="#c00">peak {escape(format_bytes(peak["allocated"]))}</text>')
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>')
    for i in range(5):  # x ticks
        ev = round(xmax * i / 4)
        out.append(f'<text x="{x(ev):.1f}" y="{top + ph + 16}" text-anchor="middle">{ev}</text>')
    xlabel = "allocator events" if doc["source"] == "trace" else "snapshot (no trace recorded)"
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">{escape(xlabel)}</text>')
    for i, cat in enumerate(reversed(CATEGORIES)):
        ly = top + 10 + i * 20
        out.append(f'<rect x="{left + pw + 16}" y="{ly}" width="12" height="12" fill="{COLORS[cat]}"/>')
        out.append(f'<text x="{left + pw + 34}" y="{ly + 10}">{escape(LABELS[cat])} '
                   f'{escape(format_bytes(peak["by_category"][cat]))}</text>')
    out.append(f'<text x="{left + pw + 16}" y="{top + 100}" fill="#555">at the peak</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nice_ceiling(v: float) -> float:
    """Round up to a step (×1024^k) that divides into four grid lines with readable labels."""
    import math

    exp = 1024 ** max(0, int(math.log(max(v, 1), 1024)))
    m = v / exp
    for step in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 160, 200, 256, 320, 400, 500, 512,
                 640, 800, 1000, 1024):
        if m <= step:
            return step * exp
    return v


def render_text(doc: dict, console, *, path: str | None = None) -> None:
    """A terminal summary with rich: bytes per category at the peak and at the end, and the top stacks."""
    from rich.table import Table

    peak, end = doc["peak"], doc["end"]
    head = f"{path}: " if path else ""
    src = (f"{doc['events']} allocator events" if doc["source"] == "trace"
           else "no trace recorded; the segments' state at snapshot time")
    console.print(f"{head}device {doc['device']}, {src}", markup=False)
    if doc["source"] == "trace":
        console.print(f"peak {format_bytes(peak['allocated'])} held after event {peak['event']}; "
                      f"{format_bytes(end['allocated'])} held and {format_bytes(end['reserved'])} reserved at the end",
                      markup=False)
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("held by")
    t.add_column("at peak", justify="right")
    t.add_column("share", justify="right")
    t.add_column("at end", justify="right")
    for cat in CATEGORIES:
        v = peak["by_category"][cat]
        share = f"{100 * v / peak['allocated']:.0f}%" if peak["allocated"] else "—"
        t.add_row(LABELS[cat], format_bytes(v), share, format_bytes(end["by_category"][cat]))
    t.add_row("total", format_bytes(peak["allocated"]), "", format_bytes(end["allocated"]))
    console.print(t)
    if peak["top_origins"]:
        console.print("\nlargest holders at the peak, by stack origin:")
        for row in peak["top_origins"][:8]:
            console.print(f"  {format_bytes(row['bytes']):>10}  {LABELS[row['category']]:<11} {row['origin']}"
                          f"  ×{row['allocations']}", markup=False, highlight=False)
    for o in doc["oom"][:3]:
        console.print(f"\nout of memory at event {o['event']}: asked for {format_bytes(o['size'])} with "
                      f"{format_bytes(o['device_free'])} free on the device", markup=False)
    if doc.get("pre_existing"):
        console.print(f"\n{format_bytes(doc['pre_existing'])} was already allocated before the trace began "
                      "(classified from the blocks' own stacks).", markup=False)
