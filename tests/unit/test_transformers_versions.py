"""`--runtime transformers==X` (issue #18 point 1): the rules the planner carries with an era, selected by release and
read in the PyPI wheels (runtimes/transformers_versions.py). The messages expected are the wheels' own strings, quoted
with file:line at that release; the 5.23 behaviour is tests/unit/test_transformers_quant_on_cpu.py's."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError
from runlocal.runtimes import get_runtime, runtime_rules
from runlocal.runtimes.transformers_versions import transformers_rules

QWEN3_8B_PARAMS = 8_190_735_360


def _rules(text):
    return transformers_rules(tuple(int(x) for x in text.split(".")), text)


@pytest.mark.parametrize("release, attn, awq, fp8", [
    ("4.35.2", "eager", "refused", "unknown"),   # 4.35.2 modeling_utils.py: no "sdpa" anywhere
    # 4.36.0 modeling_utils.py:1309 `elif requested_attn_implementation in [None, "sdpa"]`
    ("4.36.0", "sdpa", "refused", "unknown"),
    ("4.45.0", "sdpa", "refused", "unknown"),    # 4.45.0 quantizer_awq.py:49 `if not torch.cuda.is_available(): raise`
    ("4.46.0", "sdpa", "refused", "unknown"),    # 4.46.0 quantizers/auto.py: no "fp8" in AUTO_QUANTIZER_MAPPING
    ("4.49.0", "sdpa", "refused", "9.0"),        # 4.49.0 quantizer_finegrained_fp8.py:54 `if major < 9:`
    ("4.53.0", "sdpa", "refused", "8.9"),        # 4.53.0 :53 `(major < 8) or (major == 8 and minor < 9)`; awq :55, :76
    ("4.54.0", "sdpa", "ipex", "8.9"),           # 4.54.0 quantizer_awq.py:55-61 GEMM → IPEX without CUDA / XPU
    ("4.57.0", "sdpa", "ipex", "8.9"),
    ("5.0.0", "sdpa", "runs", "dequantize"),     # 5.0.0 quantizer_finegrained_fp8.py:48-54 "default to dequantizing"
])
def test_rules_by_release(release, attn, awq, fp8):
    r = _rules(release)
    assert (r.attn_default, r.awq_cpu, r.fp8, r.note) == (attn, awq, fp8, "")


def test_unread_release_takes_the_one_below_and_says_so():
    r = _rules("4.52.1")
    assert r.release == (4, 50, 0) and r.fp8 == "9.0" and "4.52.1 not read" in r.note
    with pytest.raises(InputError, match=r"^runtime: transformers==4.30.0: transformers releases read are 4.35.2"):
        _rules("4.30.0")


def _plan(runtime, gpu, quant=None, **kw):
    return check(CheckRequest(model="qwen3-8b", runtime=runtime, quant=quant, gpu=gpu, ram="32G",
                              use_measurements=False, **kw))[0]


def test_awq_on_a_cpu_refused_by_4x_not_5x():
    old = _plan("transformers==4.45.0", "none", "awq").allocation.refusal
    assert old is not None and '"GPU is required to run AWQ quantized model."' in old      # 4.45.0 quantizer_awq.py:50
    assert _plan("transformers==4.54.0", "none", "awq").allocation.refusal is None     # switched to IPEX
    assert _plan("transformers", "none", "awq").allocation.refusal is None


def test_fp8_checkpoint_by_release():
    # RTX 4090 is compute capability 8.9: below 4.49–4.50's 9.0, at 4.53's 8.9
    r450 = _plan("transformers==4.50.0", "rtx-4090", "fp8").allocation.refusal
    assert r450 is not None and "compute capability >= 9.0" in r450
    assert _plan("transformers==4.53.0", "rtx-4090", "fp8").allocation.refusal is None
    # RTX 3090 (8.6): refused by 4.57, dequantized to bf16 by 5.x (2 B a parameter)
    r457 = _plan("transformers==4.57.0", "rtx-3090", "fp8").allocation
    assert r457.refusal is not None and "compute capability >= 8.9" in r457.refusal
    assert _plan("transformers", "rtx-3090", "fp8").allocation.devices[0].weights == 2 * QWEN3_8B_PARAMS
    cpu = _plan("transformers==4.57.0", "none", "fp8").allocation.refusal
    assert cpu is not None and '"No GPU found. A GPU is needed for FP8 quantization."' in cpu
    unknown = _plan("transformers==4.46.0", "h100", "fp8").allocation.refusal
    assert unknown is not None and "Unknown quantization type" in unknown


def test_before_4_36_plans_eager_attention_as_asking_for_it_does():
    """4.35's only attention is eager: the plan equals the current release's with attn_implementation="eager" asked."""
    old = _plan("transformers==4.35.2", "rtx-4090", ctx=8192).allocation
    asked = _plan("transformers", "rtx-4090", ctx=8192, attn_implementation="eager").allocation
    sdpa = _plan("transformers==4.36.0", "rtx-4090", ctx=8192).allocation
    assert [d.compute for d in old.devices] == [d.compute for d in asked.devices]
    assert old.devices[0].compute > sdpa.devices[0].compute
    assert 'attn_implementation' not in get_runtime("transformers==4.35.2").command(
        _plan("transformers==4.35.2", "rtx-4090").model, old.settings)


def test_the_plan_says_which_rules():
    version, words = runtime_rules(get_runtime("transformers==4.45.0"))
    assert version == "4.45.0" and "AWQ refused without a CUDA GPU" in words
    assert runtime_rules(get_runtime("transformers"))[1].startswith("transformers 5.23.0")


@pytest.mark.parametrize("release, ct", [
    ("4.36.0", "unknown"),        # 4.44.0 quantizers/auto.py:86: no "compressed-tensors" (4.45.0 auto.py:54 maps it)
    ("4.45.0", "compressed"),     # 4.45.0 quantizer_compressed_tensors.py:66 apply_quantization_config(run_compressed=True)
    ("5.0.0", "compressed"),      # 5.0.0 :72 (run_compressed default True), :83-85 decompress only if not run_compressed
    ("5.14.0", "compressed"),     # 5.14.0 :70, read as 5.0.0 (5.14 not a read row: nearest below)
    ("5.15.0", "first-forward"),  # 5.15.0 :117 run_compressed=False; :124-131 "decompresses them on the first forward"
    ("5.23.0", "first-forward"),
])
def test_compressed_tensors_fp8_rule_by_release(release, ct):
    assert _rules(release).ct_fp8 == ct


def test_compressed_tensors_fp8_is_gated_by_its_own_release_fact():
    # review19b finding 7: the compressed-tensors path (llama-3.1-8b -q fp8 is RedHatAI's FP8-dynamic, fp8-channel) was
    # gated by the fine-grained rule (5.0+), so 5.0 – 5.14 planned the first-forward decompression they do not do.
    # By hand, Llama-3.1-8B: 8,030,261,248 parameters → 16,060,522,496 B in bf16 (decompressed). Kept FP8: the
    # embedding and lm_head 2 × 128,256 × 4,096 × 2 B = 2,101,346,304, the norms (32 × 2 + 1) × 4,096 × 2 B = 532,480,
    # the Linears' 8,030,261,248 − 1,050,673,152 − 266,240 = 6,979,321,856 weights at 1 B, and a float32 scale per
    # output channel: 32 × (4,096 + 1,024 + 1,024 + 4,096 + 14,336 + 14,336 + 4,096) × 4 B = 5,505,024 →
    # 9,086,705,664 B.
    def weights(runtime):
        plan = check(CheckRequest(model="llama-3.1-8b", runtime=runtime, quant="fp8", gpu="rtx-3060", ram="32G",
                                  use_measurements=False))[0]
        return plan.verdict, sum(d.weights for d in plan.allocation.devices), plan.allocation.refusal

    decompressed = 2 * 8_030_261_248
    kept = 2_101_346_304 + 532_480 + 6_979_321_856 + 5_505_024
    assert weights("transformers")[:2] == ("does_not_fit", decompressed)     # 5.23: the first-forward decompression
    assert weights("transformers==5.16.0")[1] == decompressed                 # 5.15.0's rule
    assert weights("transformers==5.10.1")[:2] == ("fits", kept)              # 5.0.0's: run_compressed, kept FP8
    assert weights("transformers==4.50.0")[:2] == ("fits", kept)
    _, _, refused = weights("transformers==4.44.0")
    assert refused is not None and '"Unknown quantization type"' in refused


def _max_memory_gib(**kw) -> dict[str, float]:
    """The "max_memory" step's value of a one-GPU plan ("0: 11.14 GiB, cpu: 32.00 GiB"), GiB per device."""
    plan = check(CheckRequest(model="llama-3.2-3b", gpu="rtx-3060", ram="32G", ctx=4096, use_measurements=False, **kw))[0]
    step = next(s for s in plan.allocation.steps if s.label == "max_memory")
    return {k.strip(): float(v.split()[0]) for k, v in (part.split(":") for part in step.value.split(","))}


def test_device_map_headroom_by_transformers_and_accelerate_release():
    """One GPU, max_memory not given (read in the wheels, runtimes/transformers_versions.py):
    - accelerate 0.20.3 / 0.21.0 get_balanced_memory has no one-GPU branch: per_gpu = size // 1 caps only the GPUs
      before the last, so GPU 0 keeps its whole free memory (0.20.3 utils/modeling.py:588-638);
    - accelerate 0.22.0 :787-794 `if num_devices == 1: … if user_not_set_max_memory: … max_memory[key] *= 0.9`;
    - transformers before 5.0 calls accelerate's (4.45.0 modeling_utils.py:3939) and requires only accelerate>=0.21.0
      at 4.36.0 – 4.44.0, >=0.26.0 at 4.45.0 – 4.57.0 (dependency_versions_table.py); accelerate is no dependency of
      `pip install transformers`, so the one a user adds is the newest, and 4.40.0 with no --accelerate plans 1.15.0's
      (review20b finding 8; the floor, 0.21.0, was planned before);
    - transformers 5.0.0 has its own (integrations/accelerate.py:213 × 0.9) and takes RAM × 0.90 (:297), which
      accelerate's get_max_memory never does (psutil available whole: 0.20.3 :487, 1.15.0 :829)."""
    whole = _max_memory_gib(runtime="transformers==4.40.0", accelerate="0.21.0")
    buffered = _max_memory_gib(runtime="transformers==4.40.0", accelerate="0.22.0")
    assert buffered["0"] == pytest.approx(whole["0"] * 0.9, abs=0.01) and buffered["cpu"] == whole["cpu"] == 32.0
    assert _max_memory_gib(runtime="transformers==4.40.0") == buffered == \
        _max_memory_gib(runtime="transformers==4.40.0", accelerate="1.15.0")
    assert _max_memory_gib(runtime="transformers==4.45.0") == buffered          # 0.26.0 required there
    five = _max_memory_gib(runtime="transformers==5.0.0")
    assert five["0"] == buffered["0"] and five["cpu"] == pytest.approx(32.0 * 0.9, abs=0.01)
    assert _max_memory_gib(runtime="transformers==5.0.0", accelerate="0.21.0") == five     # its own code from 5.0
    assert _max_memory_gib(runtime="transformers") == five


def test_an_accelerate_release_that_is_not_one_is_refused_naming_the_field():
    with pytest.raises(InputError, match=r"^accelerate: expected an accelerate release such as 0\.21\.0, got 'latest'$"):
        check(CheckRequest(model="llama-3.2-3b", gpu="rtx-3060", runtime="transformers==4.40.0", accelerate="latest"))


def test_the_plan_names_the_accelerate_release_it_assumed():
    """Before 5.0 the headroom is the installed accelerate's, which the plan cannot see: it names the one assumed and
    the floor the release's dependency_versions_table.py sets (4.36.0 – 4.44.0: accelerate>=0.21.0)."""
    def assumed(**kw):
        plan = check(CheckRequest(model="llama-3.2-3b", gpu="rtx-3060", ram="32G", ctx=4096, use_measurements=False,
                                  **kw))[0]
        return [a for a in plan.allocation.assumptions if a.startswith("accelerate ")]

    (line,) = assumed(runtime="transformers==4.40.0")
    assert line.startswith("accelerate 1.15.0 assumed") and ">= 0.21.0" in line
    # contrast: a stated release, or transformers' own code from 5.0.0, needs no such line
    assert assumed(runtime="transformers==4.40.0", accelerate="0.21.0") == []
    assert assumed(runtime="transformers==5.0.0") == []


@pytest.mark.parametrize("model_type, release, expected", [
    # read in each wheel's models/<type>/modeling_<type>.py (pip download transformers==X --no-deps; sha256 in
    # measurements/transformers_versions/wheels.txt), the PreTrainedModel subclass's class attribute:
    ("llama", "4.35.2", "eager"),       # no SDPA path in 4.35.2 at all
    ("llama", "4.36.0", "sdpa"),        # 4.36.0 modeling_llama.py:845 `_supports_sdpa = True`
    ("mistral", "4.36.0", "eager"),     # 4.36.0 modeling_mistral.py:702 MistralPreTrainedModel: no _supports_sdpa
    ("mistral", "4.37.0", "sdpa"),      # 4.37.0 :809 `_supports_sdpa = True`
    ("phi", "4.38.0", "eager"),         # 4.38.0 modeling_phi.py:710: none
    ("phi", "4.39.0", "sdpa"),          # 4.39.0 :834
    ("gpt_neox", "4.41.0", "eager"),    # 4.41.0 modeling_gpt_neox.py:69: none
    ("gpt_neox", "4.42.0", "sdpa"),     # 4.42.0 :83
    ("phi3", "4.44.0", "eager"),        # 4.44.0 modeling_phi3.py:844 `_supports_sdpa = False`
    ("phi3", "4.45.0", "sdpa"),         # 4.45.0 :846
    ("gemma2", "5.20.0", "sdpa"),       # 5.20.0 modeling_gemma2.py:352 `_supports_sdpa = True`
    ("gemma2", "5.21.0", "eager"),      # 5.21.0 :352 `_supports_sdpa = False  # sdpa does not support softcapping`
    ("gemma2", "5.23.0", "eager"),
    ("gpt_oss", "4.55.0", "eager"),     # 4.55.0 modeling_gpt_oss.py:383 `_supports_sdpa = False`
    ("gpt_oss", "5.23.0", "eager"),     # 5.23.0 :379
    ("qwen3", "5.23.0", "sdpa"),
])
def test_default_attention_by_model_class_and_release(model_type, release, expected):
    """from_pretrained's default is SDPA only where the class declares `_supports_sdpa = True`, else eager (4.36.0
    modeling_utils.py:1473 `if not is_torch_sdpa_available() or not cls._supports_sdpa: return config`; 5.23.0
    :1873-1879 "Sdpa is the default, so we try it and fallback to eager otherwise when not possible")."""
    from runlocal.runtimes.transformers_versions import default_attention

    assert default_attention(_rules(release), model_type)[0] == expected
    if release == "5.23.0":
        assert default_attention(None, model_type)[0] == expected     # the unversioned planner is 5.23.0


def _tf_plan(model, runtime, ctx=8192, attn=None):
    return check(CheckRequest(model=model, gpu="h100", runtime=runtime, ctx=ctx, attn_implementation=attn,
                              use_measurements=False))[0]


def _step(plan, label):
    return next(s for s in plan.allocation.steps if s.label == label)


def test_eager_by_default_prices_the_scores():
    """Gemma 2 at 5.23 (eager, above) holds batch × heads × prompt² scores in the prefill, as asking eager did before:
    gemma-2-9b has 16 heads (config.json num_attention_heads), so at 8,192 tokens in bf16
    1 × 16 × 8,192² × 10 B (bf16 scores 2 + float32 copy 4 + float32 softmax 4) = 10,737,418,240 B; at 5.20 (SDPA) no
    scores. gpt-oss-20b (64 heads) softmaxes in bf16 after joining the sinks (5.23.0 modeling_gpt_oss.py:239-251:
    attn_weights, combined_logits, probs alive at once): 1 × 64 × 8,192² × 6 B = 25,769,803,776 B."""
    assert 16 * 8192 ** 2 * 10 == 10_737_418_240 and 64 * 8192 ** 2 * 6 == 25_769_803_776
    plan = _tf_plan("gemma-2-9b", "transformers")
    assert _step(plan, "attention implementation").value == "eager"
    assert _step(plan, "eager attention scores (one layer)").value == "10,737,418,240 B"
    assert 'attn_implementation="eager"' not in plan.command          # it is the default: nothing to pass
    sdpa = _tf_plan("gemma-2-9b", "transformers==5.20.0")
    assert _step(sdpa, "attention implementation").value == "sdpa"
    assert not [s for s in sdpa.allocation.steps if s.label.startswith("eager")]
    assert _step(_tf_plan("gpt-oss-20b", "transformers"), "eager attention scores (one layer)").value == \
        "25,769,803,776 B"
    # Mistral at 4.36 had no SDPA class: eager, and asking for SDPA there is transformers' own ValueError
    assert _step(_tf_plan("mistral-7b", "transformers==4.36.0"), "attention implementation").value == "eager"
    refused = _tf_plan("mistral-7b", "transformers==4.36.0", attn="sdpa")
    assert "does not support an attention implementation through torch.nn.functional.scaled_dot_product_attention" \
        in (refused.allocation.refusal or "")
    assert _tf_plan("gemma-2-9b", "transformers==5.20.0", attn="sdpa").allocation.refusal is None
    # Llama unchanged: SDPA, no scores
    assert _step(_tf_plan("llama-3.1-8b", "transformers"), "attention implementation").value == "sdpa"
