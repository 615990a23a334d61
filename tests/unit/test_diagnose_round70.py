"""Round 70's misses other than the out-of-memory line with no phase stated, by family (session 21, diagnose21c;
scoring/round70_families.txt, counted over every tuning text before the rules): exllamav2's KV cache built at start-up
(3 tuning texts, all labelled the load) and a weight file whose shapes the loading code refuses (mlx's load_weights
beside PyTorch's load_state_dict: 8 tuning texts, all not memory). Each test quotes a public paste (URL beside it) and
a contrast that takes the signal out."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

# https://huggingface.co/LoneStriker/Nous-Capybara-limarpv3-34B-3.0bpw-h6-exl2-2/discussions/1 (round 70): a 34B
# 3.0 bpw quant on a Colab T4; the weights loaded, then the KV cache's tensors did not fit (labelled the load)
_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 392.00 MiB. GPU 0 has a total capacty of "
        "14.75 GiB of which 209.06 MiB is free. Process 270593 has 14.54 GiB memory in use. Of the allocated memory "
        "14.32 GiB is allocated by PyTorch, and 111.15 MiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for "
        "Memory Management and PYTORCH_CUDA_ALLOC_CONF")
EXL2_CACHE = ('File "/content/exllamav2/examples/chat.py", line 126, in <module>\n'
              "cache = ExLlamaV2Cache(model, lazy = not model.loaded)\n"
              'File "/content/exllamav2/exllamav2/cache.py", line 133, in __init__\n'
              "self.create_state_tensors(copy_from, lazy)\n"
              'File "/content/exllamav2/exllamav2/cache.py", line 45, in create_state_tensors\n'
              "p_key_states = torch.zeros(self.batch_size, self.max_seq_len, self.num_key_value_heads, self.head_dim, "
              "dtype = self.dtype, device = self.model.cache_map[i]).contiguous()\n" + _OOM)


def test_exllamav2s_cache_built_at_start_up_is_the_load():
    assert diagnose_text(EXL2_CACHE).category == "cuda_oom_load"
    # contrast: PyTorch's line alone states no phase
    assert diagnose_text(_OOM).category == "cuda_oom_phase_unstated"
    # contrast: a generation's frame instead of the cache's is the run
    generating = ('File "/content/exllamav2/examples/chat.py", line 240, in <module>\n'
                  "    output = generator.generate_simple(prompt, settings, 512)\n" + _OOM)
    assert diagnose_text(generating).category == "cuda_oom_long_context"


# https://huggingface.co/mlx-community/Mistral-Nemo-Instruct-2407-4bit/discussions/2 (round 70): mlx's
# Module.load_weights refuses a weight whose shape the released mlx-lm's model code does not expect (not memory)
MLX_SHAPE = ("Expected shape (5120, 640) but received shape (4096, 640) for parameter "
             "model.layers.0.self_attn.q_proj.weight")


def test_a_weights_shape_refused_on_load_is_not_memory():
    d = diagnose_text(MLX_SHAPE)
    assert d.category == "not_memory" and d.matched_line == MLX_SHAPE
    # PyTorch's load_state_dict says the same of a checkpoint and was already answered so
    torch = ("RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:\n\tsize mismatch for "
             "model.layers.0.self_attn.q_proj.weight: copying a param with shape torch.Size([4096, 640]) from "
             "checkpoint, the shape in current model is torch.Size([5120, 640]).")
    assert diagnose_text(torch).category == "not_memory"
    # contrast: mlx's own out-of-memory after the same kind of line is memory
    oom = MLX_SHAPE + "\n[metal::malloc] Attempting to allocate 21474836480 bytes which is greater than the maximum " \
        "allowed buffer size of 17179869184 bytes."
    assert diagnose_text(oom).category != "not_memory"
