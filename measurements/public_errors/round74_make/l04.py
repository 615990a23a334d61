"""torch.compile with inductor's C++ compiler set (as copied from a cluster's setup) to a g++ path that does not exist
here: the first compiled call fails."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: torch 2.13.0+cpu (torch.compile, inductor), CPU",
        "cause": "inductor's configured C++ compiler does not exist", "stage": "compilation"}

FILES = {"bench.py": '''import torch
import torch._inductor.config as inductor_config

inductor_config.cpp.cxx = ("/opt/rh/gcc-toolset-12/root/usr/bin/g++",)
mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
fast = torch.compile(mlp)
with torch.no_grad():
    print(fast(torch.randn(8, 256)).shape)
'''}
CMD = "python3 bench.py"
TIMEOUT = 400
