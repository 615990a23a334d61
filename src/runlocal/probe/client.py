"""One streamed request to an OpenAI-compatible or Ollama server: time to first token, decode rate.

Streaming is parsed by hand (SSE `data:` lines / Ollama's JSON lines) because the measurement
needs the arrival time of each chunk, which the vendor SDKs hide.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

Api = Literal["openai", "ollama"]


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


def stream_once(client, base_url: str, api: Api, model: str | None, prompt: str | list[int], *,
                max_tokens: int, timeout: float, expected_prompt_tokens: int) -> Measurement:
    import httpx

    path, body = build_request(api, model, prompt, max_tokens)
    t0 = time.perf_counter()
    ttft = None
    chunks = 0
    usage: dict[str, Any] = {}
    try:
        with client.stream("POST", base_url.rstrip("/") + path, json=body, timeout=timeout) as resp:
            if resp.status_code >= 400:
                text = resp.read().decode("utf-8", "replace")[:300]
                raise ProbeError("http", f"HTTP {resp.status_code}: {text}")
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                payload = line[5:].strip() if line.startswith("data:") else line.strip()
                if payload == "[DONE]":
                    break
                try:
                    doc = json.loads(payload)
                except json.JSONDecodeError:
                    raise ProbeError("malformed", f"not JSON in the stream: {payload[:80]!r}") from None
                if not isinstance(doc, dict):
                    raise ProbeError("malformed", "stream chunk is not a JSON object")
                if "error" in doc:
                    raise ProbeError("http", f"server error: {str(doc['error'])[:200]}")
                if doc.get("usage"):
                    usage = doc["usage"]
                if api == "ollama":
                    if doc.get("response"):
                        chunks += 1
                        ttft = ttft or time.perf_counter() - t0
                    if doc.get("done"):
                        usage = {"prompt_tokens": doc.get("prompt_eval_count"), "completion_tokens": doc.get("eval_count")}
                else:
                    choices = doc.get("choices") or []
                    # a chunk per generated token; its text may be empty (a partial UTF-8 sequence held back)
                    if choices and ("text" in choices[0] or "delta" in choices[0]) and not choices[0].get("finish_reason"):
                        chunks += 1
                        ttft = ttft or time.perf_counter() - t0
    except httpx.ConnectError as e:
        raise ProbeError("refused", f"nothing answers at {base_url} ({e})") from None
    except httpx.TimeoutException:
        raise ProbeError("timeout", f"no answer within {timeout:.0f} s") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as e:
        raise ProbeError("disconnected", f"the server closed the connection mid-response ({e.__class__.__name__})") from None
    total = time.perf_counter() - t0
    if ttft is None:
        raise ProbeError("empty", "the stream ended without any generated text (the server gave up on the request)")
    return Measurement(int(usage.get("prompt_tokens") or expected_prompt_tokens),
                       int(usage.get("completion_tokens") or chunks), ttft, total)


def count_prompt_tokens(client, base_url: str, api: Api, model: str | None, prompt: str, timeout: float) -> int | None:
    """The server's own token count for ``prompt``: one non-streamed request for one token (its usage)."""
    path, body = build_request(api, model, prompt, 1)
    body["stream"] = False
    body.pop("stream_options", None)
    try:
        r = client.post(base_url.rstrip("/") + path, json=body, timeout=timeout)
        doc = r.json()
    except Exception:
        return None
    if api == "ollama":
        return doc.get("prompt_eval_count")
    return (doc.get("usage") or {}).get("prompt_tokens")


def is_alive(client, base_url: str, api: Api) -> bool:
    """Does the server still answer? (after a failed step: a refusal, or a dead process)."""
    import httpx

    path = "/api/tags" if api == "ollama" else "/v1/models"
    try:  # a fresh connection: the pooled one may be the one the server just dropped
        return httpx.get(base_url.rstrip("/") + path, timeout=5).status_code < 500
    except httpx.HTTPError:
        return False
