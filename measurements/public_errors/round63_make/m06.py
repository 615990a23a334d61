"""A data loader whose collate_fn stacks numpy arrays (16 x 4096 x 4096 float32, 1 GiB) under a cap of
mapped + 512 MiB."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to numpy arrays a data loader's collate builds", "family": "transformers"}

FILES = {"features.py": '''import numpy as np
import torch
from envsetup import cap

class Spectrograms(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return np.full((4096, 4096), i, dtype=np.float32)

def collate(rows):
    return torch.from_numpy(np.stack(rows))

cap(512)
loader = torch.utils.data.DataLoader(Spectrograms(), batch_size=16, collate_fn=collate)
for step, batch in enumerate(loader):
    print(step, batch.shape, float(batch.mean()))
'''}
CMD = "python3 features.py"
