"""`runlocal snapshot`: reading torch.cuda.memory._dump_snapshot pickles safely, and what held memory.

CPU-only torch cannot record CUDA snapshots, so the snapshot here is built by hand in the exact
shape torch writes (torch/csrc/cuda/memory_snapshot.cpp; the TypedDicts in the docstring of
torch.cuda.memory._snapshot) and written the way _dump_snapshot writes it: pickle.dump of the dict.
Every expected number below is summed by hand from the events listed in `snapshot_dict`.
"""

import copyreg
import json
import os
import pickle
import subprocess
import sys
import xml.etree.ElementTree as ET

import asking
import pytest

from runlocal.errors import InputError, RunlocalError
from runlocal.snapshot import (
    SnapshotFormatError,
    UnsafeSnapshotError,
    classify_frames,
    load_snapshot,
    loads,
    render_svg,
    summarize,
)

MiB = 1024**2
SITE = "/opt/venv/lib/python3.11/site-packages"


def fr(path, name, line=1):
    return {"filename": path if path.startswith(("/", "?")) else f"{SITE}/{path}", "line": line, "name": name}


# Stacks, innermost frame first, as torch records them; one list object per unique stack (torch shares them).
STACK_WEIGHTS = [fr("torch/nn/modules/module.py", "convert", 1341), fr("torch/nn/modules/module.py", "_apply", 928),
                 fr("transformers/modeling_utils.py", "_load_state_dict_into_meta_model", 810),
                 fr("transformers/modeling_utils.py", "from_pretrained", 4999), fr("/home/u/bench.py", "main", 12)]
STACK_WEIGHTS_CPP = [  # stacks="all": C++ frames first; "torch::autograd::THPVariable_to" must not read as autograd
    fr("??", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)", 0),
    fr("/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp", "torch::autograd::THPVariable_to", 0),
    fr("torch/nn/modules/module.py", "to", 1355), fr("/home/u/bench.py", "main", 14)]
STACK_KV = [fr("transformers/cache_utils.py", "update", 120),
            fr("transformers/models/llama/modeling_llama.py", "forward", 260),
            fr("torch/nn/modules/module.py", "_call_impl", 1784),
            fr("transformers/generation/utils.py", "_sample", 3710), fr("transformers/generation/utils.py", "generate", 2540)]
STACK_ACT = [fr("torch/nn/modules/linear.py", "forward", 125), fr("torch/nn/modules/module.py", "_call_impl", 1784),
             fr("transformers/models/llama/modeling_llama.py", "forward", 160),
             fr("transformers/generation/utils.py", "generate", 2540)]
STACK_OTHER = [fr("??", "at::cuda::getCurrentCUDABlasHandle()", 0)]  # cuBLAS workspace: C++ only
STACK_USER = [fr("/home/u/bench.py", "warmup", 30)]


def snapshot_dict():
    """Device 0 trace (sizes in MiB), with the running total of allocated memory after each counted event:
      before the trace: X = 8 other (still held at the end, never in the trace), P = 4 other (freed in it)  → 12
      alloc W1 100 weights → 112 | alloc W2 50 weights (C++ stack) → 162 | alloc K1 16 kv → 178
      alloc A1 30 act → 208 | alloc A2 20 act → 228 | free A1 → 198 | free P → 194 | alloc K2 32 kv → 226
      alloc A3 10 act → 236 (PEAK: weights 150, kv 48, act 30, other 8) | free A2 → 216 | free A3 → 206
      oom (1 GiB asked, 10 MiB free) | alloc A4 5 act → 211 | free_requested A4 only (awaiting another stream)
      end: weights 150, kv 48, act 5, other 8 = 211
    """
    S = 0x7F0000000000
    X, W1, W2, K1, A1, A2, P, K2, A3, A4 = (S + i * 256 * MiB for i in range(10))
    t = iter(range(1_700_000_000_000_000, 1_700_000_000_000_000 + 10_000_000, 1000))

    def ev(action, addr, size, frames):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": next(t), "frames": frames}

    def alloc(addr, mib, frames):
        return [ev("alloc", addr, mib * MiB, frames)]

    def free(addr, mib, frames):
        return [ev("free_requested", addr, mib * MiB, frames), ev("free_completed", addr, mib * MiB, frames)]

    trace = [ev("segment_alloc", S, 2048 * MiB, STACK_WEIGHTS)]
    trace += alloc(W1, 100, STACK_WEIGHTS) + alloc(W2, 50, STACK_WEIGHTS_CPP) + alloc(K1, 16, STACK_KV)
    trace += alloc(A1, 30, STACK_ACT) + alloc(A2, 20, STACK_ACT) + free(A1, 30, STACK_ACT)
    trace += free(P, 4, STACK_USER) + alloc(K2, 32, STACK_KV) + alloc(A3, 10, STACK_ACT)
    trace += free(A2, 20, STACK_ACT) + free(A3, 10, STACK_ACT)
    trace += [{"action": "oom", "device_free": 10 * MiB, "size": 1024 * MiB, "stream": 0, "time_us": next(t),
               "frames": STACK_ACT}]
    trace += alloc(A4, 5, STACK_ACT) + [ev("free_requested", A4, 5 * MiB, STACK_ACT)]
    trace += [{"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": next(t), "frames": []}]

    def block(addr, mib, state, frames, rounding=0):
        return {"address": addr, "size": mib * MiB + rounding, "requested_size": mib * MiB, "state": state,
                "frames": frames}

    # Segment state at snapshot time: what is held, plus cached-but-free space (not counted).
    blocks = [block(X, 8, "active_allocated", STACK_OTHER), block(W1, 100, "active_allocated", STACK_WEIGHTS, 512),
              block(W2, 50, "active_allocated", STACK_WEIGHTS_CPP), block(K1, 16, "active_allocated", STACK_KV),
              block(K2, 32, "active_allocated", STACK_KV), block(A4, 5, "active_pending_free", STACK_ACT),
              {"address": A4 + 5 * MiB, "size": 300 * MiB, "requested_size": 0, "state": "inactive", "frames": []}]
    seg0 = {"device": 0, "address": S, "total_size": 2048 * MiB, "allocated_size": 206 * MiB + 512,
            "active_size": 211 * MiB + 512, "requested_size": 211 * MiB, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": STACK_WEIGHTS, "blocks": blocks}
    D1 = 0x7E0000000000
    seg1 = {"device": 1, "address": D1, "total_size": 2 * MiB, "allocated_size": MiB, "active_size": MiB,
            "requested_size": MiB, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": [],
            "blocks": [{"address": D1, "size": MiB, "requested_size": MiB, "state": "active_allocated",
                        "frames": STACK_USER}]}
    trace1 = [{"action": "alloc", "addr": D1, "size": MiB, "stream": 0, "time_us": 5, "frames": STACK_USER}]
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False, "roundup_power2_divisions": {"1": 0, "2": 0}}
    return {"segments": [seg0, seg1], "device_traces": [trace, trace1], "allocator_settings": settings}


@pytest.fixture()
def snap_path(tmp_path):
    p = tmp_path / "snapshot.pickle"
    with open(p, "wb") as f:
        pickle.dump(snapshot_dict(), f)  # exactly what torch.cuda.memory._dump_snapshot does
    return p


def mib(d):
    return {k: v / MiB for k, v in d.items()}


# --- summary numbers ----------------------------------------------------------------------------


def test_peak_and_end_by_category(snap_path):
    doc = summarize(load_snapshot(snap_path))
    assert doc["device"] == 0 and doc["source"] == "trace"
    assert doc["events"] == 12  # allocs and free_completed; free_requested/segment/oom/snapshot are not counted
    assert doc["pre_existing"] == 12 * MiB
    assert doc["peak"]["allocated"] == 236 * MiB
    assert doc["peak"]["event"] == 9
    assert mib(doc["peak"]["by_category"]) == {"weights": 150, "kv_cache": 48, "activations": 30, "other": 8}
    assert mib(doc["end"]["by_category"]) == {"weights": 150, "kv_cache": 48, "activations": 5, "other": 8}
    assert doc["end"]["allocated"] == 211 * MiB
    assert doc["end"]["reserved"] == 2048 * MiB
    assert doc["oom"] == [{"event": 11, "size": 1024 * MiB, "device_free": 10 * MiB,
                           "time_us": doc["oom"][0]["time_us"]}]
    assert doc["expandable_segments"] is False
    top = {(r["category"], r["origin"].split(" ")[0]): r["bytes"] / MiB for r in doc["peak"]["top_origins"]}
    # the origin shown is the deciding frame, or the first frame outside torch above it
    assert top == {("weights", "_load_state_dict_into_meta_model"): 100, ("weights", "main"): 50,
                   ("kv_cache", "update"): 48, ("activations", "forward"): 30,
                   ("other", "at::cuda::getCurrentCUDABlasHandle()"): 8}
    origins = {r["origin"] for r in doc["peak"]["top_origins"]}
    assert {"update (transformers/cache_utils.py:120)", "main (u/bench.py:14)",
            "forward (transformers/models/llama/modeling_llama.py:160)"} <= origins
    assert sum(r["bytes"] for r in doc["peak"]["top_origins"]) == doc["peak"]["allocated"]


def test_timeline_full_and_downsampled(snap_path):
    snap = load_snapshot(snap_path)
    doc = summarize(snap)
    totals = [p["allocated"] / MiB for p in doc["timeline"]]
    assert totals == [12, 112, 162, 178, 208, 228, 198, 194, 226, 236, 216, 206, 211]
    for p in doc["timeline"]:
        assert p["allocated"] == sum(p[c] for c in ("weights", "kv_cache", "activations", "other"))
    small = summarize(snap, points=4)
    assert len(small["timeline"]) == 4
    # buckets of 4 events keep each bucket's highest point: max(112,162,178,208), max(228,...,226), max(236,...)
    assert [p["allocated"] / MiB for p in small["timeline"]] == [12, 208, 228, 236]
    assert max(p["allocated"] for p in small["timeline"]) == doc["peak"]["allocated"]


def test_device_selection(snap_path):
    snap = load_snapshot(snap_path)
    assert [d["device"] for d in summarize(snap)["devices"]] == [0, 1]
    d1 = summarize(snap, device=1)
    assert d1["device"] == 1 and d1["peak"]["allocated"] == MiB and d1["pre_existing"] == 0
    assert d1["peak"]["by_category"]["other"] == MiB
    with pytest.raises(InputError, match="no device 3"):
        summarize(snap, device=3)


def test_segments_only_fallback(tmp_path):
    snap = snapshot_dict()
    snap["device_traces"] = [[], []]
    doc = summarize(loads(pickle.dumps(snap)) | {})
    assert doc["source"] == "segments" and doc["events"] == 0
    # live blocks at snapshot time: X 8 other, W1+W2 150 weights, K1+K2 48 kv, A4 5 act (pending free)
    assert mib(doc["peak"]["by_category"]) == {"weights": 150, "kv_cache": 48, "activations": 5, "other": 8}
    assert doc["peak"] == {**doc["peak"], "allocated": 211 * MiB, "event": 0}
    # the bare list of segments that old torch wrote
    p = tmp_path / "old.pickle"
    p.write_bytes(pickle.dumps(snap["segments"]))
    assert summarize(load_snapshot(p))["peak"]["allocated"] == 211 * MiB


def test_legacy_history_blocks():
    seg = {"address": 0, "total_size": 4 * MiB, "stream": 0,
           "blocks": [{"size": 2 * MiB, "state": "active_allocated",
                       "history": [{"addr": 0, "real_size": 3 * 2**19, "frames": STACK_KV}]},
                      {"size": 2 * MiB, "state": "inactive", "history": []}]}
    doc = summarize(loads(pickle.dumps([seg])))
    assert doc["peak"]["by_category"]["kv_cache"] == 3 * 2**19 and doc["peak"]["allocated"] == 3 * 2**19


@pytest.mark.parametrize("frames, category", [
    (STACK_WEIGHTS, "weights"), (STACK_WEIGHTS_CPP, "weights"), (STACK_KV, "kv_cache"), (STACK_ACT, "activations"),
    (STACK_OTHER, "other"), (STACK_USER, "other"), ([], "other"),
    # vLLM v1: KV tensors, the profiling dummy run, weight loading
    ([fr("vllm/v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors"),
      fr("vllm/v1/worker/gpu_model_runner.py", "initialize_kv_cache"), fr("vllm/v1/engine/core.py", "__init__")],
     "kv_cache"),
    ([fr("torch/nn/functional.py", "silu"), fr("vllm/model_executor/layers/activation.py", "forward_native"),
      fr("vllm/v1/worker/gpu_model_runner.py", "_dummy_run")], "activations"),
    ([fr("vllm/model_executor/layers/linear.py", "create_weights"),
      fr("vllm/model_executor/models/llama.py", "__init__")], "weights"),
    ([fr("safetensors/torch.py", "load_file"), fr("/home/u/x.py", "main")], "weights"),
    ([fr("sglang/srt/mem_cache/memory_pool.py", "_create_buffers")], "kv_cache"),
    # an attention mask built in modeling_utils during forward is an activation, not a weight
    ([fr("transformers/modeling_utils.py", "get_extended_attention_mask"),
      fr("transformers/models/bert/modeling_bert.py", "forward")], "activations"),
    # accelerate's offload hook brings weights in during forward: weights (innermost rule wins)
    ([fr("accelerate/utils/modeling.py", "set_module_tensor_to_device"), fr("accelerate/hooks.py", "pre_forward"),
      fr("torch/nn/modules/module.py", "_call_impl")], "weights"),
    ([fr("torch/autograd/graph.py", "_engine_run_backward"), fr("torch/_tensor.py", "backward")], "activations"),
])
def test_classification(frames, category):
    assert classify_frames(frames)[0] == category


# --- safety: the restricted unpickler ----------------------------------------------------------


class _SystemPayload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


def _payloads(tmp_path):
    """name -> (pickle bytes, marker file it would create, extra env for the control run)."""
    out = {}
    m1 = tmp_path / "pwned_system"
    out["reduce_os_system"] = (pickle.dumps({"segments": [], "device_traces": [[_SystemPayload(m1)]]}), m1, None)
    m2 = tmp_path / "pwned_eval"
    code = f"open({str(m2)!r}, 'w').close()"
    out["global_builtins_eval"] = (b"cbuiltins\neval\n(" + pickle.dumps(code, protocol=0)[:-1] + b"tR.", m2, None)
    m3 = tmp_path / "pwned_inst"
    out["inst_opcode"] = (b"(" + pickle.dumps(f"touch '{m3}'", protocol=0)[:-1] + b"ios\nsystem\n.", m3, None)
    m4 = tmp_path / "pwned_import"
    moddir = tmp_path / "mods"
    moddir.mkdir()
    (moddir / "evil_snapshot_mod.py").write_text(f"open({str(m4)!r}, 'w').close()\nthing = 1\n")
    out["imports_a_module"] = (b"\x80\x02cevil_snapshot_mod\nthing\n.", m4, str(moddir))
    return out


def _control_creates(data, marker, pythonpath):
    """Plain pickle.loads of the same bytes, in a fresh process: the payload really does create the file."""
    env = {**os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.loads(sys.stdin.buffer.read())"], input=data,
                   env=env, capture_output=True, timeout=60)
    created = marker.exists()
    if created:
        marker.unlink()
    return created


@pytest.mark.parametrize("name", ["reduce_os_system", "global_builtins_eval", "inst_opcode", "imports_a_module"])
def test_malicious_pickles_refused_without_running(tmp_path, name):
    data, marker, pythonpath = _payloads(tmp_path)[name]
    assert _control_creates(data, marker, pythonpath), "the payload must be live for this test to mean anything"
    p = tmp_path / "evil.pickle"
    p.write_bytes(data)
    if pythonpath:
        sys.path.insert(0, pythonpath)
    try:
        with pytest.raises(UnsafeSnapshotError, match="refusing to load"):
            load_snapshot(p)
    finally:
        if pythonpath:
            sys.path.remove(pythonpath)
    assert not marker.exists()
    assert "evil_snapshot_mod" not in sys.modules
    # and through the CLI: one line, exit 2, no traceback, nothing run
    r = run_cli_in_a_process("snapshot", str(p), pythonpath=pythonpath)
    assert r.returncode == 2
    assert r.stderr.startswith("error: refusing to load") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr + r.stdout
    assert not marker.exists()


def test_copyreg_extension_refused(tmp_path):
    marker = tmp_path / "pwned_ext"
    copyreg.add_extension("os", "system", 0x7ABC)
    try:
        data = b"\x80\x02\x83\xbc\x7a\x00\x00" + pickle.dumps(f"touch '{marker}'", protocol=2)[2:-1] + b"\x85R."
        with pytest.raises(UnsafeSnapshotError):
            loads(data)
    finally:
        copyreg.remove_extension("os", "system", 0x7ABC)
    assert not marker.exists()


def test_plain_snapshot_has_no_globals(snap_path):
    import pickletools

    ops = {op.name for op, _arg, _pos in pickletools.genops(snap_path.read_bytes())}
    assert not ops & {"GLOBAL", "STACK_GLOBAL", "REDUCE", "INST", "OBJ", "NEWOBJ", "BUILD"}


# --- bounded and clear on bad input -----------------------------------------------------------


def test_size_cap(snap_path):
    n = snap_path.stat().st_size
    with pytest.raises(InputError, match="above the .* cap"):
        load_snapshot(snap_path, max_bytes=n - 1)
    assert load_snapshot(snap_path, max_bytes=n)["segments"]
    r = run_cli("snapshot", str(snap_path), "--max-size", "1K")
    assert r.returncode == 2 and "cap" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("kind", ["truncated", "garbage", "empty", "not_a_snapshot", "wrong_shape", "huge_length"])
def test_bad_files_one_clear_line(tmp_path, snap_path, kind):
    good = snap_path.read_bytes()
    data = {
        "truncated": good[: len(good) // 2],
        "garbage": bytes(range(256)) * 40,
        "empty": b"",
        "not_a_snapshot": pickle.dumps({"hello": 1}),
        "wrong_shape": pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "addr": "x"}]]}),
        "huge_length": b"\x80\x04\x8e" + (2**40).to_bytes(8, "little") + b"abc",  # BINBYTES8 claiming 1 TiB
    }[kind]
    p = tmp_path / f"{kind}.pickle"
    p.write_bytes(data)
    with pytest.raises(RunlocalError):
        summarize(load_snapshot(p))
    r = run_cli("snapshot", str(p))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    r = run_cli("snapshot", str(p), "--json")
    assert r.returncode == 2 and r.stdout == ""


def test_truncated_message(tmp_path, snap_path):
    p = tmp_path / "cut.pickle"
    p.write_bytes(snap_path.read_bytes()[:-1])  # lose only the STOP opcode
    with pytest.raises(SnapshotFormatError, match="truncated"):
        load_snapshot(p)


# --- CLI and plot -------------------------------------------------------------------------------


def run_cli(*args):
    return asking.run_cli(*args)


def run_cli_in_a_process(*args, pythonpath=""):
    """`runlocal ARGS` in a fresh process with ``pythonpath`` (a malicious pickle's module) importable: a payload
    the reader wrongly ran could not touch the tests' process."""
    env = {**os.environ, "COLUMNS": "120",
           "PYTHONPATH": os.pathsep.join(filter(None, [pythonpath, os.environ.get("PYTHONPATH")]))}
    env.pop("RUNLOCAL_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "runlocal.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_json_shape(snap_path):
    r = run_cli("snapshot", str(snap_path), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"file", "device", "devices", "source", "events", "categories", "peak", "end", "timeline", "oom"} <= doc.keys()
    assert doc["categories"] == ["weights", "kv_cache", "activations", "other"]
    assert {"event", "time_us", "allocated", "by_category", "top_origins"} <= doc["peak"].keys()
    assert doc["peak"]["allocated"] == 236 * MiB
    assert mib(doc["peak"]["by_category"]) == {"weights": 150, "kv_cache": 48, "activations": 30, "other": 8}
    assert {"allocated", "by_category", "reserved"} <= doc["end"].keys()
    assert all({"event", "allocated", *doc["categories"]} <= p.keys() for p in doc["timeline"])
    r1 = run_cli("snapshot", str(snap_path), "--json", "--device", "1")
    assert json.loads(r1.stdout)["peak"]["allocated"] == MiB
    r2 = run_cli("snapshot", str(snap_path), "--device", "7")
    assert r2.returncode == 2 and "no device 7" in r2.stderr


def test_cli_text_and_svg(tmp_path, snap_path):
    out = tmp_path / "mem.svg"
    r = run_cli("snapshot", str(snap_path), "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert "236 MiB" in r.stdout and "KV cache" in r.stdout and "48 MiB" in r.stdout
    assert "out of memory" in r.stdout and "plot written" in r.stdout
    root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    polys = {p.get("class"): p for p in root.iter(f"{ns}polygon")}
    assert set(polys) == {"weights", "kv_cache", "activations", "other"}
    for p in polys.values():
        coords = [tuple(map(float, xy.split(","))) for xy in p.get("points").split()]
        assert len(coords) == 2 * 13  # 13 timeline points, up then back down
    assert not list(root.iter(f"{ns}script")) and "href" not in out.read_text()


def test_svg_escapes_title(snap_path):
    svg = render_svg(summarize(load_snapshot(snap_path)), title='<x> & "y"')
    assert ET.fromstring(svg).find("{http://www.w3.org/2000/svg}title").text == '<x> & "y"'


# --- a snapshot written by torch's own code ------------------------------------------------------


def from_pretrained(torch):
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))


def update_kv_cache(cache, x):
    cache.append(x.clone())


def generate(model, steps, torch):
    cache, x = [], torch.randn(8, 256)
    for _ in range(steps):
        x = model(x)
        update_kv_cache(cache, x)
    return cache


def test_snapshot_built_by_torch(tmp_path):
    """CPU torch cannot record a CUDA allocator trace, but torch.cuda._memory_viz._profile_to_snapshot turns a
    CPU profiler memory trace into the same snapshot format (what `python -m torch.cuda._memory_viz` and
    profile_plot use). Its frames carry "file.py(line): func" in the name; the summary must read them."""
    torch = pytest.importorskip("torch")
    from torch.cuda._memory_viz import _profile_to_snapshot
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
        model = from_pretrained(torch)
        with torch.no_grad():
            cache = generate(model, 3, torch)  # held to the end, like a live KV cache
    p = tmp_path / "torch_snapshot.pickle"
    with open(p, "wb") as f:
        pickle.dump(_profile_to_snapshot(prof), f)
    doc = summarize(load_snapshot(p))
    param_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
    assert param_bytes == (256 * 512 + 512 + 512 * 256 + 256) * 4
    assert doc["source"] == "trace" and doc["events"] > 10
    assert doc["end"]["by_category"]["weights"] == param_bytes
    assert len(cache) == 3
    assert doc["end"]["by_category"]["kv_cache"] == 3 * 8 * 256 * 4  # three clones of the 8x256 fp32 output
    assert doc["peak"]["by_category"]["weights"] == param_bytes
    assert doc["peak"]["by_category"]["activations"] > 0
    assert doc["peak"]["allocated"] == max(pt["allocated"] for pt in doc["timeline"])
    names = {r["origin"].split(" ")[0]: r["category"] for r in doc["peak"]["top_origins"]}
    assert names["from_pretrained"] == "weights" and names["update_kv_cache"] == "kv_cache"
