"""One streamed request to an OpenAI-compatible or Ollama server: time to first token, decode rate.

Streaming is parsed by hand (SSE `data:` lines / Ollama's JSON lines) because the measurement
needs the arrival time of each chunk, which the vendor SDKs hide.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

Api = Literal["openai", "ollama"]

# One streamed chunk (a token, its JSON envelope, perhaps logprobs) is under a few KB; a whole response of
# a few thousand tokens is under a few MB. Past these a server is broken or hostile: the step fails.
MAX_LINE = 1 << 20
MAX_RESPONSE = 64 << 20


class ProbeError(Exception):
    """A request failed; ``kind`` is one of: refused, timeout, http, malformed, empty, disconnected."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Measurement:
    prompt_tokens: int
    completion_tokens: int
    ttft_s: float
    total_s: float

    @property
    def decode_tokens_per_s(self) -> float | None:
        gen = self.total_s - self.ttft_s
        return (self.completion_tokens - 1) / gen if self.completion_tokens > 1 and gen > 0 else None

    @property
    def prefill_tokens_per_s(self) -> float | None:
        return self.prompt_tokens / self.ttft_s if self.ttft_s > 0 else None


def build_request(api: Api, model: str | None, prompt: str | list[int], max_tokens: int) -> tuple[str, dict[str, Any]]:
    if api == "ollama":
        return "/api/generate", {"model": model, "prompt": prompt, "stream": True, "raw": True,
                                 "options": {"num_predict": max_tokens, "temperature": 0}}
    body: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens, "stream": True, "temperature": 0,
                            "stream_options": {"include_usage": True}}
    if model:
        body["model"] = model
    return "/v1/completions", body


def _one_line(text: str, limit: int = 200) -> str:
    """Server-chosen text inside a one-line message: control characters escaped, length capped."""
    return repr(text[:limit])[1:-1]


def _lines(resp, deadline: float, budget_deadline: float | None = None) -> Iterator[str]:
    """The response's lines, read as raw bytes (no decompression: a gzip stream could expand a
    thousandfold), with the step's deadline checked at every chunk and the line length and total bytes
    capped, so an endless or oversized answer ends the step instead of the probe's memory or time."""
    buf = bytearray()
    total = 0
    for chunk in resp.iter_raw():
        now = time.monotonic()
        if budget_deadline is not None and now > budget_deadline:
            raise ProbeError("budget", "the probe's time budget ran out during this step")
        if now > deadline:
            raise ProbeError("timeout", "the response did not end within the step timeout")
        total += len(chunk)
        if total > MAX_RESPONSE:
            raise ProbeError("malformed", f"the response passed {MAX_RESPONSE >> 20} MiB without ending")
        buf += chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            yield buf[start:end].decode("utf-8", "replace").rstrip("\r")
            start = end + 1
        del buf[:start]
        if len(buf) > MAX_LINE:
            raise ProbeError("malformed", f"a line of the response passed {MAX_LINE >> 20} MiB without ending")
    if buf:
        yield buf.decode("utf-8", "replace")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31 else None


def _timeout(deadline: float):
    import httpx

    return httpx.Timeout(max(0.05, deadline - time.monotonic()))


def _read_capped(resp, deadline: float, limit: int = MAX_LINE) -> bytes:
    out = bytearray()
    for chunk in resp.iter_raw():
        out += chunk
        if len(out) > limit or time.monotonic() > deadline:
            break
    return bytes(out[:limit])


def stream_once(client, base_url: str, api: Api, model: str | None, prompt: str | list[int], *,
                max_tokens: int, timeout: float, expected_prompt_tokens: int,
                budget_deadline: float | None = None) -> Measurement:
    """One streamed request, ended by ``timeout`` seconds or ``budget_deadline`` (time.monotonic), whichever
    comes first: checked at every chunk, not only while waiting for one."""
    import httpx

    path, body = build_request(api, model, prompt, max_tokens)
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    if budget_deadline is not None:
        deadline = min(deadline, budget_deadline)
    ttft = None
    chunks = 0
    usage: dict[str, Any] = {}
    try:
        with client.stream("POST", base_url.rstrip("/") + path, json=body, timeout=_timeout(deadline),
                           headers={"Accept-Encoding": "identity"}) as resp:
            if resp.status_code >= 400:
                text = _read_capped(resp, deadline, 300).decode("utf-8", "replace")
                raise ProbeError("http", f"HTTP {resp.status_code}: {_one_line(text, 300)}")
            if resp.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
                raise ProbeError("malformed", "the server compressed the stream although asked not to")
            for line in _lines(resp, deadline, budget_deadline):
                if not line.strip():
                    continue
                payload = line[5:].strip() if line.startswith("data:") else line.strip()
                if payload == "[DONE]":
                    break
                try:
                    doc = json.loads(payload)
                except (ValueError, RecursionError):      # not JSON, nested past the limit, a 5000-digit number
                    raise ProbeError("malformed", f"not JSON in the stream: {_one_line(payload, 80)}") from None
                if not isinstance(doc, dict):
                    raise ProbeError("malformed", "stream chunk is not a JSON object")
                if "error" in doc:
                    raise ProbeError("http", f"server error: {_one_line(json.dumps(doc['error'])[:200])}")
                if isinstance(doc.get("usage"), dict):
                    usage = doc["usage"]
                if api == "ollama":
                    if doc.get("response"):
                        chunks += 1
                        ttft = ttft or time.perf_counter() - t0
                    if doc.get("done"):
                        usage = {"prompt_tokens": doc.get("prompt_eval_count"), "completion_tokens": doc.get("eval_count")}
                else:
                    choices = doc.get("choices")
                    choices = choices if isinstance(choices, list) and choices and isinstance(choices[0], dict) else []
                    # a chunk per generated token; its text may be empty (a partial UTF-8 sequence held back)
                    if choices and ("text" in choices[0] or "delta" in choices[0]) and not choices[0].get("finish_reason"):
                        chunks += 1
                        ttft = ttft or time.perf_counter() - t0
    except httpx.ConnectError as e:
        raise ProbeError("refused", f"nothing answers at {base_url} ({e})") from None
    except httpx.TimeoutException:
        if budget_deadline is not None and time.monotonic() >= budget_deadline:
            raise ProbeError("budget", "the probe's time budget ran out during this step") from None
        raise ProbeError("timeout", f"no answer within {timeout:.0f} s") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as e:
        raise ProbeError("disconnected", f"the server closed the connection mid-response ({e.__class__.__name__})") from None
    total = time.perf_counter() - t0
    if ttft is None:
        raise ProbeError("empty", "the stream ended without any generated text (the server gave up on the request)")
    return Measurement(_count(usage.get("prompt_tokens")) or expected_prompt_tokens,
                       _count(usage.get("completion_tokens")) or chunks, ttft, total)


def count_prompt_tokens(client, base_url: str, api: Api, model: str | None, prompt: str, timeout: float) -> int | None:
    """The server's own token count for ``prompt``: one non-streamed request for one token (its usage)."""
    import httpx

    path, body = build_request(api, model, prompt, 1)
    body["stream"] = False
    body.pop("stream_options", None)
    deadline = time.monotonic() + timeout
    try:   # the body read capped and bounded in time like a stream: an endless answer is no count
        with client.stream("POST", base_url.rstrip("/") + path, json=body, timeout=_timeout(deadline),
                           headers={"Accept-Encoding": "identity"}) as r:
            doc = json.loads(_read_capped(r, deadline))
    except (httpx.HTTPError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    if api == "ollama":
        return _count(doc.get("prompt_eval_count"))
    usage = doc.get("usage")
    return _count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None


def is_alive(client, base_url: str, api: Api) -> bool:
    """Does the server still answer? (after a failed step: a refusal, or a dead process)."""
    import httpx

    path = "/api/tags" if api == "ollama" else "/v1/models"
    try:  # a fresh connection: the pooled one may be the one the server just dropped
        return httpx.get(base_url.rstrip("/") + path, timeout=5).status_code < 500
    except httpx.HTTPError:
        return False


def served_model(base_url: str, api: Api, timeout: float = 10.0) -> str | None:
    """The name the server gives its (first) model: OpenAI's GET /v1/models ``data[0].id`` — llama-server's is the
    path given to -m unless --alias names it —, Ollama's GET /api/tags ``models[0].name``; None where it gives none."""
    import httpx

    path = "/api/tags" if api == "ollama" else "/v1/models"
    try:
        doc = httpx.get(base_url.rstrip("/") + path, timeout=timeout).json()
    except (httpx.HTTPError, ValueError):
        return None
    listed = doc.get("models" if api == "ollama" else "data") if isinstance(doc, dict) else None
    first = listed[0] if isinstance(listed, list) and listed and isinstance(listed[0], dict) else {}
    name = first.get("name" if api == "ollama" else "id")
    return name.strip() if isinstance(name, str) and name.strip() else None
