"""Remote GGUF headers over HTTP range requests: fetch only the header bytes, never the weights.

What may be read, and how far, is the caller's ``ReadPolicy`` (model/policy.py): the CLI follows redirects
and reports what went wrong in full; a server checks every hop's host and, on every connection, the
addresses its name resolves to, stops at a byte cap and a deadline, and says nothing of what it saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import InputError, ModelFormatError, ModelNotFoundError, RemoteError
from . import gguf
from .policy import Budget, ReadPolicy, is_public_address
from .spec import ModelSpec

if TYPE_CHECKING:      # httpx is imported when a remote file is read, not with this module
    import httpx

FIRST_RANGE = 1 << 20
MAX_REDIRECTS = 5
MAX_SPLITS = 256     # split GGUFs: DeepSeek-V3 at Q8_0 has 15 parts; 256 leaves room, not 99,999 requests


class BlockedAddress(Exception):
    """A connection to an address the policy refuses (raised inside httpx, before any byte is sent)."""


@dataclass
class RangeReader:
    """Reads byte ranges of one URL with an httpx client; counts what it transferred."""

    url: str
    client: httpx.Client
    headers: dict = field(default_factory=dict)
    transferred: int = 0
    size: int | None = None
    policy: ReadPolicy = field(default_factory=ReadPolicy)
    budget: Budget | None = None
    hub: bool = False

    def read_at(self, offset: int, length: int) -> bytes:
        import httpx

        if length <= 0:
            return b""
        rng = {"Range": f"bytes={offset}-{offset + length - 1}"}
        try:
            return self._read(length, {**self.headers, **rng})
        except BlockedAddress as e:
            raise InputError(f"model: {e}") from None
        except httpx.HTTPError as e:
            if self.policy.plain_errors:
                raise RemoteError("model: the remote file could not be read") from None
            raise RemoteError(f"{self.url}: {e.__class__.__name__}: {e}") from None

    def _read(self, length: int, headers: dict) -> bytes:
        import httpx

        url = self.url
        for _ in range(MAX_REDIRECTS + 1):
            timeout = httpx.Timeout(self.budget.timeout() if self.budget else 30.0)
            # streamed, so a server that ignores Range is caught before its body is downloaded
            with self.client.stream("GET", url, headers=headers, follow_redirects=not self.policy.same_host_redirects,
                                    timeout=timeout) as resp:
                if resp.is_redirect and self.policy.same_host_redirects:
                    url = self._next_hop(url, str(resp.next_request.url) if resp.next_request else "")
                    continue
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
                    if self.budget:
                        self.budget.spend(len(chunk))      # the byte cap and the deadline, chunk by chunk
                    if len(data) >= length:
                        break
                return bytes(data[:length])
        raise RemoteError("model: too many redirects" if self.policy.plain_errors else f"{self.url}: too many redirects")

    def _next_hop(self, url: str, target: str) -> str:
        from urllib.parse import urlsplit

        if not target:
            raise RemoteError("model: a redirect without a target")
        if self.hub:
            self.policy.check_url(target, hub=True)
        elif urlsplit(target).hostname != urlsplit(url).hostname or urlsplit(target).scheme not in ("http", "https"):
            raise InputError("model: the remote server redirected to another host; this server does not follow it")
        return target

    def _check(self, resp) -> None:
        where = "model" if self.policy.plain_errors else self.url
        if resp.status_code == 404:
            raise ModelNotFoundError(f"{where}: not found (HTTP 404)")
        if resp.status_code in (401, 403):
            hint = "" if self.policy.plain_errors else "; set HF_TOKEN for gated repos"
            raise RemoteError(f"{where}: access denied (HTTP {resp.status_code}){hint}")
        if resp.status_code == 200:
            raise RemoteError(f"{where}: server ignores HTTP range requests; refusing to download the whole file")
        if resp.status_code not in (206, 416):
            raise RemoteError(f"{where}: HTTP {resp.status_code}")


def hf_url(ref: str, *, token: bool = True) -> tuple[str, dict]:
    """'hf://owner/repo/path/file.gguf' → (resolve URL, auth headers) through huggingface_hub."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    rest = ref[len("hf://"):]
    parts = rest.split("/")
    if len(parts) < 3 or not all(parts):
        raise ModelNotFoundError(f"{ref}: expected hf://owner/repo/file.gguf")
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
    return hf_hub_url(repo, filename), build_hf_headers(token=None if token else False)


def guarded_client(policy: ReadPolicy, timeout: float = 30.0) -> httpx.Client:
    """An httpx client whose every connection (each redirect hop too) goes to a public address only,
    checked after DNS resolution: the socket is opened to the address that was checked, so a name that
    resolves differently the second time (DNS rebinding) cannot slip through."""
    import httpx

    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):     # httpx/httpcore changed: fail closed
        raise RemoteError("model: this server cannot check remote addresses with this httpx; remote reads are off")
    pool._network_backend = _PublicOnlyBackend(pool._network_backend)
    return httpx.Client(transport=transport, timeout=timeout)


class _PublicOnlyBackend:
    """An httpcore network backend that resolves the name itself and connects only to public addresses."""

    def __init__(self, inner):
        self.inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        import socket

        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise BlockedAddress("the remote host's name does not resolve") from None
        addresses = [info[4][0] for info in infos]
        if not addresses or not all(is_public_address(a) for a in addresses):
            raise BlockedAddress("this server does not read from loopback, private, link-local or multicast addresses")
        return self.inner.connect_tcp(addresses[0], port, timeout=timeout, local_address=local_address,
                                      socket_options=socket_options)

    def connect_unix_socket(self, *args, **kwargs):
        raise BlockedAddress("this server does not read from Unix sockets")

    def sleep(self, seconds):
        return self.inner.sleep(seconds)


def read_remote_gguf(ref: str, *, client: httpx.Client | None = None,
                     policy: ReadPolicy | None = None) -> tuple[ModelSpec, int]:
    """A remote GGUF's spec and the number of bytes transferred to read its header(s)."""
    import httpx

    policy = policy or ReadPolicy()
    hub = ref.startswith("hf://")
    url, headers = hf_url(ref, token=policy.hf_token) if hub else (ref, {})
    policy.check_url(url, hub=hub)
    own = client is None
    if client is None:
        client = guarded_client(policy) if policy.public_addresses_only else httpx.Client(timeout=30.0)
    budget = Budget(policy)
    try:
        name = url.rsplit("/", 1)[-1].split("?")[0]
        parts = gguf.split_names(name, max_parts=MAX_SPLITS)
        base = url[: url.rfind(name)]
        urls = [url] if parts == [name] else [base + part for part in parts]
        headers_read, transferred = [], 0
        for u in urls:
            reader = RangeReader(u, client, headers, policy=policy, budget=budget, hub=hub)
            headers_read.append(_parse(reader, u, policy))
            transferred += reader.transferred
        header = gguf.merge_split_headers(headers_read)
        return gguf.spec_from_header(header, id=name, source=ref), transferred
    finally:
        if own:
            client.close()


def _parse(reader: RangeReader, url: str, policy: ReadPolicy):
    try:
        return gguf.read_header_incrementally(reader.read_at, url, first=FIRST_RANGE)
    except ModelFormatError:
        if policy.plain_errors:       # the parser quotes what it read (magic bytes, keys): not for a server's callers
            raise ModelFormatError("model: the remote file is not a readable GGUF header") from None
        raise
