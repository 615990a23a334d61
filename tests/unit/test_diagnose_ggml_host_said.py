"""A tuning miss of session 14 (diagnose41), fixed by a signal and tested with the user's paste and the look-alikes
beside it: a ggml runtime (koboldcpp, llama.cpp, Ollama …) showing a memory allocation error while it loads the model,
as its user words it, is ggml's buffer for the weights refused (ggml allocates each buffer whole; the user saw "the
number of allocated bytes … approximately equal to the size of the model"), not the kernel killing the process
(koboldcpp#2330, measurements/public_errors/round17.jsonl). The runtime, the allocator's words and the phase decide:
without a ggml runtime, without the words of an allocation error, or in a run, the answer stays the host's RAM.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

# koboldcpp#2330, as pasted
KOBOLDCPP_2330 = (
    "Tried running it on version koboldcpp-1.114.1 with low ram\n"
    "RAM: 4 GB DDR4.\n"
    "Video Card: Tesla P40 (24 GB VRAM), 2 cards. 24 x 2 VRAM = 48 GB VRAM.\n"
    "I tried running it on version koboldcpp-1.114.1, model qwen3.6-27B.\n"
    "I tried using CUDA and Vulkan, but neither option allowed the video card to run the model.\n"
    "koboldcpp-1.114.1 crashes when loading the model, displaying something like a memory allocation error in the "
    "console.\n"
    "I notice that the number of allocated bytes in the console error when the program crashes is approximately equal "
    "to the size of the model on the disk!")


def test_a_ggml_runtimes_allocation_error_while_loading_is_its_weights_buffer():
    d = diagnose_text(KOBOLDCPP_2330)
    assert d.category == "llamacpp_alloc_fail"
    assert d.entry is not None and d.entry.id == "llamacpp-weights-alloc"


def test_the_same_words_with_no_ggml_runtime_named_stay_the_hosts_ram():
    pasted = ("RAM: 4 GB DDR4.\n"
              "The program crashes when loading the model, displaying something like a memory allocation error in "
              "the console.")
    assert diagnose_text(pasted).category == "oom_killer"


def test_the_same_error_while_generating_stays_the_hosts_ram():
    # the phase: a run's allocation is not the weights' buffer
    pasted = KOBOLDCPP_2330.replace("crashes when loading the model", "crashes while generating a reply")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_ggml_runtimes_ram_growing_until_the_host_saturates_stays_the_hosts_ram():
    # ollama#10688 (round 17), as pasted: RAM use said to grow without an allocation error: a leak the host ran out on
    pasted = ("Memory leak during inference using Gemma3 with structured output\n"
              "I am getting what looks like a big memory leak when using ollama on a debian host with structured "
              "output with gemma3-12b. It's running on a 3090Ti with default settings.\n"
              "Memory (system RAM) usage grows very fast (about 30mb/sec) continuously until it saturates the host "
              "and hangs.")
    assert diagnose_text(pasted).category == "oom_killer"
