"""`-q UD-Q4_K_XL` and the other Unsloth dynamic names (quant/unsloth.py, weights.unsloth_quant).

The size rule without the file (llama.cpp's mix of the base type) is checked against Unsloth's own published sizes:
- unsloth.ai/blog/deepseekr1-dynamic (2025-01-27), DeepSeek-R1 671B: "1.58-bit 131GB IQ1_S", "1.73-bit 158GB IQ1_M",
  "2.22-bit 183GB IQ2_XXS", "2.51-bit 212GB Q2_K_XL" (the files DeepSeek-R1-UD-IQ1_S … -UD-Q2_K_XL);
- huggingface.co/unsloth/MiniMax-M2.1-GGUF discussion #7: "Q4_K_M 138 GB", "Q4_K_XL 131 GB" (Unsloth: "Our dynamic
  quants are actually usually smaller").
GB as the Hub and the blog print them (10^9 bytes)."""

from __future__ import annotations

import pytest
from asking import ask
from factories import write_llama_gguf

from runlocal.model.catalog import lookup
from runlocal.quant.unsloth import unsloth_name
from runlocal.weights import estimate

PUBLISHED_GB = {("deepseek-r1", "UD-IQ1_S"): 131, ("deepseek-r1", "UD-IQ1_M"): 158, ("deepseek-r1", "UD-IQ2_XXS"): 183,
                ("deepseek-r1", "UD-Q2_K_XL"): 212, ("minimax-m2.1", "UD-Q4_K_XL"): 131}


def test_the_names_users_type_are_read():
    assert unsloth_name("UD-Q4_K_XL") == ("UD-Q4_K_XL", "Q4_K_M")
    assert unsloth_name("Q4_K_XL") == ("UD-Q4_K_XL", "Q4_K_M")
    assert unsloth_name("q6_k_xl") == ("UD-Q6_K_XL", "Q6_K")
    assert unsloth_name("UD-Q2_K_XL") == ("UD-Q2_K_XL", "Q2_K")
    assert unsloth_name("UD-IQ2_XXS") == ("UD-IQ2_XXS", "IQ2_XXS")
    assert unsloth_name("IQ2_XXS") is None and unsloth_name("Q4_K_M") is None and unsloth_name("UD-Q4_0") is None


@pytest.mark.parametrize(("alias", "name"), sorted(PUBLISHED_GB))
def test_the_offline_rule_against_unsloths_published_sizes(alias, name):
    # the rule's error, as quant/unsloth.py CHECKED states it to the user: within 6 % but for Q2_K_XL (+15 %: Unsloth's
    # 2.51-bit file is smaller than llama.cpp's Q2_K mix, which gives attention and the output more bits)
    base = unsloth_name(name)[1]
    planned = estimate(lookup(alias), base).total / 1e9
    error = planned / PUBLISHED_GB[(alias, name)] - 1
    bound = 0.16 if name == "UD-Q2_K_XL" else 0.06
    assert abs(error) <= bound, (alias, name, planned, error)
    from runlocal.quant.unsloth import CHECKED
    assert f"{name} {round(error * 100):+d} %".replace(" -", " −") in CHECKED, (name, error)


def test_a_catalog_model_says_which_rule_it_assumed():
    plan, notes = ask("runlocal check minimax-m2.1 --quant UD-Q4_K_XL --gpu h100")
    assert plan.weights.quant == "Q4_K_M"
    step = next(s for s in plan.steps if s.label == "weight quant")
    assert "UD-Q4_K_XL" in step.formula and "Q4_K_M mix" in step.formula and "MiniMax-M2.1" in step.formula
    assert any("Unsloth's dynamic quant planned as llama.cpp's Q4_K_M mix" in n for n in notes)


def test_a_gguf_file_is_planned_from_its_own_header(tmp_path):
    # the file's tensors (Q8_0 here) are what is planned, not a Q4_K_M re-typing
    f = write_llama_gguf(tmp_path / "Tiny-UD-Q4_K_XL.gguf")
    plan, notes = ask(f"runlocal check {f} --quant UD-Q4_K_XL --gpu 'rtx 4090'")
    as_stored, _ = ask(f"runlocal check {f} --gpu 'rtx 4090'")
    assert plan.weights.total == as_stored.weights.total and plan.weights.from_file
    assert any("planned from the file's own tensor types" in n for n in notes)
    other = write_llama_gguf(tmp_path / "Tiny-Q8_0.gguf")
    plan, _ = ask(f"runlocal check {other} --quant UD-Q4_K_XL --gpu 'rtx 4090'")
    assert plan.weights.quant == "Q4_K_M" and not plan.weights.from_file
