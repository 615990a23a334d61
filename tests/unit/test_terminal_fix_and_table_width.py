"""review19 section 13, two terminal-output findings:
- a transformers fix printed the whole one-line program with max_length=512 under "Reduce context to 512": the
  terminal now prints the statement the fix changes, after "…; " (the program is five "; "-joined statements: the
  import, the tokenizer, from_pretrained, the input ids, generate — only generate's max_length differs);
- "2 × RTX 4060 Ti 16GB" (20 characters) wrapped inside the device column of the 80-column table: the seven figure
  columns' headers and values take 7 + 8 + 7 + 8 + 5 + 8 + 5 = 48 cells (the widest of each: "weights", "KV cache",
  "compute", "overhead", "total" / "14.30", "capacity", "32.00"), so with two spaces between the eight columns the line
  needs 20 + 48 + 2 × 7 = 82 > 80; one space each needs 75."""

from __future__ import annotations

import io

from rich.console import Console

from runlocal.check import CheckRequest, check
from runlocal.render.text import fix_command_shown, render_plan


def _printed(plan, width=80) -> str:
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_a_transformers_context_fix_prints_the_change_not_the_program():
    plan = check(CheckRequest(model="llama-3.1-8b", runtime="transformers", gpu="rtx-3060", ctx=32768, ram="32G",
                              use_measurements=False))[0]
    fix = next(f for f in plan.fixes if f.title.startswith("Reduce context to "))
    ctx = int(fix.title.removeprefix("Reduce context to ").replace(",", ""))
    run, whole = plan.command.split("; "), fix.command.split("; ")
    assert len(run) == len(whole) == 5 and run[:4] == whole[:4]          # the JSON keeps the whole program
    assert whole[4] == f"model.generate(input_ids, max_length={ctx})"
    text = _printed(plan)
    assert f"$ …; model.generate(input_ids, max_length={ctx})\n" in text
    assert text.count("AutoTokenizer.from_pretrained") == 1 + sum(   # the run: line, and fixes that change nothing
        1 for f in plan.fixes if f.command == plan.command)


def test_a_command_that_is_one_statement_prints_whole():
    serve = "llama-server -m model.gguf -c 8192 -ngl 99"
    assert fix_command_shown(serve, serve.replace("8192", "4096")) == serve.replace("8192", "4096")
    program = "a = 1; b = 2; f(b, n=3)"
    assert fix_command_shown(program, "a = 1; b = 2; f(b, n=4)") == "…; f(b, n=4)"
    assert fix_command_shown(program, program) == program                # nothing changed: the program, whole
    assert fix_command_shown(program, "a = 1; pad = 0; b = 2; f(b, n=4)").startswith("a = 1")   # a statement added


def test_two_gpus_name_keeps_one_line_at_80_columns():
    plan = check(CheckRequest(model="qwen2.5-32b", runtime="vllm", quant="awq", gpu="2x4060-ti-16gb", ram="32G",
                              use_measurements=False))[0]
    lines = _printed(plan).splitlines()
    row = next(line for line in lines if line.startswith("2 × RTX 4060 Ti"))
    assert row.startswith("2 × RTX 4060 Ti 16GB ") and len(row.rstrip()) <= 80
    assert not any(line.strip() == "16GB" for line in lines)            # neither the table's name nor the bar's wraps
    assert any(line.startswith("  2× NVIDIA GeForce RTX 4060 Ti 16GB █") for line in lines)
    # one GPU, a short name: two spaces between the columns, as before
    one = _printed(check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ram="32G", use_measurements=False))[0])
    assert "device        weights  KV cache  compute  overhead  total  capacity   free" in one
