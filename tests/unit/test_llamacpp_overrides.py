"""llama.cpp -ot / --override-tensor: which weights land where, the GPU's copy of host weights, bad input."""

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.errors import InputError
from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.quant.gguf_mix import gguf_names
from runlocal.runtimes import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp, parse_tensor_overrides

GiB = 1 << 30
TARGETS = [Target("GPU0", "gpu", 80 * GiB), Target("GPU1", "gpu", 80 * GiB), Target("CPU", "cpu", 1024 * GiB)]


def bufs(alias: str, targets=TARGETS, output_cap: bool = True, **settings):
    spec = lookup(alias)
    s = Settings(ctx=4096, quant="Q4_K_M").with_(**settings)
    _, out, _, _ = LlamaCpp(output_cap=output_cap).buffers(spec, estimate(spec, "Q4_K_M"), s, targets)
    return {b.name: b for b in out}


def test_catalog_experts_get_the_names_the_converter_writes():
    # transformers' fused experts.gate_up_proj (E, 2I, H) becomes ffn_gate_exps + ffn_up_exps in the GGUF
    names = gguf_names(lookup("qwen3-30b-a3b"))
    flat = [n for parts in names for n in parts]
    assert "blk.0.ffn_gate_exps.weight" in flat and "blk.0.ffn_up_exps.weight" in flat
    assert "blk.47.ffn_down_exps.weight" in flat and "output.weight" in flat
    assert not any("gate_up" in n for n in flat)


def test_exps_to_cpu_is_n_cpu_moe_over_every_layer():
    spec = lookup("qwen3-30b-a3b")
    ot = bufs("qwen3-30b-a3b", override_tensor=parse_tensor_overrides(["exps=CPU"]))
    ncmoe = bufs("qwen3-30b-a3b", n_cpu_moe=spec.n_layers)
    for name in ot:
        assert ot[name].model == ncmoe[name].model
    # the experts are ~95 % of the weights: the GPUs keep attention, norms, router and the output layer
    assert ot["CPU"].model > 10 * (ot["GPU0"].model + ot["GPU1"].model)


def test_cpu_moe_is_llama_cpps_own_override_on_a_checkpoint_with_expert_biases():
    # llama-server --cpu-moe is -ot "\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU" (common/common.h LLM_FFN_EXPS_REGEX,
    # llm_ffn_exps_cpu_override). gpt-oss's checkpoint fuses the experts' gate and up biases
    # (experts.gate_up_proj_bias); convert_hf_to_gguf.py writes them as ffn_gate_exps.bias and ffn_up_exps.bias, which
    # that pattern matches: the user's -ot and --n-cpu-moe over every layer leave the same bytes on each device
    spec = lookup("gpt-oss-20b")
    names = dict(zip((t.name for t in spec.tensors), gguf_names(spec)))
    assert names["model.layers.3.mlp.experts.gate_up_proj_bias"] == ("blk.3.ffn_gate_exps.bias",
                                                                     "blk.3.ffn_up_exps.bias")
    ot = bufs("gpt-oss-20b", override_tensor=parse_tensor_overrides([r"\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU"]))
    ncmoe = bufs("gpt-oss-20b", n_cpu_moe=spec.n_layers)
    assert {name: b.model for name, b in ot.items()} == {name: b.model for name, b in ncmoe.items()}


def test_first_matching_rule_wins_and_a_pattern_can_pick_a_gpu():
    cpu_only = bufs("qwen3-30b-a3b", override_tensor=(("exps", "CPU"),))
    # layer 0's experts to GPU1 (by the layer split it belongs to GPU0), then every other expert to the CPU
    ot = bufs("qwen3-30b-a3b", override_tensor=parse_tensor_overrides([r"blk\.0\.ffn_.*_exps=CUDA1,exps=CPU"]))
    layer0 = bufs("qwen3-30b-a3b", override_tensor=((r"blk\.0\.ffn_.*_exps", "CPU"),))
    plain = bufs("qwen3-30b-a3b")
    layer0_bytes = layer0["CPU"].model - plain["CPU"].model
    assert layer0_bytes > 0
    assert ot["GPU1"].model - cpu_only["GPU1"].model == layer0_bytes
    assert cpu_only["CPU"].model - ot["CPU"].model == layer0_bytes
    assert ot["GPU0"].model == cpu_only["GPU0"].model


def test_half_of_a_fused_gate_up_moves_with_an_up_only_pattern():
    all_exps = bufs("qwen3-30b-a3b", override_tensor=(("exps", "CPU"),))
    up = bufs("qwen3-30b-a3b", override_tensor=(("ffn_up_exps", "CPU"),))
    gate_up = bufs("qwen3-30b-a3b", override_tensor=(("ffn_(up|gate)_exps", "CPU"),))
    plain = bufs("qwen3-30b-a3b")
    up_bytes = up["CPU"].model - plain["CPU"].model
    gate_up_bytes = gate_up["CPU"].model - plain["CPU"].model
    assert up_bytes > 0 and abs(gate_up_bytes - 2 * up_bytes) <= 48     # integer halves, one byte per tensor
    assert all_exps["CPU"].model > gate_up["CPU"].model                 # down_exps too


def test_gpu_compute_holds_a_copy_of_the_largest_host_weight():
    # Qwen3-235B-A22B: one expert matrix of a layer (128 × 1536 × 4096) is bigger than the logits phase, so the
    # GPU's compute buffer grows by at least that copy when the experts stay in host memory (op offload)
    one_gpu = TARGETS[1:]
    plain = bufs("qwen3-235b-a22b", targets=one_gpu)
    ot = bufs("qwen3-235b-a22b", targets=one_gpu, override_tensor=(("exps", "CPU"),))
    one = bufs("qwen3-235b-a22b", targets=one_gpu, override_tensor=((r"blk\.0\.ffn_down_exps", "CPU"),))
    down_exps = one["CPU"].model - plain["CPU"].model
    assert down_exps > plain["GPU1"].compute / 2
    assert ot["GPU1"].compute >= down_exps
    assert ot["GPU1"].compute > plain["GPU1"].compute
    # with the experts of only layer 0 on the host the copy is the same size: one at a time, not one per layer (the
    # simulated placement differs by where the copy lands among layer 0's tensors: 48 MiB here)
    assert abs(one["GPU1"].compute - ot["GPU1"].compute) <= down_exps * 0.15


@pytest.mark.parametrize("value, field", [
    ("exps", "expected <tensor name pattern>=<buffer type>"),
    ("exps(=CPU", "not a valid regular expression"),
    ("exps=GPU", "unknown buffer type 'GPU'"),
    ("=CPU", "expected <tensor name pattern>=<buffer type>"),
])
def test_bad_overrides_name_the_field(value, field):
    with pytest.raises(InputError, match="override-tensor") as e:
        parse_tensor_overrides([value])
    assert field in str(e.value)


def test_a_gpu_that_is_not_there_is_refused():
    with pytest.raises(InputError, match="CUDA2 names GPU 2, but only 2 GPU"):
        bufs("qwen3-30b-a3b", override_tensor=(("exps", "CUDA2"),))


def test_cli_takes_ot_and_prints_it_in_the_command():
    r = CliRunner().invoke(app, ["check", "qwen3-30b-a3b", "--vram", "24G", "--ram", "64G", "-ot", "exps=CPU", "--json"])
    assert r.exit_code == 0, r.output
    import json

    doc = json.loads(r.output)
    assert "-ot exps=CPU" in doc["command"]
    gpu = next(d for d in doc["memory"]["devices"] if d["kind"] == "gpu")
    assert gpu["weights"] < 2 * GiB          # attention + output only; the 17 GiB of experts are in RAM
    bad = CliRunner().invoke(app, ["check", "qwen3-30b-a3b", "--vram", "24G", "-ot", "exps=CUDA3"])
    assert bad.exit_code == 2 and "override-tensor" in bad.output and "Traceback" not in bad.output


def test_ngl_0_with_a_catalog_model_copies_the_lm_head():
    # -ngl 0 on a GPU machine: the graph is reserved on the GPU and the LM head (kept on the CPU) is copied into
    # its compute buffer. A catalog model has no per-tensor bytes from a file: they follow from the estimate.
    # That is the C API's graph (every ubatch token an output); llama-server since PR #23861 reserves 4 rows of
    # logits for its 4 slots, a matmul under ggml-backend's op-offload batch of 32: the LM head stays on the CPU.
    one_gpu = TARGETS[1:]
    ngl0 = bufs("llama-3.1-8b", targets=one_gpu, output_cap=False, n_gpu_layers=0)
    ngl1 = bufs("llama-3.1-8b", targets=one_gpu, output_cap=False, n_gpu_layers=1)   # the output layer only
    lm_head = ngl1["GPU1"].model
    assert lm_head > 300 * (1 << 20)
    assert ngl0["GPU1"].model == 0
    assert ngl0["GPU1"].compute > lm_head
    assert bufs("llama-3.1-8b", targets=one_gpu, n_gpu_layers=0)["GPU1"].compute < lm_head


# --- llama-server --fit (on by default): an unset context and -ngl fitted to leave 1 GiB free -------------

def fitted(alias: str, gpu: str, **kw):
    from runlocal.check import CheckRequest, check

    return check(CheckRequest(model=alias, gpu=gpu, use_measurements=False, **kw))[0]


def test_fit_keeps_the_trained_context_when_it_leaves_the_margin():
    p = fitted("llama-3.1-8b", "h100-sxm")
    assert p.settings.ctx == p.model.max_position_embeddings == 131072
    assert p.allocation.compromise is None and p.verdict == "fits"


def test_fit_shortens_an_unset_context_by_interpolation():
    # common/fit.cpp step 2: between 4,096 and the trained 131,072, linear in the summed use, rounded down to 256
    p = fitted("llama-3.1-8b", "rtx-3060-12gb")
    gpu = next(d for d in p.allocation.devices if d.kind == "gpu")
    ctx = p.settings.ctx
    assert 4096 < ctx < 131072 and ctx % 256 == 0
    assert gpu.total + (1 << 30) <= gpu.capacity
    assert "shortened from the trained 131,072" in p.allocation.compromise

    def keeps_margin(c: int) -> bool:
        d = next(d for d in fitted("llama-3.1-8b", "rtx-3060-12gb", ctx=c, n_gpu_layers=-2).allocation.devices
                 if d.kind == "gpu")
        return d.total + (1 << 30) <= d.capacity
    # KV and compute grow linearly with the context here, so the interpolation is the largest 256-step that fits
    assert keeps_margin(ctx) and not keeps_margin(ctx + 256)


def test_fit_leaves_a_set_context_and_moves_layers_instead():
    p = fitted("llama-3.1-70b", "rtx-4090", ctx=8192)
    assert p.settings.ctx == 8192
    ngl = p.settings.llamacpp.n_gpu_layers
    assert 0 < ngl <= p.model.n_layers
    gpu = next(d for d in p.allocation.devices if d.kind == "gpu")
    assert gpu.total + (1 << 30) <= gpu.capacity
    one_more = fitted("llama-3.1-70b", "rtx-4090", ctx=8192, n_gpu_layers=ngl + 1)
    g1 = next(d for d in one_more.allocation.devices if d.kind == "gpu")
    assert g1.total + (1 << 30) > g1.capacity       # the largest -ngl that keeps the margin
    assert p.verdict == "tight" and f"-ngl {ngl}" in p.command


def test_fit_keeps_every_layer_of_a_moe_and_moves_experts_first():
    p = fitted("qwen3-30b-a3b", "rtx-4060-ti-16gb", ctx="8k")
    assert p.settings.llamacpp.n_gpu_layers == p.model.n_layers + 1 and 0 < p.settings.llamacpp.n_cpu_moe < p.model.n_layers
    assert f"--n-cpu-moe {p.settings.llamacpp.n_cpu_moe}" in p.command and "experts" in p.allocation.compromise


def test_fit_off_and_ngl_all_are_the_users_word():
    off = fitted("llama-3.1-8b", "rtx-3060-12gb", fit="off")
    assert off.settings.ctx == 131072 and off.verdict == "does_not_fit" and "--fit off" in off.command
    pinned = fitted("llama-3.1-70b", "rtx-4090", ctx=8192, n_gpu_layers=-2)
    assert pinned.settings.llamacpp.n_gpu_layers == pinned.model.n_layers + 1 and pinned.verdict == "does_not_fit"


def test_tensor_split_sets_each_gpus_share_of_the_layers():
    # -ts 3,1: three quarters of the offloaded layers on the first GPU (src/llama-model.cpp: cumulative shares)
    even = fitted("llama-3.1-70b", "2x3090", ctx=8192, n_gpu_layers=-2)
    split = fitted("llama-3.1-70b", "2x3090", ctx=8192, n_gpu_layers=-2, tensor_split="3,1")
    g_even = [d.weights for d in even.allocation.devices if d.kind == "gpu"]
    g_split = [d.weights for d in split.allocation.devices if d.kind == "gpu"]
    assert abs(g_even[0] - g_even[1]) < 0.1 * g_even[0]
    assert 2.5 < g_split[0] / g_split[1] < 3.5
    assert sum(g_split) == sum(g_even)
    assert "--tensor-split 3,1" in split.command


@pytest.mark.parametrize("value, message", [("1,x", "expected shares"), ("1,1,1", "3 shares given for 2"),
                                            ("0,0", "not all 0")])
def test_bad_tensor_split(value, message):
    with pytest.raises(InputError, match=message):
        fitted("llama-3.1-70b", "2x3090", ctx=8192, tensor_split=value)
