"""An out-of-memory line printed by a deep-learning framework other than PyTorch, with no phase stated, is the run
(session 21, diagnose21; classify.FRAMEWORK_STEP_ID, cuda_oom.FRAMEWORK_OOM_LINE).

Counted first over the tuning set (measurements/public_errors/scoring/phase_unstated_signals.txt): of the 149 texts
answered "phase not stated" (110 labelled the load, 35 the run), the failing line printed by PaddlePaddle, XLA,
TensorFlow, CuPy, ONNX Runtime, MXNet or MindSpore is the only signal carried by run texts (5) and by no load text;
over every tuning text such a line is a memory failure at a step 25 times and at the load once. Each case below is a
tuning text's decisive lines, beside a contrast: PyTorch's line alone stays "phase not stated" (the load, both
phases' fixes), and the same framework's line under a loading step stays the load.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import FRAMEWORK_STEP_ID, PHASE_UNSTATED_ID


def _answer(text: str) -> tuple[str, str | None]:
    d = diagnose_text(text)
    return d.category, d.entry.id if d.entry else None


STEP = ("cuda_oom_long_context", FRAMEWORK_STEP_ID)
UNSTATED = ("cuda_oom_phase_unstated", PHASE_UNSTATED_ID)

# PaddlePaddle/Paddle#42228 (round 31): Paddle's GPU allocator, its own advice below it
PADDLE = ("RuntimeError: ResourceExhaustedError:\n\n"
          "Out of memory error on GPU 0. Cannot allocate 98.000244MB memory on GPU 0, 6.000000GB memory has been "
          "allocated and available memory is only 0.000000B.\n\n"
          "Please check whether there is any other process using GPU 0.\n"
          "1. If yes, please stop them, or start PaddlePaddle on another GPU.\n"
          "2. If no, please decrease the batch size of your model.\n")
# google-deepmind/alphafold#1023 (round 28): XLA's allocator under JAX
XLA = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 "
       "bytes.\n")
# cupy/cupy#1912 (round 36): CuPy's memory pool under Chainer
CUPY = '"cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 1073741824 bytes (total 12373894656 bytes)"\n'
# poppanda/LLM_PDF_Translator#9 (round 30): ONNX Runtime's BFC arena on the CUDA provider
ORT = ("/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* onnxruntime::BFCArena::AllocateRawInternal("
       "size_t, bool, onnxruntime::Stream*, bool, onnxruntime::WaitNotificationFn) Failed to allocate memory for "
       "requested buffer\n")
# Lightning-AI/litgpt#136 (round 65): PyTorch's line alone, a fine-tuning run that states no phase
TORCH = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 144.00 MiB. GPU 0 has a total capacty of "
         "22.19 GiB of which 98.50 MiB is free. Including non-PyTorch memory, this process has 22.09 GiB memory in use. "
         "Of the allocated memory 21.15 GiB is allocated by PyTorch, and 649.42 MiB is reserved by PyTorch but "
         "unallocated.\n")
# jm12138/CPM-Generate-Paddle#7 (round 27, labelled the load): a checkpoint read by paddle.load when the card filled,
# under the app's own "loading the model, this takes a few minutes" line
PADDLE_LOADING = ("(gpu) G:\\CPM-Generate-Paddle>python AI_Bot.py --pretrained_model .\\CPM-LM.pdparams\n"
                  "正在加载模型，耗时需要几分钟，请稍后...\n"
                  "Traceback (most recent call last):\n"
                  '  File "G:\\CPM-Generate-Paddle\\AI_Bot.py", line 25, in <module>\n'
                  "    state_dict = paddle.load(args.pretrained_model)\n")


@pytest.mark.parametrize("text", [PADDLE, XLA, CUPY, ORT], ids=["paddle", "xla", "cupy", "onnxruntime"])
def test_another_frameworks_out_of_memory_line_alone_is_the_step(text):
    assert _answer(text) == STEP


def test_pytorchs_line_alone_stays_phase_unstated():
    assert _answer(TORCH) == UNSTATED


def test_the_same_paddle_line_under_a_loading_step_stays_the_load():
    category, _ = _answer(PADDLE_LOADING + PADDLE.split("\n\n")[1] + "\n")
    assert category == "cuda_oom_load"


def test_the_step_answer_keeps_the_loads_fix_and_says_the_phase_is_not_stated():
    d = diagnose_text(PADDLE)
    assert "does not say" in d.title
    titles = [f["title"] for f in d.fixes]
    assert any("in a step" in t for t in titles) and any("placing the model" in t for t in titles)
