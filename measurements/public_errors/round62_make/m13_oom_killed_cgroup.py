"""Memory, load, killed: the user's script (building a 1.3B-parameter float32 model) runs from a shell inside a
memory cgroup limited to 600 MiB (as a container's limit); the kernel's OOM killer kills it and the shell prints the
kill and the exit code. If this sandbox's kernel does not enforce the cgroup (or it cannot be made), the scenario says
so and is skipped. An RLIMIT_AS of mapped + 1536 MiB stays on as the shared machine's guard."""
import os
from pathlib import Path

from _common import run_user, workdir

META = dict(id="made62-oom-killed-cgroup", label="oom_killer", phase="load",
            family="oom_killer_cgroup_limit", runtime="transformers", wrapper="shell (bash prints the kill)",
            cause="memory cgroup limit 600 MiB; the model build's resident memory passes it; the OOM killer "
                  "sends SIGKILL")
CG = Path("/sys/fs/cgroup/memory/collect62_oom")
BODY = """\
import memcap62
import torch
from transformers import AutoConfig, AutoModelForCausalLM
memcap62.cap_address_space(1536)
config = AutoConfig.for_model("llama", hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                              num_attention_heads=32, num_key_value_heads=4, vocab_size=32000)
print("building the model ...")
model = AutoModelForCausalLM.from_config(config)
print(model.num_parameters())
"""


def produce():
    d = workdir(META["id"])
    (d / "train.py").write_text(BODY)
    try:
        CG.mkdir(exist_ok=True)
        (CG / "memory.limit_in_bytes").write_text(str(600 * 2**20))
    except OSError as err:
        return f"SKIPPED: cannot make a memory cgroup: {err}", -1
    try:
        # the user's shell: runs the script, says its exit code, and exits with it (revision: it exited 0 after the
        # echo, so run_all did not take the kill)
        cmd = (f"echo $$ > {CG}/cgroup.procs && exec bash -c "
               f"'python3 train.py; status=$?; echo \"exit code $status\"; exit $status'")
        return run_user(["bash", "-c", cmd], d, timeout=180)
    finally:
        for pid in (CG / "cgroup.procs").read_text().split():
            os.kill(int(pid), 9)
        CG.rmdir()
