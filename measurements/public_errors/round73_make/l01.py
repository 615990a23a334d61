"""tensor.pin_memory() on a CPU-only torch build (a prefetching helper copied from GPU code)."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "pin_memory() asked of a CPU-only torch build (no accelerator)", "stage": "data loading"}
FILES = {"prefetch.py": '''import torch

def prefetch(batches):
    for b in batches:
        yield {k: v.pin_memory() for k, v in b.items()}

batches = [{"input_ids": torch.randint(0, 32000, (8, 512)), "attention_mask": torch.ones(8, 512, dtype=torch.long)}
           for _ in range(4)]
for i, b in enumerate(prefetch(batches)):
    print(i, b["input_ids"].shape, b["input_ids"].is_pinned())
'''}
CMD = "python3 prefetch.py"
