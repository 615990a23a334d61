"""ggml's type tables, without importing gguf-py: tensor types and their block sizes, llama.cpp's file types,
and the architecture names quant/gguf_mix.py uses.

gguf-py is the source (gguf/constants.py: GGMLQuantizationType, GGML_QUANT_SIZES, LlamaFileType,
MODEL_ARCH_NAMES, which mirror ggml/include/ggml.h, ggml/src/ggml.c type_traits and include/llama.h), but importing
it imports numpy and the whole gguf package (~0.2 s), most of a cold `runlocal check`. These are the same
entries, copied once from gguf-py 0.19.0; tests/test_ggml_types.py requires them to equal the installed
gguf-py's (Q8_1's 40 bytes are gguf-py's; ggml.c's block_q8_1 has 36, and no traced tensor is Q8_1).
Every other module (kv.py, runtimes/ggml_graph.py, quant/gguf_mix.py) reads block
sizes from here.
"""

from __future__ import annotations

from enum import IntEnum


class GGMLType(IntEnum):
    """ggml/include/ggml.h enum ggml_type (gguf-py GGMLQuantizationType: same names and values)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41


# (elements per block, bytes per block): ggml/src/ggml.c type_traits (gguf-py GGML_QUANT_SIZES)
QUANT_SIZES: dict[GGMLType, tuple[int, int]] = {
    GGMLType.F32: (1, 4), GGMLType.F16: (1, 2), GGMLType.Q4_0: (32, 18), GGMLType.Q4_1: (32, 20),
    GGMLType.Q5_0: (32, 22), GGMLType.Q5_1: (32, 24), GGMLType.Q8_0: (32, 34), GGMLType.Q8_1: (32, 40),
    GGMLType.Q2_K: (256, 84), GGMLType.Q3_K: (256, 110), GGMLType.Q4_K: (256, 144), GGMLType.Q5_K: (256, 176),
    GGMLType.Q6_K: (256, 210), GGMLType.Q8_K: (256, 292), GGMLType.IQ2_XXS: (256, 66), GGMLType.IQ2_XS: (256, 74),
    GGMLType.IQ3_XXS: (256, 98), GGMLType.IQ1_S: (256, 50), GGMLType.IQ4_NL: (32, 18), GGMLType.IQ3_S: (256, 110),
    GGMLType.IQ2_S: (256, 82), GGMLType.IQ4_XS: (256, 136), GGMLType.I8: (1, 1), GGMLType.I16: (1, 2),
    GGMLType.I32: (1, 4), GGMLType.I64: (1, 8), GGMLType.F64: (1, 8), GGMLType.IQ1_M: (256, 56),
    GGMLType.BF16: (1, 2), GGMLType.TQ1_0: (256, 54), GGMLType.TQ2_0: (256, 66), GGMLType.MXFP4: (32, 17),
    GGMLType.NVFP4: (64, 36), GGMLType.Q1_0: (128, 18),
}

class LlamaFileType(IntEnum):
    """include/llama.h enum llama_ftype (gguf-py LlamaFileType: same names and values)."""

    ALL_F32 = 0
    MOSTLY_F16 = 1
    MOSTLY_Q4_0 = 2
    MOSTLY_Q4_1 = 3
    MOSTLY_Q8_0 = 7
    MOSTLY_Q5_0 = 8
    MOSTLY_Q5_1 = 9
    MOSTLY_Q2_K = 10
    MOSTLY_Q3_K_S = 11
    MOSTLY_Q3_K_M = 12
    MOSTLY_Q3_K_L = 13
    MOSTLY_Q4_K_S = 14
    MOSTLY_Q4_K_M = 15
    MOSTLY_Q5_K_S = 16
    MOSTLY_Q5_K_M = 17
    MOSTLY_Q6_K = 18
    MOSTLY_IQ2_XXS = 19
    MOSTLY_IQ2_XS = 20
    MOSTLY_Q2_K_S = 21
    MOSTLY_IQ3_XS = 22
    MOSTLY_IQ3_XXS = 23
    MOSTLY_IQ1_S = 24
    MOSTLY_IQ4_NL = 25
    MOSTLY_IQ3_S = 26
    MOSTLY_IQ3_M = 27
    MOSTLY_IQ2_S = 28
    MOSTLY_IQ2_M = 29
    MOSTLY_IQ4_XS = 30
    MOSTLY_IQ1_M = 31
    MOSTLY_BF16 = 32
    MOSTLY_TQ1_0 = 36
    MOSTLY_TQ2_0 = 37
    MOSTLY_MXFP4_MOE = 38
    MOSTLY_NVFP4 = 39
    MOSTLY_Q1_0 = 40
    GUESSED = 1024

class Arch:
    """general.architecture names (gguf-py MODEL_ARCH_NAMES) of the architectures quant/gguf_mix.py names."""

    APERTUS = "apertus"
    ARCEE = "arcee"
    BAICHUAN = "baichuan"
    BAILINGMOE = "bailingmoe"
    BLOOM = "bloom"
    CHATGLM = "chatglm"
    COHERE2 = "cohere2"
    COMMAND_R = "command-r"
    DBRX = "dbrx"
    DECI = "deci"
    DEEPSEEK = "deepseek"
    DEEPSEEK2 = "deepseek2"
    DOTS1 = "dots1"
    ERNIE4_5 = "ernie4_5"
    ERNIE4_5_MOE = "ernie4_5-moe"
    EXAONE = "exaone"
    EXAONE4 = "exaone4"
    FALCON = "falcon"
    FALCON_H1 = "falcon-h1"
    GEMMA = "gemma"
    GEMMA2 = "gemma2"
    GEMMA3 = "gemma3"
    GEMMA3N = "gemma3n"
    GLM4 = "glm4"
    GLM4_MOE = "glm4moe"
    GPT2 = "gpt2"
    GPTJ = "gptj"
    GPTNEOX = "gptneox"
    GPT_OSS = "gpt-oss"
    GRANITE = "granite"
    GRANITE_HYBRID = "granitehybrid"
    GRANITE_MOE = "granitemoe"
    HUNYUAN_MOE = "hunyuan-moe"
    INTERNLM2 = "internlm2"
    JAMBA = "jamba"
    LFM2 = "lfm2"
    LLAMA = "llama"
    LLAMA4 = "llama4"
    MAMBA = "mamba"
    MAMBA2 = "mamba2"
    MINICPM = "minicpm"
    MINIMAXM2 = "minimax-m2"
    MPT = "mpt"
    NEMOTRON = "nemotron"
    NEMOTRON_H = "nemotron_h"
    NEMOTRON_H_MOE = "nemotron_h_moe"
    OLMO = "olmo"
    OLMO2 = "olmo2"
    OLMOE = "olmoe"
    PHI2 = "phi2"
    PHI3 = "phi3"
    PHIMOE = "phimoe"
    QWEN2 = "qwen2"
    QWEN2MOE = "qwen2moe"
    QWEN2VL = "qwen2vl"
    QWEN3 = "qwen3"
    QWEN35 = "qwen35"
    QWEN35MOE = "qwen35moe"
    QWEN3MOE = "qwen3moe"
    QWEN3VL = "qwen3vl"
    QWEN3VLMOE = "qwen3vlmoe"
    QWEN3NEXT = "qwen3next"
    SEED_OSS = "seed_oss"
    SMOLLM3 = "smollm3"
    STABLELM = "stablelm"
    STARCODER = "starcoder"
    STARCODER2 = "starcoder2"


def block_size(name: str) -> tuple[int, int]:
    """(elements per block, bytes per block) of a ggml type given by name, any case ('q8_0', 'Q4_K', 'f16')."""
    return QUANT_SIZES[GGMLType[name.upper()]]


def row_size(name: str, n: int) -> int:
    """ggml_row_size: bytes of ``n`` elements of a type (whole blocks; ggml asserts n is a multiple of the block)."""
    block, size = block_size(name)
    return size * n // block
