"""A partial offload that loaded is not a failure (review15c, session 15; fixed by diagnose50, session 16).

Ollama logs its placement before it starts the runner (llm/memory.go EstimateGPULayers: "msg=offload library=cuda
layers.requested=… layers.model=M layers.offload=N …") and "llama runner started in N seconds" once the runner reports
ready (llm/server.go WaitUntilRunning, after the weights, KV cache and compute graph were allocated). N below M with
nothing failed by name is Ollama saying the rest did not fit (ollama-layers-left-off, a memory answer). When the
runner started after that line, the split loaded and runs: why it is slow, not why it failed
(notmem-ollama-partial-offload-ran, not_memory). The offload line is ollama#11819's, as pasted there.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

# https://github.com/ollama/ollama/issues/11819 (a comment's log: 48 of 49 layers placed on a 10.9 GiB-free card)
OLLAMA_11819 = (
    'Aug 08 23:02:37 j-360 ollama[1617]: time=2025-08-08T23:02:37.146+01:00 level=INFO source=server.go:175 '
    'msg=offload library=cuda layers.requested=49 layers.model=49 layers.offload=48 layers.split="" '
    'memory.available="[10.9 GiB]" memory.gpu_overhead="0 B" memory.required.full="11.0 GiB" '
    'memory.required.partial="8.5 GiB" memory.required.kv="608.0 MiB" memory.required.allocations="[8.5 GiB]" '
    'memory.weights.total="6.8 GiB" memory.weights.repeating="6.0 GiB" memory.weights.nonrepeating="787.5 MiB" '
    'memory.graph.full="519.5 MiB" memory.graph.partial="1.3 GiB" projector.weights="795.9 MiB" '
    'projector.graph="1.0 GiB"\n'
    'Aug 08 23:02:37 j-360 ollama[1617]: time=2025-08-08T23:02:37.187+01:00 level=INFO source=sched.go:481 '
    'msg="loaded runners" count=1\n')
# Ollama's own line once the runner is ready (llm/server.go: "llama runner started in %0.2f seconds")
STARTED = ('Aug 08 23:02:40 j-360 ollama[1617]: time=2025-08-08T23:02:40.193+01:00 level=INFO source=server.go:637 '
           'msg="llama runner started in 3.01 seconds"\n')


def test_layers_left_off_with_no_runner_started_stays_the_sizing():
    # 48 < 49 placed, with no runner line: the rest did not fit, and nothing says the load went on
    d = diagnose_text(OLLAMA_11819)
    assert d.category == "ollama_system_memory" and d.entry is not None and d.entry.id == "ollama-layers-left-off"


def test_the_runner_started_after_a_partial_offload_is_not_a_failure():
    d = diagnose_text(OLLAMA_11819 + STARTED)
    assert d.category == "not_memory" and d.entry is not None
    assert d.entry.id == "notmem-ollama-partial-offload-ran"
    doc = with_computed_fixes(d, runtime="ollama")
    assert any("smaller quantization" in f["title"] for f in doc["fixes"])


def test_a_runner_started_before_the_offload_line_says_nothing_of_it():
    # an earlier model's runner (the log goes on to place another model): the later placement's outcome is unknown
    d = diagnose_text(STARTED + OLLAMA_11819)
    assert d.category == "ollama_system_memory"


def test_a_crash_after_the_runner_started_keeps_its_answer():
    # a named failure after the start still names the failure (an error line beats the sizing reading)
    text = OLLAMA_11819 + STARTED + "llama runner process has terminated: signal: segmentation fault (core dumped)\n"
    assert diagnose_text(text).category == "not_memory"
    assert diagnose_text(text).entry.id != "notmem-ollama-partial-offload-ran"


def test_every_layer_placed_and_started_says_nothing():
    whole = OLLAMA_11819.replace("layers.offload=48", "layers.offload=49") + STARTED
    assert diagnose_text(whole).category == "unknown"
