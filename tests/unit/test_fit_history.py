"""The same `runlocal check` gives the same --fit placement whatever was asked before in the process (the HTTP API
and the MCP server plan many requests in one process). qwen3.5-397b-a17b is hybrid (delta-net and attention
layers): on an RTX 3060 its GPU use is not monotone in -ngl, so a layer search whose probes were steered by what it
learned at other contexts ended elsewhere (-ngl 50 after a check at 262,144, -ngl 55 fresh)."""

import json
import os
import subprocess
import sys

_ASK = """
import json, sys
from runlocal.check import CheckRequest, check
out = []
for ctx in json.loads(sys.argv[1]):
    plan, _ = check(CheckRequest(model="qwen3.5-397b-a17b", runtime="llama.cpp", gpu="rtx-3060", ram="512GiB",
                                 ctx=ctx))
    gpu = next(d for d in plan.allocation.devices if d.kind != "cpu")
    o = plan.settings.llamacpp
    out.append([plan.verdict, o.n_gpu_layers, o.n_cpu_moe, gpu.total])
print(json.dumps(out))
"""


def _asked_in_one_process(*contexts: int) -> list:
    """Each check's (verdict, -ngl, --n-cpu-moe, GPU bytes), asked in order in one fresh process."""
    done = subprocess.run([sys.executable, "-c", _ASK, json.dumps(contexts)], capture_output=True, text=True,
                          check=True, env=os.environ.copy(), timeout=600)
    return json.loads(done.stdout)


def test_a_check_answers_the_same_fresh_and_after_another_check():
    # `runlocal check qwen3.5-397b-a17b --gpu rtx-3060 --ram 512GiB --ctx 114176`, fresh and after --ctx 262144
    (fresh,) = _asked_in_one_process(114_176)
    after_long, again = _asked_in_one_process(262_144, 114_176)
    assert fresh[1] < 61                      # --fit moved layers: the layer search ran
    assert again == fresh
    # and the other way round: the long context answers the same after the short one
    _, long_after = _asked_in_one_process(114_176, 262_144)
    assert long_after == after_long
