"""Round 73's misses (session 23, diagnose23), tuned on after the lead's one scoring (scoring/round73_first_run.txt,
35/40) moved the round to tuning. Each rule reads a signal — who printed the line, what came before the kill, which
allocator refused — and each is checked against the same lines without that signal, which keep their old answer.

* made73-l17: a bare kill (bash's "line 7: PID Killed", exit 137) after the job stated a limit on its running time
  ("wall-time limit 40s"), nothing else saying memory ran short: the limit's stop, not the OOM killer. coreutils
  timeout(1): with KILL the child's status is 137 (128+9), as the OOM killer's victims' is.
* made73-l09: llama_init_from_model's own refusal of a setting ("quantized V cache requires flash_attn to be
  enabled"), before the binding's "Failed to create llama_context": not memory (llama-context.cpp checks the settings
  and returns NULL before it constructs the context, so nothing was allocated).
* made73-m03: C++'s std::bad_alloc logged by libllama's llama_model_quantize under its own name: the quantizer's
  buffers, a llama.cpp allocation (llama-quant.cpp catches the exception and logs "%s: failed to quantize: %s").

Left as they were (docs/diagnosis.md, diagnose23): made73-m14 (a Rust backtrace's lower frames only: the allocation
line fell above the text's 40-line cut, nothing left says memory) and made73-m17 (BrokenProcessPool: a pool worker
ended without its own error; the message names no signal, and a native crash in the worker prints the same).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text


def _answer(text: str) -> tuple[str, str | None]:
    d = diagnose_text(text)
    return d.category, d.entry.id if d.entry else None


# made73-l17 (round73_make/l17.py): the job script's own lines, the kill and its status
_L17_LIMIT = "[job] generation started, wall-time limit 40s\n"
_L17_RUN = ("sample 4: w4753 w4753 w9472 w22118\n"
            "sample 5: w22111 w8974 w8974 w3117\n")
_L17_KILL = ("job.sh: line 7:  4224 Killed                  python3 gen.py\n"
             "[job] gen.py exit status 137\n")


def test_a_bare_kill_after_a_stated_time_limit_is_the_stop_not_the_oom_killer():
    assert _answer(_L17_LIMIT + _L17_RUN + _L17_KILL) == ("not_memory", "notmem-stopped")


def test_the_same_kill_without_the_limit_stays_the_oom_killer():
    # the bare kill alone: SIGKILL with no sender named, the OOM killer's usual act (process-killed)
    assert _answer(_L17_RUN + _L17_KILL) == ("oom_killer", "process-killed")


def test_gnu_timeouts_command_line_is_a_time_limit_too():
    # coreutils timeout(1): "-s, --signal=SIGNAL specify the signal to be sent on timeout"; a shell's xtrace echo of
    # the command (hand-written, the syntax of the man page's synopsis: timeout [OPTION] DURATION COMMAND)
    text = "+ timeout -s KILL 40 python3 gen.py\n" + _L17_RUN + _L17_KILL
    assert _answer(text) == ("not_memory", "notmem-stopped")


def test_a_timeout_that_sends_term_is_no_limit_behind_a_bare_kill():
    # coreutils timeout(1): "-s, --signal=SIGNAL specify the signal to be sent on timeout; SIGNAL may be a name like
    # 'HUP' or a number; see 'kill -l' for a list of signals" and "The TERM signal is sent if no signal is specified";
    # a TERM'd job ends with timeout's status 124 and bash prints no "Killed": a bare kill after a plain `timeout 600`
    # (hand-written) was sent by someone else, and keeps the bare kill's reading (review23b)
    for line in ("+ timeout 600 python3 gen.py\n", "+ timeout -s TERM 600 python3 gen.py\n",
                 "$ timeout --preserve-status 60 python3 gen.py\n"):
        assert _answer(line + _L17_RUN + _L17_KILL) == ("oom_killer", "process-killed"), line
    # "-k, --kill-after=DURATION also send a KILL signal if COMMAND is still running this long after the initial
    # signal was sent", and the signal named by number: both end in KILL, the limit's stop
    for line in ("+ timeout -k 5 40 python3 gen.py\n", "+ timeout --kill-after=5s 40 python3 gen.py\n",
                 "+ timeout -s 9 40 python3 gen.py\n", "+ timeout --signal=SIGKILL 40 python3 gen.py\n"):
        assert _answer(line + _L17_RUN + _L17_KILL) == ("not_memory", "notmem-stopped"), line


def test_a_limit_beside_a_line_that_says_memory_ran_short_keeps_the_memory_answer():
    # a time limit set, but the job's own line also says memory was under pressure (hand-written): the limit is not
    # known to be why it died, and the bare kill keeps its reading
    text = _L17_LIMIT + "[job] memory pressure: rss 3.8 GiB\n" + _L17_KILL
    assert _answer(text) == ("oom_killer", "process-killed")


def test_a_timeout_said_after_the_kill_is_no_limit_on_the_job():
    # ollama#11090 (round corpus id ollama-11090, oom_killer): the runner killed, then the scheduler's wait for VRAM to
    # recover "within timeout" — a wait after the kill, with no figure of a limit on the job
    text = ('time=2025-06-27T14:42:08.637Z level=ERROR source=server.go:415 msg="llama runner terminated" '
            'error="signal: killed"\n'
            'time=2025-06-27T14:42:13.411Z level=WARN source=sched.go:645 msg="gpu VRAM usage didn\'t recover within '
            'timeout" seconds=5.266774732 runner.size="54.3 GiB" runner.vram="52.8 GiB" runner.parallel=2 '
            'runner.pid=41\n')
    assert _answer(text)[0] == "oom_killer"


# made73-l09 (round73_make/l09.py): llama-cpp-python's server log, the refusal and the binding's exception
_L09_REFUSAL = "llama_init_from_model: quantized V cache requires flash_attn to be enabled\n"
_L09_WRAPPER = ('  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/llama_cpp/_internals.py", line 266, '
                'in __init__\n'
                '    raise ValueError("Failed to create llama_context")\n'
                "ValueError: Failed to create llama_context\n")
_L09_LOAD = "load_tensors:   CPU_Mapped model buffer size =    67.50 MiB\n..........\n"


def test_llama_init_from_models_setting_refusal_is_not_memory():
    assert _answer(_L09_LOAD + _L09_REFUSAL + _L09_WRAPPER) == ("not_memory", "notmem-llamacpp-context-reason")


def test_the_wrapper_alone_stays_a_context_allocation_failure():
    # without the line that names the refusal, "Failed to create llama_context" keeps its reading (llama.cpp's KB
    # entry: context creation nearly always fails allocating the KV cache or the compute buffers)
    assert _answer(_L09_LOAD + _L09_WRAPPER) == ("llamacpp_alloc_fail", "llamacpp-context-failed")


def test_the_newer_wording_and_the_allocation_form_of_the_same_function():
    # ggml-org/llama.cpp src/llama-context.cpp (001d906a): "%s: V cache quantization requires flash_attn" — the same
    # refusal in another release's words; and the function's allocation failure (the tuning corpus's wording, five
    # llamacpp_alloc_fail texts) stays memory
    assert _answer("llama_init_from_model: V cache quantization requires flash_attn\n" + _L09_WRAPPER)[0] == "not_memory"
    alloc = "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache\n"
    assert _answer(alloc + _L09_WRAPPER)[0] == "llamacpp_alloc_fail"


# made73-m03 (round73_make/m03.py): llama_model_quantize's log, the quantizer's first tensor refused
_M03 = ("quantizing model-f32.gguf -> model-q8_0.gguf\n"
        "llama_model_loader: - type  f32:   39 tensors\n"
        "[   1/  39] output.weight                        - [  1024,  32000,      1,      1], type =    f32, converting "
        "to q8_0 .. llama_model_quantize: failed to quantize: std::bad_alloc\n"
        "quantization failed (llama_model_quantize returned 1)\n")


def test_libllamas_own_bad_alloc_is_a_llamacpp_allocation_failure():
    assert _answer(_M03) == ("llamacpp_alloc_fail", "llamacpp-cuda-malloc")


def test_a_bad_alloc_no_libllama_function_logged_stays_the_hosts_ram():
    # epfml/sent2vec#98 (corpus id sent2vec-98, oom_killer): the C++ runtime's terminate message, no llama.cpp function
    text = "terminate called after throwing an instance of 'std::bad_alloc' \nwhat():    std::bad_alloc \n"
    assert _answer(text) == ("oom_killer", "host-ram-alloc")


def test_numpys_refusal_in_a_gguf_conversion_stays_the_hosts_ram():
    # made73-m04 (oom_killer): gguf-py's numpy quantization, a Python allocation outside libllama
    text = ('  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/gguf/quants.py", line 168, in '
            "__quantize_array\n"
            "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 272. MiB for an array with shape "
            "(285212672,) and data type uint8\n")
    assert _answer(text)[0] == "oom_killer"
