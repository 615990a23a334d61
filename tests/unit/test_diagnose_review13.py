"""Review 13's misfires of session 13's diagnosis signals (/work/wt/_notes/review13.md findings 2, 3, 6, 7), each
tested with the reviewer's paste as a user would send it and with the paste the signal was written for beside it."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# -- a script's frames say host RAM only as JavaScript's own out-of-memory's frames, with no GPU named around --------


def test_comfyui_browser_error_above_pytorchs_device_refusal_stays_the_cards():
    # a ComfyUI user pastes the browser console (an unrelated TypeError, frames in app.js) above the server's log
    pasted = ("Prompt executed in 0.01 seconds\n"
              "TypeError: Cannot read properties of undefined (reading 'widgets')\n"
              "    at app.js:1547:33\n"
              "    at Array.forEach (<anonymous>)\n"
              "    at ComfyApp.graphToPrompt (http://127.0.0.1:8188/scripts/app.js:1540:22)\n"
              "Error occurred when executing KSampler:\n\n"
              "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
              "Currently allocated     : 7.21 GiB\n"
              "Requested               : 1.00 GiB\n"
              "Device limit            : 8.00 GiB\n")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_webllm_out_of_memory_on_webgpu_named_the_line_above_is_the_cards():
    # WebLLM runs only on WebGPU: the card is named on the line before the script's error
    pasted = ("Loading Llama-3.2-3B-Instruct-q4f16_1-MLC with WebLLM on WebGPU (Chrome 126, RTX 3050 4GB)\n"
              "Error: Out of memory\n"
              "    at Object.alloc (https://esm.run/@mlc-ai/web-llm/lib/index.js:2:88123)\n"
              "    at async MLCEngine.reload (https://esm.run/@mlc-ai/web-llm/lib/index.js:2:91002)\n")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_webllm_frames_alone_say_the_card():
    # the same error without the line naming the card: web-llm allocates WebGPU buffers, never the JS heap
    pasted = ("Error: Out of memory\n"
              "    at Object.alloc (https://esm.run/@mlc-ai/web-llm/lib/index.js:2:88123)\n"
              "    at async MLCEngine.reload (https://esm.run/@mlc-ai/web-llm/lib/index.js:2:91002)\n")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_node_llama_cpp_out_of_memory_creating_a_context_is_the_cards():
    # node-llama-cpp's frames: the binding over llama.cpp, whose context (KV cache) allocation failed
    pasted = ("Error: Out of memory\n"
              "    at LlamaContext._create (file:///home/u/bot/node_modules/node-llama-cpp/dist/evaluator/"
              "LlamaContext/LlamaContext.js:688:19)\n"
              "    at async LlamaModel.createContext (file:///home/u/bot/node_modules/node-llama-cpp/dist/evaluator/"
              "LlamaModel/LlamaModel.js:402:16)\n")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_script_frames_before_a_bare_out_of_memory_do_not_make_it_the_scripts():
    # frames that come before the failing line belong to another error
    pasted = ("TypeError: x is undefined\n"
              "    at render (/app/node_modules/ui/dist/index.js:10:5)\n"
              "Error: Out of memory\n")
    assert diagnose_text(pasted).category != "oom_killer"


def test_tensorflow_js_weight_concatenation_in_react_native_stays_host_ram():
    # tfjs#2637 (the paste the signal was written for): a script's frames follow the error, no GPU named
    pasted = ("[Unhandled promise rejection: Error: Out of memory]\n"
              "- node_modules\\@tensorflow\\tfjs-core\\dist\\io\\io_utils.js:328:30 in concatenateArrayBuffers\n"
              "- node_modules\\@tensorflow\\tfjs-core\\dist\\io\\http.js:234:95 in <unknown>")
    assert diagnose_text(pasted).category == "oom_killer"


def test_v8_javascript_heap_out_of_memory_stays_host_ram_with_a_gpu_named():
    # V8's own refusal names its heap: host RAM even in a log that names the card
    pasted = ("Using device: NVIDIA GeForce RTX 4090\n"
              "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
              " 1: 0xb86ecf node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]")
    assert diagnose_text(pasted).category == "oom_killer"


# -- cuFFT's start-up banner is no run -------------------------------------------------------------------------------


def test_tensorflows_cufft_registration_banner_above_a_torch_oom_does_not_make_it_the_run():
    # TensorFlow >= 2.14 prints these at import (transformers imports it beside torch); the failure says no phase
    pasted = ("2024-05-02 09:12:01.101 E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:607] Unable to "
              "register cuFFT factory: Attempting to register factory for plugin cuFFT when one has already been "
              "registered\n"
              "2024-05-02 09:12:01.102 E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:1515] Unable to "
              "register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been "
              "registered\n"
              "Traceback (most recent call last):\n"
              '  File "/home/u/app.py", line 20, in <module>\n'
              "    main()\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB. GPU 0 has a total capacity "
              "of 11.72 GiB of which 98.56 MiB is free. Including non-PyTorch memory, this process has 11.61 GiB "
              "memory in use.\n")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_pytorch_cufft_alloc_failed_in_a_training_step_is_the_cards_memory():
    # torch.fft raises cuFFT's own status when its plan cannot be allocated (cufft.h CUFFT_ALLOC_FAILED = 2)
    pasted = ("Traceback (most recent call last):\n"
              '  File "train.py", line 88, in <module>\n'
              "    spec = torch.fft.rfft(x, dim=-1)\n"
              "RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED\n")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"
    # another cuFFT status is not memory
    other = pasted.replace("CUFFT_ALLOC_FAILED", "CUFFT_INTERNAL_ERROR")
    assert diagnose_text(other).category not in MEMORY_CATEGORIES



# -- .NET's OutOfMemoryException with DirectML / a card named is the card's E_OUTOFMEMORY -----------------------------


def test_dotnet_out_of_memory_loading_an_onnx_model_on_directml_is_the_cards():
    # ONNX Runtime GenAI on the DirectML execution provider: D3D12's E_OUTOFMEMORY surfaces as .NET's exception
    pasted = ("LearningModelDevice: DirectXHighPerformance (NVIDIA GeForce RTX 3060 Laptop GPU, 6 GB)\n"
              "Loading phi-3-mini-4k-instruct (fp16 ONNX, 7.6 GB) with the DirectML execution provider\n"
              "Unhandled exception. System.OutOfMemoryException: Not enough memory resources are available to "
              "complete this operation. (0x8007000E (E_OUTOFMEMORY))\n"
              "   at Microsoft.ML.OnnxRuntimeGenAI.Model..ctor(String modelPath)\n"
              "   at ChatApp.Program.Main(String[] args) in C:\\src\\ChatApp\\Program.cs:line 14\n")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_dotnet_out_of_memory_with_no_card_named_stays_host_ram():
    # the same exception from a service with no GPU in its log: the CLR's managed heap
    pasted = ("info: Ingest[0] Reading 1.2 million rows into a DataTable\n"
              "Unhandled exception. System.OutOfMemoryException: Exception of type 'System.OutOfMemoryException' "
              "was thrown.\n"
              "   at System.Collections.Generic.Dictionary`2.Resize()\n")
    assert diagnose_text(pasted).category == "oom_killer"


def test_go_runtime_out_of_memory_in_ollamas_log_stays_host_ram():
    # Ollama's Go runtime dying names the card on an earlier line; Go's heap is host memory
    pasted = ('time=2024-11-02T10:01:12.220Z level=INFO source=ggml.go:89 msg="ggml_cuda_init: found 1 CUDA devices" '
              'Device 0="NVIDIA GeForce RTX 4090, compute capability 8.9"\n'
              "fatal error: runtime: out of memory\n"
              "runtime stack:\n"
              "runtime.throw({0x5596c3d2e2f1?, 0x0?})\n"
              "\truntime/panic.go:1023 +0x5c\n"
              "runtime.sysMap(0xc400000000, 0x400000000, 0x5596c4a8e4d8?)\n"
              "\truntime/mem_linux.go:187 +0x11b\n")
    assert diagnose_text(pasted).category == "oom_killer"


# -- a warning found to be the failure reads its own lines, as any chosen line does ----------------------------------


def test_wake_up_far_above_a_final_oom_warning_does_not_name_the_warnings_cause():
    # a vLLM log: a sleep-mode wake-up and a fragmentation note early on, 45 quiet lines, then the log ends on an
    # out-of-memory warning while loading: the wake-up is outside the warning's 40 lines and says nothing of it
    pasted = ("INFO 05-01 10:00:00 gpu_worker.py:98] Waking up: wake_up(tags=['weights']) via cumem_allocator\n"
              "Of the allocated memory 20.1 GiB is allocated by PyTorch, and 3.2 GiB is reserved by PyTorch but "
              "unallocated.\n"
              + "".join(f"INFO 05-01 10:00:{i:02d} engine.py:300] Avg prompt throughput: 0.0 tokens/s\n"
                        for i in range(45))
              + "WARNING 05-01 10:01:00 model_runner.py:1200] CUDA out of memory while loading the model weights\n")
    assert diagnose_text(pasted).category == "cuda_oom_load"
