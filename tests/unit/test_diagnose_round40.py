"""Round 40's misses (session 14, diagnose41), fixed by signals and tested with the users' pastes and the look-alikes
beside them. Pastes are the threads' own lines (measurements/public_errors/round40.jsonl, round3.jsonl, notmem.jsonl);
the other lines are llama.cpp's and ggml's own messages, in the words their sources print (common/fit.cpp,
ggml-cuda.cu), with the figures worked out in the comments.

1. llama.cpp's --fit gave up (a tensor override set by --cpu-moe) after projecting more memory than was free, and the
   load went on: memory, though the paste stops before the allocation's own error (llamacpp_common.py). The projection
   alone, a fit that succeeds, or a give-up after a projection within the free memory stay look-alikes.
2. Ollama's runner exited on ggml's bare "CUDA error" abort (the message cut) on a card the writer says is smaller
   than the model they name: the card's memory (small_card.py). The same exit on a card that holds the model, with the
   CUDA message pasted, or with no card named stays not memory.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

MIB = 1024 ** 2

# llama.cpp#27872, as pasted: the fit's projection, its margin, its give-up, and the reporter's sentence
PROJECTION = ("common_params_fit_impl: projected to use 24840 MiB of device memory vs. 22341 MiB of free device "
              "memory\n"
              "common_params_fit_impl: cannot meet free memory target of 1024 MiB, need to reduce device memory by "
              "3523 MiB\n")
ABORT = ("common_fit_params: failed to fit params to free device memory: model_params::tensor_buft_overrides already "
         "set by user, abort\n")
LLAMACPP_27872 = PROJECTION + ABORT + (
    "This is logged as a warning (W), not a fatal error, so the server continues loading with the original, unfitted "
    "parameters instead of stopping or falling back to a safe configuration. Since the projected footprint (24840 MiB) "
    "already exceeds free VRAM (22341 MiB), this reliably ends in an OOM later, at compute-buffer allocation")


def test_a_fit_that_gave_up_over_a_projected_deficit_is_a_llamacpp_allocation_failure():
    d = diagnose_text(LLAMACPP_27872)
    assert d.category == "llamacpp_alloc_fail"
    assert d.entry is not None and d.entry.id == "llamacpp-fit-aborted"
    # the projection's own figures, in bytes: 24840 and 22341 MiB; the margin line's 3523 = 24840 - 22341 + 1024
    assert d.extracted["projected_bytes"] == 24840 * MIB and d.extracted["free_bytes"] == 22341 * MIB
    assert 24840 - 22341 + 1024 == 3523


def test_the_fits_own_lines_without_the_reporters_sentence_say_the_same():
    assert diagnose_text(PROJECTION + ABORT).category == "llamacpp_alloc_fail"


def test_the_allocation_that_then_fails_is_answered_with_its_own_figures():
    # the load went on and the compute buffer was refused (ggml's words): that failure, same category
    later = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 14656.12 MiB on device 0: cudaMalloc failed: "
             "out of memory\n"
             "graph_reserve: failed to allocate compute buffers\n")
    d = diagnose_text(PROJECTION + ABORT + later)
    assert d.category == "llamacpp_alloc_fail"
    assert d.entry is not None and d.entry.id != "llamacpp-fit-aborted"


def test_llama_fit_params_projection_alone_is_not_memory():
    # look-alike: llama.cpp PR#16653, llama-fit-params printing its projection before it reduces anything
    pasted = ("llama_params_fit_impl: projected memory use with initial parameters [MiB]:\n"
              "llama_params_fit_impl:   - CUDA0 (NVIDIA RTX 6000 Ada Generation):  48508 total, 201672 used, "
              "153599 deficit\n"
              "llama_params_fit_impl:   - CUDA1 (NVIDIA RTX 6000 Ada Generation):  48508 total, 208920 used, "
              "160846 deficit\n"
              "llama_params_fit_impl: projected to use 410593 MiB of device memory vs. 97017 MiB of free device memory\n"
              "llama_params_fit_impl: cannot fulfill margin of 1024 MiB on all devices, need to use 316493 MiB less in "
              "total\n")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_a_fit_that_succeeds_after_a_deficit_is_not_memory():
    # look-alike: the same deficit, then the fit reduced the layers itself (common_fit_params' LOG_TRC on success)
    pasted = PROJECTION + "common_fit_params: successfully fit params to free device memory\n"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_a_give_up_when_only_the_margin_is_short_is_not_memory():
    # look-alike: 21800 MiB projected against 22341 free leaves 541 MiB, under the 1024 MiB target (1024 - 541 = 483
    # to reduce), so the fit gives up on a user-set -ngl; but the load fits in the free memory
    pasted = ("common_params_fit_impl: projected to use 21800 MiB of device memory vs. 22341 MiB of free device "
              "memory\n"
              "common_params_fit_impl: cannot meet free memory target of 1024 MiB, need to reduce device memory by "
              "483 MiB\n"
              "common_fit_params: failed to fit params to free device memory: n_gpu_layers already set by user to "
              "999, abort\n")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_the_give_up_without_its_projection_is_not_memory():
    # look-alike: without the projection nothing says how far short the devices were
    assert diagnose_text(ABORT).category not in MEMORY_CATEGORIES


def test_a_fit_that_hit_another_error_is_not_memory():
    # look-alike: llama.cpp-28050 (round 3), the fit's other exception: the model itself did not load
    pasted = ("Loading model... |0.00.147.118 E llama_model_load: error loading model: unknown model architecture: ''\n"
              "0.00.147.127 E llama_model_load_from_file_impl: failed to load model\n"
              "0.00.147.187 E common_fit_params: encountered an error while trying to fit params to free device "
              "memory: failed to load model\n")
    assert diagnose_text(pasted).category == "not_memory"


def test_an_error_that_is_not_memory_after_the_give_up_is_what_stopped_the_run():
    later = ("CUDA error: an illegal memory access was encountered\n"
             "  current device: 0, in function ggml_cuda_op_mul_mat at ggml-cuda.cu:1621\n")
    assert diagnose_text(PROJECTION + ABORT + later).category == "not_memory"


# ollama#5504, as pasted: a 4 GB card, Llama3 8B, the runner's exit on ggml's bare abort
OLLAMA_5504 = (
    "Ollama was working fine with all small models I tested so far (4GB VRAM).\n"
    "After upgrading to 0.1.48, I get a CUDA error with all models, e.g. Llama3 8B:\n"
    '_Error: llama runner process has terminated: exit status 0xc0000409 CUDA error"_')


def test_a_bare_cuda_abort_on_a_card_below_the_named_model_is_the_cards_memory():
    # 8e9 weights x 18/32 bytes (Q4_0) = 4.5e9 bytes = 4.19 GiB, above the 4 GiB card
    assert 8e9 * 18 / 32 / 1024 ** 3 > 4
    d = diagnose_text(OLLAMA_5504)
    assert d.category == "llamacpp_alloc_fail"
    assert d.entry is not None and d.entry.id == "ollama-runner-cuda-oom"


def test_the_same_exit_on_a_card_that_holds_the_model_is_not_memory():
    # look-alike: 4.19 GiB of Q4_0 weights on a 24 GB card
    pasted = OLLAMA_5504.replace("4GB VRAM", "24GB VRAM")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_a_small_model_on_the_small_card_is_not_memory():
    # look-alike: 2e9 x 18/32 bytes = 1.05 GiB, well inside 4 GiB
    pasted = OLLAMA_5504.replace("Llama3 8B", "Gemma 2B")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_the_exit_with_its_cuda_message_pasted_is_that_message():
    # look-alike: ollama-10265's lines (round 5): the CUDA error names an illegal access, not memory
    pasted = OLLAMA_5504 + (
        "\nCUDA error: an illegal memory access was encountered\n"
        "  current device: 0, in function ggml_cuda_op_mul_mat at C:\\a\\ollama\\ollama\\ml\\backend\\ggml\\ggml\\src\\"
        "ggml-cuda\\ggml-cuda.cu:1621\n"
        "  cudaGetLastError()\n")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_the_exit_status_alone_is_not_memory():
    # look-alike: ollama-7031 / ollama-4657 (rounds 2 and notmem): the exit with no CUDA abort and no card
    assert diagnose_text("Error: llama runner process has terminated: exit status 0xc0000409").category == "not_memory"
    # ... and the same on the small card, without ggml's abort words: a fast-fail exit names no CUDA call
    pasted = OLLAMA_5504.replace(" CUDA error", "")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_the_exit_on_the_cuda_abort_without_a_card_named_is_not_memory():
    pasted = ("After upgrading to 0.1.48, I get a CUDA error with all models, e.g. Llama3 8B:\n"
              '_Error: llama runner process has terminated: exit status 0xc0000409 CUDA error"_')
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES
