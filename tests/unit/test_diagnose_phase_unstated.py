"""A generic out-of-memory whose log states no phase (session 17, diagnose52; docs/diagnosis-audit.md).

At first sight, on the code that scored each held-out round 4-51, the last step of refine_cuda_oom (no phase
evidence: the load) answered 226 texts labelled load or run: 126 load, 100 run — and where no serving engine that
reserves its memory at start-up is named, 87 load and 95 run (benchmarks/diagnose_first_run_audit.py). The two phases
have different fixes, so there the answer says the phase is not stated and gives both (cuda-oom-phase-unstated;
its category was cuda_oom_load until session 21's diagnose21b made it phase-neutral, cuda_oom_phase_unstated); with
vLLM, SGLang, TensorRT-LLM or TGI named the start-up stays the answer (39 load, 5 run). Each test quotes a public
paste from the tuning set (URL beside it); the contrasts add one line that states the phase, and the answer must
follow it.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.cuda_oom import phase_stated, refine_cuda_oom
from runlocal.diagnose.fixes import with_computed_fixes
from runlocal.units import GiB, MiB

# https://github.com/oobabooga/textgen/issues/171 (round 12): only PyTorch's message is pasted; the thread puts it at
# generation (labelled cuda_oom_long_context)
TEXTGEN_171 = ("`torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 14.75 GiB total "
               "capacity; 13.50 GiB already allocated; 18.81 MiB free; 13.71 GiB reserved in total by PyTorch) If "
               "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
               "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF`\n")
# https://github.com/vllm-project/vllm/issues/188 (more.jsonl): vLLM's API server started; the thread puts it at the
# load (cuda_oom_load)
VLLM_188 = ("python -u -m vllm.entrypoints.openai.api_server --host 0.0.0.0 --model mistralai/Mistral-7B-v0.1 --dtype "
            "half --gpu-memory-utilization 0.8  --max-model-len 4096\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB (GPU 0; 10.73 GiB total "
            "capacity; 9.85 GiB already allocated; 46.44 MiB free; 9.86 GiB reserved in total by PyTorch) If reserved "
            "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.\n")


def _titles(text: str) -> list[str]:
    return [f["title"] for f in with_computed_fixes(diagnose_text(text))["fixes"]]


def test_a_paste_that_states_no_phase_says_so_and_gives_both_phases_fixes():
    d = diagnose_text(TEXTGEN_171)
    assert d.entry is not None and d.entry.id == "cuda-oom-phase-unstated"
    assert d.category == "cuda_oom_phase_unstated"  # phase-neutral: exact for no label in the benchmark
    assert "does not say" in d.title
    titles = _titles(TEXTGEN_171)
    # the thread's phase was the run: its fix is among those given, beside the load's
    assert any(t.startswith("If it failed on a request") for t in titles)
    assert any(t.startswith("If it failed while loading") for t in titles)
    # a training run (rounds 68-69's five held-out misses: GRPO, FSDP, a LoRA fine-tune, DreamBooth, a segmentation
    # model) gets its step's own fix: transformers' TrainingArguments names, as its single-GPU training guide gives them
    training = next(f for f in with_computed_fixes(diagnose_text(TEXTGEN_171))["fixes"]
                    if f["title"].startswith("If it failed in a training step"))
    assert "gradient_accumulation_steps=" in training["command"] and "gradient_checkpointing=True" in training["command"]


def test_a_generate_frame_or_a_load_frame_states_the_phase():
    # the same message under the frame that ran: the phase is stated, the answer is that phase's own entry
    run = '  File "server.py", line 88, in chat\n    output = model.generate(**inputs, max_new_tokens=512)\n' + TEXTGEN_171
    load = '  File "server.py", line 12, in <module>\n    model = AutoModelForCausalLM.from_pretrained(path)\n' \
        + TEXTGEN_171
    assert diagnose_text(run).entry.id == "cuda-oom-long-context"
    assert diagnose_text(load).entry.id == "cuda-oom-load"


def test_a_serving_engine_that_reserves_at_start_up_keeps_the_load():
    # vLLM named, no phase stated: its start-up (profile run, KV blocks) is where an unstated OOM comes
    d = diagnose_text(VLLM_188)
    assert d.runtime == "vllm" and d.entry is not None and d.entry.id == "cuda-oom-load"


def test_phase_stated_says_what_decided_the_split():
    # by hand: a 4 GiB request on a 14.75 GiB card is 27 % of it, above the quarter that only activations reach
    big = {"requested_bytes": 4 * GiB, "total_bytes": int(14.75 * GiB), "free_bytes": 19 * MiB}
    small = {"requested_bytes": 20 * MiB, "total_bytes": int(14.75 * GiB), "free_bytes": 19 * MiB}
    assert refine_cuda_oom(big, False, False) == "cuda_oom_long_context" and phase_stated(big, False, False)
    assert refine_cuda_oom(small, False, False) == "cuda_oom_load" and not phase_stated(small, False, False)
    assert phase_stated(small, True, False) and phase_stated(small, False, True)  # load words, run words
    assert phase_stated(small, False, False, line_phase="load")


# https://github.com/oobabooga/textgen/issues/522 (round 15, labelled the load): the title alone
TEXTGEN_522 = "Cuda out of memory when launching start-webui\n"
# https://github.com/TabbyML/tabby/issues/648 (round 17, labelled the load)
TABBY_648 = ("Out of Memory on 2x Titan XP\n"
             "When starting the tabby server with Code-Llama7B it fails with a Cuda out-of-memory error:\n"
             "2023-10-27T09:15:09.866543Z  INFO tabby::serve: crates/tabby/src/serve/mod.rs:143: Starting server, this "
             "might takes a few minutes...\n"
             "terminate called after throwing an instance of 'std::runtime_error'\n"
             "  what():  CUDA failed with error out of memory\n")


def test_a_program_said_to_fail_as_it_starts_is_the_load_stated():
    # the start-up is the load (phase.py); before this, both reached the no-evidence step
    for text in (TEXTGEN_522, TABBY_648):
        d = diagnose_text(text)
        assert d.category == "cuda_oom_load" and d.entry is not None and d.entry.id == "cuda-oom-load"


def test_starting_a_run_is_not_the_start_up():
    # OpenCompass's "Starting inference process..." (opencompass#1773, labelled the run) starts a run, not the program
    text = "INFO Starting inference process...\n" + TEXTGEN_171
    assert diagnose_text(text).category == "cuda_oom_long_context"


# https://github.com/meta-llama/llama/issues/455 (round 11): the user names the model by its parameter count (7B,
# llama-2-7b/) and pastes PyTorch's line; the thread puts it at the load (cuda_oom_load)
LLAMA_455 = ("Out-of-memory for 7B on Ubuntu native, runs fine in WSL2 Ubuntu on same machine, RTX 3060 12 GB, 32 GB RAM\n"
             "`torchrun --nproc_per_node 1 example_text_completion.py --ckpt_dir llama-2-7b/     --tokenizer_path "
             "tokenizer.model --max_seq_len 128 --max_batch_size 4`\n"
             "I get this error even if I change the batch size to 2. nvidia shows a spike in GPU memory just before the "
             "error.\n"
             "`torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 86.00 MiB (GPU 0; 11.75 GiB total "
             "capacity; 10.97 GiB already allocated; 120.06 MiB free; 10.98 GiB reserved in total by PyTorch) If "
             "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
             "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n`")


def test_a_parameter_count_named_is_the_loads_sign_where_no_phase_is_stated():
    # session 21, diagnose21c (scoring/phase_unstated_signals.txt, "load words"): of the 162 tuning texts answered
    # "phase not stated", 24 labelled the load name a parameter count and none of the 43 labelled the run does
    assert diagnose_text(LLAMA_455).category == "cuda_oom_load"
    # contrast: the same paste with the model's size taken out states nothing: the phase-neutral answer again
    unnamed = LLAMA_455.replace("for 7B ", "").replace("llama-2-7b/", "ckpt/")
    assert diagnose_text(unnamed).category == "cuda_oom_phase_unstated"
    # a byte figure is no parameter count ("23085449216 B", "0.000000B"), nor a size in GB
    for not_a_count in ("total 23085449216 B\n", "reserved 0.000000B\n", "my card has 24GB\n"):
        assert diagnose_text(not_a_count + TEXTGEN_171).category == "cuda_oom_phase_unstated", not_a_count
    # "8x7B" and "1.5b" are counts; a stated phase still decides: a generate frame is the run, 13B named or not
    assert diagnose_text("Mixtral 8x7B\n" + TEXTGEN_171).category == "cuda_oom_load"
    assert diagnose_text("qwen2.5-1.5b\n" + TEXTGEN_171).category == "cuda_oom_load"
    run = ("llama-2-13b\n" + '  File "server.py", line 88, in chat\n    output = model.generate(**inputs)\n'
           + TEXTGEN_171)
    assert diagnose_text(run).category == "cuda_oom_long_context"
