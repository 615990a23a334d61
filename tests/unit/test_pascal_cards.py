"""The cards older than Volta or without tensor cores (session 16, helper pascal16): their catalog figures against the
datasheets' own arithmetic, the names users type, and the kernel path ggml-cuda takes on them (backend_speed.nvidia_mmq,
common.cuh fast_fp16_hardware_available / turing_mma_available), priced with no fitted constant."""

import pytest

from runlocal.hardware import speed as S
from runlocal.hardware.backend_speed import nvidia_kernel_words
from runlocal.hardware.catalog import find_device
from runlocal.hardware.nvidia_peak import prompt_matmul_type, tensor_core_gap
from runlocal.model.catalog import lookup


@pytest.mark.parametrize("query, expected", [
    ("p40", "tesla-p40"), ("tesla p40", "tesla-p40"), ("Tesla P40", "tesla-p40"),
    ("1080ti", "gtx-1080-ti"), ("gtx 1080 ti", "gtx-1080-ti"), ("NVIDIA GeForce GTX 1080 Ti", "gtx-1080-ti"),
    ("970", "gtx-970"), ("gtx 970", "gtx-970"), ("1080", "gtx-1080"), ("1070", "gtx-1070"), ("1060", "gtx-1060-6gb"),
    ("NVIDIA GeForce GTX 1660 SUPER", "gtx-1660-super"), ("1660 ti", "gtx-1660-ti"), ("1660", "gtx-1660"),
    ("Tesla P100-PCIE-16GB", "tesla-p100-pcie-16gb"), ("Tesla P100-PCIE-12GB", "tesla-p100-pcie-12gb"),
    ("p100", "tesla-p100-pcie-16gb"), ("m40", "tesla-m40-24gb"), ("Tesla M40 24GB", "tesla-m40-24gb"),
])
def test_the_names_users_type_resolve(query, expected):
    # the CUDA device line's name ("Tesla P40", "NVIDIA GeForce GTX 1080 Ti", "Tesla P100-PCIE-16GB") and short forms
    assert find_device(query).id == expected


@pytest.mark.parametrize("card, cores, boost_ghz", [
    # CUDA cores and boost clock as NVIDIA / TechPowerUp list them; fp32 = cores x 2 FLOP (one FMA) x clock
    ("tesla-p40", 3840, 1.531), ("gtx-1080-ti", 3584, 1.582), ("gtx-1080", 2560, 1.733), ("gtx-1070", 1920, 1.683),
    ("gtx-1060-6gb", 1280, 1.708), ("gtx-1660", 1408, 1.785), ("gtx-1660-super", 1408, 1.785),
    ("gtx-1660-ti", 1536, 1.770), ("gtx-970", 1664, 1.178), ("tesla-m40-24gb", 3072, 1.114),
])
def test_fp32_is_cores_x_2_x_boost_clock(card, cores, boost_ghz):
    assert find_device(card).fp32_tflops == pytest.approx(cores * 2 * boost_ghz / 1000, rel=0.005)


@pytest.mark.parametrize("card", ["tesla-p40", "gtx-1080-ti", "gtx-1080", "gtx-1070", "gtx-1060-6gb"])
def test_pascal_61_int8_is_the_dp4a_rate(card):
    # __dp4a: four int8 multiply-adds a lane a clock = 4 x the FP32 FMA rate; NVIDIA's P40 datasheet: 47 TOPS for
    # 3840 cores at 1531 MHz (3840 x 1.531 x 8 = 47.03)
    dev = find_device(card)
    assert dev.compute_capability == "6.1"
    assert dev.int8_tops == pytest.approx(4 * dev.fp32_tflops, rel=0.01)
    assert dev.fp16_tflops == pytest.approx(dev.fp32_tflops / 64, rel=0.02)     # GP10x's 1:64 FP16


def test_p40_cuda_total_is_the_posted_torch_figure():
    # 'GPU 0; 22.38 GiB total capacity' (OpenGVLab/LLaMA-Adapter#151, four P40s): ECC on, as the card ships
    dev = find_device("p40")
    assert dev.cuda_total_bytes == int(22.38 * 2**30) and dev.cuda_total_source.endswith("/issues/151")


@pytest.mark.parametrize("card, quant, expected", [
    ("tesla-p40", "Q4_K_M", "Q4_K_M"),        # Pascal 6.1: dp4a MMQ at any batch (mmq.cu: !fp16_mma_hardware_available)
    ("tesla-p40", "F16", "F32"),              # cuBLAS without fast FP16 (cc 6.1 excluded): F32
    ("tesla-p40", "IQ1_M", "F32"),            # no MMQ kernel: cuBLAS, F32 on this card
    ("tesla-p100-pcie-16gb", "Q4_0", "F16"),  # cc 6.0: no __dp4a -> cuBLAS, fast FP16 -> F16
    ("tesla-p100-pcie-16gb", "F16", "F16"),
    ("gtx-970", "Q4_0", "F32"),               # Maxwell: cuBLAS, no fast FP16
    ("gtx-970", "F16", "F32"),
    ("rtx-3090", "F16", "F16"),               # unchanged for tensor-core cards
    ("rtx-3090", "Q4_0", "Q4_0"),
])
def test_the_prompt_matmul_type_follows_ggml_cuda(card, quant, expected):
    assert prompt_matmul_type(quant, True, find_device(card), "cuda", 512) == expected


@pytest.mark.parametrize("card, quant, peak", [
    ("tesla-p40", "Q4_0", 47.0), ("tesla-p40", "F32", 11.76), ("gtx-970", "F32", 3.92),
    ("tesla-p100-pcie-16gb", "F16", 18.7), ("tesla-m40-24gb", "F32", 6.84),
])
def test_the_published_peak_is_the_paths_rate(card, quant, peak):
    assert S.published_peak(find_device(card), quant) == peak


def test_a_tensor_core_card_keeps_its_fp16_figure_for_f32():
    # fp32_tflops is given only for the cards without tensor cores; the rest keep the catalog's one float figure
    dev = find_device("rtx-3090")
    assert dev.fp32_tflops is None and S.published_peak(dev, "F32") == dev.fp16_tflops


@pytest.mark.parametrize("card, declined", [
    ("gtx-1660", True), ("gtx-1660-super", True), ("gtx-1660-ti", True),
    ("rtx-2060", False), ("t4", False), ("tesla-p40", False), ("a10g", False), ("dgx-spark", False),
])
def test_gtx_16xx_prompts_are_declined(card, declined):
    # ggml gates its mma kernels on cc >= 7.5 alone (turing_mma_available); TU116/TU117 have no tensor cores, and only
    # they carry a vector-rate fp16 (<= 2 x fp32) at cc 7.5+ in the catalog; an A10G / DGX Spark (no published
    # figures) are not mistaken for them
    assert bool(tensor_core_gap(find_device(card), "cuda", True)) is declined
    assert tensor_core_gap(find_device(card), "vulkan", True) is None


def test_gtx_1660_predicts_decode_but_not_the_prompt():
    model = lookup("llama-3.1-8b")
    est = S.predict(model, 4.6e9, find_device("gtx-1660-super"), quant="Q4_K_M", prompt=512)
    assert est.prefill_tokens_per_s is None and est.decode_tokens_per_s and est.decode_tokens_per_s > 0


def test_p40_prompt_is_priced_at_the_dp4a_peak():
    # same model and entry on two 6.1 cards: without the fixed per-layer term the prompt rates would stand exactly as
    # their int8 peaks (47 / 45.4); with it they stay within a percent of that ratio
    model = lookup("llama-3.1-8b")
    p40 = S.predict(model, 4.6e9, find_device("tesla-p40"), quant="Q4_K_M", prompt=512).prefill_tokens_per_s
    ti = S.predict(model, 4.6e9, find_device("gtx-1080-ti"), quant="Q4_K_M", prompt=512).prefill_tokens_per_s
    assert p40 / ti == pytest.approx(47.0 / 45.4, rel=0.01)


def test_explain_words_name_the_path():
    assert "__dp4a" in nvidia_kernel_words("6.1", "Q4_K_M", 512)
    assert "cuBLAS" in nvidia_kernel_words("6.0", "Q4_0", 512)
    assert "F32" in nvidia_kernel_words("6.1", "F16", 512)
    assert nvidia_kernel_words("8.6", "Q4_0", 512) == "" and nvidia_kernel_words("8.6", "F16", 512) == ""
