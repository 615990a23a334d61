"""Feature extraction: a script runs batches of 16 x 256 tokens through a 4-layer model with output_hidden_states=True
and keeps every batch's hidden states in a list (~42 MB a batch); progress lines print, then a batch fails under a cap
of mapped + 256 MiB set after the load."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run",
        "wrapper": "python traceback after progress lines",
        "cause": "host RAM refused (RLIMIT_AS) as kept hidden states of every batch accumulate",
        "family": "transformers", "stage": "feature extraction after successes"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


FILES = {"extract.py": '''import torch
from envsetup import cap
from transformers import AutoModel

model = AutoModel.from_pretrained("./tiny").eval()
cap(256)
features = []
torch.manual_seed(0)
N = 40
with torch.no_grad():
    for b in range(N):
        ids = torch.randint(4, 30000, (16, 256))
        out = model(input_ids=ids, output_hidden_states=True)
        features.append(torch.stack(out.hidden_states))
        print(f"[{b + 1}/{N}] extracted {tuple(features[-1].shape)}", flush=True)
torch.save(features, "features.pt")
'''}
CMD = "python3 extract.py"
