"""A shell script runs a training script inside a 300 MiB memory cgroup: the kernel's OOM killer kills python and
bash reports it.
Revision 3: 600 MiB (at 300 MiB the kill came before the loop's first step was printed, so the kill was not
shown to be the loop's tensors; the label is unchanged)."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "shell script (bash reports the kill)",
        "cause": "kernel OOM killer in a 600 MiB memory cgroup while a training loop keeps tensors", "family": "transformers"}
CGROUP_MIB = 600
FILES = {"finetune.sh": '''#!/bin/bash
echo "[finetune] $(date +%H:%M:%S) starting"
python3 train_loop.py
status=$?
echo "[finetune] train_loop.py finished with status $status"
exit $status
''', "train_loop.py": '''import torch
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
opt = torch.optim.AdamW(model.parameters())
history = []
for step in range(1000):
    x = torch.randn(256, 1024)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    history.append(model(x))          # keeps every step's graph alive
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
'''}
CMD = "bash finetune.sh"
