"""--fit on several GPUs (review17 finding 7): common/fit.cpp's per-GPU fill (llamacpp_fit_devices.fit_devices), checked
against public --fit logs (the probes they print) and against a hand walk of fit.cpp's algorithm on a memory model
written out here; then the planner on GLM-4.5-Air / gpt-oss-120b on 2× RTX 3090."""

from __future__ import annotations

import pytest

from runlocal.runtimes.llamacpp_fit_devices import ATTN, GATE, MOE, UP, fit_devices, fit_flags

MiB = 1 << 20


def _shape(layers, over=None):
    return tuple((x.n_layer, x.n_part, x.overflow) for x in layers) + ((tuple(over),) if over is not None else ())


def test_two_gpus_fill_the_last_gpu_first_as_a_real_log_shows():
    # ggml-org/llama.cpp#25487 (MiMo-V2.5, 2 × MI50, -v): the first probe has no layers anywhere (ROCm0 3128 MiB,
    # ROCm1 0 MiB); the next gives the LAST device every layer, all but one dense-only:
    #   "id=0, n_layer= 0, n_part= 0, overflow_type=4, mem=  3872 MiB"
    #   "id=1, n_layer=49, n_part=48, overflow_type=4, mem=  9925 MiB" → "set ngl_per_device[1].n_layer=49"
    # (targets: 32570 − 1024 MiB free on each). dense_fits False stops after step 3, as the log's first part.
    log = {((0, 0), (0, 0)): (3128, 0), ((0, 0), (49, 48)): (3872, 9925)}
    probes = []

    def mem_of(layers, over):
        key = tuple((x.n_layer, x.n_part) for x in layers)
        probes.append(key)
        return [m * MiB for m in log[key]]

    targets = [(32570 - 1024) * MiB] * 2
    layers, _ = fit_devices(48, 2, True, mem_of, targets, dense_fits=False)
    assert probes == [((0, 0), (0, 0)), ((0, 0), (49, 48))]
    assert (layers[1].n_layer, layers[1].n_part) == (49, 48) and layers[0].n_layer == 0


def test_part_of_one_more_layer_is_tried_with_the_same_counts_as_a_real_log_shows():
    # am17an/llama.cpp PR #6 (RTX 3060, -v): after "set ngl_per_device[0].(n_layer, n_part)=(42, 25)" and a failed
    # (42, 24), fit tries "one extra layer with overflow_type=LAYER_FRACTION_UP" as "n_layer=42, n_part=25,
    # overflow_type=2": on the last device the layer moved is its own first dense-only one (counts unchanged).
    # A memory model making (42, 25) the last full count that fits: 5000 MiB + 270 MiB per full layer, + 100 for UP.
    probes = []

    def mem_of(layers, over):
        x = layers[0]
        probes.append((x.n_layer, x.n_part, x.overflow))
        extra = {UP: 100, GATE: 200, ATTN: 0, MOE: 0}[x.overflow] if x.n_part else 0
        return [(5000 + 270 * (x.n_full - 1) + extra) * MiB]

    layers, _ = fit_devices(41, 1, True, mem_of, [9579 * MiB], dense_fits=True)
    i = probes.index((42, 24, MOE))
    assert probes[i + 1] == (42, 25, UP)            # the log's next probe
    assert probes[i + 2] == (42, 25, GATE)          # 9387-like room kept: GATE tried next
    assert _shape(layers) == ((42, 25, GATE),)


def _glm_like_mem(layers, over):
    """A model written for the hand walk: 46 blocks + the output slot; each block 100 MiB dense + 1300 MiB experts;
    the output 600 MiB on the last GPU; each GPU a 500 MiB compute buffer. A partial block keeps its dense part; the
    first partial block of a GPU keeps its fraction of the experts (UP a third, GATE two thirds, ATTN/MOE none) and
    sends the rest to its overflow GPU (or RAM). Every GPU slice: its full blocks first, then its partial ones."""
    mem = [500] * len(layers)
    il = 47 - sum(x.n_layer for x in layers)
    for d, x in enumerate(layers):
        for k in range(x.n_layer):
            block = il + k
            if block == 46:
                mem[d] += 600
                continue
            mem[d] += 100
            if k < x.n_full:
                mem[d] += 1300
            elif k == x.n_full:
                kept = {UP: 433, GATE: 867, ATTN: 0, MOE: 0}[x.overflow]
                mem[d] += kept
                if over[d] is not None:
                    mem[over[d]] += 1300 - kept
        il += x.n_layer
    return [m * MiB for m in mem]


def test_glm_like_two_gpus_against_a_hand_walk_of_fit_cpp():
    """The hand walk (MiB; target 23100 on each GPU):
    step 3, GPU 1: all 47 slots, 46 dense-only: 500 + 46×100 + 1300 (its first block stays whole) + 600 = 7000 ≤ target.
    step 4, GPU 0: high = 46 full blocks: 500 + 46×1400 = 64900; mem 500; delta 46:
      step 46×(23100−500)/(64900−500) = 16.1 → 16: 500 + 16×1400 = 22900 ≤ target, kept;
      step 30×200/42000 = 0 → 1: 17 blocks, 24300 > target. GPU 0: 16 full (blocks 0–15).
      one more (block 16 to GPU 0, overflowing to GPU 1): UP 22900 + 100 + 433 = 23433 ≥ target; ATTN 23000 < target,
      GPU 1 6600 < target: kept. GPU 0: 17 layers, 1 partial (ATTN → GPU 1).
    step 4, GPU 1 (30 slots: block 17 whole, 18–45 dense-only, output): high = all whole: 500 + 29×1400 + 600 + 1300
      (block 16's FFN) = 43000; mem 6600; delta 29: step 29×16500/36400 = 13 → 14 whole: 23500 > target;
      step 13×16500/16900 = 12 → 13 whole (17–29): 22200 ≤ target, kept (delta 1).
      one more: block 30 UP: 22200 + 433 = 22633 < target, kept; GATE: 22200 + 867 = 23067 < target, kept.
    → -ngl 47, -ts 17,30; block 16 ffn → CUDA1, block 30 ffn_down → CPU, blocks 31–45 experts → CPU."""
    layers, over = fit_devices(46, 2, True, _glm_like_mem, [23100 * MiB] * 2, dense_fits=True)
    assert _shape(layers, over) == ((17, 1, ATTN), (30, 17, GATE), (1, None))
    ngl, split, rules = fit_flags(46, layers, over, lambda d: "CPU" if d is None else f"CUDA{d}")
    assert (ngl, split) == (47, (17.0, 30.0))
    assert rules == ((r"blk\.16\.ffn_(gate|up|gate_up|down).*", "CUDA1"), (r"blk\.30\.ffn_down.*", "CPU"),
                     (r"blk\.(" + "|".join(str(i) for i in range(31, 46)) + r")\.ffn_(up|down|gate_up|gate)_(ch|)exps",
                      "CPU"))


def test_dense_model_fills_whole_layers_back_to_front():
    # hand walk, 10 blocks + output, 1000 MiB a block, 300 the output, 500 compute, target 6000 on each of 2 GPUs.
    # GPU 1 (n slots: 500 + 300 + (n − 1)×1000): mem 500; all 11: 10800 > 6000; delta 11: 11×5500/10300 = 5 → 5 slots
    # 4800 ≤; delta 6: 6×1200/6000 = 1 → 6 slots 5800 ≤; delta 5: 5×200/5000 = 0 → 1 → 7 slots 6800 >: 6 slots.
    # GPU 0: the 5 blocks left: 500 + 5000 = 5500 ≤ 6000, taken whole.
    def mem_of(layers, over):
        mem, il = [], 11 - sum(x.n_layer for x in layers)
        for x in layers:
            mem.append((500 + sum(300 if b == 10 else 1000 for b in range(il, il + x.n_layer))) * MiB)
            il += x.n_layer
        return mem

    layers, _ = fit_devices(10, 2, False, mem_of, [6000 * MiB] * 2, dense_fits=False)
    assert [x.n_layer for x in layers] == [5, 6] and all(x.n_part == 0 for x in layers)


@pytest.mark.parametrize("alias", ["glm-4.5-air", "gpt-oss-120b"])
def test_two_3090s_fill_gpu_0_and_keep_the_margin(alias):
    """review17 finding 7: GLM-4.5-Air on 2 × RTX 3090 had GPU 0 at 3.45 GiB of 23.58 while 43.9 GiB of experts ran
    from RAM. fit.cpp fills GPU 0 front to back with whole layers until its target (23.58 − 1 GiB): so each GPU ends
    within a layer's experts of it, and keeps its 1 GiB."""
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model=alias, gpu="2x3090", ram="64G", use_measurements=False))
    gpus = [d for d in plan.allocation.devices if d.kind != "cpu"]
    for d in gpus:
        assert d.capacity - d.total >= 1 << 30                          # fit's margin kept
        assert d.total > d.capacity - (1 << 30) - (3 << 30)             # and filled to within one layer (< 3 GiB)
    ls = plan.settings.llamacpp
    assert ls.tensor_split and sum(ls.tensor_split) == ls.n_gpu_layers == plan.model.n_layers + 1
    assert "-ot " in plan.command and "--tensor-split" in plan.command
    assert "split its own way over the GPUs (-ts " in (plan.allocation.compromise or "")


def test_probes_the_floor_decides_are_not_measured_and_the_answer_is_the_same():
    """The hand walk above with floor_of = each GPU's use less its 500 MiB compute buffer (the bytes known without a
    graph simulation). fit.cpp's decisions need no use where the floor answers them (MiB, target 23100):
    - the first probe (no layers anywhere) is read only by a step-3 false position: GPU 1's 47 slots (7000) fit at
      once, so it is never measured;
    - step 4, GPU 0: 17 full blocks' floor 24300 − 500 = 23800 > target: over without its use, and the bracket then
      closes (delta 1), so no later step reads it;
    - GPU 0's high end (46 full, floor 64400) is measured: its first step, bounded by the floor alone, is
      46 × (23100 − 500) // (64400 − 500) = 16, more than 1, so only the use pins it.
    Every other probe's floor is under its target, and it is measured. The answer is the hand walk's."""
    probes = []

    def mem_of(layers, over):
        probes.append(_shape(layers, over))
        return _glm_like_mem(layers, over)

    def floor_of(layers, over):
        return [m - 500 * MiB for m in _glm_like_mem(layers, over)]

    targets = [23100 * MiB] * 2
    layers, over = fit_devices(46, 2, True, mem_of, targets, dense_fits=True, floor_of=floor_of)
    assert _shape(layers, over) == ((17, 1, ATTN), (30, 17, GATE), (1, None))
    measured = list(probes)
    probes.clear()
    assert fit_devices(46, 2, True, mem_of, targets, dense_fits=True) == (layers, over)
    every = list(probes)                   # without a floor: every probe fit.cpp makes, in its order
    assert len(every) == 12
    left_out = [p for p in every if p not in measured]
    assert left_out == [((0, 0, MOE), (0, 0, MOE), (None, None)),       # no layers anywhere
                        ((17, 0, MOE), (30, 29, MOE), (None, None))]    # GPU 0 with 17 full blocks
    assert [p for p in every if p in measured] == measured              # the rest, in fit.cpp's order


@pytest.mark.parametrize("target_mib", [9000, 12000, 15500, 23100, 30000])
@pytest.mark.parametrize("n_gpus", [2, 3, 4])
def test_floor_left_out_probes_never_change_the_fill(target_mib, n_gpus):
    """Against the same fill measuring every probe: GPU counts and targets that end each GPU's bracket on either side
    (the hand walk's memory model, each GPU's compute buffer 500 MiB beside its floor)."""
    def floor_of(layers, over):
        return [m - 500 * MiB for m in _glm_like_mem(layers, over)]

    targets = [target_mib * MiB] * n_gpus
    counted = []

    def mem_of(layers, over):
        counted.append(1)
        return _glm_like_mem(layers, over)

    for dense_fits in (True, False):
        counted.clear()
        lazy = fit_devices(46, n_gpus, True, mem_of, targets, dense_fits, floor_of)
        n_lazy = len(counted)
        counted.clear()
        assert lazy == fit_devices(46, n_gpus, True, mem_of, targets, dense_fits)
        assert n_lazy < len(counted)


def test_a_multi_gpu_check_is_the_same_with_plain_fill_probes():
    """The whole answer (JSON) of a --fit over two GPUs whose graphs are simulated, made in a fresh process as the CLI
    makes it (the fill's probes built with n_kv a symbol: LlamaCpp._fit_devices under many_contexts) and again with
    them built plainly (many_contexts replaced by a no-op): how the graphs are built never moves a byte."""
    import json
    import os
    import subprocess
    import sys

    run = ("import contextlib, sys; from runlocal.runtimes import llamacpp; {}; from runlocal.cli_check import main; "
           "sys.argv = ['runlocal', 'check', 'qwen3-30b-a3b', '--gpu', '2xrtx-3060', '--runtime', 'llama.cpp', "
           "'--json']; main()")
    env = {**os.environ, "COLUMNS": "400", "RUNLOCAL_COMPUTE_TABLE": "0"}
    docs = [json.loads(subprocess.run([sys.executable, "-c", run.format(patch)], capture_output=True, text=True,
                                      check=True, env=env).stdout)
            for patch in ("pass", "llamacpp.many_contexts = contextlib.nullcontext")]
    assert docs[0] == docs[1]
    assert docs[0]["max_context"]
