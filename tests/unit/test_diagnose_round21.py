"""Round 21's misses (session 10, tuning since diagnose17), fixed by what the words mean rather than by the threads'
strings: a card's out-of-memory hyphenated or called an overflow of its memory, the operating system named as what
killed the program, a card said to be used up already, "Memory Error" in words beside a CUDA out-of-memory, a runtime's
name inside another word, and the run said in prose (an evaluation, questions one after another, the n-th item, a
file processed, a reply streamed, frames fed, a video inferred, an input grown). Each test pastes what a user would
and reads `runlocal diagnose`'s answer; beside each rule, its look-alikes pasted by hand.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

TORCH_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.65 GiB total "
             "capacity; 22.90 GiB already allocated; 3.06 MiB free; 23.05 GiB reserved in total by PyTorch)")


# -- a card's out-of-memory in the writer's words --------------------------------------------------------------------

@pytest.mark.parametrize("said", [
    "I had encountered CUDA out-of-memory.",
    "GPU out-of-memory on a 4070 Ti when loading the 7B",
    "when launching demo.py on a 16G card I ran into a CUDA memory overflow error",
    "got a GPU memory overflow after loading the model",
])
def test_a_cards_out_of_memory_hyphenated_or_called_an_overflow_is_memory(said):
    assert diagnose_text(said).category in MEMORY_CATEGORIES


@pytest.mark.parametrize("said", [
    "Error: buffer overflow detected in tokenizer.cpp",                      # a buffer, not the card's memory
    "ValueError: integer overflow in memory size computation",               # a size computed wrongly
    "the out-of-memory killer docs say nothing about this; RuntimeError: Expected all tensors to be on the same device",
])
def test_overflows_and_hyphenated_words_that_are_no_cards_oom_are_not_memory(said):
    assert diagnose_text(said).category not in MEMORY_CATEGORIES


# -- the operating system named as what ended the program ------------------------------------------------------------

def test_killed_by_os_on_a_mac_is_the_os_ending_it_for_memory():
    said = ("killed by os when running mac m3max and 128G\n"
            "dan@MacBook-Pro grok-1 % python3.11 run.py\n"
            "INFO:jax._src.xla_bridge:Unable to initialize backend 'cuda':")
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said", [
    "killed by os because of a time limit on the cluster",
    "llama-server was killed by the kernel with signal 15 (SIGTERM) when I pressed ctrl-c",
])
def test_a_kill_by_the_os_for_another_named_reason_is_not_memory(said):
    assert diagnose_text(said).category not in MEMORY_CATEGORIES


def test_a_kill_by_an_os_watchdog_is_not_read_as_the_os_ending_it_for_memory():
    # "killed" alone is still the bare kill it was before (process-killed: a kill with no message is usually memory);
    # the watchdog named keeps it from the stronger reading
    got = diagnose_text("the process was killed by the OS watchdog after 60 s without a heartbeat")
    assert got.entry is not None and got.entry.id != "os-killed-for-memory"


# -- a card used up by another job -----------------------------------------------------------------------------------

def test_a_card_said_consumed_already_is_held_by_another_process():
    said = ("CUDA out of memory for H100 80GB for lmms-lab/llama3-llava-next-8b\n"
            'I had misspelled "CUDA_VISIBLE_DEVICES" and it was still running on a GPU that was consumed already.')
    got = diagnose_text(said)
    assert got.category == "vllm_gpu_util" and got.entry is not None and got.entry.id == "gpu-held-by-other-process"


@pytest.mark.parametrize("said", [
    # exclusive compute mode: the device is busy, its memory is not the question
    "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
    # a port, not a card
    "OSError: [Errno 98] address already in use: port 8000 is occupied by another process",
])
def test_a_busy_device_or_an_occupied_port_is_not_another_job_holding_memory(said):
    got = diagnose_text(said)
    assert got.entry is None or got.entry.id != "gpu-held-by-other-process"
    assert got.category not in MEMORY_CATEGORIES


# -- "Memory Error" in words names no memory ------------------------------------------------------------------------

def test_memory_error_in_a_title_beside_a_cuda_oom_is_the_card():
    said = ("[Question] LLaVA-NeXT-Video 7B with stride=1 Memory Error\n"
            "I am attempting to run the model on a 24GB 8GPU machine. However, I keep encountering a CUDA out of "
            "memory error no matter how many GPUs I use or the number of frames I feed into it.")
    assert diagnose_text(said).category == "cuda_oom_long_context"


@pytest.mark.parametrize("said", [
    "Memory Error when converting the 70B checkpoint",                    # nothing else says which memory: the host's
    "convert.py fails with MemoryError\nMemoryError",                     # Python's exception: the host's
])
def test_a_memory_error_with_no_card_named_stays_the_hosts(said):
    assert diagnose_text(said).category == "oom_killer"


# -- a runtime's name inside another word -----------------------------------------------------------------------------

def test_videollama_is_not_ollama():
    said = ("Cuda out of memory issue for simple inference\n"
            "I can run the VideoLLaMA2 gradio server on my 12GB GPU but not the inference script:\n"
            '  File "inference.py", line 37, in inference\n'
            "    tokenizer, model, processor, context_len = load_pretrained_model(model_path, None, model_name)\n"
            "    vision_tower.to(device=device, dtype=torch.float16)")
    got = diagnose_text(said)
    assert got.runtime != "ollama" and got.category == "cuda_oom_load"  # PyTorch's, not ggml's cudaMalloc


def test_ollama_named_as_a_word_stays_ollama():
    said = "ollama run llama3:70b\nError: llama runner process has terminated: cudaMalloc failed: out of memory"
    assert diagnose_text(said).runtime == "ollama"


# -- the run said in prose -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("said", [
    "CUDA out of memory when evaluating MMBench on an L40",
    "The LLM responds well to a few questions. However, as more questions are presented it fails with "
    '"torch.cuda.OutOfMemoryError: CUDA out of memory"',
    "加载完毕后显存占用5.6/6.0GB，发送第一个问题后爆显存",
    "I ran the code on two 4090s, and at the 500th image there was a CUDA out of memory",
    "然而我只是用baichuan处理一个10kb左右的文件，居然也会oom",
    'Error: "An error occurred during streaming"\n' + TORCH_OOM,
    "I just need to inference a 20s video on one A100 but it shows CUDA out of memory",
    "When trying to inference llava-onevision-0.5b on a 12 GB card I had encountered CUDA out-of-memory.",
    "When `seq_len` gets larger and larger the memory use grows and finally CUDA out of memory\n"
    "model = model.half().to(device)\nfor seq_len in range(1200, 1301, 5):\n    model.generate(input_ids)",
])
def test_the_run_said_in_prose_is_a_long_input(said):
    assert diagnose_text(said).category == "cuda_oom_long_context"


@pytest.mark.parametrize("said", [
    # the load said in words: evaluation words elsewhere do not move it
    "Loading checkpoint shards: 40%\n" + TORCH_OOM,
    "CUDA out of memory while loading the model for evaluation\n  File \"eval.py\", in load_model",
    # a file of weights loaded, not one processed by the model
    "加载模型文件时显存不足 CUDA out of memory",
    # a streaming flag in a config dump at start-up, then the load's OOM
    "stream=True\nLoading model weights\n" + TORCH_OOM,
])
def test_the_load_said_stays_the_load(said):
    assert diagnose_text(said).category == "cuda_oom_load"


def test_a_cuda_oom_with_no_phase_words_stays_the_load():
    # the tuning set's phase-less CUDA out-of-memory texts are mostly the load (docs/diagnosis.md, round 22 section)
    assert diagnose_text("RuntimeError: CUDA out of memory").category == "cuda_oom_phase_unstated"
