"""Rounds 64-65's misses (session 20, diagnose20b), tuned on once both rounds had been scored (once, together, by the
lead: scoring/round64_65_first_run.txt, 35/39) and moved to tuning.

Three of the four misses were PyTorch's out-of-memory line alone (DiffSynth-Studio#411, litgpt#136, lit-llama#402:
fine-tuning runs) answered as a load with both phases' fixes: the line states no phase, and none of those three texts
holds anything else — no frame, no log line, no model named. Counted by script over the 148 "phase not stated" tuning
texts (109 labelled the load, 35 the run): none carries a frame of a backward, an optimizer step, a trainer's step or a
decoding loop, a loss or step line, and PyTorch's own figures (reserved but unallocated over allocated) overlap between
the two labels (load 0-0.21, run 0-0.48). So no text of theirs can move; what the rule now reads is the evidence such a
paste carries when it is longer — lit-llama#402's full traceback shows the training step — in the frames of the loops'
own sources and a trainer's loss line (phase.RUN), each pinned below by a public paste and contrasted with the same
out-of-memory line alone, which stays "phase not stated".
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import PHASE_UNSTATED_ID


def _answer(text: str) -> tuple[str, str | None]:
    d = diagnose_text(text)
    return d.category, d.entry.id if d.entry else None


RUN = ("cuda_oom_long_context", "cuda-oom-long-context")
UNSTATED = ("cuda_oom_phase_unstated", PHASE_UNSTATED_ID)

# huggingface/trl#2776 (a GRPO run's traceback, as pasted under torchrun's [rank0]: prefix): the optimizer's step
_OOM_94 = ("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. GPU 0 has a total "
           "capacity of 94.99 GiB of which 87.19 MiB is free.\n")
_SITE = '[rank0]:   File "/home/u/.conda/envs/torch/lib/python3.10/site-packages/'
_OPTIMIZER_STEP = (
    _SITE + 'torch/optim/optimizer.py", line 487, in wrapper\n'
    "[rank0]:     out = func(*args, **kwargs)\n"
    + _SITE + 'torch/optim/adamw.py", line 220, in step\n'
    "[rank0]:     adamw(\n"
    + _SITE + 'torch/optim/adamw.py", line 606, in _multi_tensor_adamw\n'
    "[rank0]:     exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)\n")

# bmaltais/kohya_ss#1048: rich's traceback format ("path:line in function"), Windows paths
_RICH_OPTIMIZER = ("│ C:\\kohya_ss\\venv\\lib\\site-packages\\torch\\optim\\adamw.py:566 in _multi_tensor_adamw   │\n"
                   "│ ❱ 566 │   │   │   │   denom = torch._foreach_add(exp_avg_sq_sqrt, eps)   │\n")

# the tuning corpus's own frames (round 53 trl-2996-c, round 19 ms-swift-2127, round 14 textgen-3668, round 34
# yolov3-1503), each kept without the other run evidence its paste also held. The decoding loops (a path in
# transformers/generation/) and a frame in transformers/trainer.py were read before this change ("generation",
# "trainer"); compute_loss and the optimizer's frames were not
_PKG = '  File "/home/u/miniconda3/envs/trl/lib/python3.12/site-packages/'
_INNER_TRAINING_LOOP = (_PKG + 'transformers/trainer.py", line 2548, in _inner_training_loop\n'
                        "    tr_loss = self._do_step(model, inputs)\n")
_DECODING_LOOP = (_PKG + 'transformers/generation/utils.py", line 3009, in _sample\n'
                  "    outputs = self(**model_inputs, return_dict=True)\n")
_OLD_DECODING_LOOP = ('  File "site-packages/transformers/generation/utils.py", line 2724, in sample\n'
                      "    outputs = self(\n")
_COMPUTE_LOSS = ('  File "/content/drive/My Drive/yolov3/utils/utils.py", line 403, in compute_loss\n'
                 "    lobj += BCEobj(pi[..., 4], tobj)  # obj loss\n")
# round 65's litgpt-136-c line (the allocator's words and figures)
_OOM_22 = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 144.00 MiB. GPU 0 has a total capacty "
           "of 22.19 GiB of which 98.50 MiB is free.\n")


def test_the_out_of_memory_lines_alone_state_no_phase():
    # the contrast for every frame below: the same line, nothing around it
    assert _answer(_OOM_94) == UNSTATED
    assert _answer(_OOM_22) == UNSTATED


@pytest.mark.parametrize("frames", [_OPTIMIZER_STEP, _RICH_OPTIMIZER])
def test_an_optimizer_step_frame_is_the_run(frames):
    # torch/optim/<name>.py: Optimizer.step and its _multi_tensor_ kernels, reached only after a backward
    assert _answer(frames + _OOM_94) == RUN


@pytest.mark.parametrize("frames", [_INNER_TRAINING_LOOP, _DECODING_LOOP, _OLD_DECODING_LOOP, _COMPUTE_LOSS])
def test_a_training_or_decoding_loop_frame_is_the_run(frames):
    assert _answer("Traceback (most recent call last):\n" + frames + _OOM_22) == RUN


@pytest.mark.parametrize("line", [
    # Keras' Progbar (keras/utils/progbar.py: " - loss: 0.6931" after the step counter)
    "  1/100 [..............................] - ETA: 5:23 - loss: 0.6931",
    # HF Trainer's log dict and fairseq's progress postfix
    "{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 2e-05}",
    "| 1/85544 [00:01<44:15:59,  1.86s/it, loss=20.737",
    # lit-llama's finetune scripts: f"iter {iter_num}: loss {loss.item():.4f}"-style, without the iteration
    "loss 2.3101, time: 512.33ms",
])
def test_a_printed_loss_value_is_the_run(line):
    assert _answer(line + "\n" + _OOM_22) == RUN


def test_a_trainer_placing_the_model_stays_the_load():
    # transformers' Trainer.__init__ places the model (self._move_model_to_device(model, args.device) -> model.to(device)):
    # a trainer's frame before the first step is the load, not a training step
    frames = (_PKG + 'transformers/trainer.py", line 536, in __init__\n'
              "    self._move_model_to_device(model, args.device)\n"
              + _PKG + 'transformers/trainer.py", line 787, in _move_model_to_device\n'
              "    model = model.to(device)\n")
    assert _answer("Traceback (most recent call last):\n" + frames + _OOM_22)[0] == "cuda_oom_load"


@pytest.mark.parametrize("line", [
    # the optimizer's package imported, no step taken; a loss scaler set up at start-up (DeepSpeed's fp16 init words);
    # other losses named ("nll_loss=", "val_loss:") are read by their own runs' other words, not by this one
    '  File "/usr/lib/python3/site-packages/torch/optim/__init__.py", line 8, in <module>',
    "[deepspeed] initial loss scale: 65536",
])
def test_no_step_taken_states_no_phase(line):
    assert _answer(line + "\n" + _OOM_22) == UNSTATED


# llama.cpp#6861 (round 64): a 7B model at a 32K context in an iOS app run from Xcode; Metal's API validation layer
# refuses the compute buffer, whose length is above the device's maxBufferLength (0x86004000 = 2,248,163,328 bytes =
# 2,144 MiB against 2048 MB). Before, the failed assertion was answered not memory
_METAL_MAX_BUFFER = ("-[MTLDebugDevice newBufferWithBytesNoCopy:length:options:deallocator:]:700: failed assertion "
                     "`Buffer Validation\nnewBufferWith*:length 0x86004000 must not exceed 2048 MB.\n")


def test_a_metal_buffer_over_the_device_maximum_is_metal_memory():
    assert _answer(_METAL_MAX_BUFFER) == ("metal_oom", "metal-max-buffer")
    # the same words with the length in decimal, from newBufferWithLength (a private-storage compute buffer)
    text = ("-[MTLDebugDevice newBufferWithLength:options:]:670: failed assertion `Buffer Validation\n"
            "newBufferWith*:length 2248163328 must not exceed 2048 MB.\n")
    assert _answer(text) == ("metal_oom", "metal-max-buffer")
    fixes = " ".join(f.command_for("llama.cpp") or "" for f in diagnose_text(_METAL_MAX_BUFFER).entry.solutions)
    assert "-fa on" in fixes and "-ub" in fixes and "-c " in fixes  # the maintainer's three fixes in #6861


@pytest.mark.parametrize("text", [
    # the validation layer's other Buffer Validation assertions, as public code comments quote them: no lack of memory
    "-[MTLDebugDevice newBufferWithBytesNoCopy:length:options:deallocator:]:\nfailed assertion 'Buffer Validation\n"
    "newBufferWithBytesNoCopy:length 0x94600 is not 4096 byte aligned.'",
    "[MTLDebugDevice newBufferWithLength:options:]:642: failed assertion `Buffer Validation Cannot create buffer of "
    "zero length`.",
])
def test_the_other_buffer_validation_assertions_are_not_memory(text):
    assert _answer(text)[0] == "not_memory"
