"""The probe: prompts of growing length, then growing concurrency, bounded in count and time,
stopping at the first failure and keeping every step measured before it."""

from __future__ import annotations

import signal
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from .client import (
    Api,
    Measurement,
    ProbeError,
    count_prompt_tokens,
    is_alive,
    stream_once,
)

CONTEXT_LADDER = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
CONCURRENCY_LADDER = (1, 2, 4, 8, 16, 32, 64)


@dataclass
class Step:
    phase: str                 # "context" or "concurrency"
    prompt_tokens: int
    concurrency: int
    ok: bool
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None
    prefill_tokens_per_s: float | None = None
    aggregate_tokens_per_s: float | None = None
    error: str | None = None
    error_kind: str | None = None


@dataclass
class ProbeResult:
    url: str
    api: str
    model: str | None
    steps: list[Step] = field(default_factory=list)
    peak_memory_bytes: int | None = None
    memory_source: str | None = None
    stopped_because: str | None = None

    @property
    def max_context_ok(self) -> int | None:
        ok = [s.prompt_tokens for s in self.steps if s.phase == "context" and s.ok]
        return max(ok) if ok else None

    @property
    def max_concurrency_ok(self) -> int | None:
        ok = [s.concurrency for s in self.steps if s.phase == "concurrency" and s.ok]
        return max(ok) if ok else None

    def _decode_steps(self) -> list[Step]:
        return [s for s in self.steps if s.ok and s.decode_tokens_per_s and s.concurrency == 1]

    def decode_median(self) -> float | None:
        v = [s.decode_tokens_per_s for s in self._decode_steps() if s.decode_tokens_per_s]
        return statistics.median(v) if v else None

    def decode_depth(self) -> int | None:
        """The KV-cache depth decode_median stands for: the median prompt of the single-request steps it is the
        median of. Decode slows as the cache deepens, so the steps' decode figures fall in the order of their
        prompts and the median figure is that of the median prompt (of two middle steps, their mean, as the figure
        is). A prompt's tokens are the cache when decoding starts; the few generated (--max-tokens) are left out."""
        v = [s.prompt_tokens for s in self._decode_steps()]
        return int(statistics.median(v)) if v else None

    def prefill_median(self) -> float | None:
        v = [s.prefill_tokens_per_s for s in self.steps if s.ok and s.prefill_tokens_per_s]
        return statistics.median(v) if v else None

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "api": self.api, "model": self.model, "steps": [asdict(s) for s in self.steps],
                "max_context_ok": self.max_context_ok, "max_concurrency_ok": self.max_concurrency_ok,
                "decode_tokens_per_s": self.decode_median(), "decode_at_context": self.decode_depth(),
                "prefill_tokens_per_s": self.prefill_median(), "peak_memory_bytes": self.peak_memory_bytes,
                "memory_source": self.memory_source, "stopped_because": self.stopped_because}


def make_prompt(n_tokens: int, token_ids: bool, tokens_per_word: float = 1.0) -> str | list[int]:
    """About n tokens: token ids when the server's model has no tokenizer, else plain words
    (' word' is one token in common BPE vocabularies; the probe corrects the ratio from the
    server's own count after the first request)."""
    if token_ids:
        return [1000 + (i * 7) % 20000 for i in range(n_tokens)]
    return " ".join("word" for _ in range(max(1, round(n_tokens / tokens_per_word))))


class MemorySampler:
    """Samples GPU memory in use (NVML) or a process's RSS (psutil) in a thread; keeps the peak."""

    def __init__(self, pid: int | None = None, interval: float = 0.2):
        self.pid, self.interval = pid, interval
        self.peak: int | None = None
        self.source: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> int | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                used = sum(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used
                           for i in range(pynvml.nvmlDeviceGetCount()))
            finally:
                pynvml.nvmlShutdown()
            self.source = "nvml"
            return int(used)
        except Exception:
            pass
        if self.pid:
            try:
                import psutil

                self.source = "rss"
                return int(psutil.Process(self.pid).memory_info().rss)
            except Exception:
                return None
        return None

    def _loop(self):
        while not self._stop.is_set():
            v = self._read()
            if v is not None:
                self.peak = max(self.peak or 0, v)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)


class ProbeStopped(Exception):
    """SIGTERM arrived: end the probe, keeping what was measured (SIGINT raises KeyboardInterrupt)."""


def _raise_stopped(signum, frame):
    raise ProbeStopped("SIGTERM")


TRUNCATED_SHARE = 0.75   # a prompt counted below this share of what was sent was cut by the server


def run_probe(url: str, *, api: Api = "openai", model: str | None = None, max_context: int | None = None,
              max_concurrency: int = 32, concurrency_prompt: int = 512, max_tokens: int = 32,
              step_timeout: float = 120.0, time_budget: float = 600.0, token_ids: bool = False, pid: int | None = None,
              progress: Callable[[Step], None] | None = None, client=None) -> ProbeResult:
    import httpx

    result = ProbeResult(url, api, model)
    deadline = time.monotonic() + time_budget
    own = client is None
    client = client or httpx.Client(timeout=step_timeout, limits=httpx.Limits(max_connections=max_concurrency + 4))

    def record(step: Step) -> None:
        result.steps.append(step)
        if progress:
            progress(step)

    tokens_per_word = 1.0
    if not token_ids:   # how many tokens this server's tokenizer makes of our filler word
        words = cast(str, make_prompt(100, False))       # token_ids=False: words, a str
        counted = count_prompt_tokens(client, url, api, model, words, min(step_timeout, time_budget))
        if counted:
            tokens_per_word = max(0.1, counted / 100)

    def one(n: int) -> Measurement:
        return stream_once(client, url, api, model, make_prompt(n, token_ids, tokens_per_word),
                           max_tokens=max_tokens, timeout=step_timeout, expected_prompt_tokens=n,
                           budget_deadline=deadline)

    # SIGTERM (and Ctrl-C, SIGINT) end the probe with the steps measured so far, which the caller stores
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_stopped) if main else None
    sampler = MemorySampler(pid)
    try:
        _ladders(result, sampler, one, record, client, url, api, max_context, max_concurrency, concurrency_prompt,
                 deadline)
    except KeyboardInterrupt:
        result.stopped_because = "interrupted (SIGINT); the steps measured before it are kept"
    except ProbeStopped:
        result.stopped_because = "stopped (SIGTERM); the steps measured before it are kept"
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        if own:
            client.close()
    result.peak_memory_bytes, result.memory_source = sampler.peak, sampler.source
    return result


def _median_or_none(values) -> float | None:
    """The median of the figures a step's requests returned; None when none returned one (not 0: nothing was timed)."""
    v = [x for x in values if x]
    return statistics.median(v) if v else None


def _budget_spent(result: ProbeResult, e: ProbeError, where: str) -> bool:
    """A step cut by the time budget is no failure of the server: it ends the probe without a step."""
    if e.kind != "budget":
        return False
    result.stopped_because = f"time budget spent (during {where})"
    return True


def _ladders(result: ProbeResult, sampler: MemorySampler, one: Callable[[int], Measurement],
             record: Callable[[Step], None], client, url: str, api: Api, max_context: int | None,
             max_concurrency: int, concurrency_prompt: int, deadline: float) -> None:
    with sampler:
        for n in CONTEXT_LADDER:
            if max_context and n > max_context:
                break
            if time.monotonic() > deadline:
                result.stopped_because = "time budget spent"
                break
            try:
                m = one(n)
            except ProbeError as e:
                if _budget_spent(result, e, f"context {n}"):
                    break
                record(Step("context", n, 1, False, error=str(e), error_kind=e.kind))
                result.stopped_because = f"context {n}: {e}"
                break
            if n >= 1024 and m.prompt_tokens < TRUNCATED_SHARE * n:
                # Ollama cuts a prompt longer than num_ctx instead of refusing it (its log: "truncating input prompt")
                record(Step("context", n, 1, False, error=f"the server kept only {m.prompt_tokens:,} of ~{n:,} prompt "
                            "tokens (it truncates to its context: for Ollama raise num_ctx)", error_kind="truncated"))
                result.stopped_because = f"context {n}: truncated to {m.prompt_tokens:,} tokens"
                break
            record(Step("context", m.prompt_tokens, 1, True, m.ttft_s, m.decode_tokens_per_s,
                        m.prefill_tokens_per_s))
        # go on to concurrency only while the server is alive (it refused a prompt, it did not die)
        alive = all(s.ok for s in result.steps) or (
            result.steps[-1].error_kind not in ("refused", "disconnected") and is_alive(client, url, api))
        if alive and result.max_context_ok and not (result.stopped_because or "").startswith("time budget"):
            for c in CONCURRENCY_LADDER:
                if c > max_concurrency or time.monotonic() > deadline:
                    break
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=c) as pool:
                    futures = [pool.submit(one, concurrency_prompt) for _ in range(c)]
                    outcomes: list[Measurement | ProbeError] = []
                    for f in futures:
                        try:
                            outcomes.append(f.result())
                        except ProbeError as e:
                            outcomes.append(e)
                wall = time.perf_counter() - t0
                errors = [o for o in outcomes if isinstance(o, ProbeError)]
                done = [o for o in outcomes if isinstance(o, Measurement)]
                if any(_budget_spent(result, e, f"concurrency {c}") for e in errors):
                    break
                if errors:
                    record(Step("concurrency", concurrency_prompt, c, False, error=str(errors[0]),
                                error_kind=errors[0].kind))
                    result.stopped_because = result.stopped_because or f"concurrency {c}: {errors[0]}"
                    break
                record(Step("concurrency", concurrency_prompt, c, True,
                            statistics.median(m.ttft_s for m in done),
                            _median_or_none(m.decode_tokens_per_s for m in done), None,
                            sum(m.completion_tokens for m in done) / wall))
