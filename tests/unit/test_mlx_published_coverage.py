"""MLX without --quant plans the mlx-community 4-bit conversion Mac users download, for the catalog models mlx-community
publishes (data/mlx_repos.json, each added repo cited by a public text naming it); where runlocal knows none, the
plain answer says it planned the stored 16-bit checkpoint (review17 finding 10)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from runlocal.check import check
from runlocal.model.catalog import find_entry
from runlocal.request import CheckRequest

DOC = json.loads(resources.files("runlocal.data").joinpath("mlx_repos.json").read_text(encoding="utf-8"))


def _plan(model, gpu="m4-max-64gb", quant=None):
    return check(CheckRequest(model=model, runtime="mlx", gpu=gpu, quant=quant))


# The repos' sizes as public texts give them (GitHub code index, exact-string search, read 2026-11-27), against the
# weights runlocal plans for the conversion (4 bits + a 16-bit scale and bias per 64 weights): (model, Mac, bytes the
# text gives, how far the text's rounding lets them differ, the text)
PUBLISHED_SIZES = [
    ("llama-4-maverick", "m3-ultra-512gb", 225_923_469_800, 0.01,
     "file id 69072823088: defaultDownloadEstimateBytes(for: \"mlx-community/Llama-4-Maverick-17B-128E-Instruct-4bit\")"
     " == 225_923_469_800"),
    ("minimax-m2", "m3-ultra-512gb", 128.7e9, 0.01,
     "file id 71282272125: minimax-m2-mlx|mlx-community/MiniMax-M2-4bit|MiniMax M2 (MLX)|general|230|128.7"),
    ("glm-4.6", "m3-ultra-512gb", 199e9, 0.01, "file id 60679647413: mlx-community/GLM-4.6-4bit 文件 199GB"),
    ("qwen3-coder-30b-a3b", "m4-max-64gb", 17.2e9, 0.01,
     "file id 67163503020: mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit@6e302ea6… | 17.2 GB"),
    ("qwq-32b", "m4-max-64gb", 18.4e9, 0.01,
     "file id 70989984303: qwq-32b-mlx|mlx-community/QwQ-32B-4bit|QwQ 32B (MLX)|reasoning|32|18.4"),
    ("qwen3.6-35b-a3b", "m4-max-64gb", 20e9, 0.03,
     "file id 59934857524: \"mlx-community/Qwen3.6-35B-A3B-4bit\", // 20GB"),
]


@pytest.mark.parametrize(("model", "gpu", "published", "within", "text"), PUBLISHED_SIZES,
                         ids=[row[0] for row in PUBLISHED_SIZES])
def test_the_planned_conversion_weighs_what_its_repo_holds(model, gpu, published, within, text):
    plan, notes = _plan(model, gpu)
    assert plan.weights.quant == "mlx-4bit", text
    assert abs(plan.weights.total / published - 1) <= within, (plan.weights.total, text)
    assert not any("no mlx-community conversion" in n for n in notes)


def test_review17s_models_plan_the_4bit_download():
    # review17 finding 10: gemma-3-27b was planned as BF16 (50.31 GiB) with `--model google/gemma-3-27b-it`, and
    # qwen3.6-35b-a3b on a 64 GB Mac did not fit; the repos are named in public commands (file ids 53855572601,
    # 57586733359): `mlx-lm.server --model mlx-community/gemma-3-27b-it-4bit`
    gemma, _ = _plan("gemma-3-27b", "m4-max-128gb")
    assert gemma.weights.quant == "mlx-4bit"
    assert "--model mlx-community/gemma-3-27b-it-4bit" in gemma.command
    qwen, _ = _plan("qwen3.6-35b-a3b")
    assert "mlx-community/Qwen3.6-35B-A3B-4bit" in qwen.command and qwen.verdict == "fits"
    # the 8-bit conversion where the table keeps one: `mlx_lm.server --model mlx-community/Qwen3.5-35B-A3B-8bit`
    # (file id 52559653315)
    eight, _ = _plan("qwen3.5-35b-a3b", quant="mlx-8bit")
    assert "mlx-community/Qwen3.5-35B-A3B-8bit" in eight.command


def test_every_added_repo_is_cited_by_a_text_naming_it_and_names_its_base_model():
    cited = DOC["cited"]
    listed = {repo for repos in DOC["models"].values() for repo in repos.values()}
    assert set(cited) <= listed
    for alias, repos in DOC["models"].items():
        for repo in repos.values():
            if repo not in cited:
                continue
            assert repo.lower() in cited[repo].lower() and "file id" in cited[repo], repo
            # mlx-community names a conversion after the repo it converts: Qwen/Qwen3-4B-Instruct-2507 →
            # Qwen3-4B-Instruct-2507-4bit (the -MLX- infix of the small Qwen3.5 ones included)
            base = find_entry(alias)["repo_id"].split("/")[-1].lower()
            assert repo.split("/")[-1].lower().startswith(base), (alias, repo)


def test_no_known_conversion_is_said_in_the_plain_answer():
    plan, notes = _plan("olmo-2-7b")
    assert plan.weights.quant == "BF16"
    said = [n for n in notes if n.startswith("no mlx-community conversion of olmo-2-7b known to runlocal")]
    assert len(said) == 1
    assert "planned as stored, BF16" in said[0]
    assert "mlx_lm.convert --hf-path allenai/OLMo-2-1124-7B-Instruct -q" in said[0]
    # asked for a quant, or a conversion known: nothing to say
    assert not any("no mlx-community" in n for n in _plan("olmo-2-7b", quant="mlx-4bit")[1])
    assert not any("no mlx-community" in n for n in _plan("qwen3-8b")[1])
