"""Loaders and start-up steps in their own words beside an out-of-memory that states no phase (session 22, diagnose22;
scoring/phase_unstated_load_forms22.txt, counted over every tuning text before the rule: 20 texts labelled the load and
answered "phase not stated" carry one of these forms, no tuning text labelled the run carries any). Each test quotes a
public paste (URL beside it, labelled the load by its thread) and a contrast that takes the form out or puts the run in."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

_TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 MiB. GPU 0 has a total capacity of "
              "23.55 GiB of which 45.75 MiB is free. Including non-PyTorch memory, this process has 23.48 GiB memory in "
              "use. Of the allocated memory 22.72 GiB is allocated by PyTorch, and 257.71 MiB is reserved by PyTorch but "
              "unallocated.")

# https://github.com/huggingface/lora-fast/issues/1: nn.Module._apply moving each parameter (model.to(device))
MODULE_TO = ('  File "/home/name/anaconda3/envs/peft/lib/python3.12/site-packages/torch/nn/modules/module.py", line 942, '
             "in _apply\n    param_applied = fn(param)\n                    ^^^^^^^^^\n"
             '  File "/home/name/anaconda3/envs/peft/lib/python3.12/site-packages/torch/nn/modules/module.py", line '
             "1341, in convert\n    return t.to(\n           ^^^^^\n" + _TORCH_OOM)


def test_weights_moved_to_the_card_are_the_load():
    assert diagnose_text(MODULE_TO).category == "cuda_oom_load"
    # contrast: PyTorch's line alone states no phase
    assert diagnose_text(_TORCH_OOM).category == "cuda_oom_phase_unstated"
    # contrast: a backward pass's frame instead is the run
    backward = ('  File "/usr/lib/python3/site-packages/torch/autograd/__init__.py", line 266, in backward\n'
                "    Variable._execution_engine.run_backward(\n" + _TORCH_OOM)
    assert diagnose_text(backward).category == "cuda_oom_long_context"


# https://github.com/mudler/LocalAI/issues/2126: LocalAI's model loader relaying its Python backend's LoadModel failure
LOCALAI = ('{"error":{"code":500,"message":"could not load model (no success): Unexpected err=OutOfMemoryError(\'CUDA '
           "out of memory. Tried to allocate 46.00 MiB. GPU 0 has a total capacty of 5.62 GiB of which 55.50 MiB is "
           "free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
           "unallocated.')\"}}")


def test_an_out_of_memory_the_loader_relays_is_the_load():
    assert diagnose_text(LOCALAI).category == "cuda_oom_load"
    # contrast: the same error with the loader's words taken out states no phase
    assert diagnose_text(LOCALAI.replace("could not load model (no success): ", "")).category \
        == "cuda_oom_phase_unstated"
    # look-alike: the loader's words around a crash that is not memory stay not memory
    # (https://github.com/mudler/LocalAI/issues/1447)
    assert diagnose_text("Could not load model: SIGILL: illegal instruction").category == "not_memory"


# https://github.com/turboderp-org/exui/issues/11 and https://github.com/turboderp-org/exllamav2/issues/168: exllamav2
# placing its modules across the cards (model.py: load_autosplit_gen's RuntimeError, a gpu_split load's assertion)
def test_exllamav2_placing_its_modules_is_the_load():
    assert diagnose_text("RuntimeError: Insufficient VRAM for model and cache").category == "cuda_oom_load"
    footprint = ("AssertionError: Insufficient space in device allocation\nfootprint:  1409302528 dev_scratch:  "
                 "2617246208 dev_scratch_attn:  68719476864 allocation_bytes[current_idx] 78005633024")
    assert diagnose_text(footprint).category == "cuda_oom_load"


# https://github.com/InternLM/lmdeploy/issues/1593: TurboMind making each card's weights at start-up
TURBOMIND_LINE = "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32"
TURBOMIND = ("Exception in thread Thread-139 (_create_weight_func):\nTraceback (most recent call last):\n"
             '  File ".../site-packages/lmdeploy/turbomind/turbomind.py", line 199, in _create_weight_func\n'
             "    model_comm.create_shared_weights(device_id, rank)\n" + TURBOMIND_LINE)


def test_turbomind_making_its_weights_is_the_load():
    assert diagnose_text(TURBOMIND).category == "cuda_oom_load"
    assert diagnose_text(TURBOMIND_LINE).category == "cuda_oom_phase_unstated"  # contrast: the line alone


# https://github.com/mlc-ai/mlc-llm/issues/1462: MLC's ChatModule loads the model as it is made (_reload)
MLC_LINE = ("mlc-llm/tvm/src/runtime/cuda/cuda_device_api.cc:129: InternalError: Check failed: (e == cudaSuccess || e == "
            "cudaErrorCudartUnloading) is false: CUDA: out of memory")
MLC = ('  File "sample_mlc_chat.py", line 8, in <module>\n    cm = ChatModule(model="Llama-2-7b-chat-hf-q4f16_1")\n'
       '  File "mlc_chat/chat_module.py", line 927, in _reload\n    self._reload_func(lib, model_path, app_config_json)\n'
       + MLC_LINE)


def test_mlcs_chat_module_loading_is_the_load():
    assert diagnose_text(MLC).category == "cuda_oom_load"
    assert diagnose_text(MLC_LINE).category == "cuda_oom_phase_unstated"  # contrast: the line alone


# https://github.com/NVIDIA/TensorRT-LLM/issues/736: TensorRT's builder timing a tactic while it builds the engine
def test_tensorrts_builder_tactics_are_the_load():
    tactic = ("Error Code 2: OutOfMemory.\nTactic Device request: 172032MB Available: 45623MB. Device memory is "
              "insufficient to use tactic.")
    assert diagnose_text(tactic).category == "cuda_oom_load"
    assert diagnose_text("Error Code 2: OutOfMemory.").category == "cuda_oom_phase_unstated"  # contrast


# https://github.com/huggingface/text-generation-inference/issues/710: TGI's warm-up refusing its token budget
def test_tgis_warm_up_refusal_is_the_load():
    warmup = ("Not enough memory to handle 16000 total tokens with 2 prefill tokens. You need to decrease "
              "`--max-batch-total-tokens` or `--max-batch-prefill-tokens")
    assert diagnose_text(warmup).category == "cuda_oom_load"
    # contrast: TGI's out-of-memory answering a request is the run
    request = ("Request failed during generation: Server error: CUDA out of memory. Tried to allocate 1.95 GiB (GPU 0; "
               "79.15 GiB total capacity; 74.61 GiB already allocated; 1.11 GiB free; 77.40 GiB reserved in total by "
               "PyTorch)")
    assert diagnose_text(request).category == "cuda_oom_long_context"


# https://github.com/vllm-project/vllm/issues/57475: vLLM capturing its CUDA graphs at start-up, spelled with a hyphen
def test_cuda_graph_capture_hyphenated_is_the_load():
    capture = ("With `--kv-cache-dtype nvfp4` and `--gpu-memory-utilization 0.98`, the engine passes the KV-cache "
               "allocation check but then crashes during CUDA-graph capture with `torch.OutOfMemoryError`.")
    assert diagnose_text(capture).category == "cuda_oom_load"
    assert diagnose_text(capture.replace("during CUDA-graph capture ", "")).category == "cuda_oom_phase_unstated"


# https://github.com/shikiw/OPERA/issues/36: the user asks whether the card is enough to load the model
def test_asking_whether_the_card_can_load_it_is_the_load():
    said = "I run the demo.ipynb on a A6000 with 48 GB memory, but it tells me that CUDA error: out of memory."
    assert diagnose_text(said + "\n\nIs 48 GB not enough to load the model?").category == "cuda_oom_load"
    assert diagnose_text(said).category == "cuda_oom_phase_unstated"  # contrast: without the question


# -- review22b #1: forms that read a run-time failure as the load -------------------------------------------------------
# The three pastes are review22b's (built to probe the rule, not public threads); each is checked against its own
# contrast, the same paste with the probed words taken out or swapped for a loader's.
_PT_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "23.65 GiB of which 1.20 GiB is free. Of the allocated memory 20.10 GiB is allocated by PyTorch, and 1.80 GiB "
           "is reserved by PyTorch but unallocated.")


def test_able_to_load_then_a_failure_in_generate_is_the_run():
    ran = "when I run generate on a long prompt it crashes:\n" + _PT_OOM
    said = "I was able to load the model fine with transformers, but " + ran
    assert diagnose_text(said).category == "cuda_oom_long_context"
    assert diagnose_text(ran).category == "cuda_oom_long_context"  # contrast: without the clause, the same answer
    # the same words negated are the load that failed
    assert diagnose_text("I was not able to load the model:\n" + _PT_OOM).category == "cuda_oom_load"


_HANDLER = ('Traceback (most recent call last):\n  File "/app/server.py", line 88, in handle_request\n'
            "    img = load_image(req.url)\n"
            '  File "/app/utils.py", line 12, in load_image\n    t = preprocess(x).to("cuda")\n'
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity "
            "of 23.65 GiB of which 100.00 MiB is free.")


def test_a_request_handlers_load_image_frame_is_no_load():
    assert diagnose_text(_HANDLER).category != "cuda_oom_load"
    # contrast: the frame a loader's (transformers' / LLaVA's load_pretrained_model, round 23's load_model)
    assert diagnose_text(_HANDLER.replace("in load_image", "in load_model")).category == "cuda_oom_load"


_JSON_FRAME = ("The server has been running for hours, then after some requests:\nTraceback (most recent call last):\n"
               '  File "/app/api.py", line 40, in chat\n    data = json.loads(body)\n'
               '  File "/usr/lib/python3.10/json/__init__.py", line 346, in loads\n'
               "    return _default_decoder.decode(s)\n"
               "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.50 GiB "
               "already allocated; 12.00 MiB free; 6.80 GiB reserved in total by PyTorch)")


def test_json_loads_frame_is_no_load():
    assert diagnose_text(_JSON_FRAME).category == "cuda_oom_long_context"
    # contrast: the frame renamed (review22b's t3b) gives the same answer, so ``in loads`` adds nothing
    assert diagnose_text(_JSON_FRAME.replace("in loads", "in decode")).category == "cuda_oom_long_context"
