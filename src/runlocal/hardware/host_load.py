"""Host RAM while a runtime loads the weights (issue 18 point 3): what loading needs from system memory.

What each loader holds, from its source, and measured (measurements/host_load/README.md):

- llama.cpp and Ollama: nothing beyond the weights kept on the host. With mmap (the default) llama-mmap.cpp maps the
  GGUF read-only and shared (file pages, reclaimable); with --no-mmap, llama_model_loader::load_all_data
  (src/llama-model-loader.cpp) streams GPU tensors through 4 pinned staging buffers of 1 MiB ("4 staging buffers
  for async uploads") and reads only the CPU tensors into host memory — which the plan already counts on the host.
- vLLM and SGLang (safetensors_weights_iterator: ``with safe_open(st_file, framework="pt") as f: ...
  f.get_tensor(name)``, vllm/model_executor/model_loader/weight_utils.py) and transformers 5 (modeling_utils.py:
  ``safe_open(file, framework="pt", device="cpu", backend="mmap")`` on Linux, then ``slice[...]`` per tensor):
  a tensor is a view of the file's mapping — measured here, get_tensor and slice[...] of a 2 GiB tensor leave
  RssAnon unchanged and add 2 GiB of RssFile (page cache, reclaimable) — so they need no RAM beyond the host-held
  weights. But safe_open maps each whole file privately and writable (torch UntypedStorage.from_file), and Linux's
  default overcommit heuristic (vm.overcommit_memory = 0) refuses a mapping larger than RAM + swap: "unable to mmap
  N bytes from file <…>: Cannot allocate memory (12)" — posted for vLLM with the single 16.9 GB file of
  Qwen3-30B-A3B-GPTQ-Int4 (vllm-project/vllm#759), reproduced here on 23.5 GiB without swap: a 22 GiB file opens, a
  24 GiB one fails. transformers 5 saves shards of up to 50 GB by default (save_pretrained max_shard_size="50GB").
- Copies do take RAM: a dtype change on the CPU (measured: ``.to(int16)`` of the 2 GiB view adds 4 GiB of
  RssAnon), vLLM's .bin loader (pt_weights_iterator: ``torch.load(bin_file, map_location="cpu")``, a whole shard
  per worker process at once: vllm-project/vllm#322), and transformers on Windows / macOS MPS (backend "pread").
  Not modelled: which checkpoint a repo ships and its shard sizes are not known offline.

Not counted either: the processes themselves (Python, torch, the CUDA context's host side).

Pure computation (no I/O).
"""

from __future__ import annotations

from dataclasses import replace

from .unified_memory import UNIFIED_HOST

GiB = 1 << 30
SAFETENSORS_LOADERS = ("vllm", "sglang", "transformers")
# What the kernel counts (MemTotal) is below the RAM installed: 23.54 GiB on the 24 GiB machine measured here; the
# condition is raised from TIGHT_SHARE (verdict.py) of the RAM given, the project's usual margin
MEMTOTAL_SHARE = 0.90
# no file on the Hugging Face Hub is larger ("Per file: 50GB max, 20GB recommended", huggingface/hub-docs
# docs/hub/datasets-upload-guide-llm.md hub_limits, PR #2007): past that RAM size no repo's file can fail to map
HUB_FILE_MAX = 50 * 10**9


def settle_loading(plan, ram_known: bool):
    """``plan`` with what loading needs from the host RAM said, where the RAM is known (given or read): a loader that
    maps safetensors files needs each file no larger than RAM + swap; the shard sizes are not known here, so a
    checkpoint bigger than the RAM gets the condition (its shards are usually far smaller, 5 GB under transformers
    4's default, but transformers 5 writes up to 50 GB and some repos ship one file; none on the Hub is larger)."""
    if not ram_known or plan.runtime not in SAFETENSORS_LOADERS or plan.verdict in ("does_not_fit", "unknown"):
        return plan
    host = next((d for d in plan.allocation.devices if d.kind == "cpu"), None)
    if host is None or host.capacity <= 0:
        return plan
    from ..runtimes.base import Step

    step = Step("RAM while loading", "each .safetensors file is mapped whole (a view of its pages, page cache): "
                "no RAM beyond the weights kept on the host, but each file ≤ RAM + swap",
                f"{host.capacity:,} B RAM", "hardware/host_load.py (vllm weight_utils.py safetensors_weights_iterator; "
                "transformers modeling_utils.py safe_open backend=mmap; measurements/host_load)")
    plan = replace(plan, steps=(*plan.steps, step))
    if min(plan.weights.total, HUB_FILE_MAX) <= MEMTOTAL_SHARE * host.capacity:
        return plan
    # a unified machine's host is planned against the whole RAM (hardware/targets.py), which the GPU side shares
    ram = (f"{host.capacity / GiB:.0f} GiB of unified memory" if host.name == UNIFIED_HOST
           else f"{host.capacity / GiB:.0f} GiB")
    cond = (f"fits if no .safetensors file of the checkpoint is larger than RAM + swap ({ram} + swap): the loader "
            "maps each file whole and Linux refuses a larger mapping (\"unable to mmap … Cannot "
            "allocate memory\", vllm-project/vllm#759)")
    return replace(plan, conditions=(*plan.conditions, cond))
