"""A tuning miss of session 14 (diagnose41), fixed by a signal and tested with the user's paste and the look-alikes
beside it: llama.cpp's warning that its build has no GPU backend answers a paste that states no error and no lack of
memory — the user asking why the GPU is not used (llama.cpp#4522, measurements/public_errors/round17.jsonl). The
warning is printed on healthy CPU runs too (llama.cpp's CI logs of CPU builds run with -ngl 99), so beside a failure
the failure is the answer.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# llama.cpp#4522, as pasted: the reporter's sentences and the server's JSON warning (llama.cpp of December 2023)
LLAMACPP_4522 = (
    "Mistral doesn't use GPU VRAM (Yes nvidia is setup correctly and is working with LLAMA2 model)\n"
    "mistal:7b doesn't use VRAM/GPU (screenshot 1)\n"
    "LLAMA2 uses VRAM/GPU (screenshot 2)\n"
    "in addition i get the following when using mistral:\n"
    '{"timestamp":1702845122,"level":"WARNING","function":"server_params_parse","line":2148,"message":"Not compiled '
    'with GPU offload support, --n-gpu-layers option will be ignored. See main README.md for information on enabling '
    'GPU BLAS support","n_gpu_layers":-1}')
# the newer spelling, as llama.cpp's CI prints it for a CPU build given -ngl 99
WARNING = ("warning: not compiled with GPU offload support, --gpu-layers option will be ignored\n"
           "warning: see main README.md for information on enabling GPU BLAS support\n")


def test_a_cpu_only_build_with_no_failure_stated_is_the_build():
    d = diagnose_text(LLAMACPP_4522)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-cpu-only-build"
    assert "Not compiled with GPU offload support" in d.title


def test_the_newer_spelling_is_the_same_warning():
    d = diagnose_text(WARNING)
    assert d.entry is not None and d.entry.id == "notmem-cpu-only-build"


def test_a_kill_on_a_cpu_build_is_still_the_kill():
    # the build's warning, then the kernel's kill: the kill is the failure (RAM), not the build
    assert diagnose_text(WARNING + "Killed").category in MEMORY_CATEGORIES


def test_a_host_allocation_refused_on_a_cpu_build_is_still_memory():
    pasted = WARNING + ("ggml_aligned_malloc: insufficient memory (attempted to allocate 24000.00 MB)\n"
                        "llama_model_load: error loading model: failed to allocate buffer\n")
    assert diagnose_text(pasted).category in MEMORY_CATEGORIES


def test_an_error_beside_the_warning_is_that_error():
    pasted = WARNING + "llama_model_load: error loading model: error loading model architecture: unknown model " \
                       "architecture: 'gemma4'\n"
    d = diagnose_text(pasted)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id != "notmem-cpu-only-build"


def test_a_paste_that_says_memory_ran_short_is_not_answered_with_the_build():
    pasted = WARNING + "the process ran out of memory while loading the model\n"
    d = diagnose_text(pasted)
    assert d.entry is None or d.entry.id != "notmem-cpu-only-build"
