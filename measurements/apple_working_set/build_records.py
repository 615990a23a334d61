"""Builds apple_working_set.jsonl from the reports quoted below: bytes = value x unit, share = bytes / RAM,
held_out by the README's SHA-1 rule. Run: python3 measurements/apple_working_set/build_records.py"""
import hashlib
import json

GiB = 2**30
UNIT = {"MB": 1e6, "MiB": 2**20, "GiB": 2**30, "GB": 1e9, "bytes": 1}
ERA_MIB = "ggml-metal of mid/late 2023 printed recommendedMaxWorkingSetSize / 1024.0 / 1024.0 under the label 'MB' (fprintf/GGML_METAL_LOG_INFO in ggml-metal.m of that time)"
ERA_MB = "ggml-metal since 2024 prints recommendedMaxWorkingSetSize / 1e6 as 'MB' (GGML_LOG_INFO in ggml-metal.m / ggml-metal-device.m)"
R = [
 dict(ram_gb=16, chip="Apple M1 (MacBook Pro)", value_printed="10922.67 MB", unit="MiB", unit_basis=ERA_MIB + "; log posted 2023-09-14", macos=None, runtime="llama-cpp-python (llama.cpp ggml-metal, Sept 2023)", source_url="https://github.com/abetlen/llama-cpp-python/issues/687", note="tony352: 'M1 Macbook Pro with 16gb of RAM'"),
 dict(ram_gb=32, chip="Apple M2 Max (MacBook Pro)", value_printed="21845.34 MB", unit="MiB", unit_basis=ERA_MIB + "; issue 2023-08-28", macos=None, runtime="Ollama (llama.cpp ggml-metal, Aug 2023)", source_url="https://github.com/ollama/ollama/issues/434", note="'Macbook Pro M2 Max with 32GB memory'"),
 dict(ram_gb=32, chip="Apple M1 Max", value_printed="21845.34 MB", unit="MiB", unit_basis=ERA_MIB + "; comment 2023-07-02, single-space 'recommendedMaxWorkingSetSize =' fprintf form", macos=None, runtime="llama.cpp (PR #2011 branch, July 2023)", source_url="https://github.com/ggml-org/llama.cpp/pull/2011", note="EliasOenal: 'Tested on M1 Max with 32GB RAM'"),
 dict(ram_gb=64, chip="Apple M1 Max", value_printed="49152.00 MiB", unit="MiB", unit_basis="printed with the MiB label (comment 2023-11-25, llama-cpp-python)", macos=None, runtime="llama-cpp-python (Nov 2023)", source_url="https://github.com/ggml-org/llama.cpp/issues/1870", note="zestysoft: 'on an M1 MAX with 64GB of ram'"),
 dict(ram_gb=96, chip="Apple M2 Max", value_printed="73728,00 MB", unit="MiB", unit_basis=ERA_MIB + "; issue 2023-09-16 (decimal comma: locale)", macos=None, runtime="llama.cpp (Sept 2023)", source_url="https://github.com/ggml-org/llama.cpp/issues/3213", note="'M2 max 96 Gb RAM'"),
 dict(ram_gb=64, chip="Apple M2 (poster: 'M2 Mac Pro')", value_printed="51539.61 MB", unit="MB", unit_basis=ERA_MB + "; issue 2024-08-21, ggml_metal_init form", macos=None, runtime="llama.cpp llama-server (Aug 2024)", source_url="https://github.com/ggml-org/llama.cpp/issues/9112", note="'M2 Mac Pro with 64 GB Memory'"),
 dict(ram_gb=36, chip="Apple M4 Max", value_printed="28991.03 MB", unit="MB", unit_basis=ERA_MB + "; llama-cpp-python 0.3.34 built from sdist", macos="15.7.7 (24G720)", runtime="llama-cpp-python 0.3.34", source_url="https://github.com/ltsaprounis/ai-chess-coach/blob/8553e9e12275a33d5295df0135b9c8711e0e6b1e/docs/spike-reports/local-llm-provider.md", note="hardware table: 'Apple M4 Max, 36 GB unified memory', 'macOS 15.7.7 (24G720)'; run 2026-07-31; also '16,027.70 MiB allocated of 27,648 MiB available' (27648 MiB = the same 27 GiB)"),
 dict(ram_gb=36, chip="Apple M4 Max (MacBook Pro)", value_printed="30150.67 MB", unit="MB", unit_basis=ERA_MB + "; ggml_metal_device_init form (late-2025+ builds)", macos=None, runtime="llama.cpp llama-server (tested April 2026)", source_url=None, source_ref="public GitHub markdown file 'Context Capacity Analysis - MacBook Pro M4 Max 36 GB', find_string id 51879973573 (same text in ids 51838792522, 51860327332: one report); repository not resolved", note="'Tested April 2026'; macOS not stated (April 2026 suggests macOS 26, not stated)"),
 dict(ram_gb=64, chip="Apple M3 Max", value_printed="55662.79 MB", unit="MB", unit_basis=ERA_MB + "; llama.cpp mainline f9f3365 / turboquant fork (2026-04)", macos="26.4.1", runtime="llama.cpp llama-server (2026-04-28)", source_url="https://github.com/hackur/qwen36-local-llamacpp-turboquant/blob/0412ee434629f2d0a44572962ed00359050e87a7/benchmarks/RESULTS.md", note="'Apple M3 Max, 16 cores, 64 GB unified memory', 'macOS 26.4.1'; MTL0 total 53084 MiB = same bytes"),
 dict(ram_gb=128, chip="Apple M5 Max", value_printed="107.52 GiB", unit="GiB", unit_basis="printed in GiB by the reporter's probe", macos="26.x", runtime="Metal recommendedMaxWorkingSetSize probe (ds4 thread)", source_url="https://github.com/antirez/ds4/pull/893", note="'an M5 Max 128 GB on macOS 26.x, before applying any sysctl'; 112.00 GiB with iogpu.wired_limit_mb=114688 (that one not recorded: raised limit)"),
 dict(ram_gb=128, chip="Apple M5 Max", value_printed="~107.5 GiB (~84%)", unit="GiB", unit_basis="reporter's prose, GiB; hw.memsize=137438953472 printed", macos="26", runtime="osaurus fit check (Metal recommendedMaxWorkingSetSize)", source_url="https://github.com/osaurus-ai/osaurus/pull/1958", note="mimeding 2026-07-10: 'iogpu.wired_limit_mb=0 (kernel default), hw.memsize=137438953472, and macOS 26 advertising ~84% of RAM'; approximate (one decimal)", value=107.5),
 dict(ram_gb=48, chip="Apple M5 Pro", value_printed="37.44 GiB", unit="GiB", unit_basis="MLX max_recommended_working_set_size (bytes) quoted by the poster in GiB", macos=None, runtime="MLX (Whallm)", source_url="https://github.com/yanun0323/Whallm/pull/1", note="'A 48 GB M5 Pro, for example, reports a 37.44 GiB maximum'; M5 Pro ships with macOS 26, but the post does not state it"),
 dict(ram_gb=16, chip="Apple M4 (Mac mini)", value_printed="~10.67 GB", unit="GiB", unit_certain=False, unit_basis="prose 'GB' from MLX bytes; GiB if the code divides by 2^30, which the post does not show", macos="15.6", runtime="exo (MLX max_recommended_working_set_size)", source_url="https://github.com/exo-explore/exo/pull/1672", note="'~10.67 GB on 16GB M4', 'Mac Mini M4 16GB (macOS 15.6)'"),
 dict(ram_gb=16, chip="Apple M3", value_printed="11.84 GB", unit="GiB", unit_certain=False, unit_basis="llmfit display 'GB'; the post does not show the divisor (as 1e9 B the share would be 0.689)", macos=None, runtime="llmfit (objc2-metal recommendedMaxWorkingSetSize)", source_url="https://github.com/AlexsJones/llmfit/pull/754", note="'GPU: Apple M3 (unified memory, 11.84 GB GPU-available of 16.00 GB shared, Metal)', 2026-07"),
 dict(ram_gb=256, chip="Apple M3 Ultra", value_printed="239 GB", unit="GiB", unit_certain=False, unit_basis="a table row; GB vs GiB not stated, other rows of the same table are 0.75 x RAM computed, not measured", macos=None, runtime="MLX (Rapid-MLX)", source_url="https://github.com/raullenchai/Rapid-MLX/pull/183", note="author benches on an M3 Ultra 256GB; as 239e9 B the share would be 0.869"),
 dict(ram_gb=64, chip="Apple M4 Pro (Mac mini)", value_printed="55662.79 MB", unit="MB", unit_basis=ERA_MB + "; PrismML llama.cpp fork prism-b10709 (late 2026)", macos="27.0 (26A428)", runtime="llama.cpp (PrismML fork) llama-bench", source_url=None, source_ref="public GitHub markdown 'Apple Mac mini M4 Pro (64 GB) - llama.cpp Metal + MLX (Bonsai 2 27B)', find_string id 68619016303; repository not resolved", note="added after the held-out scoring; 'Apple M4 Pro, 64 GB unified memory', 'macOS 27.0 (build 26A428)'", late=True),
 dict(ram_gb=64, chip="Apple M1 Max (Mac Studio)", value_printed="55662.79 MB", unit="MB", unit_basis=ERA_MB + "; Homebrew llama.cpp version 10090 (7347430f4)", macos=None, runtime="llama.cpp b10090 (Homebrew), 2026-07-27", source_url=None, source_ref="dotoryeee/blog (GitHub), Korean post 'llama.cpp로 MoE와 Dense 추론 성능 비교하기' dated 2026-07-27, find_string id 60824103497; path not resolved", note="added after the held-out scoring; table: 'Mac Studio, Apple M1 Max', '64GB 통합 메모리' (unified memory); macOS not stated; the same M1 Max class printed 49152 MiB (0.75) in 2023", late=True),
]
ERA = {
 "https://github.com/abetlen/llama-cpp-python/issues/687": "pre-26",
 "https://github.com/ollama/ollama/issues/434": "pre-26",
 "https://github.com/ggml-org/llama.cpp/pull/2011": "pre-26",
 "https://github.com/ggml-org/llama.cpp/issues/1870": "pre-26",
 "https://github.com/ggml-org/llama.cpp/issues/3213": "pre-26",
 "https://github.com/ggml-org/llama.cpp/issues/9112": "pre-26",
 "https://github.com/antirez/ds4/pull/893": "26+",
 "https://github.com/osaurus-ai/osaurus/pull/1958": "26+",
 "https://github.com/yanun0323/Whallm/pull/1": "26+",
 "https://github.com/exo-explore/exo/pull/1672": "pre-26",
 "https://github.com/AlexsJones/llmfit/pull/754": None,
 "https://github.com/raullenchai/Rapid-MLX/pull/183": None,
}
out = []
for r in R:
    v = r.pop("value", None)
    late = r.pop("late", False)
    if v is None:
        s = r["value_printed"].replace(",", ".").split()[0].lstrip("~")
        v = float(s)
    b = int(round(v * UNIT[r["unit"]]))
    key = r["source_url"] or r["source_ref"]
    if key not in ERA:
        ERA[key] = "pre-26" if (r["macos"] or "").startswith("15") else ("26+" if (r["macos"] or "")[:2] in ("26", "27") else None)
    held = hashlib.sha1(key.encode()).hexdigest()[0] in "0123"
    rec = dict(ram_gb=r["ram_gb"], chip=r["chip"], value_printed=r["value_printed"], unit=r["unit"],
               unit_certain=r.get("unit_certain", True), unit_basis=r["unit_basis"], bytes=b,
               share=round(b / (r["ram_gb"] * GiB), 4), macos=r["macos"], runtime=r["runtime"],
               source_url=r["source_url"], **({"source_ref": r["source_ref"]} if "source_ref" in r else {}),
               note=r["note"], macos_era=ERA[key], held_out=held, added_after_scoring=late)
    out.append(rec)
with open(__import__("pathlib").Path(__file__).with_name("apple_working_set.jsonl"), "w", encoding="utf-8") as f:
    for rec in out:
        f.write(json.dumps(rec, ensure_ascii=False) + "\n")
for rec in out:
    print(rec["held_out"], rec["ram_gb"], rec["share"], rec["macos"], rec["unit_certain"], rec["source_url"] or rec["source_ref"][:40])
