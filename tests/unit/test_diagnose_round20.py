"""Round 20's misses (session 10, tuning since diagnose16), fixed by what the words and the traceback mean rather than
by the threads' strings: an out-of-memory said of a machine named by its RAM is the host's; a CUDA out-of-memory
raised by pinning host memory (``pin_memory(``) is pinned host memory, not the card; a package list's line
("vllm-flash-attn 2.6.1") is no phase word. Each test pastes what a user would and reads `runlocal diagnose`'s
answer; beside each rule, its look-alikes pasted by hand (the card named on the line, PyTorch's own message, a
pinned setting that is no call, an OOM far from the pinning, a package word in prose).
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

TORCH_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.65 GiB total "
             "capacity; 22.90 GiB already allocated; 3.06 MiB free; 23.05 GiB reserved in total by PyTorch)")


@pytest.mark.parametrize("said", [
    "fastchat.model.apply_delta out of memory, is there a way to apply on a 64GB machine for 13B\n"
    "My server have 2 A100, so gpu is not a problem. thanks",
    "Error: out of memory loading llama 13B on a 32GB server",
    "convert.py runs out of memory on my 16 GB laptop",
])
def test_an_oom_said_of_a_machine_by_its_ram_is_the_hosts(said):
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said", [
    "CUDA out of memory on a 64GB machine with a 3090",          # CUDA named: the card's
    "OOM on a 16GB laptop with an RTX 4060",                     # a card named on the line
    "out of memory when loading 70B on my 24gb gpu",             # "gpu", not a machine
    TORCH_OOM + "\nI run it on a 64GB machine",                  # PyTorch's own message decides
])
def test_the_card_named_with_the_machine_stays_the_card(said):
    assert diagnose_text(said).category != "oom_killer"
    assert diagnose_text(said).category in MEMORY_CATEGORIES


def test_a_cuda_oom_raised_by_pin_memory_is_pinned_host_memory():
    said = ("CUDA OOM errors in wsl2\n"
            "Trying to run this in Win10 WSL2 on a 3080TI /w 12gb VRAM. VRAM memory usage never goes above 6.5gb\n"
            '  File "/home/me/mixtral-offloading/src/expert_cache.py", line 68, in <listcomp>\n'
            "    torch.UntypedStorage(self.module_size).pin_memory(self.device) for _ in range(offload_size)]\n"
            '  File "/home/me/.conda/envs/mixtral/lib/python3.10/site-packages/torch/storage.py", line 226, in pin_memory\n'
            "    cast(Storage, self)).pin_memory(device)\n"
            "RuntimeError: CUDA error: out of memory\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    got = diagnose_text(said)
    assert got.category == "llamacpp_alloc_fail" and got.entry is not None and got.entry.id == "pinned-host-oom"


@pytest.mark.parametrize("said", [
    # a setting, not a call: vLLM's WSL warning, then the card's own out-of-memory much later in start-up
    "WARNING cache_engine.py:96] Using 'pin_memory=False' as WSL is detected. This may slow down the performance.\n"
    "INFO Loading model weights took 13.5 GB\n" + TORCH_OOM,
    # a DataLoader built with pin_memory=True, then an OOM in the forward pass many lines later
    "loader = DataLoader(ds, batch_size=8, pin_memory=True)\n" + "step 1\n" * 6
    + '  File "model.py", line 80, in forward\n    attn = q @ k.transpose(-2, -1)\n' + TORCH_OOM,
])
def test_pinning_named_without_the_call_raising_stays_the_card(said):
    got = diagnose_text(said)
    assert got.entry is not None and got.entry.id != "pinned-host-oom"
    assert got.category in MEMORY_CATEGORIES


def test_a_package_list_is_no_phase_word():
    # "vllm-flash-attn" is a package installed, not attention running: the demo was starting (VITA#33)
    said = ('out of memory when running demo via "python -m web_demo.web_ability_demo demo_VITA_ckpt/\n'
            "The CUDA version is 12.2.\nvllm 0.5.5\nvllm-flash-attn 2.6.1\ngpu：8*v100 32G")
    assert diagnose_text(said).category == "cuda_oom_load"


def test_attention_in_a_traceback_is_still_the_run():
    # the look-alike: attention named in a frame, not a package line
    said = ('  File "modeling_llama.py", line 310, in forward\n    attn_output = self.o_proj(attn_output)\n'
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert diagnose_text(said).category == "cuda_oom_long_context"


LLAMAFILE_CPU_BUFFER = ("llama_new_context_with_model:        CPU  output buffer size =     0.14 MiB\n"
                        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 84940832\n"
                        "ggml_gallocr_reserve_n: failed to allocate CPU buffer of size 84940800\n"
                        "llama_new_context_with_model: failed to allocate compute buffers")


def test_a_small_host_block_refused_with_far_more_ram_said_free_is_not_memory():
    said = ("CPU memory alloc on Windows sometimes fails\n"
            "llamafile crashes, this is the log I have more then 12GByte of free ram\n" + LLAMAFILE_CPU_BUFFER)
    got = diagnose_text(said)
    assert got.category == "not_memory" and got.entry is not None and got.entry.id == "notmem-small-host-allocation"


@pytest.mark.parametrize("said", [
    # the same log without the writer's figure: the host's allocation failure, as before
    LLAMAFILE_CPU_BUFFER,
    # free RAM said, but the refused block is most of it (8 GiB of 12 GB): a lack of RAM
    "I have 12 GB of free RAM\nggml_gallocr_reserve_n: failed to allocate CPU buffer of size 8589934592",
    # free memory said of the card, not the host
    "I have 16 GB of free memory on the GPU\n" + LLAMAFILE_CPU_BUFFER,
    # free RAM said, but the refused block is the card's
    "I have 64 GB of free RAM\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 84.00 MiB on device 0: "
    "cudaMalloc failed: out of memory",
])
def test_free_ram_said_beside_a_block_it_could_not_hold_or_the_cards_stays_memory(said):
    assert diagnose_text(said).category in MEMORY_CATEGORIES
