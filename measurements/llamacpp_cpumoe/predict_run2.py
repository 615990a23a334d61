"""Run 2's predictions, written and committed BEFORE the run (a held-out check of hardware/speed.py's host-copy rates,
which run 1 fitted): runlocal's prompt speed for each speed context of run 2 on an H200, from the same files.

    PYTHONPATH=src python3 measurements/llamacpp_cpumoe/predict_run2.py > measurements/llamacpp_cpumoe/predictions_run2.json
"""
import json
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.evidence.cpumoe_runs import write_models

RUN2 = {"qwen3.6-35b-a3b": ("cpumoe_nommap",), "qwen3-30b-a3b": ("cpumoe_nommap",), "gpt-oss-20b": ("cpumoe_nommap",),
        "llama-3.1-8b": ("ngl_half", "ngl_half_nommap"), "qwen3-32b": ("ngl_half", "ngl_half_nommap")}

with tempfile.TemporaryDirectory() as d:
    files = write_models(Path(d), list(RUN2), randomize=False)
    out = []
    for alias, modes in RUN2.items():
        f = files[alias]
        for mode in modes:
            args = ["check", f["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512", "--ubatch", "512",
                    "--flash-attn", "on", "--json"]
            args += ["--n-cpu-moe", str(f["n_layer"])] if mode.startswith("cpumoe") else ["--ngl", str(f["n_layer"] // 2)]
            args += ["--no-mmap"] if mode.endswith("nommap") else []
            r = CliRunner().invoke(app, args)
            sp = json.loads(r.output)["speed"]
            out.append({"model": alias, "mode": mode, "command": "runlocal " + " ".join(args[:1] + ["<file>"] + args[2:]),
                        "prefill_tokens_per_s": sp["prefill_tokens_per_s"], "decode_tokens_per_s": sp["decode_tokens_per_s"]})
json.dump({"written_before_run": True, "runlocal_commit": sys.argv[1] if len(sys.argv) > 1 else None,
           "predictions": out}, sys.stdout, indent=1)
