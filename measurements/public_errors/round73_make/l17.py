"""A batch job's wall-time limit: the job script kills its generation run with SIGKILL after 40 s (as a scheduler's
time limit does); bash reports `Killed`, status 137 — nothing ran short of memory."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "shell script (bash reports the kill)",
        "cause": "a wall-time limit's SIGKILL (exit 137) of a running generation job; memory is not short",
        "stage": "generation"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"gen.py": '''import time
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
for i in range(100000):
    ids = tok(f"w{i} w{i + 1} w{i + 2}", return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=16, do_sample=False)
    print(f"sample {i}: {tok.decode(out[0][-4:])}", flush=True)
    time.sleep(1)
''', "job.sh": '''#!/bin/bash
WALLTIME=40
echo "[job] generation started, wall-time limit ${WALLTIME}s"
python3 gen.py &
pid=$!
( sleep $WALLTIME; kill -9 $pid 2>/dev/null ) &
wait $pid
rc=$?
echo "[job] gen.py exit status $rc"
exit $rc
'''}
CMD = "bash job.sh"
