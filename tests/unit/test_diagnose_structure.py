"""Structural signals of diagnosis, one test per signal (not per public text): severity, what follows a warning,
sizes in words, who sized the buffer (assertions), the phase named by a call, the backend named by its allocator,
and missing build files. Each test writes the kind of line a user would paste and reads `runlocal diagnose`'s answer.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text, signals


@pytest.mark.parametrize("line, expected", [
    ("warning: failed to lock 1000-byte buffer: cannot allocate memory", "warning"),
    ("[TRT] [W] Skipping tactic 2 due to insufficient memory", "warning"),
    ("W1125 10:00:00.000 foo.cc:12] low memory", "warning"),
    ('time=2024 level=WARN source=server.go msg="not enough vram"', "warning"),
    ("/x.py:3: UserWarning: memory is low", "warning"),
    ("RuntimeError: CUDA out of memory.", "error"),
    ("[TRT] [E] 4: Internal error: plugin requires 10 bytes", "error"),
    ("Aborted (core dumped)", "error"),
    ("llama_new_context_with_model: kv self size = 1024.00 MB", None),
])
def test_severity_is_read_from_the_programs_own_marker(line, expected):
    assert signals.severity_of_line(line.lower()) == expected


def test_a_memory_warning_the_program_went_on_after_is_not_the_failure():
    log = ("warning: failed to pin 4096-byte buffer: Cannot allocate memory\n"
           "load_tensors: offloaded 33/33 layers to GPU\n")
    assert diagnose_text(log).category == "not_memory"


def test_a_memory_warning_that_names_a_process_limit_is_not_the_failure():
    log = "warning: failed to lock 4096-byte buffer: Cannot allocate memory\nTry raising RLIMIT_MEMLOCK\n"
    assert diagnose_text(log).category == "not_memory"


def test_a_memory_warning_followed_by_an_error_is_the_cause():
    log = ("WARNING: failed to allocate 1024.00 MB of pinned memory: out of memory\n"
           "Traceback (most recent call last):\nRuntimeError: the engine stopped\n")
    assert diagnose_text(log).category != "not_memory"


def test_a_memory_warning_that_ends_the_log_is_still_read_as_the_failure():
    # nothing shows the program went on: the paste stops at the warning
    assert diagnose_text("WARN scheduler: step failed: DriverError(CUDA_ERROR_OUT_OF_MEMORY)").category != "not_memory"


@pytest.mark.parametrize("line", [
    "RuntimeError: Tried to allocate more than 5 EB of memory",
    "Error: failed to allocate 3EiB on device",
    "ValueError: tensor numel overflowed while computing the shape",
    "RuntimeError: index calculation overflowed with sizes=[12]",
])
def test_a_size_no_machine_has_in_words_or_an_overflowed_computation_is_not_memory(line):
    assert diagnose_text(line).category == "not_memory"


def test_a_stated_impossible_size_explains_the_allocation_failures_around_it():
    log = ("trainer: failed to allocate buffer of size\n"
           "cpu_alloc: failed to allocate buffer of size 18446744073709549568\n"
           "terminate called after throwing an instance of 'std::bad_alloc'\n")
    assert diagnose_text(log).category == "not_memory"


def test_a_failed_assertion_about_a_buffer_the_program_sized_is_a_bug():
    log = ('my_arena_alloc: not enough space in the arena (needed 100, largest free 50)\n'
           'GGML_ASSERT: alloc.c:10: !"not enough space in the arena"\n')
    assert diagnose_text(log).category == "not_memory"
    assert diagnose_text("foo.m:12: failed assertion `handler added after commit'").category == "not_memory"


def test_a_failed_assertion_that_an_allocator_call_returned_memory_is_memory():
    assert diagnose_text('GGML_ASSERT(buf != NULL && "failed to allocate buffer") failed').category != "not_memory"


def test_the_phase_is_read_from_any_generate_call():
    log = ("    out = pipe.generate_reply(prompt)\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB (GPU 0; 15.78 GiB total "
           "capacity; 14.60 GiB already allocated; 9.50 MiB free; 14.64 GiB reserved in total by PyTorch)")
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_a_builders_api_is_start_up():
    line = ("[E] plugin attention_0 requires 5000000000 bytes of scratch space, but only 4000000000 is available. "
            "Increase it with IBuilderConfig::setMemoryPoolLimit()")
    assert signals.phase_of_line(line.lower()) == "load"


def test_the_backend_is_named_by_its_allocator():
    line = "RuntimeError: MPS backend out of memory (MPS allocated: 7.23 GB, max allowed: 9.07 GB). Tried to allocate 896.00 MB"
    assert diagnose_text(line).category == "metal_oom"


@pytest.mark.parametrize("line", ["decode: failed to find KV cache slot for ubatch of size 512",
                                  "llama_decode: failed to find a free slot"])
def test_kv_cell_exhaustion_in_any_wording_is_not_device_memory(line):
    assert diagnose_text(line).category == "not_memory"


def test_a_build_that_requires_a_missing_file_is_not_memory():
    assert diagnose_text("JIT compile failed: kernel requires cuda_bf16.h which is not installed").category == "not_memory"
