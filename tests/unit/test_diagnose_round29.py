"""Round 29's misses, fixed by signals (session 11, diagnose25): each with a user's paste (round 29's threads, tuning
data since round 31 was collected) and the look-alikes pasted beside it. The phase by phase.py's rule — what asked
for the memory, read from the nearest evidence: an image web UI's run button clicked ("I click "Generate"") and an
image the user tried to make, whatever the verb's spelling ("try and genatre an image"), are the run; a llama-server
whose models are said to load fine and that fails when its first request is received ran out during the run, not
while ggml placed the weights (docs/diagnosis.md)."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

_MEMORY = ("cuda_oom_load", "cuda_oom_long_context", "llamacpp_alloc_fail", "oom_killer", "metal_oom", "rocm_oom",
           "ollama_system_memory", "vllm_no_kv_blocks", "vllm_gpu_util", "sglang_kv_overflow", "offload_error",
           "vllm_engine_dead", "fragmentation")

_CUDA_ERROR_TAIL = ("Error: CUDA error: out of memory\n"
                    "CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace "
                    "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.")


def test_a_web_ui_s_generate_button_clicked_is_the_run():
    # sygil-webui#1493: a 4 GB card; the txt2img job fails the moment the user presses the run button
    pasted = 'I click "Generate", it instantly shows:\n' + _CUDA_ERROR_TAIL + "\nNVIDIA GTX1650 4GB RAM"
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_error_after_clicking_to_load_a_model_is_the_load():
    # look-alike for the phase: the button that loads a checkpoint is start-up, not a job
    pasted = 'I click "Load model" with the 13B checkpoint selected, it instantly shows:\n' + _CUDA_ERROR_TAIL
    assert diagnose_text(pasted).category == "cuda_oom_load"  # a parameter count named: the load's sign (diagnose21c)


def test_an_image_the_user_tried_to_make_is_the_run_whatever_the_spelling():
    # stable-diffusion-webui#3527: a 6 GB card, --precision full --no-half; "genatre" is the reporter's spelling
    pasted = ("every time i try and genatre an image it fails after a few sec and gives `RuntimeError: CUDA out of "
              "memory. Tried to allocate 20.00 MiB (GPU 0; 6.00 GiB total capacity; 5.26 GiB already allocated; 0 "
              "bytes free; 5.33 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try "
              "setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
              "PYTORCH_CUDA_ALLOC_CONF `")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_trying_to_load_or_download_an_image_model_is_not_the_run():
    # look-alikes for the phase: loading a checkpoint, or an image fetched, are no image being made
    for said in ("every time i try to load the image model it fails and gives ",
                 "every time i try to download an image model it fails and gives "):
        pasted = (said + "`RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 6.00 GiB total "
                  "capacity; 5.26 GiB already allocated; 0 bytes free; 5.33 GiB reserved in total by PyTorch)`")
        assert diagnose_text(pasted).category == "cuda_oom_phase_unstated", said


def test_a_llama_server_failing_on_its_first_request_after_the_models_loaded_is_the_run():
    # llama.cpp#13085: speculative decoding, row split, a 64K context; the models load, the first request fails
    pasted = ("Eval bug: llama-server stays in unresponsive state- CUDA error: out of memory -\n"
              "llama-server -m Mistral-Small-3.1-24B-Instruct-2503-Q8_0.gguf -md Mistral-Small-3.1-DRAFT-0.5B.Q8_0.gguf"
              " -fa -sm row --no-mmap -ngl 99 -ngld 99 -c 65536 --device CUDA2,CUDA1 --device-draft CUDA1 "
              "--tensor-split 0,1,1\n"
              "The models load fine. When the first request is received, a CUDA out of memory error occurs:")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_ggml_s_out_of_memory_while_the_model_loads_stays_ggml_s_allocation_failure():
    # look-alike for the phase: the same server's error while it offloads the layers (no load said to be over)
    pasted = ("llama-server -m Mistral-Small-3.1-24B-Instruct-2503-Q8_0.gguf -ngl 99 -c 65536\n"
              "load_tensors: offloading 40 repeating layers to GPU\n"
              "CUDA error: out of memory\n"
              "  current device: 1, in function ggml_backend_cuda_buffer_type_alloc_buffer at ggml-cuda.cu:535")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"


def test_a_request_received_without_the_load_said_over_stays_ggml_s():
    # look-alike: a request is received, but nothing says the model had loaded (the server loads on the first call)
    pasted = ("llama-server -m model.gguf -ngl 99\n"
              "When the first request is received, it crashes with\n"
              "CUDA error: out of memory")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"


def test_look_alikes_beside_them_are_not_called_memory():
    # round 29's look-alikes of the same web UIs and servers: no kernel image, a GGML file of the wrong format
    for pasted in ('I click "Generate", it instantly shows:\nRuntimeError: CUDA error: no kernel image is available '
                   "for execution on the device",
                   "The models load fine. When the first request is received, llama-server stops with\n"
                   "error loading model: unknown model architecture: 'mistral3'",
                   "every time i try and genatre an image it fails with\nRuntimeError: CUDA error: an illegal "
                   "memory access was encountered"):
        assert diagnose_text(pasted).category not in _MEMORY, pasted
