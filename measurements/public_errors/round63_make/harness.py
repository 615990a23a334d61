"""Round 63's fixtures and caps (collect63). Fixtures are built by run_all.py into a neutral run folder before a
scenario's user command runs; ``envsetup.py`` (copied beside the user's script) holds the address-space cap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ENVSETUP = '''import resource

def _mapped():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

def cap(headroom_mib):
    """RLIMIT_AS = what is mapped now + headroom: the cap bites on what comes next."""
    lim = _mapped() + int(headroom_mib) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
'''


def tiny_gguf(path: Path, n_layer: int = 2, n_embd: int = 256, n_vocab: int = 32000, ctx_train: int = 2048,
              qtype: str = "F32", tok_model: str = "llama", drop: str | None = None,
              bad_type: int | None = None, arch: str = "llama") -> int:
    """A zero-weight llama-layout GGUF with an SPM byte-fallback vocabulary, written by runlocal's writer."""
    import gguf
    from gguf import GGMLQuantizationType as QT

    from runlocal.evidence.zero_gguf import write_zero_gguf
    qt = QT[qtype]
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    toks += [f"\u2581t{i}" for i in range(n_vocab - len(toks))]
    types = [2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259)
    kv = {"general.name": "tiny", "{arch}.block_count": n_layer, "{arch}.context_length": ctx_train,
          "{arch}.embedding_length": n_embd, "{arch}.feed_forward_length": 2 * n_embd,
          "{arch}.attention.head_count": 4, "{arch}.attention.head_count_kv": 4,
          "{arch}.rope.dimension_count": n_embd // 4, "{arch}.attention.layer_norm_rms_epsilon": 1e-5,
          "{arch}.vocab_size": n_vocab, "tokenizer.ggml.model": tok_model,
          "tokenizer.ggml.tokens": gguf.GGUFValue(toks, gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING),
          "tokenizer.ggml.scores": gguf.GGUFValue([0.0] * n_vocab, gguf.GGUFValueType.ARRAY,
                                                  gguf.GGUFValueType.FLOAT32),
          "tokenizer.ggml.token_type": gguf.GGUFValue(types, gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32),
          "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0}
    e, f = n_embd, 2 * n_embd
    tensors = [("token_embd.weight", [e, n_vocab], qt), ("output_norm.weight", [e], QT.F32),
               ("output.weight", [e, n_vocab], qt)]
    for i in range(n_layer):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", [e], QT.F32), (b + "attn_q.weight", [e, e], qt),
                    (b + "attn_k.weight", [e, e], qt), (b + "attn_v.weight", [e, e], qt),
                    (b + "attn_output.weight", [e, e], qt), (b + "ffn_norm.weight", [e], QT.F32),
                    (b + "ffn_gate.weight", [e, f], qt), (b + "ffn_up.weight", [e, f], qt),
                    (b + "ffn_down.weight", [f, e], qt)]
    if drop:
        tensors = [t for t in tensors if t[0] != drop]
    n = write_zero_gguf(path, arch, kv, tensors)
    if bad_type is not None:        # the first tensor's stored type id: after its name, n_dims and two dims
        raw = path.read_bytes()[:1 << 20]
        name = tensors[0][0].encode()
        off = raw.index(name) + len(name) + 4 + 8 * len(tensors[0][1])
        with open(path, "r+b") as fh:
            fh.seek(off)
            fh.write(np.uint32(bad_type).tobytes())
    return n


def tiny_hf(folder: Path, arch: str = "llama", layers: int = 2, hidden: int = 256, vocab: int = 32000,
            max_pos: int = 4096, dtype: str = "float32", template: str | None = None,
            config_edit: dict | None = None) -> None:
    """A tiny random-weight causal LM saved with a WordLevel tokenizer (words w0 … w{vocab-4})."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    torch.manual_seed(0)
    if arch == "gpt2":
        cfg = AutoConfig.for_model("gpt2", vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=4,
                                   n_positions=max_pos)
    else:
        cfg = AutoConfig.for_model("llama", vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=4, intermediate_size=2 * hidden,
                                   max_position_embeddings=max_pos, bos_token_id=1, eos_token_id=2,
                                   pad_token_id=0)
    model = AutoModelForCausalLM.from_config(cfg).to(getattr(torch, dtype))
    model.save_pretrained(folder)
    words = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    words.update({f"w{i}": i + 4 for i in range(vocab - 4)})
    tk = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    if template:
        fast.chat_template = template
    fast.save_pretrained(folder)
    if config_edit:
        p = folder / "config.json"
        c = json.loads(p.read_text())
        c.update(config_edit)
        p.write_text(json.dumps(c, indent=2))
