"""`runlocal explain oom`: what fills GPU memory, in which order it is claimed, and how to read
nvidia-smi against it. Static text with the model's numbers filled in when one is given."""

from __future__ import annotations

from ..units import format_bytes

STACK = """\
GPU memory is claimed in layers, bottom first. An out-of-memory error means the layer being
claimed did not fit on top of the ones below it.

  ┌──────────────────────────────┐  ← capacity ({capacity})
  │ free headroom                │  {free}   what is left for spikes and other apps
  ├──────────────────────────────┤
  │ compute / scratch buffers    │  {compute}   activations of one batch; logits; attention scratch
  ├──────────────────────────────┤
  │ KV cache                     │  {kv}   grows linearly with context × parallel sequences
  ├──────────────────────────────┤
  │ weights                      │  {weights}   fixed once loaded (the file size, roughly)
  ├──────────────────────────────┤
  │ runtime overhead             │  {overhead}   CUDA context, cuBLAS workspaces, CUDA graphs
  └──────────────────────────────┘

Which layer failed tells you the fix:
  • while loading            → weights do not fit: a smaller quant, fewer GPU layers (-ngl), more GPUs
  • at the first request     → compute buffers or a preallocated KV pool: lower --ubatch / max_num_batched_tokens
  • only at long context     → the KV cache: shorter context, a quantized KV cache (q8_0 / fp8), fewer sequences
  • after a while, randomly  → fragmentation or another process: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,
                               check nvidia-smi for other processes

Reading nvidia-smi:
  Memory-Usage "18000MiB / 24564MiB"  used / total for the whole card, every process included.
  The process table below it          what each process holds; a desktop or browser can hold 0.5–2 GiB.
  vLLM and SGLang reserve their budget up front (gpu_memory_utilization / mem_fraction_static):
  a card at 90 % used with vLLM running is normal, not a leak.
  PyTorch's caching allocator keeps freed blocks: torch.cuda.memory_reserved() > memory_allocated()
  is memory PyTorch holds but does not use; nvidia-smi shows the reserved figure.
  nvidia-smi counts MiB (2^20 bytes); a "24 GB" card shows about 24564 MiB, of which the driver keeps
  a few hundred.
"""


def explain_oom(plan=None) -> str:
    if plan is None:
        blank = "—".rjust(9)
        return STACK.format(capacity="your GPU", free=blank, compute=blank, kv=blank, weights=blank, overhead=blank)
    dev = next((d for d in plan.allocation.devices if d.kind != "cpu"), plan.allocation.devices[0])
    f = lambda n: format_bytes(n).rjust(9)  # noqa: E731
    return STACK.format(capacity=format_bytes(dev.capacity), free=f(dev.capacity - dev.total), compute=f(dev.compute),
                        kv=f(dev.kv_cache), weights=f(dev.weights), overhead=f(dev.overhead))
