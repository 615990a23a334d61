"""The exceptions runlocal raises, one tree, each saying what to do next.

    RunlocalError                      root: the CLI prints its message and exits 2
    ├── InputError (ValueError)        bad user input: a size, a context, a flag value
    │   ├── UnknownModelError          an alias nobody knows (carries suggestions)
    │   └── UnknownDeviceError         a device name nobody knows (carries suggestions)
    ├── ModelFormatError (ValueError)  a config/GGUF/safetensors header that is malformed or truncated
    ├── ModelNotFoundError (FileNotFoundError)  a path that does not exist, a Hub repo/file that is missing
    └── RemoteError (OSError)          the network or the Hub failed (offline, 401, range not supported)

Messages start with the field they are about ("ctx: …", "kv-cache: …"); ``field`` names it where the message
cannot (a catalog name, a model file). The HTTP API maps the tree to status codes in one handler
(api/errors.py): InputError and ModelFormatError 422, ModelNotFoundError 404, RemoteError 502.
"""

from __future__ import annotations


class RunlocalError(Exception):
    """Root of every error runlocal raises on purpose."""

    field: str | None = None     # the request field this error is about, when the message does not start with it


class InputError(RunlocalError, ValueError):
    """A value the user gave is not acceptable; the message names the field."""


class UnknownNameError(InputError):
    """A name looked up in a catalog was not found; ``suggestions`` holds close names."""

    kind = "name"

    def __init__(self, query: str, suggestions: list[str] | None = None):
        self.query = query
        self.suggestions = list(suggestions or [])
        hint = f"; did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown {self.kind} '{query}'{hint}")


class UnknownModelError(UnknownNameError):
    kind = "model"
    field = "model"


class UnknownDeviceError(UnknownNameError):
    kind = "device"
    field = "gpu"


class ModelFormatError(RunlocalError, ValueError):
    """A model file or config is malformed, truncated, or missing a required field."""

    field = "model"


class ModelNotFoundError(RunlocalError, FileNotFoundError):
    """The model path, repo or file does not exist."""

    field = "model"


class RemoteError(RunlocalError, OSError):
    """A network or Hub request failed."""

    field = "model"
