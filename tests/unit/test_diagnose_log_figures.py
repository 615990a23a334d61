"""Fixes computed from the figures a pasted log states (tests start from the user's paste in the thread named)."""

from __future__ import annotations

import re

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

# vllm-project/vllm#25837: vLLM on a 4 GiB card whose desktop already holds some of it
PASTE_25837 = """\
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718]   File "/home/vmejia/projects/loreal/loreal-dipi/.venv/\
lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 180, in init_device
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718]     raise ValueError(
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device (3.22/4.0 GiB) on \
startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU \
memory used by other processes."""


def test_vllm_startup_refusal_gets_the_largest_share_that_was_free():
    doc = with_computed_fixes(diagnose_text(PASTE_25837))
    assert doc["category"] == "vllm_gpu_util"
    first = doc["fixes"][0]
    # 3.22 of 4.0 GiB free: vLLM starts when utilization x total <= free, so 0.80 is the largest two-digit share
    assert first["command"] == "vllm serve MODEL --gpu-memory-utilization 0.80"
    for fix in doc["fixes"]:   # and no fix asks for more than was free (the old advice raised it to 0.95)
        m = re.search(r"--gpu-memory-utilization ([\d.]+)", fix["command"])
        assert m is None or float(m.group(1)) * 4.0 <= 3.22
