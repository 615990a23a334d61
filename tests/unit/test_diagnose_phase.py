"""The phase of an out-of-memory read from what the user says the program was doing (session 10, round 17's misses):
loading said in prose ("when loading", 加载模型时, a pipeline being built, mii.deploy) is the load; inference, a long
text, too many tokens, an image uploaded, memory growing while serving, lmdeploy's request line are the run; a load or
build said to be over lets the run words win; PyTorch's cudaMallocAsync backend is the allocator's layout; "MTL" alone
is Intel's Meteor Lake, not Apple's Metal. Each test pastes what a user would and reads `runlocal diagnose`'s answer.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of "
       "23.55 GiB of which 27.69 MiB is free. Including non-PyTorch memory, this process has 23.50 GiB memory in use.")


@pytest.mark.parametrize("said", [
    "I get CUDA OOM errors when loading larger models like bloom-7b1 (8 GPUs, 23 GB each).",
    "用 4 张 A100 做推理，在load模型时总是在 80% 左右报 oom",          # "in load model, at about 80 %, OOM"
    "加载模型时报错：",                                                     # "error while loading the model:"
    "I tried to create a pipeline with the library and it gives me this error:",
    "mii.deploy(task='text-generation', model='facebook/opt-6.7b', mii_config={'tensor_parallel': 8})",
])
def test_loading_said_in_prose_is_the_load(said):
    assert diagnose_text(f"{said}\n{OOM}").category == "cuda_oom_load"


@pytest.mark.parametrize("said", [
    "Error during inference: CUDA out of memory.",
    "推理时报错",                                   # "error while inferring"
    "输入一个长文本之后 0 卡显存突然飙升，然后 OOM",      # "after sending a long text GPU 0 spikes, then OOM"
    "token 太多 OOM 了应该怎么解决？",                 # "too many tokens, OOM, what to do?"
    "Running the needle test at 100k gives:",
    "UI 上传图片，输入提示词，提交后报错",              # "uploaded a picture, typed the prompt, submitted, error"
    "After I upload an image the server crashes with",
    "显存一直缓慢增长直到 oom",                        # "GPU memory keeps slowly growing until OOM"
    "GPU memory keeps growing until the server dies:",
    "lmdeploy - INFO - session_id=1, history_tokens=0, input_tokens=2408, max_new_tokens=2048",
])
def test_the_run_said_in_prose_is_a_long_input(said):
    assert diagnose_text(f"{said}\n{OOM}").category == "cuda_oom_long_context"


def test_a_build_said_to_be_over_lets_the_run_win():
    log = ("trtllm-build --checkpoint_dir ./ckpt --output_dir ./engine --max_num_tokens 128000 --gather_context_logits\n"
           "python3 run.py --engine_dir ./engine --max_output_len 1 --input_file 15k-tokens.txt\n"
           "The engine can be built but went OOM\n" + OOM)
    assert diagnose_text(log).category == "cuda_oom_long_context"
    # the build alone, with no word of it being over, stays the build
    build_only = "trtllm-build --checkpoint_dir ./ckpt --output_dir ./engine --max_num_tokens 128000\n" + OOM
    assert diagnose_text(build_only).category == "cuda_oom_load"


def test_finished_loading_then_an_image_is_the_run_even_with_load_words_around():
    log = ("两张显卡各 16G，device_map 改成 auto 后可以双卡加载了。单加载完模型后，UI 上传图片，提交后又报显存不足\n" + OOM)
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_gpu_memory_insufficient_in_chinese_is_a_gpu_out_of_memory():
    # 显存不足 "GPU memory insufficient", as a title, over a generate() traceback
    log = ("Demo 推理报显存不足\nUser: 请描述图片内容\nException in thread Thread-7 (generate):\n"
           "  File \"transformers/generation/utils.py\", line 2015, in generate\n")
    assert diagnose_text(log).category == "cuda_oom_long_context"
    assert diagnose_text("加载模型时显存不足").category == "cuda_oom_load"


def test_pytorch_cuda_malloc_async_backend_is_the_allocator_layout():
    log = ('[BUG] "backend:cudaMallocAsync" cause OOM\n'
           "torch.OutOfMemoryError: Allocation on device on 2x4090. Because this code in main.py\n"
           '`os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"`\n')
    assert diagnose_text(log).category == "fragmentation"


def test_a_runtimes_own_cuda_malloc_async_call_is_not_pytorchs_backend():
    # TensorRT-LLM allocates with cudaMallocAsync itself; its OOM is an ordinary one (here while loading the engine)
    log = ("UNAVAILABLE: Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA "
           "runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory")
    assert diagnose_text(log).category != "fragmentation"


def test_mtl_alone_is_intels_meteor_lake_not_apples_metal():
    log = ("llama3-8b gets OOM on MTL iGPU WSL docker vllm\n"
           "python -m ipex_llm.vllm.xpu.entrypoints.openai.api_server --device xpu --gpu-memory-utilization 0.9\n"
           "INFO model_convert.py:257] Loading model weights took 4.7184 GB\n"
           "RuntimeError: XPU out of memory. Tried to allocate 1.02 GiB\n")
    assert diagnose_text(log).category != "metal_oom"
    # Metal's own API type names still say Metal
    metal = ("ggml_metal_graph_compute: command buffer 0 failed with status 5\n"
             "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\nMTLCommandBuffer failed")
    assert diagnose_text(metal).category == "metal_oom"


@pytest.mark.parametrize("log", [
    # the new words must not turn look-alikes into memory: no memory ran short in these
    "Error during inference: RuntimeError: CUDA error: device-side assert triggered",
    "When loading the model: ValueError: Tokenizer class LLaMATokenizer does not exist or is not currently imported.",
    "加载模型时报错：OSError: Can't load tokenizer",
])
def test_phase_words_alone_do_not_make_memory(log):
    assert diagnose_text(log).category == "not_memory"


@pytest.mark.parametrize("log", [
    # 显存不足 asked, guessed or said to be solved is no report of it
    "运行报错 RuntimeError: CUDA error: device-side assert triggered\n是不是显存不足？",   # "is it VRAM shortage?"
    "显存不足的问题已经解决了，现在报 ValueError: Tokenizer class LLaMATokenizer does not exist",  # "…was solved"
    "请问 7B 模型推理需要多少显存？会不会显存不足",                                     # "will it run short?"
])
def test_gpu_memory_insufficient_asked_or_solved_is_not_a_report(log):
    assert diagnose_text(log).category not in ("cuda_oom_load", "cuda_oom_long_context")


@pytest.mark.parametrize("log", [
    "After I upload an image: TypeError: forward() got an unexpected keyword argument 'pixel_values'",
    "The engine can be built but running it gives: CUDA error: an illegal memory access was encountered",
    "memory keeps growing over time, then the server returns 500: KeyError: 'choices'",
    "pipe = pipeline('text-generation', model='foo/bar')\n"
    "OSError: foo/bar is not a local folder and is not a valid model identifier",
])
def test_run_and_load_words_do_not_make_look_alikes_memory(log):
    assert diagnose_text(log).category == "not_memory"


# -- round 18's misses (session 10): the run said as a threshold, a count of questions or a query against a server that
# started; a long input whose figures show an unused cache; data loaded for the application is not the model's load

@pytest.mark.parametrize("said", [
    "OOM when prompt length exceeds 1020.",                                 # LightLLM#28
    "It crashes once the input length goes over 8000 tokens",
    "打开页面，加载11kb的知识库，询问问题，大约3个问题后，内存溢出",              # "load a knowledge base, ~3 questions, OOM"
    "After about 5 questions the web UI dies with",
    "能正常启动，当跑一条短query时，就报out of memory 错误。",                 # "starts fine; a short query: OOM"
    "INFO:     Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)",
])
def test_the_run_as_a_threshold_a_question_count_or_a_query_is_a_long_input(said):
    assert diagnose_text(f"{said}\n{OOM}").category == "cuda_oom_long_context"


def test_loading_the_model_files_is_still_the_load_in_chinese():
    assert diagnose_text("加载模型文件时报错\n" + OOM).category == "cuda_oom_load"   # "error loading the model files"


# Langchain-Chatchat#229: 1.12 GiB asked, 0.59 free, 1.13 cached (22.12 reserved - 20.99 allocated)
CHAT_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.12 GiB (GPU 0; 23.70 GiB total "
            "capacity; 20.99 GiB already allocated; 602.56 MiB free; 22.12 GiB reserved in total by PyTorch) If reserved "
            "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.")


def test_a_run_whose_unused_cache_holds_one_block_not_two_is_the_input():
    # free + cache = 1.72 GiB: a perfect layout would pass this 1.12 GiB block and fail the next one of its size
    assert diagnose_text("询问问题，大约3个问题后，内存溢出\n" + CHAT_OOM).category == "cuda_oom_long_context"


def test_a_run_whose_unused_cache_is_a_sixth_of_its_tensors_is_the_input():
    # 3.22 GiB unused beside 19.01 GiB of tensors: reserved = 1.17 x allocated, not PyTorch's ">>" (its own message).
    # Before it raises, the allocator has freed every cached segment that holds no tensor, so what is left is split
    # space beside live tensors: a compact cache would pass this 144 MiB block, not the run
    log = ("during inference, after about 3 questions:\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
           "allocate 144.00 MiB (GPU 0; 23.69 GiB total capacity; 19.01 GiB already allocated; 77.06 MiB free; 22.23 GiB "
           "reserved in total by PyTorch)")
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_a_cache_holding_more_unused_than_in_tensors_is_fragmentation_even_in_a_run():
    # pytorch#35901's figures (1.06 GiB allocated, 12.53 GiB reserved: 11.8 x) under the same run words: the layout
    # stranded the memory, whatever the phase or the size of the block (its thread's snapshot shows the split segment)
    log = ("during inference, after about 3 questions:\nCUDA out of memory. Tried to allocate 10.84 GiB (GPU 0; 23.65 GiB "
           "total capacity; 1.06 GiB already allocated; 10.26 GiB free; 12.53 GiB reserved in total by PyTorch)")
    assert diagnose_text(log).category == "fragmentation"


def test_the_same_figures_with_no_phase_are_not_fragmentation():
    # Langchain-Chatchat#229's line alone: 1.13 GiB unused beside 20.99 GiB of tensors (reserved = 1.05 x allocated),
    # so no phase evidence leaves the load (the no-evidence default), not the allocator's layout
    assert diagnose_text(CHAT_OOM).category == "cuda_oom_phase_unstated"


def test_a_quarter_of_the_card_on_a_line_that_names_the_run_is_the_input_even_under_a_load_script():
    # ChatGLM3#1294: a script that loads (from_pretrained) then generates on a 30k-token text
    log = ("chatglm3-6b-32k处理长文本时，out of memory\n"                      # "OOM while processing a long text"
           "model = AutoModel.from_pretrained(model_path,trust_remote_code=True,device_map=\"auto\")\n"
           "generated_ids = model.generate(input_ids=input_ids, max_new_tokens=16, do_sample=False)\n"
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.18 GiB (GPU 0; 79.35 GiB total "
           "capacity; 46.59 GiB already allocated; 11.25 GiB free; 66.82 GiB reserved in total by PyTorch)")
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_a_profile_run_asking_a_quarter_of_the_card_stays_the_load():
    # vLLM's start-up profile runs the model over a dummy batch: run words only in its frames, not on the failing line
    log = ("  File \"vllm/worker/worker.py\", line 179, in determine_num_available_blocks\n"
           "    self.model_runner.profile_run()\n"
           "  File \"vllm/attention/backends/xformers.py\", line 600, in forward\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 23.68 "
           "GiB of which 3.20 GiB is free. Of the allocated memory 19.90 GiB is allocated by PyTorch, and 200.00 MiB is "
           "reserved by PyTorch but unallocated.")
    assert diagnose_text(log).category == "cuda_oom_load"
