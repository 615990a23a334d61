"""review19 finding 3: a command for `--runtime llama.cpp==bN` parses on bN. Four boundaries beside flag_spelling.py's
two, each read from the merge commit's date against release tags that public texts name on a date:

- the binary `server` → `llama-server`: PR #7809, commit 1c641e6a, CI-run 2024-06-12 23:44 UTC; janhq/cortex.llamacpp's
  release bot names b3135 the newest release on 2024-06-12 (PR #83) and b3145 on 2024-06-14 (PR #87);
- -fa: PR #5021, commit 9c67c277, merged 2024-04-30; ollama/ollama PR #4036 (2024-04-29) bumps to b2761 before it,
  kherud/java-llama.cpp PR #60 "adds flash attention" with b2797;
- -hf REPO:QUANT: PR #11195, commit 00b4c3da, CI-run 2025-01-13; the bot names b4447 on 01-08 and b4502 on 01-17;
- -ot: PR #11397, commit e0e912f, merged 2025-04-02; the bot names b4984 on 03-28 and b5041 on 04-03.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def _commands(p) -> list[str]:
    return [p.command, *(f.command for f in p.fixes)]


def test_the_binary_is_server_before_the_rename():
    for build, binary in ((3000, "server"), (3135, "server"), (3145, "llama-server"), (6000, "llama-server")):
        p = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=8192, runtime=f"llama.cpp==b{build}")
        assert p.command.split()[0] == binary, (build, p.command)


def test_no_hf_tag_before_pr_11195_but_the_file_and_where_to_get_it():
    old = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=8192, runtime="llama.cpp==b4447").command
    assert " -hf " not in old.split("  # ")[0]
    # bartowski's file names: <repo stem>-<QUANT>.gguf (huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF)
    assert " -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf " in old
    assert "hf download bartowski/Meta-Llama-3.1-8B-Instruct-GGUF --include '*Q4_K_M*.gguf'" in old
    new = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=8192, runtime="llama.cpp==b4502").command
    assert " -hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M " in new and "hf download" not in new


def test_the_file_is_named_as_its_publisher_names_files():
    """The -m name for a build without -hf, against each repo's own file list (the Hub's tree pages): mradermacher
    puts a dot before the type (huggingface.co/mradermacher/DeepSeek-V2-Lite-Chat-GGUF/tree/b71ef48 lists
    DeepSeek-V2-Lite-Chat.Q4_K_M.gguf; its i1 repo, tree 812f6fe, DeepSeek-V2-Lite-Chat.i1-Q4_K_M.gguf), TheBloke a dot
    after a lower-case stem (TheBloke/Mistral-7B-Instruct-v0.1-GGUF tree 9ab8d70: mistral-7b-instruct-v0.1.Q4_K_M.gguf),
    bartowski a dash (the test above). Before, the dash form was guessed for all three."""
    from runlocal.runtimes.flag_spelling import published_gguf_file

    old = plan(model="deepseek-v2-lite", gpu="rtx-4090", ctx=4096, runtime="llama.cpp==b4447").command
    assert " -m DeepSeek-V2-Lite-Chat.Q4_K_M.gguf " in old
    assert "hf download mradermacher/DeepSeek-V2-Lite-Chat-GGUF --include '*Q4_K_M*.gguf'" in old
    old = plan(model="mistral-7b-v0.1", gpu="rtx-4090", ctx=4096, runtime="llama.cpp==b4447").command
    assert " -m mistral-7b-instruct-v0.1.Q4_K_M.gguf " in old
    assert published_gguf_file("mradermacher/DeepSeek-V2-Lite-Chat-i1-GGUF", "Q4_K_M") == \
        "DeepSeek-V2-Lite-Chat.i1-Q4_K_M.gguf"
    assert published_gguf_file("unsloth/Qwen3-8B-GGUF", "Q4_K_M") == "Qwen3-8B-Q4_K_M.gguf"
    # 16-bit files: bartowski/Meta-Llama-3.1-8B-Instruct-GGUF tree 3bbbfd9 lists Meta-Llama-3.1-8B-Instruct-bf16.gguf,
    # mradermacher/SmolLM-360M-GGUF tree 341e070 SmolLM-360M.f16.gguf
    assert published_gguf_file("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "BF16") == \
        "Meta-Llama-3.1-8B-Instruct-bf16.gguf"
    assert published_gguf_file("mradermacher/SmolLM-360M-GGUF", "F16") == "SmolLM-360M.f16.gguf"
    # the reading side takes both forms: a dotted file name reads back to its catalog model and type
    from runlocal.runtimes.pull_names import read_gguf_file_name
    read = read_gguf_file_name("DeepSeek-V2-Lite-Chat.Q4_K_M.gguf")
    assert read is not None and (read.alias, read.quant) == ("deepseek-v2-lite", "Q4_K_M")


def test_no_flash_attention_fix_before_pr_5021():
    # 64k of f16 KV for llama-3.1-8b: 2 × 32 layers × 8 heads × 128 × 2 B × 65,536 = 8 GiB, over a 12 GiB card with
    # the weights; on b2761 neither -fa nor a quantized V cache (which needs flash attention) exists
    assert 2 * 32 * 8 * 128 * 2 * 65536 == 8 << 30
    old = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=65536, runtime="llama.cpp==b2761")
    assert old.fixes
    assert not [c for c in _commands(old) if " -fa" in c.split("  # ")[0] or "--cache-type-v" in c]
    assert not [f.title for f in old.fixes if "flash" in f.title.lower() or "KV cache" in f.title]
    new = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=65536, runtime="llama.cpp==b2797")
    assert any(" -fa" in f.command for f in new.fixes)


def test_no_experts_in_ram_before_pr_11397():
    ask = dict(model="qwen3-30b-a3b", gpu="rtx-3060", ctx=32768, ram="64G")
    old = plan(**ask, runtime="llama.cpp==b4984")
    assert old.fixes
    assert not [c for c in _commands(old) if "-ot" in c.split("  # ")[0] or "--n-cpu-moe" in c]
    new = plan(**ask, runtime="llama.cpp==b5041")
    assert any("_exps=CPU" in f.command for f in new.fixes)


def test_a_setting_the_build_lacks_is_said_beside_the_command():
    p = plan(model="llama-3.1-8b", gpu="rtx-3060", ctx=8192, runtime="llama.cpp==b2500", flash_attn="on")
    line, _, said = p.command.partition("  # ")
    assert " -fa" not in line and "not in llama.cpp b2500: -fa (PR #5021" in said


@pytest.mark.parametrize("asked", [
    "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:BF16", "mradermacher/SmolLM-360M-GGUF:F16",
    "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M", "mradermacher/DeepSeek-V2-Lite-Chat-GGUF:Q4_K_M",
])
def test_the_download_pattern_fetches_the_file_that_m_names(asked):
    """review20b finding 6: `hf download --include` filters with huggingface_hub's filter_repo_objects, which matches
    case-sensitively (fnmatchcase); the 16/32-bit files are lower case at bartowski and mradermacher (trees 3bbbfd9,
    341e070), so '*BF16*.gguf' fetched nothing. Checked with huggingface_hub's own filter, against the file -m names
    and, as a contrast, a file of another quant in the same repo."""
    from huggingface_hub.utils import filter_repo_objects

    from runlocal.runtimes.flag_spelling import model_args

    args, first = model_args(["-hf", asked], 4000)
    name = args[1]
    pattern = first.split("--include '")[1].split("'")[0]
    other = name.replace(asked.split(":")[1].lower(), "Q8_0").replace(asked.split(":")[1], "Q8_0")
    assert list(filter_repo_objects([name, other], allow_patterns=[pattern])) == [name]
