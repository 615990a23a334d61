"""torch.compile(dynamic=True) of an embedding MLP: a first batch of 8 runs (compiled) and prints; a batch of 200,000 rows
is made, the cap (mapped + 192 MiB) is set, then that batch makes the compiled graph's 3.2 GB intermediate buffer be refused."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: torch 2.13.0+cpu (torch.compile, inductor, gcc), CPU",
        "cause": "host RAM refused (RLIMIT_AS) to a torch.compile'd graph's buffer for a large batch",
        "family": "torch", "stage": "compiled forward"}

FILES = {"encode.py": '''import os
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch
from envsetup import cap

torch.manual_seed(0)
encoder = torch.nn.Sequential(torch.nn.Linear(256, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 256))
fast = torch.compile(encoder, dynamic=True)
with torch.no_grad():
    out = fast(torch.randn(8, 256))
    print("warm-up batch ok:", tuple(out.shape))
    feats = torch.randn(200_000, 256)
    cap(192)
    out = fast(feats)
    print("encoded", tuple(out.shape))
'''}
CMD = "python3 encode.py"
TIMEOUT = 400
