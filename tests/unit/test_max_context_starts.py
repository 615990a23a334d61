"""The longest context a llama.cpp plan states is one figure for every -c, and it is an edge: asked for as -c it
starts, and one cache step (256 cells) more does not — where --fit moves layers to system memory and the host's RAM
is what runs out, for a hybrid model whose --fit placement jumps with -c.

qwen3.5-397b-a17b on an RTX 3060: with every expert in RAM (--n-cpu-moe 60) the host holds 220.41 GiB at -c 4,096
(236,635,677,074 B of weights since session 18's per-type split, 81d7bc0c, which moved 1,387,557,664 B of the
experts' share from the GPU side to the host; 219.12 GiB before it). With 221.3 GiB (the 0.88 GiB over the host's
share the test had at 220 GiB before the split) --fit's -ngl jumps with -c (61 up to 77,824, 60, 58, 55 at 122,880,
50 at 147,456; 49 at 172,032 between 46s: its GPU use is not monotone in -ngl, delta-net and attention layers), and
the host runs out where --fit drops from 55 to 50 layers: 147,200 starts, 147,456 does not. The search used to start
at the context asked and stated the end of the run of starting contexts that held it (83,968 for -c 4,096, 100,352
for -c 32,768 in session 17: benchmarks/max_context_by_ctx.py); it now starts from fixed points, and states one
figure. With 220 GiB the host is over at every -c where --fit moves every expert, so only a -c short enough for --fit
to keep one layer's experts on the GPU starts (1,792): the same reading, layers in RAM, not "every layer on the GPU".

The contrast: a model of the same family (qwen3_5_moe) that --fit keeps whole on the GPU up to some -c,
qwen3.6-35b-a3b on an RTX 4090, reads "every layer on the GPU" (all_on_gpu) at every -c, with the figure main gave
before session 19 (112,640).

Each -c is asked in its own fresh process (as test_fit_history does): an answer that leaned on plans made for an
earlier request would pass in one process and fail across processes.
"""

import json
import os
import subprocess
import sys

_ASK = """
import json, sys
from runlocal.check import CheckRequest, check
model, runtime, gpu, ram, ctx, no_mmproj = json.loads(sys.argv[1])
plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu=gpu, ram=ram, ctx=ctx, use_measurements=False,
                             no_mmproj=no_mmproj))
host = next(d for d in plan.allocation.devices if d.kind == "cpu")
placed = plan.settings.llamacpp
print(json.dumps([plan.max_context, plan.verdict, host.total, host.capacity, plan.max_context_basis,
                  placed.n_gpu_layers, placed.n_cpu_moe, plan.model.n_layers]))
"""


def _fresh(model: str, runtime: str, gpu: str, ram: str, ctx: int | None, no_mmproj: bool = False) -> list:
    """(max context, verdict, host bytes, host capacity, max-context reading, -ngl and --n-cpu-moe --fit chose,
    the model's layers) of one check, asked in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _ASK, json.dumps([model, runtime, gpu, ram,
                                                                  None if ctx is None else str(ctx), no_mmproj])],
                          capture_output=True, text=True, check=True, env=os.environ.copy(), timeout=900)
    return json.loads(done.stdout)


def test_the_longest_context_is_one_figure_for_every_ctx_and_an_edge():
    # `runlocal check qwen3.5-397b-a17b --gpu rtx-3060 --ram 221.3GiB [--ctx N]`: --fit moves layers, the experts
    # in RAM; the longest -c is where RAM runs out
    ask = ("qwen3.5-397b-a17b", "llama.cpp", "rtx-3060", "221.3GiB")
    # without -c (4,096), 32,768 (inside a run of starting contexts above the first), the trained 262,144 (does not
    # start), and 100,352 (starts, above the stated figure: the search must not move for it)
    answers = {ctx: _fresh(*ask, ctx) for ctx in (None, 32_768, 100_352, 262_144)}
    longest = answers[None][0]
    assert longest and longest % 256 == 0 and longest > 32_768
    assert {a[0] for a in answers.values()} == {longest}, answers
    assert {a[4] for a in answers.values()} == {"layers_in_ram"}, answers
    assert answers[100_352][1] != "does_not_fit" and answers[262_144][1] == "does_not_fit"
    # asked for as -c, it starts (tight: layers in RAM), and states itself again
    at = _fresh(*ask, longest)
    assert at[1] != "does_not_fit" and at[0] == longest
    # one cache step (256 cells) more does not start: the host is over its 220 GiB
    past = _fresh(*ask, longest + 256)
    assert past[1] == "does_not_fit" and past[2] > past[3]


def test_the_host_over_at_every_context_with_every_expert_in_ram_reads_layers_in_ram():
    # the same machine with 220 GiB: at -c 4,096 --fit moves every expert (--n-cpu-moe 60) and the host is over
    ask = ("qwen3.5-397b-a17b", "llama.cpp", "rtx-3060", "220GiB")
    default = _fresh(*ask, None)
    assert default[1] == "does_not_fit" and default[6] == 60 and default[2] > default[3], default
    longest = default[0]
    assert longest and longest % 256 == 0 and longest < 4096 and default[4] == "layers_in_ram", default
    assert _fresh(*ask, 32_768)[0::4] == [longest, "layers_in_ram"]
    # asked for as -c, it starts because --fit keeps some experts on the GPU (fewer than 60 layers' in RAM) — so not
    # every layer whole on the GPU; one cache step more, --fit moves every expert and the host is over again
    at = _fresh(*ask, longest)
    assert at[1] != "does_not_fit" and 0 < at[6] < 60 and at[2] <= at[3], at
    past = _fresh(*ask, longest + 256)
    assert past[1] == "does_not_fit" and past[6] == 60 and past[2] > past[3], past


def test_a_moe_kept_whole_on_the_gpu_reads_all_on_gpu_at_every_ctx():
    # `runlocal check qwen3.6-35b-a3b --gpu rtx-4090 --ram 64GiB [--ctx N] --no-mmproj`: 112,640 on main before
    # session 19's change (2278186b), read "every layer on the GPU" whatever -c was asked. --no-mmproj: the figure is
    # --fit's placement of the text model; -hf's projector (893,955,008 B, llamacpp_mmproj.py), loaded after --fit on
    # the GPU, shortens it (below)
    ask = ("qwen3.6-35b-a3b", "llama.cpp", "rtx-4090", "64GiB")
    with_projector = _fresh(*ask, None)
    assert with_projector[4] == "all_on_gpu" and with_projector[0] < 112_640, with_projector
    answers = {ctx: _fresh(*ask, ctx, True) for ctx in (None, 32_768, 262_144)}
    assert {(a[0], a[4]) for a in answers.values()} == {(112_640, "all_on_gpu")}, answers
    # the reading is --fit's own placement at those contexts: asked for as -c, --fit keeps every layer and every
    # expert on the GPU (-ngl past the 40 layers, no --n-cpu-moe; llama.cpp's -ngl rule); one cache step more, it
    # holds some experts back in RAM
    at = _fresh(*ask, 112_640, True)
    assert at[1] != "does_not_fit" and at[5] > at[7] and not at[6], at
    past = _fresh(*ask, 112_640 + 256, True)
    assert past[1] != "does_not_fit" and past[6], past
