"""A DataLoader with 2 worker processes whose default collate stacks torch tensors (32 x 2048 x 2048 float32) under a
cap of mapped + 384 MiB inherited by the workers."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to torch tensors a DataLoader worker's collate stacks",
        "family": "transformers"}

FILES = {"loader.py": '''import torch
from envsetup import cap

class Frames(torch.utils.data.Dataset):
    def __len__(self):
        return 256
    def __getitem__(self, i):
        return {"pixels": torch.ones(2048, 2048) * i, "label": i % 10}

cap(384)
loader = torch.utils.data.DataLoader(Frames(), batch_size=32, num_workers=2)
for step, batch in enumerate(loader):
    print(step, batch["pixels"].shape)
'''}
CMD = "python3 loader.py"
