"""The one copy of ggml's type tables (quant/ggml_types.py) against gguf-py, its source."""

import gguf

from runlocal.quant import ggml_types


def test_types_and_block_sizes_equal_gguf_py():
    assert {t.name: t.value for t in ggml_types.GGMLType} == {t.name: t.value for t in gguf.GGMLQuantizationType}
    assert {t.name: v for t, v in ggml_types.QUANT_SIZES.items()} == \
        {t.name: v for t, v in gguf.GGML_QUANT_SIZES.items()}


def test_file_types_equal_gguf_py():
    assert {t.name: t.value for t in ggml_types.LlamaFileType} == {t.name: t.value for t in gguf.LlamaFileType}


def test_architecture_names_equal_gguf_py():
    for attr, name in vars(ggml_types.Arch).items():
        if not attr.startswith("_"):
            assert gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[attr]] == name


def test_cache_and_graph_types_read_the_one_table():
    from runlocal.kv import CACHE_TYPES
    from runlocal.runtimes.ggml_graph import TYPES

    for name in ("f16", "q8_0", "q4_0", "iq4_nl"):
        expected = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]]
        assert CACHE_TYPES[name] == expected
        assert TYPES[name] == expected
    assert TYPES["q4_k"] == gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q4_K]
