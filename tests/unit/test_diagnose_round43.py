"""Round 43's misses (session 15, diagnose44): two ggml CUDA out-of-memory errors in Ollama that came during a request,
answered as ggml's allocation while it places the weights. Fixed by what marks the load as over in the runtime's own
log (phase.SERVING_WORDS): Ollama's "llama runner started in N seconds" (llm/server.go WaitUntilRunning logs it once the
runner's status is ready) and its "POST predict: …" (llm/server.go Completion wraps the error of its request to the
runner's /completion endpoint so, and sends that request only after checking the runner is ready), and llama.cpp's
server's "server is listening on … - starting the main loop" / "all slots are idle" (logged after load_model). After
such a line, with no load line after it, ggml's out-of-memory is the run (the corpus's rule from llama.cpp#13085).

Each test quotes the paste it comes from (measurements/public_errors/round43.jsonl) or the public text named beside it;
the contrasts are the same error without those lines, a load after them, and the lines printed after the error.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.phase import LOADED, RUN, phase_of_line

# https://github.com/ollama/ollama/issues/7733 (a comment, November 2024): the runner starts, then the first generate
# request's ggml CUDA pool allocation (cuMemCreate) fails and the runner aborts
RUNNER_STARTED = ('time=2024-11-21T17:30:38.788Z level=INFO source=server.go:601 msg="llama runner started in 1.51 '
                  'seconds"\n')
POOL_OOM = ("CUDA error: out of memory\n"
            "  current device: 0, in function alloc at ggml-cuda.cu:406\n"
            "  cuMemCreate(&handle, reserve_size, &prop, 0)\n"
            "ggml-cuda.cu:132: CUDA error\n"
            "/usr/lib/ollama/runners/cuda_v11/ollama_llama_server(ggml_abort+0x136)[0x56496ed4c346]\n")
# https://github.com/ollama/ollama/issues/8182 (Ollama 0.5.4, 12 of 81 layers on an 11.7 GiB card): the client's error
# and the journal's line
POST_PREDICT_EOF = '{"error":"POST predict: Post \\"http://127.0.0.1:33603/completion\\": EOF"}\n'
JOURNAL_OOM = "Dec 20 11:57:06 drg-ai001 ollama[3292]: CUDA error: out of memory\n"


def test_ggmls_out_of_memory_after_ollamas_runner_started_is_the_run():
    d = diagnose_text(RUNNER_STARTED + POOL_OOM)
    assert d.category == "cuda_oom_long_context"


def test_ggmls_out_of_memory_after_ollamas_request_to_the_runner_failed_is_the_run():
    d = diagnose_text(POST_PREDICT_EOF + JOURNAL_OOM)
    assert d.category == "cuda_oom_long_context"


def test_llama_servers_own_ready_lines_say_the_load_is_over_too():
    # llama.cpp's server, as its users' guides quote it: "After starting up and loading the model, it should display:
    # main: server is listening on http://127.0.0.1:8080 - starting the main loop / srv  update_slots: all slots are
    # idle" (e.g. the llama-server-one build guide; tools/server/tests/README.md); then ollama#7733's pool refusal
    ready = ("main: server is listening on http://127.0.0.1:8080 - starting the main loop\n"
             "srv  update_slots: all slots are idle\n")
    assert diagnose_text(ready + POOL_OOM).category == "cuda_oom_long_context"


@pytest.mark.parametrize("line", [
    'msg="llama runner started in 1.51 seconds"',
    '{"error":"post predict: post \\"http://127.0.0.1:33603/completion\\": eof"}',
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    'time=2024-02-23t10:01:27.991+01:00 level=info source=dyn_ext_server.go:161 msg="starting llama main loop"',
])
def test_each_ready_line_is_both_the_run_and_the_load_said_over(line):
    assert LOADED.search(line) and RUN.search(line)


def test_a_request_to_llama_servers_own_completion_endpoint_is_the_run():
    # tools/server's request log line for its native endpoint (POST /completion), beside the OpenAI-style /completions
    assert phase_of_line("srv  log_server_r: request: post /completion 127.0.0.1 200") == "run"


# -- contrasts: the same error where nothing says the load was over, or a load came after, stays ggml's allocation ----

def test_the_same_errors_without_a_ready_line_stay_ggmls_allocation():
    assert diagnose_text(POOL_OOM).category == "llamacpp_alloc_fail"
    assert diagnose_text(JOURNAL_OOM).category == "llamacpp_alloc_fail"


def test_a_model_loading_after_the_runner_started_makes_it_the_load_again():
    # a second model loading after the first runner was ready (llama.cpp's loader lines, as in ollama#2706's paste)
    loading = ("llm_load_tensors: offloaded 6/33 layers to GPU\n"
               "llm_load_tensors:      CUDA0 buffer size =   702.19 MiB\n")
    assert diagnose_text(RUNNER_STARTED + loading + POOL_OOM).category == "llamacpp_alloc_fail"


def test_a_ready_line_printed_after_the_error_says_nothing_of_it():
    # https://github.com/ollama/ollama/issues/2706 (round 21): the title's "CUDA error: out of memory" on top, then the
    # load's lines and "Starting llama main loop" — a log line after the error, not before it: stays as labelled
    text = ("CUDA error: out of memory with llava:7b-v1.6 when providing an image\n"
            "llm_load_tensors: offloaded 6/33 layers to GPU\n"
            "llama_new_context_with_model:      CUDA0 compute buffer size =   164.01 MiB\n"
            'time=2024-02-23T10:01:27.991+01:00 level=INFO source=dyn_ext_server.go:161 msg="Starting llama main loop"\n'
            '[GIN] 2024/02/23 - 10:01:27 | 200 |    4.0520283s |       127.0.0.1 | POST     "/api/chat"\n')
    assert diagnose_text(text).category == "llamacpp_alloc_fail"
    # ... and the runner started after ollama#7733's refusal (a runner started again later) likewise
    assert diagnose_text(POOL_OOM + RUNNER_STARTED).category == "llamacpp_alloc_fail"
