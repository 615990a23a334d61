"""vLLM's CPU swap space (``--swap-space``, CacheConfig.swap_space) and its check against the host's RAM, by release.

Up to v0.17.1 (read in the released wheel's vllm/config/cache.py): swap_space 4 GiB per GPU by default;
verify_with_parallel_config computes swap_space_bytes = ceil(swap_space × GiB) × tensor_parallel_size and raises
"Too large swap space. X GiB out of the Y GiB total CPU memory is allocated for the swap space." above 70 % of
the host's total memory (a warning above 40 %). V0 allocates the space as pinned CPU KV blocks ("# CPU blocks: 2048"
in issue #10517's log: 2,048 × 16 tokens × 128 KiB for Llama 3.1 8B = 4 GiB); V1 keeps no KV on the host
(num_cpu_blocks is 0), yet the check still runs. From v0.18.0 none of it exists: PR #36216 ("[V0 Deprecation] Remove
unused swap_space parameter") removed the field, the ``--swap-space`` flag (argparse then refuses it as an
unrecognized argument) and the check (runtimes/versions.py vllm_swap_space).
"""

from __future__ import annotations

import math

from ..units import GiB
from .base import Step

SWAP_REFUSE_SHARE = 0.7      # cpu_memory_usage > 0.7 × total_cpu_memory: "Too large swap space"
SOURCE = "vllm/config/cache.py swap_space, verify_with_parallel_config (v0.17.1; removed in v0.18.0 by PR #36216)"


def host_swap(engine: str, checked: bool, tp: int, host_total: int | None,
              swap_gib: float = 4.0) -> tuple[int, str | None, tuple[Step, ...]]:
    """(bytes of CPU KV swap this engine allocates, vLLM's refusal when the swap space is too large for the host, the
    --explain step) for a release that has --swap-space (``checked``); a release without it: nothing of the three."""
    if not checked:
        return 0, None, ()
    usage = math.ceil(swap_gib * GiB) * max(1, tp)       # CacheConfig: swap_space_bytes × tensor_parallel_size
    refusal = None
    if host_total and usage > SWAP_REFUSE_SHARE * host_total:
        refusal = (f"Too large swap space. {usage / GiB:.2f} GiB out of the {host_total / GiB:.2f} GiB total CPU "
                   "memory is allocated for the swap space. (lower --swap-space)")
    allocated = usage if engine in ("v0.6", "v0") else 0     # V0 engines only: pinned CPU KV blocks
    how = (" as pinned CPU KV blocks (V0)" if allocated else
           ": checked against RAM, not allocated (V1 keeps no KV on the host)")
    return allocated, refusal, (Step("host swap space", f"--swap-space {swap_gib:g} GiB × TP {tp}{how}",
                                     f"{allocated:,} B", SOURCE),)
