"""A notebook: torch.compile(fullgraph=True) of a function that branches in Python on a tensor's value."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "version": "produced here: torch 2.13.0+cpu (torch.compile), CPU",
        "cause": "data-dependent control flow under fullgraph=True (graph break refused)", "stage": "compilation"}

CELLS = ['''import torch

def clip_logits(x):
    if x.abs().max() > 30:
        x = x / x.abs().max() * 30
    return torch.softmax(x, -1)

fast = torch.compile(clip_logits, fullgraph=True)''',
         '''fast(torch.randn(4, 32000) * 50)''']
CMD = "python3 nb.py"
TIMEOUT = 400
