"""`--runtime mlx==X`: the mlx-lm release X's rules where they changed, read in its PyPI wheel (``pip download
mlx-lm==X --no-deps``; sha256 in measurements/mlx_versions/wheels.txt; line numbers at that release):

- --kv-bits (QuantizedKVCache): none in 0.19.0's mlx_lm/generate.py; 0.20.1 generate.py:114 (0.20.0 not read: planned
  as 0.19.0). Asked of an older release, the plan is refused.
- --max-kv-size (RotatingKVCache): none in 0.16.0's generate.py; 0.17.0 generate.py:81 (utils.py:205-207
  RotatingKVCache(…, max_size=max_kv_size, keep=4)).
- the wired limit: 0.20.1 utils.py:75-105 wired_limit wires up to max_recommended_working_set_size
  (mx.metal.set_wired_limit) and prints "[WARNING] Generating with a model that requires … MB" above 0.9 of it; 0.19.0
  has neither (no set_wired_limit in mlx_lm).
- mlx_lm.server's prompt cache (runtimes/mlx_server.py): 0.28.3 server.py:149 PromptCache, the last prompt's cache
  only; 0.28.4 server.py:1433 LRUPromptCache() (10, no flag); 0.31.0 server.py:1849, :1972 --prompt-cache-size.
- unchanged over 0.16.0 – 0.32.0: KVCache grows in steps of 256 tokens (0.16.0 models/base.py:27 ``self.step = 256``,
  0.32.0 models/cache.py:252).

A release not read takes the nearest read release below it and says so; below 0.16.0 is refused naming the range.
"""

from __future__ import annotations

from dataclasses import dataclass

from .versions import nearest_read
from .versions import release_text as _text

READ: tuple[tuple[int, ...], ...] = (
    (0, 16, 0), (0, 17, 0), (0, 18, 1), (0, 19, 0), (0, 20, 1), (0, 21, 0), (0, 28, 3), (0, 28, 4), (0, 30, 7),
    (0, 31, 0), (0, 32, 0),
)
CURRENT = READ[-1]          # runtimes/mlx.py MLX_REF: mlx-lm 0.32.0
MAX_KV_SIZE_FROM = (0, 17, 0)
KV_BITS_FROM = (0, 20, 1)
WIRED_FROM = (0, 20, 1)
LRU_FROM = (0, 28, 4)       # mlx_server.LRU_FROM
FLAG_FROM = (0, 31, 0)      # mlx_server.FLAG_FROM


@dataclass(frozen=True)
class MLXRules:
    release: tuple[int, ...]
    note: str = ""

    @property
    def ref(self) -> str:
        return f"mlx-lm {_text(self.release)}"

    @property
    def kv_bits(self) -> bool:
        return self.release >= KV_BITS_FROM

    @property
    def max_kv_size(self) -> bool:
        return self.release >= MAX_KV_SIZE_FROM

    @property
    def wired(self) -> bool:
        return self.release >= WIRED_FROM

    @property
    def prompt_cache_entries(self) -> int:
        """The earlier caches mlx_lm.server keeps by default: the last prompt's before 0.28.4, else 10."""
        return 10 if self.release >= LRU_FROM else 1

    @property
    def prompt_cache_flag(self) -> bool:
        return self.release >= FLAG_FROM

    def words(self) -> str:
        parts = [("--kv-bits (quantized KV cache)" if self.kv_bits else "no --kv-bits (from 0.20.1)"),
                 ("--max-kv-size (rotating KV cache)" if self.max_kv_size else "no --max-kv-size (from 0.17.0)"),
                 ("the wired limit at the recommended working set" if self.wired else "no wired limit (from 0.20.1)"),
                 ("server prompt cache of 10, --prompt-cache-size" if self.prompt_cache_flag else
                  "server prompt cache of 10, no flag" if self.prompt_cache_entries == 10 else
                  "server keeps the last prompt's cache only")]
        text = f"mlx-lm {_text(self.release)}: " + ", ".join(parts) + "; KV cache in 256-token steps"
        return text + (f" — {self.note}" if self.note else "")


def mlx_rules(key: tuple[int, ...] | None, asked: str = "") -> MLXRules:
    """The rules of mlx-lm release ``key`` (None: 0.32.0); not read: the nearest read release below, said in
    ``note``; below 0.16.0: InputError naming the read range."""
    return MLXRules(*nearest_read(key, READ, asked, "mlx", "mlx-lm", "mlx-lm"))


__all__ = ["MLXRules", "mlx_rules"]
