"""What a model reference may make runlocal read: local files, URLs, the Hub, and with which guards.

The CLI reads what its user names (``ReadPolicy()``). A server reads for anonymous callers, so by default
it resolves catalog aliases and Hugging Face repo ids only (``ReadPolicy.server()``); the operator opts in to
a local folder (paths resolved inside it, symlinks followed first) and to named remote hosts. Remote reads
under a server policy: no redirect to another host, no loopback/private/link-local/multicast address (checked
on each connection, after DNS resolution, so every hop and a rebinding name are covered), a byte cap and a
wall-clock deadline, and messages that carry no remote bytes, addresses or network errors.

The policy is an object passed down (resolve_model → remote/hub readers), so the HTTP API and the MCP server
each hold their own.
"""

from __future__ import annotations

import ipaddress
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InputError

# Hosts a hf:// file may redirect to: the Hub itself and its CDN / Xet storage (huggingface_hub's
# resolve URLs answer 302 to cdn-lfs*.hf.co or cas-bridge.xethub.hf.co)
HUB_HOST_SUFFIXES = ("huggingface.co", ".hf.co")
SERVER_MAX_REMOTE_BYTES = 64 << 20    # a GGUF header: Llama-3's 128k-token vocabulary is ~8 MiB of it
SERVER_REMOTE_DEADLINE_S = 20.0
SERVER_MAX_CONFIG_BYTES = 4 << 20     # a Hub config.json (the largest in the catalog are tens of KiB)


@dataclass(frozen=True)
class ReadPolicy:
    local_paths: bool = True                 # read a path that exists
    local_dir: Path | None = None            # with local_paths: only inside this folder
    urls: bool = True                        # read http(s):// GGUF URLs
    remote_hosts: frozenset[str] = frozenset()   # non-empty: only these hosts (hf:// always allowed)
    public_addresses_only: bool = False      # refuse loopback, private, link-local, multicast, reserved
    same_host_redirects: bool = False        # a redirect may not leave the host (the Hub's CDN for hf://)
    max_remote_bytes: int | None = None
    deadline_s: float | None = None
    max_config_bytes: int | None = None
    hf_token: bool = True                    # send this machine's HF_TOKEN to the Hub
    plain_errors: bool = False               # no remote bytes, addresses or network errors in messages

    @classmethod
    def server(cls, *, local_dir: str | Path | None = None, remote_hosts: tuple[str, ...] | list[str] = (),
               use_hf_token: bool = False) -> ReadPolicy:
        folder = Path(local_dir).expanduser().resolve(strict=True) if local_dir is not None else None
        if folder is not None and not folder.is_dir():
            raise InputError(f"allow-local-dir: '{local_dir}' is not a folder")
        return cls(local_paths=folder is not None, local_dir=folder, urls=bool(remote_hosts),
                   remote_hosts=frozenset(h.strip().lower().strip("[]") for h in remote_hosts if h.strip()),
                   public_addresses_only=True, same_host_redirects=True, max_remote_bytes=SERVER_MAX_REMOTE_BYTES,
                   deadline_s=SERVER_REMOTE_DEADLINE_S, max_config_bytes=SERVER_MAX_CONFIG_BYTES,
                   hf_token=use_hf_token, plain_errors=True)

    # --- local paths ---------------------------------------------------------------------------
    def local_path(self, ref: str) -> Path | None:
        """The path ``ref`` names when this policy may read it and it exists; None when it names no file
        (then it is an alias or a repo id). Refuses a path-looking reference the policy does not allow."""
        if not self.local_paths:
            if looks_like_path(ref):
                raise InputError("model: this server does not read local paths (give a catalog alias or a "
                                 "Hugging Face repo id)")
            return None
        path = Path(ref).expanduser() if self.local_dir is None else self._inside_folder(ref)
        try:
            return path if path.exists() else None
        except OSError:              # a name too long for the file system (ENAMETOOLONG) and the like
            return None

    def _inside_folder(self, ref: str) -> Path:
        """``ref`` inside the allowed folder: first by its text alone (a path outside is refused without a
        file-system call, so nothing outside is even looked up), then with symlinks resolved."""
        assert self.local_dir is not None
        outside = InputError("model: this server reads local paths only inside its allowed folder")
        lexical = Path(os.path.normpath(self.local_dir / ref))        # an absolute ref replaces the folder
        if not lexical.is_relative_to(self.local_dir):
            raise outside
        path = lexical.resolve()
        if not path.is_relative_to(self.local_dir):
            raise outside
        return path

    # --- remote reads --------------------------------------------------------------------------
    def check_url(self, url: str, *, hub: bool = False) -> None:
        """Refuse a URL (the first one, or a redirect's target) this policy does not allow."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            raise InputError("model: expected an http(s) URL")
        if hub:
            if not (host == "huggingface.co" or host.endswith(HUB_HOST_SUFFIXES)):
                raise InputError("model: the Hub redirected to a host outside the Hub")
            return
        if not self.urls:
            raise InputError("model: this server does not read URLs (give a catalog alias or a Hugging Face repo id)")
        if self.remote_hosts and host not in self.remote_hosts:
            raise InputError("model: this server reads URLs only from the hosts its operator allows")

    def deadline(self) -> float | None:
        return time.monotonic() + self.deadline_s if self.deadline_s else None


def looks_like_path(ref: str) -> bool:
    """A reference that can only be a file: absolute, relative to a folder, a home path, or a file name."""
    return (ref.startswith(("/", ".", "~", "\\")) or "\\" in ref or ref.count("/") > 1 or ":" in ref
            or ref.lower().endswith((".gguf", ".json", ".safetensors")))


def is_public_address(ip: str) -> bool:
    """False for loopback, private, link-local, multicast, reserved and unspecified addresses (and the
    IPv4 forms inside IPv6: mapped, 6to4, Teredo)."""
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        inner = addr.ipv4_mapped or addr.sixtofour or (addr.teredo[1] if addr.teredo else None)
        if inner is not None and not is_public_address(str(inner)):
            return False
    return addr.is_global and not addr.is_multicast


@dataclass
class Budget:
    """Bytes and time left for one request's remote reads."""

    policy: ReadPolicy
    transferred: int = 0
    until: float | None = field(default=None)

    def __post_init__(self) -> None:
        self.until = self.policy.deadline()

    def spend(self, n: int) -> None:
        self.transferred += n
        cap = self.policy.max_remote_bytes
        if cap is not None and self.transferred > cap:
            raise InputError(f"model: the remote header needs more than {cap:,} bytes; this server reads no more")
        self.check_time()

    def check_time(self) -> None:
        if self.until is not None and time.monotonic() > self.until:
            raise InputError(f"model: reading the remote file took over {self.policy.deadline_s:g} s")

    def timeout(self, default: float = 30.0) -> float:
        if self.until is None:
            return default
        return max(0.1, min(default, self.until - time.monotonic()))
