"""Round 27's misses, fixed by signals (session 11, diagnose23): each with a user's paste (round 27's threads, tuning
data since round 29 was collected) and the look-alikes pasted beside it. The signals: a device memory pool's own
refusal (what is in use plus the block asked is more than the pool's total; a failed allocation said with "memory
isn't enough"), whatever the accelerator; memory said short on a card named as the place; and the phase by
phase.py's rule — what asked for the memory (a kernel's output for a graph node, a batch of inputs through a chain,
inference run), read from the nearest evidence. Plus the window a request exceeds (not memory)
and the runtime the writer says ran out of memory where they compare two (docs/diagnosis.md)."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.runtimes import runtime_of_oom_clause

_POOL_REFUSAL = ("[ERROR] PRE_ACT(54175,fffdbcff91e0,python):2024-10-22-11:24:55.301.443 "
                 "[mindspore/ccsrc/backend/common/mem_reuse/mem_dynamic_allocator.cc:392] AddMemBlockAndMemBufByEagerFree] "
                 "TotalUsedMemStatistics : 29356337664 plus TotalUsedByEventMemStatistics : 0 and plus alloc size : "
                 "301990400 is more than total mem size : 29464985600.")


def test_an_npu_pool_refusing_a_block_during_generate_is_the_run():
    # mindnlp#1761: gemma-7b's generate() on an Ascend NPU; MindSpore's device pool refuses 288 MiB with 29.36 of
    # 29.46 GB in use — the pool's own figures say memory ran out, the traceback says a generation asked
    pasted = _POOL_REFUSAL + ("\nTraceback (most recent call last):\n"
                              '  File "mindnlp/llm/inference/gemma/run_gemma.py", line 17, in <module>\n'
                              "    outputs = model.generate(**input_ids)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_pool_refusal_while_a_checkpoint_loads_is_the_load():
    # look-alike for the phase: the same allocator's refusal, under a checkpoint being loaded into the network
    pasted = ("Traceback (most recent call last):\n"
              '  File "train.py", line 40, in <module>\n'
              "    param_dict = ms.load_checkpoint(args.ckpt_path)\n" + _POOL_REFUSAL)
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_mindspore_s_errors_that_are_not_memory_stay_not_memory():
    # look-alikes beside it (round 27's mindyolo#251 and #273): the device, not its memory
    assert diagnose_text("RuntimeError: The device address type is wrong: type name in address:CPU, type name in "
                         "context:Ascend").category == "not_memory"
    assert diagnose_text("RuntimeError: Unsupported device target Ascend. This process only supports one of the "
                         "['CPU']. Please check whether the Ascend environment is installed and configured "
                         "correctly").category == "not_memory"


def test_a_kernel_output_that_cannot_be_allocated_for_a_graph_node_is_the_run():
    # mindone#465: a LoRA training on a 12 GB card; MindSpore fails to allocate a Cast op's output as it launches it
    pasted = ('  File "mindspore/common/_stub_tensor.py", line 85, in shape\n'
              "    self.stub_shape = self.stub.get_shape()\n"
              "RuntimeError: Malloc for kernel output failed, Memory isn't enough, node:Default/Cast-op446")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_memory_isn_t_enough_asked_as_a_question_beside_another_error_is_not_memory():
    # look-alike: the words without a failed allocation — the writer's guess beside an error that names no memory
    pasted = ("RuntimeError: The device address type is wrong: type name in address:CPU, type name in context:Ascend\n"
              "Is it because the memory isn't enough?")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_sampling_progress_bar_at_step_0_makes_a_huge_pool_refusal_the_run():
    # mindone#820: OpenSora image-to-video sampling, a 100.6 GB block asked of a 61 GB pool at step 0 of 30
    pasted = ("  0%|          | 0/30 [00:00<?, ?it/s][WARNING] PRE_ACT(145615,fffdb4551180,python):2025-01-12-09:48:10 "
              "[mindspore/ccsrc/backend/common/somas/somas.cc:479] VerifySomasResult] Mismatch ref node size 2301 vs 2305\n"
              "[ERROR] PRE_ACT(145615,fffbdf67f120,python):2025-01-12-09:48:13 "
              "[mindspore/ccsrc/backend/common/mem_reuse/mem_dynamic_allocator.cc:392] AddMemBlockAndMemBufByEagerFree] "
              "TotalUsedMemStatistics : 24725382656 plus TotalUsedByEventMemStatistics : 0 and plus alloc size : "
              "100555779072 is more than total mem size : 61079552000.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_paddle_s_gpu_message_in_chinese_is_the_card_not_host_ram():
    # CPM-Generate-Paddle#7: the reporter translated Paddle's "Out of memory error on GPU 0" (GPU 0上出现内存不足错误,
    # "an out-of-memory error occurred on GPU 0"); 内存 is the word, the card is the place; the model was loading
    pasted = ("GPU 0上出现内存不足错误。无法在GPU 0上分配50.000000MB内存，已分配11.999512 GB内存，可用内存仅为0.000000B。\n"
              "正在加载模型，耗时需要几分钟，请稍后...\n"
              "Traceback (most recent call last):\n"
              '  File "AI_Bot.py", line 25, in <module>\n'
              "    state_dict = paddle.load(args.pretrained_model)")
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_host_ram_said_short_in_chinese_stays_host_ram():
    # look-alike (Baichuan2#346's words): 内存溢出 said of the computer while loading on the CPU — no card is the place
    assert diagnose_text("用cpu推理，加载13B模型内存溢出").category == "oom_killer"


_LANGCHAIN_BATCH = ("OutOfMemoryError                          Traceback (most recent call last)\n"
                    "<ipython-input-41-892a7052ab27> in <cell line: 1>()\n"
                    '----> 1 answer(["What is FFCS?","What is CAL?","Who founded VIT?"],experiment_name="bug_report_2")\n'
                    "<ipython-input-40-2303faa8e8f9> in answer_in_parellel(questions, batch_size)\n"
                    "---> 11         answers = RAG_fusion_chain.batch(query_batch)")


def test_an_out_of_memory_under_a_chain_s_batch_call_is_the_run():
    # langchain#16824: a 4-bit Mistral 7B on a T4 answering a batch of questions through a chain's .batch()
    assert diagnose_text(_LANGCHAIN_BATCH).category == "cuda_oom_long_context"


def test_an_out_of_memory_under_from_pretrained_stays_the_load():
    # look-alike for the phase: the same exception under the model being loaded
    pasted = ("OutOfMemoryError                          Traceback (most recent call last)\n"
              "----> 3 model = AutoModelForCausalLM.from_pretrained(model_id, device_map='auto')")
    assert diagnose_text(pasted).category == "cuda_oom_load"


_SMALL_CARD = ("RuntimeError: CUDA out of memory. Tried to allocate 602.00 MiB (GPU 0; 5.70 GiB total capacity; "
               "2.97 GiB already allocated; 340.50 MiB free; 3.57 GiB reserved in total by PyTorch) If reserved memory "
               "is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for "
               "Memory Management and PYTORCH_CUDA_ALLOC_CONF")


def test_inference_run_on_a_small_card_is_the_input_not_the_layout():
    # RPL#14: "I'm trying to run inference …"; the unused cache (614 MiB) is a fifth of the 2.97 GiB of tensors, not
    # PyTorch's reserved >> allocated (cuda_oom.fragmented), so in a run the input is the cause; the maintainer: a
    # capacity issue
    pasted = "Hi, I'm trying to run inference as you mentioned, but instead I've gotten this error every time;\n" + _SMALL_CARD
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_figures_with_no_phase_are_not_fragmentation():
    # the message alone: 614 MiB unused beside 2.97 GiB of tensors (reserved = 1.2 x allocated, not PyTorch's ">>"),
    # so with no phase said it is the no-evidence default, the load
    assert diagnose_text(_SMALL_CARD).category == "cuda_oom_phase_unstated"


def test_requested_tokens_over_the_context_window_are_not_memory():
    # llama-cpp-python#416: the prompt is longer than n_ctx (512): a setting, no allocation
    pasted = ("llama_tokenize: too many tokens (Requested tokens exceed context window of 512)\n"
              "File ~/miniconda3/envs/llama/lib/python3.11/site-packages/langchain/llms/llamacpp.py:226, in "
              "LlamaCpp._call(self, prompt, stop, run_manager, **kwargs)")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_large_window_that_cannot_be_allocated_stays_memory():
    # look-alike: the window set large and its KV cache refused — memory, not the window
    pasted = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: cudaMalloc failed: "
              "out of memory\nllama_kv_cache_init: failed to allocate buffer for kv cache")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"


def test_the_runtime_said_to_run_out_of_memory_is_the_one_that_failed():
    # transformers#45229: the writer compares Ollama (which copes) with transformers (which runs out of memory):
    # transformers' out-of-memory at 180K tokens is the run, not a ggml allocation
    pasted = ("Gemma4 31B-IT Multi-GPU inference CUDA OOM\n"
              "I have upgraded to transformers 5.5.4 and I tried to compare the multi-GPU inference to ollama.\n"
              "Ollama can easily handle 180K tokens of context, transformers still crashes due to OOM.")
    assert runtime_of_oom_clause("ollama can easily handle 180k tokens of context, transformers still crashes "
                                 "due to oom.") == "transformers"
    d = diagnose_text(pasted)
    assert d.category == "cuda_oom_long_context" and d.runtime == "transformers"


def test_an_ollama_log_whose_writer_names_ollama_stays_ggml():
    # look-alike: the writer names Ollama where memory ran out; Ollama's CUDA errors come from ggml
    pasted = ("ollama run llama3.1:70b\n"
              "Error: llama runner process has terminated: CUDA error: out of memory\n"
              "ollama runs out of memory with a 32K context")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"
