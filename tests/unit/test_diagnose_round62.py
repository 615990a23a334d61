"""Round 62's misses (session 19, diagnose19b), tuned on once the round had been scored (once, by the lead:
scoring/round62_first_run.txt, 36/42) and moved to tuning. Each signal is the runtime's own status, errno or loader
line, read in its source; none is one text's wording.

- llama_decode's status -2: llama-context.cpp's decode (llama-cpp-python 0.3.36's vendored llama.cpp) returns -2 when
  output_reserve cannot allocate the output buffer ("could not reserve space for batch with N outputs"), when the
  scheduler cannot allocate the batch's graph (GGML_STATUS_ALLOC_FAILED -> -2), or when the memory module cannot
  prepare the batch; llama.h: 1 = no KV slot, -1 = an invalid batch, 2 = aborted; GGML_STATUS_FAILED (a compute that
  failed) is -3. A binding that raises the status alone (llama-cpp-python's _internals.py: "llama_decode returned
  -2") says an allocation failed, even with the allocator's line not printed (verbose=False) or cut off.
- llama.cpp's loader line carrying the mapping's refusal of memory ("llama_model_load: error loading model: mmap
  failed: Cannot allocate memory": llama-mmap.cpp throws "mmap failed: %s" with strerror(errno)): llama.cpp's own load
  of the weights failed for memory, labelled as every "error loading model: unable to allocate … buffer" in the
  tuning set is (llamacpp_alloc_fail), not the kernel's OOM kill. "mmap failed: No such device" is not memory.
- Rust's io::Error prints an OS error as "{strerror} (os error {code})": "Cannot allocate memory (os error 12)" is
  ENOMEM, the host's refusal (safetensors' safe_open maps the file, raised into Python as MemoryError), whatever the
  runtime: host RAM, not a card's memory.
- accelerate's "Please use the `disk_offload` function" names its function; transformers 5's from_pretrained frame
  echoes its own variable (``loading_info, disk_offload_index = cls._load_pretrained_model(``) in every load's
  traceback, whatever failed under it: not an offload error.

The pastes are round 62's texts (measurements/public_errors/round62.jsonl, produced here by round62_make/'s scripts,
each script cited beside its paste; the expected answer is the label each script fixed before it ran) and, for the
Rust errno, public threads (URL beside). Each contrast keeps the paste and changes the one thing the signal reads.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

_SITE = "  File \"/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/"
_DECODE_RAISE = (
    _SITE + 'llama_cpp/llama.py", line 680, in eval\n'
    "    self._ctx.decode(self._batch)\n"
    + _SITE + 'llama_cpp/_internals.py", line 334, in decode\n'
    '    raise RuntimeError(f"llama_decode returned {return_code}")\n')


def _decode_status(code: int) -> str:
    # round62_make/m07_llama_server_run_request.py (round 62): llama_cpp.server's log after a request, the tail a user
    # pastes; RLIMIT_AS lowered under the server after it loaded, a 3,900-token prompt with logprobs
    return ("Traceback (most recent call last):\n" + _DECODE_RAISE + f"RuntimeError: llama_decode returned {code}\n"
            'INFO:     127.0.0.1:47780 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
            "INFO:     Shutting down\n")


def test_llama_decode_status_minus_two_is_an_allocation_that_failed() -> None:
    d = diagnose_text(_decode_status(-2))
    assert (d.category, d.entry.id if d.entry else None) == ("llamacpp_alloc_fail", "llamacpp-compute-buffer")


@pytest.mark.parametrize("code", [-1, -3, 1])
def test_llama_decode_other_statuses_are_not_read_as_memory(code: int) -> None:
    # -1 an invalid batch, -3 a failed compute, 1 no KV slot (llama.h): none says an allocation failed by itself
    assert diagnose_text(_decode_status(code)).category not in ("llamacpp_alloc_fail", "oom_killer", "cuda_oom_load")


def test_llama_decode_status_as_llama_cpp_logs_it() -> None:
    # llama_decode's own error line (llama-context.cpp: "%s: failed to decode, ret = %d"), as round62_make/
    # m06_llama_run_long_prompt_logits_all.py's log prints it, the allocator lines above it left out
    log = "llama_decode: failed to decode, ret = -2\n" + "Traceback (most recent call last):\n" + _DECODE_RAISE + \
        "RuntimeError: llama_decode returned -2\n"
    assert diagnose_text(log).category == "llamacpp_alloc_fail"
    assert diagnose_text(log.replace("-2", "-20")).category != "llamacpp_alloc_fail"


def _llama_loader(reason: str) -> str:
    # round62_make/m15_llama_server_mmap_qwen3_8b.py (round 62): llama_cpp.server under ulimit -v, a 4.4 GiB file mapped
    return ("done_getting_tensors: tensor 'token_embd.weight' (q4_0) (and 146 others) cannot be used with preferred "
            "buffer type CPU_REPACK, using CPU instead\n"
            f"llama_model_load: error loading model: mmap failed: {reason}\n"
            "llama_model_load_from_file_impl: failed to load model\n"
            "Traceback (most recent call last):\n"
            + _SITE + 'llama_cpp/_internals.py", line 62, in __init__\n'
            '    raise ValueError(f"Failed to load model from file: {path_model}")\n'
            "ValueError: Failed to load model from file: /tmp/collect62/run-6c1cdc3d/qwen3-8b.q4_0.gguf\n")


def test_llama_cpp_loader_mmap_refused_memory_is_its_weights_allocation() -> None:
    d = diagnose_text(_llama_loader("Cannot allocate memory"))
    assert (d.category, d.entry.id if d.entry else None) == ("llamacpp_alloc_fail", "llamacpp-weights-alloc")


def test_llama_cpp_loader_mmap_other_errno_is_not_memory() -> None:
    # ENODEV: the file is on a mount that cannot be mapped (ollama/ollama#12058, a corpus look-alike, says it so)
    assert diagnose_text(_llama_loader("No such device")).category == "not_memory"


# round62_make/m20_transformers_upcast_bf16_checkpoint.py (round 62): from_pretrained(dtype=torch.float32) of a bf16
# checkpoint under RLIMIT_AS; safetensors' safe_open (Rust) refuses the mapping
_UPCAST = ("Traceback (most recent call last):\n"
           '  File "/tmp/collect62/run-78e9f52c/user.py", line 5, in <module>\n'
           "    model = AutoModelForCausalLM.from_pretrained('/tmp/collect62/run-78e9f52c/tiny-model', dtype=torch.float32)\n"
           + _SITE + 'transformers/modeling_utils.py", line 4444, in from_pretrained\n'
           "    loading_info, disk_offload_index = cls._load_pretrained_model(\n"
           "                                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           + _SITE + 'transformers/modeling_utils.py", line 4579, in _load_pretrained_model\n'
           '    file_pointer = safe_open(file, framework="pt", device=device, backend=backend)\n'
           "MemoryError: Cannot allocate memory (os error 12)\n")


def test_rust_os_error_12_is_the_hosts_memory() -> None:
    d = diagnose_text(_UPCAST)
    assert (d.category, d.entry.id if d.entry else None) == ("oom_killer", "host-ram-alloc")


@pytest.mark.parametrize("text", [
    # https://github.com/meilisearch/meilisearch/issues/4217 (a Rust server's own error, its title)
    "Error: Cannot allocate memory (os error 12)\n",
    # https://github.com/wasmerio/wasmer-go/issues/335 (a Rust runtime's error through Go, its title)
    "Insufficient resources: Failed to create memory: Error when allocating memory: Cannot allocate memory "
    "(os error 12)\n",
])
def test_rust_os_error_12_in_public_threads(text: str) -> None:
    assert diagnose_text(text).category == "oom_killer"


def test_rust_other_os_error_is_not_memory() -> None:
    # ENOENT (os error 2) in the same place: a missing file, not memory
    text = _UPCAST.replace("MemoryError: Cannot allocate memory (os error 12)",
                           "FileNotFoundError: No such file or directory (os error 2)")
    assert diagnose_text(text).category == "not_memory"


# round62_make/l14_bitsandbytes_4bit_cpu.py (round 62): 4-bit onto "cuda" with a CPU-only torch, labelled not memory
_BNB_NO_CUDA = ("Traceback (most recent call last):\n"
                + _SITE + 'transformers/modeling_utils.py", line 4444, in from_pretrained\n'
                "    loading_info, disk_offload_index = cls._load_pretrained_model(\n"
                + _SITE + 'transformers/modeling_utils.py", line 5190, in caching_allocator_warmup\n'
                "    index = device.index if device.index is not None else accelerator_module.current_device()\n"
                + _SITE + 'torch/cuda/__init__.py", line 522, in _lazy_init\n'
                '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
                "AssertionError: Torch not compiled with CUDA enabled\n")


def test_transformers_disk_offload_index_variable_is_not_an_offload_error() -> None:
    assert diagnose_text(_BNB_NO_CUDA).category == "not_memory"


def test_accelerates_disk_offload_function_still_is() -> None:
    # accelerate's message naming its function (huggingface/accelerate#2726, a corpus text labelled offload_error)
    text = ("ValueError: You are trying to offload the whole model to the disk. Please use the `disk_offload` "
            "function instead.\n")
    assert diagnose_text(text).category == "offload_error"
