"""Round 62's shared parts: tiny zero-weight GGUFs (runlocal.evidence.zero_gguf's writer), tiny random-weight
transformers models, the address-space cap, and running "the user's command" with its stdout and stderr merged as a
terminal shows them. Each scenario module (sNN_*.py) fixes META (its label, phase, family, cause) before it runs and
defines produce() -> (merged output, exit status). run_all.py runs them and writes next/round62.jsonl."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
WORK = Path(os.environ.get("ROUND62_TMP", "/tmp/collect62"))
TIMEOUT_S = 240
# Every scenario's user command runs with this module's folder on PYTHONPATH so `import memcap62` works, and with
# Python unbuffered so stdout and stderr interleave as a terminal shows them.
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(HERE), "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
ENV.pop("PYTHONSTARTUP", None)


def workdir(name: str) -> Path:
    # a neutral folder name: the scenario's id (which names the cause) must not appear in the paths a text prints
    # (revision: the id was the folder's name)
    import hashlib
    d = WORK / ("run-" + hashlib.sha1(name.encode()).hexdigest()[:8])
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def run_user(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = TIMEOUT_S,
             stdin: str | None = None) -> tuple[str, int]:
    """The user's command, its stdout and stderr merged into one stream (as `2>&1` or a terminal shows them)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           input=stdin, text=True, errors="replace", timeout=timeout)
        return p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return out, 124


def python_script(d: Path, body: str, args: list[str] | None = None, **kw) -> tuple[str, int]:
    """The user runs `python3 user.py` (a plain traceback in a terminal)."""
    (d / "user.py").write_text(body)
    return run_user([sys.executable, "user.py", *(args or [])], d, **kw)


def ipython_cell(d: Path, body: str, setup: str | None = None, **kw) -> tuple[str, int]:
    """The user runs the code as a notebook cell: IPython's own formatter prints the traceback ('Cell In[1]'),
    colours off (a notebook's stored output with its ANSI escapes removed reads the same). ``setup`` runs first in the
    same namespace, as an earlier cell whose output is not part of the text (revision: the memory cap was set inside
    the cell, and IPython's context lines printed it)."""
    extra = []
    if setup is not None:
        (d / "setup_cell.py").write_text(setup)
        extra = ["--InteractiveShellApp.exec_files=['setup_cell.py']"]
    return run_user(["ipython", "--colors=NoColor", "--no-banner", "--HistoryManager.enabled=False", *extra,
                     "-c", body], d, **kw)


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------
def tiny_gguf_config(layers: int = 2, embd: int = 256, ff: int = 512, heads: int = 4, kv_heads: int = 4,
                     vocab: int = 32000, ctx: int = 4096) -> dict:
    return {"repo": "round62/tiny-llama (made here)", "arch": "llama", "hidden_size": embd,
            "intermediate_size": ff, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "vocab_size": vocab, "max_position_embeddings": ctx,
            "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


def zero_gguf(d: Path, model: str, weights: str = "q4_0", cfg: dict | None = None) -> Path:
    """A zero-weight GGUF written by the project's writer: a catalog model's real layout, or a tiny config."""
    sys.path.insert(0, str(REPO / "src"))
    from runlocal.evidence import zero_gguf as zg
    if cfg is not None:
        zg.MODELS[model] = cfg
    info = zg.write_model(model, d, weights)
    return Path(info["path"])


def tiny_hf_model(d: Path, layers: int = 2, hidden: int = 64, vocab: int = 1000, save: bool = True,
                  model_type: str = "llama", **extra) -> Path:
    """A random-weight transformers model from a config, saved with a small WordLevel tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.manual_seed(0)
    cfg = AutoConfig.for_model(model_type, hidden_size=hidden, intermediate_size=hidden * 2,
                               num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
                               vocab_size=vocab, max_position_embeddings=2048, **extra)
    model = AutoModelForCausalLM.from_config(cfg)
    out = d / "tiny-model"
    if save:
        model.save_pretrained(out)
        tiny_tokenizer(out, vocab)
    return out


def tiny_tokenizer(out: Path, vocab: int = 1000, chat_template: str | None = None) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, vocab)}}
    tok = Tokenizer(models.WordLevel(vocab=words, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    if chat_template is not None:
        fast.chat_template = chat_template
    fast.save_pretrained(out)


def copy_gguf(src: Path, out: Path, arch: str | None = None, extra: dict | None = None,
              drop_tensor: str | None = None) -> Path:
    """A copy of a GGUF through gguf-py's reader and writer: its architecture renamed, keys added or replaced
    (a str, an int as uint32, a list as an array), or one tensor left out."""
    import gguf
    reader = gguf.GGUFReader(src)
    old = str(reader.fields["general.architecture"].contents())
    arch = arch or old
    w = gguf.GGUFWriter(out, arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture" or field.name in (extra or {}):
            continue
        name = field.name.replace(old + ".", arch + ".", 1)
        sub = field.types[-1] if len(field.types) > 1 else None
        w.add_key_value(name, field.contents(), field.types[0], sub)
    for key, value in (extra or {}).items():
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        else:
            w.add_string(key, value)
    for t in reader.tensors:
        if t.name == drop_tensor:
            continue
        # the reader gives a quantised tensor as uint8 rows of bytes, the shape the writer takes for raw bytes
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def byte_tokenizer_kv(vocab: int = 32000) -> dict:
    """GGUF keys of a byte-level BPE tokenizer (GPT-2's byte-to-unicode alphabet, one merge, padded with unused
    tokens to the model's vocabulary), so a text prompt tokenises to about one token per byte."""
    # GPT-2's byte-to-unicode table (openai/gpt-2 encoder.py): printable bytes map to themselves, the rest to 256+n
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet, extra = [], 0
    for b in range(256):
        if b in printable:
            alphabet.append(chr(b))
        else:
            alphabet.append(chr(256 + extra))
            extra += 1
    tokens = alphabet + [f"<unused{i}>" for i in range(vocab - len(alphabet) - 2)] + ["<s>", "</s>"]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "default", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [1] * (vocab - 2) + [3, 3], "tokenizer.ggml.merges": ["\u0120 \u0120"],
            "tokenizer.ggml.bos_token_id": vocab - 2, "tokenizer.ggml.eos_token_id": vocab - 1}
