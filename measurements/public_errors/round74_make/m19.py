"""A notebook: embed 2,000 queries with a tiny model (mean pooling) and print their shape; the next cell sets a cap of
mapped + 128 MiB, and torch.cdist against 200,000 corpus embeddings (a 1.6 GB distance matrix) is refused."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "host RAM refused (RLIMIT_AS) to torch.cdist's distance matrix", "family": "torch",
        "stage": "retrieval"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=256)


CELLS = ['''import torch
from transformers import AutoModel
model = AutoModel.from_pretrained("./tiny").eval()
torch.manual_seed(0)
with torch.no_grad():
    q = model(input_ids=torch.randint(4, 30000, (2000, 8))).last_hidden_state.mean(1)
corpus = torch.randn(200_000, 256)
print(q.shape, corpus.shape)''',
         '''from envsetup import cap
cap(128)''',
         '''d = torch.cdist(q, corpus)
top = d.topk(5, largest=False).indices
top[:3]''']
CMD = "python3 nb.py"
