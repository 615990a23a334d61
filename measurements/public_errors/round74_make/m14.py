"""A DataLoader with 2 worker processes whose dataset builds 150 MB samples (long spectrogram-like tensors), run in a
500 MiB memory cgroup: the kernel's OOM killer kills a worker and the main process's DataLoader reports it."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: torch 2.13.0+cpu, CPU",
        "cause": "kernel OOM killer in a 500 MiB memory cgroup kills a DataLoader worker process",
        "family": "torch", "stage": "data loading"}
CGROUP_MIB = 500

FILES = {"loader.py": '''import torch
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.ones(1, 128, 300_000) * i


if __name__ == "__main__":
    dl = DataLoader(Clips(), batch_size=2, num_workers=2, prefetch_factor=2)
    for step, batch in enumerate(dl):
        print("batch", step, tuple(batch.shape), flush=True)
'''}
CMD = "python3 loader.py"
