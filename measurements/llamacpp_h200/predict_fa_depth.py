"""runlocal's predictions for the H200 flash-attention run (fa_depth_bench.py), written BEFORE the run
(fa_depth_rule.md says how they are scored): ``python measurements/llamacpp_h200/predict_fa_depth.py`` →
predictions_fa_depth.json.

Per model and depth, for pp512 with flash attention off and on (the pair), from runlocal.evidence.speed_fit_faoff's
own functions on the records the run will write (same fields, tokens_per_s not yet known):

* ``fa_kernel_us``: the FlashAttention kernel's term a prompt token carries with fa on (speed_fit_fa.fa_term at
  FA_MMA_EFF), µs;
* ``plan_attn_us``: what a plan prices the attention at with fa off now (ATTN_FACTOR × FLOPs at the matmul rate: the
  gap between the model's own fa 0 and fa 1 predictions + the kernel term), µs — "before";
* ``term_attn_us``: hardware/fa_off_prefill.py's unfused-attention term, µs — "after";
* the ratio fa 0 ÷ fa 1 follows from the measured fa 1 rate t1 (s a token): t1 / (t1 − fa_kernel + X), X the plan's
  or the term's figure (speed_fit_faoff.ratios);
* ``pred_fa0_tps`` / ``pred_fa1_tps``: the absolute predictions (speed_fit.predict_row) for the record, and
  ``pred_fa0_term_tps`` the fa 0 one with the term in place of the plan's attention.

For tg32 at each depth: predict_row's decode figure for fa 0 and fa 1 (reported, not scored). And the CLI's figures,
``runlocal check M --gpu h200 --quant Q4_0 --ctx 4096 --flash-attn on|off --json`` (pp512 and decode at 2,048).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b", "gpt-oss-20b", "qwen3-8b"]
DEPTHS = [0, 4096, 16384, 32768]
GIB = {"llama-3.1-8b": 4.33, "qwen3-8b": 4.44, "qwen3-30b-a3b": 16.11, "gpt-oss-20b": 11.27, "gemma-2-9b": 4.84}


def record(model: str, test: str, fa: int) -> dict:
    """A record as fa_depth_bench.py writes it (the fields the scorer reads), tokens_per_s a placeholder."""
    return {"device": "h200-sxm", "n_devices": 1, "backend": "cuda", "runtime": "llama.cpp", "model": model,
            "quant": "Q4_0", "model_gib": GIB[model], "test": test, "fa": fa, "flash_attn": bool(fa),
            "tokens_per_s": 1.0, "build": "0c1e57098 (b11312)", "build_era": "current", "date": "2026-11-27",
            "n_batch": 512, "n_ubatch": 512}


def main() -> int:
    from runlocal.evidence import speed_fit_faoff as F
    from runlocal.evidence.speed_fit import build_rows, predict_row
    from runlocal.evidence.speed_fit_fa import fa_term
    from runlocal.hardware import speed as S

    consts, split = dict(S.FIT), S.SPLIT_OVERHEAD_MS
    out: dict = {"written_before_the_run": True, "device": "h200-sxm", "pairs": [], "decode": [], "cli": []}
    for model in MODELS:
        for d in DEPTHS:
            test = "pp512" + (f"@d{d}" if d else "")
            off, on = build_rows([record(model, test, 0), record(model, test, 1)])
            p0, p1 = predict_row(off, consts, split), predict_row(on, consts, split)
            fa = fa_term(on, S.FA_MMA_EFF)
            if not p0 or not p1 or fa is None:
                out["pairs"].append({"model": model, "test": test, "scorable": False})
                continue
            term = F.off_term(off, consts).seconds_per_token
            plan_attn = 1.0 / p0 - 1.0 / p1 + fa.seconds_per_token
            out["pairs"].append({
                "model": model, "test": test, "depth": d, "scorable": True,
                "fa_kernel_us": round(fa.seconds_per_token * 1e6, 4), "plan_attn_us": round(plan_attn * 1e6, 4),
                "term_attn_us": round(term * 1e6, 4), "pred_fa1_tps": round(p1, 1), "pred_fa0_tps": round(p0, 1),
                "pred_fa0_term_tps": round(1.0 / (1.0 / p1 - fa.seconds_per_token + term), 1)})
            tg = "tg32" + (f"@d{d}" if d else "")
            t_off, t_on = build_rows([record(model, tg, 0), record(model, tg, 1)])
            out["decode"].append({"model": model, "test": tg, "pred_fa0_tps": round(predict_row(t_off, consts, split) or 0, 1),
                                  "pred_fa1_tps": round(predict_row(t_on, consts, split) or 0, 1)})
        for fa_s in ("on", "off"):
            cmd = [sys.executable, "-m", "runlocal", "check", model, "--gpu", "h200", "--quant", "Q4_0", "--ctx", "4096",
                   "--flash-attn", fa_s, "--json"]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
            speed = json.loads(res.stdout).get("speed", {}) if res.returncode == 0 else {"error": res.stderr[-300:]}
            out["cli"].append({"model": model, "flash_attn": fa_s, "command": " ".join(cmd[2:]), "speed": speed})
    path = HERE / "predictions_fa_depth.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    for p in out["pairs"]:
        print(p)
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
