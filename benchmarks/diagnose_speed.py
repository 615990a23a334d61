"""CPU time of `runlocal diagnose` on a long synthetic vLLM serving log (what a server's log file looks like after a
day: access lines, metrics and warnings by the hundred thousand, and one out-of-memory at the end).

Prints the log's size, the CPU seconds of each of --repeat diagnoses (process time, so other processes' load on a
shared machine inflates it less than wall time) and their minimum. Compare two trees by running this script with each
tree on PYTHONPATH, alternately, on the same machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from runlocal.diagnose import diagnose_file

# lines in the shape of vLLM 0.6's OpenAI server log (vllm/entrypoints/openai/api_server.py, engine/metrics.py)
_LINES = (
    'INFO:     127.0.0.1:{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 11-26 06:00:{s:02d} metrics.py:351] Avg prompt throughput: {n}.0 tokens/s, Avg generation throughput: "
    "{s}.1 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 41.2%, CPU KV cache "
    "usage: 0.0%.",
    "INFO 11-26 06:00:{s:02d} logger.py:37] Received request chat-{n}: prompt: 'free the slot after call {n}', "
    "params: SamplingParams(n=1, temperature=0.7, max_tokens=512), lora_request: None.",
    "INFO 11-26 06:00:{s:02d} engine.py:288] Added request chat-{n}.",
    "WARNING 11-26 06:00:{s:02d} scheduler.py:1089] Sequence group chat-{n} is preempted by "
    "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
)
_TAIL = ("ERROR 11-26 06:59:59 engine.py:135] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
         "GPU 0 has a total capacity of 23.64 GiB of which 1.02 GiB is free.")


def write_log(path: Path, megabytes: float) -> int:
    size, n = 0, 0
    with path.open("w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            line = _LINES[n % len(_LINES)].format(n=40000 + n, s=n % 60) + "\n"
            f.write(line)
            size += len(line)
            n += 1
        f.write(_TAIL + "\n")
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megabytes", type=float, default=12.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "serving.log"
        size = write_log(path, args.megabytes)
        times, answer = [], ""
        for _ in range(args.repeat):
            start = time.process_time()
            answer = diagnose_file(path).category
            times.append(time.process_time() - start)
    print(f"serving log {size / 1e6:.1f} MB -> {answer}; CPU s per diagnosis: "
          + ", ".join(f"{t:.2f}" for t in times) + f"; min {min(times):.2f}; total {sum(times):.2f}")


if __name__ == "__main__":
    main()
