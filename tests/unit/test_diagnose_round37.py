"""Round 37's misses (session 13, diagnose31), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: a JavaScript engine's heap is the host's memory (V8's own refusal, and a bare "Out of memory"
raised by a script's frames when no GPU backend or native runtime is named); a memory circuit breaker refusing a
request for the heap it guards (Elasticsearch's "Data too large") is the host's memory; a compute library's own
allocation (a GEMM frame, cuFFT's work area) and training said in Chinese (在训练…时) are the run; a failed allocation the
program said it would retry is not survived when the card is stated full beside it. Pastes are the threads' own lines
(measurements/public_errors/round37.jsonl). One stays unanswered (docs/diagnosis.md): mxnet#3913's "cudaMalloc
failed: out of memory" (ggml's wording, in a paste that names neither MXNet nor a phase).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES
from runlocal.diagnose.sizes import device_memory_full

# -- a JavaScript engine's heap is host memory ----------------------------------------------------------------------


def test_v8_heap_out_of_memory_while_a_model_loads_in_node_is_host_ram():
    # nsfwjs#886, as pasted: loading InceptionV3 in Node
    pasted = ("You're using the model: 'InceptionV3'.\n\n<--- Last few GCs --->\n\n"
              "[473351:0x66634f0]    30548 ms: Mark-Compact (reduce) 1945.8 (1950.7) -> 1945.8 (1949.7) MB, "
              "470.16 / 0.00 ms  (average mu = 0.443, cud\n\n<--- JS stacktrace --->\n\n"
              "FATAL ERROR: CALL_AND_RETRY_LAST Allocation failed - JavaScript heap out of memory\n"
              "----- Native stack trace -----\n\n 1: 0xb86ecf node::OOMErrorHandler(char const*, v8::OOMDetails const&) "
              "[node]")
    assert diagnose_text(pasted).category == "oom_killer"


def test_v8_reaching_its_heap_limit_in_a_build_is_host_ram():
    # the same refusal as V8 words it when the heap hits --max-old-space-size (a bundler building a web UI)
    pasted = ("<--- Last few GCs --->\n"
              "FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_javascript_call_stack_overflow_is_not_memory():
    # look-alike: V8's recursion limit is a stack depth, not the heap running out
    pasted = ("RangeError: Maximum call stack size exceeded\n"
              "    at Object.tokenize (/app/node_modules/gpt-tokenizer/dist/index.js:120:15)")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_tensorflow_js_out_of_memory_in_a_scripts_frames_is_host_ram():
    # tfjs#2637, as pasted: tf.loadGraphModel of a 275 MB model concatenating its weight files in React Native
    pasted = ("[Unhandled promise rejection: Error: Out of memory]\n"
              "- node_modules\\@tensorflow\\tfjs-core\\dist\\io\\io_utils.js:328:30 in concatenateArrayBuffers\n"
              "- node_modules\\@tensorflow\\tfjs-core\\dist\\io\\http.js:234:95 in <unknown>")
    assert diagnose_text(pasted).category == "oom_killer"


def test_tensorflow_js_out_of_memory_in_its_webgl_backend_is_the_cards():
    # look-alike: the same words raised by the WebGL backend allocate the card's memory, not the engine's heap
    pasted = ("Error: Out of memory\n"
              "    at MathBackendWebGL.acquireTexture (node_modules/@tensorflow/tfjs-backend-webgl/dist/"
              "backend_webgl.js:612:21)\n"
              "    at Engine.runKernel (node_modules/@tensorflow/tfjs-core/dist/engine.js:480:30)")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_an_apps_script_frame_over_llama_cpps_refusal_stays_llama_cpps():
    # look-alike: LM Studio's worker script calls llama.cpp, whose allocation failed (lmstudio-bug-tracker#790)
    pasted = ("error loading model: unable to allocate\n"
              "    at async Object.loadModel (C:\\Users\\Lavr\\AppData\\Local\\Programs\\LM Studio\\resources\\app\\"
              ".webpack\\lib\\llmworker.js:100:10177)\n"
              "[2025-07-24 18:11:43.513] [error] [LMSInternal][Client=LM Studio][Endpoint=loadModel] No instance "
              "reference assigned before error")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"


# -- a memory circuit breaker guarding a heap ------------------------------------------------------------------------


def test_elasticsearch_request_breaker_data_too_large_is_host_ram():
    # elasticsearch#36987, as pasted: a search refused by the request breaker (a share of the JVM heap)
    pasted = ("org.elasticsearch.transport.RemoteTransportException: [node-1][192.168.7.128:9300]"
              "[indices:data/read/search[phase/query]]\n"
              "Caused by: org.elasticsearch.common.breaker.CircuitBreakingException: [request] Data too large, data "
              "for [<reused_arrays>] would be [3844551592/3.5gb], which is larger than the limit of "
              "[3844551475/3.5gb]\n"
              "\tat org.elasticsearch.common.breaker.ChildMemoryCircuitBreaker.circuitBreak("
              "ChildMemoryCircuitBreaker.java:98) ~[elasticsearch-6.5.4.jar:6.5.4]")
    assert diagnose_text(pasted).category == "oom_killer"


def test_elasticsearch_parent_breaker_without_the_figure_is_host_ram():
    # elasticsearch#23258, as pasted: bulk writes refused by the parent breaker
    pasted = ("Caused by: org.elasticsearch.common.breaker.CircuitBreakingException: [parent] Data too large, data "
              "for [<transport_request>] would be larger than limit of [2968905318/2.7gb]\n"
              "at org.elasticsearch.indices.breaker.HierarchyCircuitBreakerService.checkParentLimit("
              "HierarchyCircuitBreakerService.java:211)")
    assert diagnose_text(pasted).category == "oom_killer"


def test_elasticsearch_result_window_too_large_is_not_memory():
    # look-alike: a setting that bounds a search's page (index.max_result_window), refused whatever the heap holds
    pasted = ("Caused by: java.lang.IllegalArgumentException: Result window is too large, from + size must be less "
              "than or equal to: [10000] but was [10010]. See the scroll api for a more efficient way to request "
              "large data sets.")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_an_open_circuit_breaker_of_a_resilience_library_is_not_memory():
    # look-alike: resilience4j refusing calls to a failing service; the breaker guards a service, not a heap
    pasted = ("io.github.resilience4j.circuitbreaker.CallNotPermittedException: CircuitBreaker 'inference' is OPEN "
              "and does not permit further calls")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_a_request_body_too_large_is_not_memory():
    # look-alike: a server refusing a request by its size (HTTP 413), no memory was asked for
    pasted = "openai.APIStatusError: Error code: 413 - {'error': 'Request Entity Too Large: payload too large'}"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


# -- a compute library's own allocation is the run -------------------------------------------------------------------


def test_cuarrays_refusing_a_gemms_output_is_the_run():
    # Rayuela.jl#40, as pasted: the quantisation run multiplying matrices on the card
    pasted = ("Creating 500000 random states... done in 4.35 seconds\n"
              "ERROR: LoadError: CUDA error: out of memory (code #2, ERROR_OUT_OF_MEMORY)\n"
              "Stacktrace:\n"
              " [1] macro expansion at /usr/local/google/home/fchern/.julia/packages/CUDAdrv/LC5XS/src/base.jl:147 "
              "[inlined]\n"
              " [7] alloc(::Int64) at /usr/local/google/home/fchern/.julia/packages/CuArrays/f4Eke/src/memory.jl:221\n"
              " [8] CuArrays.CuArray{Float32,2}(::Tuple{Int64,Int64}) at /usr/local/google/home/fchern/.julia/"
              "packages/CuArrays/f4Eke/src/array.jl:45\n"
              " [10] gemm at /usr/local/google/home/fchern/.julia/packages/CuArrays/f4Eke/src/blas/wrap.jl:903 "
              "[inlined]")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_runtime_choosing_its_gemm_algorithm_at_start_up_stays_the_load():
    # look-alike: lmdeploy's TurboMind names GEMM while it starts, then fails creating the model instance
    # (lmdeploy#1019, tuning data: the load)
    pasted = ("[WARNING] gemm_config.in is not found; using default GEMM algo\n"
              "Exception in thread Thread-21:\nTraceback (most recent call last):\n"
              '  File "/home/khj/.local/lib/python3.8/site-packages/lmdeploy/turbomind/turbomind.py", line 486, in '
              "_create_model_instance\n"
              "    model_inst = self.tm_model.model_comm.create_model_instance(\n"
              "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231")
    # since session 22 (diagnose22) TurboMind's _create_model_instance frame is read as the start-up, the load (it had
    # been answered "phase not stated"); the GEMM words still make no run
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_cufft_failing_to_allocate_on_a_second_deconvolution_is_the_run():
    # ThreeDeconv.jl#2, as pasted
    pasted = ("When I run `ThreeDeconv.deconvolve`  in the first time, it work well.\n"
              "But at second time, error occur:\n"
              "`CUFFTError(code 2, cuFFT failed to allocate GPU or CPU memory)`")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_cufft_internal_error_is_not_memory():
    # look-alike: cuFFT's internal error (a toolkit too old for the card), no allocation named
    pasted = "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


# -- training said in Chinese ---------------------------------------------------------------------------------------


def test_mxnet_refusal_while_training_said_in_chinese_is_the_run():
    # insightface#1240, as pasted: "on one GTX 750 Ti with 2 GB, while training RetinaFace it reports …"
    pasted = ("使用单张GeForce GTX 750 Ti显卡，显存是2G，在训练RetinaFace时报`MXNetError: cudaMalloc retry failed: out "
              "of memory`错误")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_question_about_what_training_needs_is_no_run():
    # look-alike: "how much memory do training and inference of InternVL2-76B need?" above a failure while lmdeploy
    # starts the model (InternVL#465, tuning data: the load)
    pasted = ("[Feature] 请问 InternVL2-Llama3-76B的训练和推理大概需要多少显存？\n"
              "我这边是A100 40G显存。即使用 lmdeploy chat /root/InternVL/ --cache-max-entry-count 0.01 量化。也是 "
              "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/"
              "memory_utils.cu:32   错误")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


# -- a retried allocation with the card full -----------------------------------------------------------------------

CUDA_JL_WARNING = ("WARNING: CUDA memory allocation failed; attempting to free up memory...\n"
                   "... waiting for pending frees (freed 0 bytes)\n"
                   "... waiting for all pending frees (freed 0 bytes)\n"
                   "... running a quick GC (freed 8.292 GiB)\n")


def test_cuda_jl_retry_with_the_card_full_during_training_is_the_run():
    # CUDA.jl#2197, as pasted: training EfficientNetv2 with the card at 99.55 %
    pasted = ("[ Info: starting training\n"
              "Effective GPU memory usage: 99.55% (11.688 GiB/11.741 GiB)\n"
              "Memory pool usage: 8.505 GiB (10.406 GiB reserved)\n" + CUDA_JL_WARNING
              + "Effective GPU memory usage: 99.55% (11.688 GiB/11.741 GiB)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_cuda_jl_retry_that_freed_room_is_survived():
    # look-alike: the same warning, the card at 61 % after the GC: the retry had room, the program went on
    pasted = ("[ Info: starting training\n" + CUDA_JL_WARNING
              + "Effective GPU memory usage: 61.20% (7.186 GiB/11.741 GiB)\n[ Info: epoch 2 done")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_kv_cache_pool_full_beside_a_warning_says_nothing_of_the_card():
    # look-alike: vLLM's scheduler reporting its KV cache pool (sized at start-up to fill) at 99.8 % after a warning
    pasted = ("WARNING 05-04 12:23:00 [cpu_offload.py:41] Failed to allocate pinned memory, falling back to pageable "
              "memory\nINFO 05-04 12:23:05 [loggers.py:116] Avg prompt throughput: 812.3 tokens/s, GPU KV cache "
              "usage: 99.8%, Prefix cache hit rate: 0.0%")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_device_memory_full_reads_the_share_from_either_figure():
    assert device_memory_full("effective gpu memory usage: 99.55% (11.688 gib/11.741 gib)")
    assert device_memory_full("gpu memory usage: (23.9 gib/24.0 gib)")
    assert not device_memory_full("effective gpu memory usage: 61.20% (7.186 gib/11.741 gib)")
    assert not device_memory_full("gpu kv cache usage: 99.8%, prefix cache hit rate: 0.0%")
    assert not device_memory_full("memory pool usage: 8.505 gib (10.406 gib reserved)")
