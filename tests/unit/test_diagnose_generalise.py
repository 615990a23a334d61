"""Round 19's misses (session 10, tuning since diagnose15), fixed by what the words mean rather than by the threads'
strings: the Chinese words for memory running out (内存 the computer's RAM, 显存 the card's), "OutOfMemory" written
against Chinese text, and the rules added after them. Each test pastes what a user would and reads `runlocal
diagnose`'s answer; beside each rule, its look-alikes pasted by hand (a question, a guess, a problem said solved, the
card named, the card's own error in the same paste).
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES


@pytest.mark.parametrize("said", [
    "20核cpu，32G内存，用cpu推理，加载Baichuan-7B-Chat的模型内存溢出",        # "memory overflowed" loading on a CPU
    "run_gptq.py 对合并后的模型进行GPTQ4量化，直接把内存耗尽了",                 # "memory exhausted" quantizing
    "加载模型报错，内存不足",
    "转换模型时爆内存了",
])
def test_ram_said_short_in_chinese_is_the_hosts_memory(said):
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said, expected", [
    ("加载模型时显存溢出", "cuda_oom_load"),                 # 显存 is the card's memory
    ("推理时很容易因为第一张卡显存溢出报错", "cuda_oom_long_context"),  # ... while inferring: the run
    ("GPU内存不足，模型加载失败", "cuda_oom_load"),            # 内存 said of the card just named
    ("显卡内存耗尽了", "cuda_oom_phase_unstated"),
])
def test_the_cards_memory_said_short_in_chinese_is_the_cards(said, expected):
    assert diagnose_text(said).category == expected


def test_outofmemory_written_against_chinese_text_is_read():
    said = "[Bug] 多卡部署InternVL-Chat-V1-5时，在显存足够的情况下也会OutOfMemory。"
    assert diagnose_text(said).category in MEMORY_CATEGORIES


def test_the_cards_own_error_wins_over_ram_said_loosely():
    # users write 内存溢出 of the card too; the paste's CUDA message says which memory it was (Qwen3#174)
    said = ("qwen1.5-7b-chat模型内存溢出\n当token达到6k时，出现内存溢出\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.14 GiB (GPU 1; 23.65 GiB total "
            "capacity; 10.10 GiB already allocated; 276.50 MiB free; 10.58 GiB reserved in total by PyTorch)")
    assert diagnose_text(said).category == "cuda_oom_long_context"


@pytest.mark.parametrize("said", [
    "是不是内存不足？",              # a question
    "内存溢出吗",
    "可能是内存不足导致的",           # a guess
    "内存不足的问题已经解决了",        # solved
    "32G内存，64G显存，配置够用",      # a machine described, nothing ran short
])
def test_ram_words_that_report_no_shortage_are_not_memory(said):
    assert diagnose_text(said).category not in MEMORY_CATEGORIES


TORCH_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.66 GiB. GPU 0 has a total capacity "
             "of 79.25 GiB of which 1.57 GiB is free.")


@pytest.mark.parametrize("said", [
    "CUDA out of memory at inference time with decoder_explain",
    "[Bug]: OOM During QDQ Inference with Over 20 GB Free Memory\n" + TORCH_OOM,
    "InternVL3-78B long video inference error: cuda out of memory",
    "Loading checkpoint shards: 100%|██████| 3/3\nLoading LLAMA Done\nInitialization Finished\n\nThen, I encountered "
    "an error :\n" + TORCH_OOM,
    "data = json.load(f)\noutputs = model.generate(**inputs)\n" + TORCH_OOM,
])
def test_the_run_said_in_other_words_is_the_run(said):
    assert diagnose_text(said).category == "cuda_oom_long_context"


@pytest.mark.parametrize("said", [
    # vLLM's offline engine being built: LLM(...) loads and profiles; the folder's name is no llama.cpp log
    'llm = LLM(model="/root/Thot/llama_model_weights/quantized/Q4/Phind-CodeLlama-34B-v2-AWQ", quantization=\'awq\')\n'
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.75 GiB. GPU 0 has a total capacty of "
    "23.65 GiB of which 5.10 GiB is free.",
    # the model script's own loader, named on the traceback's line
    "torch.cuda.OutOfMemoryError: CUDA out of memory\nTraceback (most recent call last):\n"
    '  File "/home/u/llama/inference.py", line 48, in run\n'
    "    generator = load(ckpt_dir, tokenizer_path, local_rank, world_size, max_seq_len, max_batch_size)\n"
    '  File "/home/u/llama/inference.py", line 32, in load\n    model = Transformer(model_args)',
    # the weights said loaded, then a load step after it (the KV cache) and the failure: still start-up
    "Loading checkpoint shards: 100%\nModel loaded successfully\nInitializing KV cache (initialize_kv_cache)\n"
    + TORCH_OOM,
    "inference server failed to start: CUDA out of memory while loading the model",
])
def test_the_load_said_in_other_words_is_the_load(said):
    assert diagnose_text(said).category == "cuda_oom_load"


def test_a_folder_named_like_a_llamacpp_function_does_not_make_a_pytorch_oom_ggmls():
    said = ("python run.py --model /data/llama_model_files/7b\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert diagnose_text(said).category in ("cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated")
    assert diagnose_text("llama_model_load: error loading model: unable to allocate CUDA0 buffer").category \
        == "llamacpp_alloc_fail"


def test_one_host_block_of_terabytes_is_a_size_computed_wrong():
    # PaddleNLP#7231: a small information-extraction model on a CPU asks for one 3.8 TiB block
    said = ("[Question]: MemoryError: (ResourceExhausted) Fail to alloc memory of 4131529007104 size, error code is 12.\n"
            "ie = Taskflow('information_extraction', schema=['组织', '人名'])")
    assert diagnose_text(said).category == "not_memory"


@pytest.mark.parametrize("said", [
    # the same allocator's words with a size a machine has: the host's RAM ran out
    "(ResourceExhausted) Fail to alloc memory of 2147483648 size, error code is 12.",
    "RuntimeError: [enforce fail at alloc_cpu.cpp:114] . DefaultCPUAllocator: can't allocate memory: you tried to "
    "allocate 68719476736 bytes. Error code 12 (Cannot allocate memory)",
])
def test_a_host_block_a_machine_has_is_the_hosts_memory(said):
    assert diagnose_text(said).category == "oom_killer"


def test_a_gpu_block_of_hundreds_of_gib_for_a_long_input_stays_a_lack_of_memory():
    # eager attention over a 200k-token input does ask for that much at once: the input is the cause
    said = ("summarising a 200k-token document\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "1200.00 GiB. GPU 0 has a total capacity of 79.25 GiB of which 60.10 GiB is free.")
    assert diagnose_text(said).category in MEMORY_CATEGORIES


def test_an_oom_said_of_the_host_in_words_is_the_hosts():
    said = ("OOM during save_pretrained of compressed model\nThe OOM was for CPU RAM. GPU RAM usage was normal, the model "
            "takes up less than half of the GPU.")
    assert diagnose_text(said).category == "oom_killer"
    assert diagnose_text("the OOM is not on the host, it is CUDA out of memory on GPU 0").category == "cuda_oom_phase_unstated"


def test_an_oom_guessed_from_exit_137_while_memory_use_is_low_is_a_kill_from_outside():
    said = ("bug: Unexpected OOM in ChatGLM 6B\nThe server will return 137 exit code after a request to the server. "
            "But the memory and the GPU memory usage is low (12/24GB GPU, 3GB/32GB memory)")
    assert diagnose_text(said).category == "not_memory"


@pytest.mark.parametrize("said", [
    # the program's own out-of-memory message outranks the writer's figures
    "Unexpected OOM\nGPU memory usage is low\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 30 GiB",
    # Docker's own word for the cgroup killer
    "container exits with code 137 (OOMKilled)\nmemory use is low",
    # memory said high: the 137 is the killer's
    "OOM in the container, exit code 137\nmemory usage was high, 31/32GB",
])
def test_exit_137_with_the_programs_own_oom_or_memory_high_stays_memory(said):
    assert diagnose_text(said).category in MEMORY_CATEGORIES


def test_a_finished_shard_bar_then_a_generation_is_the_run():
    said = ("CUDA out of memory : I am using Colab T4 GPU\n!python generate.py\n"
            "Loading checkpoint shards: 100% 33/33 [01:13<00:00,  2.22s/it]\n\nInstruction: Tell me about alpacas.\n"
            "UserWarning: `do_sample` is set to `False`. However, `temperature` is set -- this flag is only used in "
            "sample-based generation modes.")
    assert diagnose_text(said).category == "cuda_oom_long_context"


@pytest.mark.parametrize("said", [
    # the shards read, then moved to the card: still the load
    "Loading checkpoint shards: 100%|██████| 2/2\nTraceback (most recent call last):\n"
    '  File "run.py", line 9, in <module>\n    model = model.to("cuda")\n' + TORCH_OOM,
    "Loading checkpoint shards: 100%|██████| 2/2\n  File \"accelerate/big_modeling.py\", in dispatch_model\n" + TORCH_OOM,
])
def test_a_finished_shard_bar_then_a_load_step_is_the_load(said):
    assert diagnose_text(said).category == "cuda_oom_load"


@pytest.mark.parametrize("said, expected_memory", [
    ("Memory (system RAM) usage grows very fast (about 30mb/sec) continuously until it saturates the host and hangs.",
     True),
    ("RAM usage keeps increasing until the machine freezes", True),
    ("the RAM usage is stable, it does not grow until it hangs", False),   # said not to grow
    ("RAM use never increases until OOM", False),
])
def test_ram_said_to_grow_until_the_host_gives_out_is_the_hosts(said, expected_memory):
    got = diagnose_text(said).category
    assert (got == "oom_killer") if expected_memory else got not in MEMORY_CATEGORIES


def test_the_cards_ram_said_to_grow_is_not_the_hosts():
    assert diagnose_text("GPU RAM usage grows until it OOMs").category != "oom_killer"
