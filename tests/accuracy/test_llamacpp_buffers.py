"""llama.cpp's planner against buffers real llama.cpp logged (tests/data/llamacpp_cpu_buffers.json).

Reproduce a record: write the model with tests/factories.write_llama_gguf(..., qtype=Q4_0), extend
the file with truncate() to its data size (sparse zeros), then with llama-cpp-python's low-level API
create a context (n_ctx, n_ubatch, n_seq_max, flash_attn_type, type_k/type_v) and read the
"KV buffer size" / "compute buffer size" / "output buffer size" lines llama.cpp logs.
"""

import json
from pathlib import Path

import gguf
import pytest
from factories import write_llama_gguf

from runlocal.model.gguf import read_gguf
from runlocal.plan import estimate
from runlocal.runtimes import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp

DATA = json.loads((Path(__file__).parents[1] / "data" / "llamacpp_cpu_buffers.json").read_text())
MiB = 1 << 20


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    d = tmp_path_factory.mktemp("g")
    return {name: read_gguf(write_llama_gguf(d / f"{name}.gguf", qtype=gguf.GGMLQuantizationType.Q4_0, file_type=2,
                                             tokens=dims["vocab"], **dims))
            for name, dims in DATA["models"].items()}


@pytest.mark.parametrize("rec", DATA["records"], ids=lambda r: f"{r['model']}-{r['n_ctx']}-ub{r['n_ubatch']}-"
                         f"fa{int(r['flash_attn'])}-{r['type_k']}-seq{r['n_seq']}")
def test_cpu_buffers(specs, rec):
    spec = specs[rec["model"]]
    settings = Settings(ctx=rec["n_ctx"] // rec["n_seq"], parallel=rec["n_seq"], cache_type_k=rec["type_k"],
                        cache_type_v=rec["type_v"]).with_(ubatch=rec["n_ubatch"],
                                                          flash_attn="on" if rec["flash_attn"] else "off")
    # llama-cpp-python's low-level API: the C API's n_outputs_max = n_batch, not llama-server's cap (PR #23861)
    alloc = LlamaCpp(output_cap=False).allocate(spec, estimate(spec, None), settings, [Target("CPU", "cpu", 1 << 40)])
    cpu = alloc.devices[0]
    assert round(cpu.kv_cache / MiB, 2) == rec["kv_mib"]                     # KV: exact to the printed digit
    assert abs(cpu.compute / MiB - rec["compute_mib"]) <= 0.05 * rec["compute_mib"]   # target: within 5 %
    assert abs(cpu.compute / MiB - rec["compute_mib"]) < 0.02                # achieved: to the printed digit
    if "output_mib" in rec:
        assert round(cpu.overhead / MiB, 2) == rec["output_mib"]


@pytest.mark.parametrize("ngl, gpu_layers, output_on_gpu", [
    (0, 0, False),     # nothing offloaded
    (1, 0, True),      # -ngl 1 offloads the output layer first (it counts as layer n_layer)
    (2, 1, True),      # then the last repeating layer
    (33, 32, True),    # all 32 layers + output
])
def test_ngl_offloads_output_layer_first(specs, ngl, gpu_layers, output_on_gpu):
    from runlocal.runtimes.llamacpp import _split

    split = _split(specs["llama-3.1-8b"], ngl)
    assert len(split.gpu_layers) == gpu_layers and split.output_on_gpu is output_on_gpu


def test_no_mmap_is_in_the_command_and_the_weights_stay_counted():
    # --no-mmap reads the weights into anonymous memory (a "CPU" buffer instead of "CPU_Mapped"); runlocal counts
    # the host's share as resident either way, so the bytes do not change, only how they are held
    from runlocal.check import CheckRequest, check

    mapped, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", n_gpu_layers=16))
    loaded, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", n_gpu_layers=16, no_mmap=True))
    assert "--no-mmap" in loaded.command and "--no-mmap" not in mapped.command
    assert [d.total for d in loaded.allocation.devices] == [d.total for d in mapped.allocation.devices]
    assert any("memory-mapped" in a for a in mapped.allocation.assumptions)
    assert any("--no-mmap" in a for a in loaded.allocation.assumptions)
