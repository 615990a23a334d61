"""Remote GGUF headers over HTTP range requests: fetch only the header bytes, never the weights."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ModelNotFoundError, RemoteError
from . import gguf
from .spec import ModelSpec

FIRST_RANGE = 1 << 20


@dataclass
class RangeReader:
    """Reads byte ranges of one URL with an httpx client; counts what it transferred."""

    url: str
    client: object
    headers: dict = field(default_factory=dict)
    transferred: int = 0
    size: int | None = None

    def read_at(self, offset: int, length: int) -> bytes:
        import httpx

        if length <= 0:
            return b""
        rng = {"Range": f"bytes={offset}-{offset + length - 1}"}
        try:
            # streamed, so a server that ignores Range is caught before its body is downloaded
            with self.client.stream("GET", self.url, headers={**self.headers, **rng}, follow_redirects=True) as resp:
                self._check(resp)
                if resp.status_code == 416:
                    return b""
                content_range = resp.headers.get("content-range", "")
                if "/" in content_range and content_range.rsplit("/", 1)[1].isdigit():
                    self.size = int(content_range.rsplit("/", 1)[1])
                data = bytearray()
                for chunk in resp.iter_bytes():
                    data += chunk
                    self.transferred += len(chunk)
                    if len(data) >= length:
                        break
        except httpx.HTTPError as e:
            raise RemoteError(f"{self.url}: {e.__class__.__name__}: {e}") from None
        return bytes(data[:length])

    def _check(self, resp) -> None:
        if resp.status_code == 404:
            raise ModelNotFoundError(f"{self.url}: not found (HTTP 404)")
        if resp.status_code in (401, 403):
            raise RemoteError(f"{self.url}: access denied (HTTP {resp.status_code}); set HF_TOKEN for gated repos")
        if resp.status_code == 200:
            raise RemoteError(f"{self.url}: server ignores HTTP range requests; refusing to download the whole file")
        if resp.status_code not in (206, 416):
            raise RemoteError(f"{self.url}: HTTP {resp.status_code}")


def hf_url(ref: str) -> tuple[str, dict]:
    """'hf://owner/repo/path/file.gguf' → (resolve URL, auth headers) through huggingface_hub."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    rest = ref[len("hf://"):]
    parts = rest.split("/")
    if len(parts) < 3:
        raise ModelNotFoundError(f"{ref}: expected hf://owner/repo/file.gguf")
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
    return hf_hub_url(repo, filename), build_hf_headers()


def read_remote_gguf(ref: str, *, client: object | None = None) -> tuple[ModelSpec, int]:
    """A remote GGUF's spec and the number of bytes transferred to read its header(s)."""
    import httpx

    url, headers = hf_url(ref) if ref.startswith("hf://") else (ref, {})
    own = client is None
    client = client or httpx.Client(timeout=30.0)
    try:
        urls = [url]
        name = url.rsplit("/", 1)[-1].split("?")[0]
        m = gguf._SPLIT.match(name)
        if m:
            n = int(m.group("n"))
            base = url[: url.rfind(name)]
            urls = [f"{base}{m.group('stem')}-{i:05d}-of-{n:05d}.gguf" for i in range(1, n + 1)]
        headers_read, transferred = [], 0
        for u in urls:
            reader = RangeReader(u, client, headers)
            headers_read.append(gguf.read_header_incrementally(reader.read_at, u, first=FIRST_RANGE))
            transferred += reader.transferred
        header = gguf.merge_split_headers(headers_read)
        return gguf.spec_from_header(header, id=name, source=ref), transferred
    finally:
        if own:
            client.close()
