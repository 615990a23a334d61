"""Two warnings of llama.cpp's common library (common/), which every llama.cpp tool and server links, read for what
they say about a failure.

1. The parameter fitting (``--fit``, on by default since late 2025; llama-fit-params prints its result): whether a
log shows the fit giving up on a model its own projection says does not fit.

common/fit.cpp first projects the memory the load would use with the given parameters
("projected to use P MiB of device memory vs. F MiB of free device memory", a total over the devices when there are
several) and, when that leaves less than the target margin (1024 MiB by default), reduces the context and then the
layers on the GPUs. When the user has set what it would change (``-ngl``, ``-ot`` / ``--cpu-moe`` tensor overrides,
``--tensor-split``, ``-sm row``), it throws a ``common_params_fit_exception`` ("…already set by user, abort"), which
``common_fit_params`` catches and logs as a warning — "failed to fit params to free device memory: …" — and the load
goes on with the parameters as given. So:

* an abort after a projection above the free memory (P > F) is a load that goes on needing more than the devices
  have: its allocation fails later (the compute buffer, the last one, or the weights), or on Windows spills into
  shared memory. That is a lack of memory even when the paste stops before the allocation's own error;
* an abort after a projection within the free memory (only the margin short) may well load: no signal;
* a fit that succeeds ("successfully fit params"), or the projection alone (llama-fit-params before it reduces
  anything), names no failure: a look-alike;
* "encountered an error while trying to fit params" is another exception (a model that does not load): not this.

2. A build without a GPU backend: common/arg.cpp warns "not compiled with GPU offload support, --gpu-layers option
will be ignored" (older builds: "--n-gpu-layers option") when -ngl is given to a CPU-only build, and the model then
runs on the CPU — llama.cpp's own CI logs print it on healthy CPU runs. It is no failure by itself, so it answers only
a paste that states no error and no lack of memory (the user asking why the GPU is not used): not memory, the build.
"""

from __future__ import annotations

import re

# the projection's own line (common_params_fit_impl / llama_params_fit_impl), both spellings of the free side
_PROJECTED = re.compile(r"projected to use (\d+) mib of device memory vs\. (?:a total of )?(\d+) mib of free")
_ABORTED = "failed to fit params to free device memory"  # LOG_WRN's words for common_params_fit_exception
_SUCCEEDED = "successfully fit params"


def projection_over_free(low: str) -> bool | None:
    """For a projection line: whether the projected use is above the free memory (True) or within it (False);
    None for any other line."""
    m = _PROJECTED.search(low) if "projected to use" in low else None
    return None if m is None else int(m.group(1)) > int(m.group(2))


def fit_aborted(low: str) -> bool:
    """Whether the line is the fit giving up (a user-set parameter it may not change), after which the load goes on."""
    return _ABORTED in low


def fit_succeeded(low: str) -> bool:
    return _SUCCEEDED in low


_NO_GPU_BUILD = "not compiled with gpu offload support"


def no_gpu_build(low: str) -> bool:
    """Whether the line is llama.cpp's warning that the build has no GPU backend (its -ngl is ignored)."""
    return _NO_GPU_BUILD in low
