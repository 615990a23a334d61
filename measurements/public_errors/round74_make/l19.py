"""torch.load of a checkpoint saved on a GPU machine (its storages tagged cuda:0) on this CPU-only machine without
map_location."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "version": "produced here: torch 2.13.0+cpu, CPU",
        "cause": "a checkpoint's storages are on cuda:0 and this torch has no CUDA (map_location not given)",
        "stage": "state dict"}


def fixture(d):
    import torch
    import torch.serialization as ser
    orig = ser.location_tag
    ser.location_tag = lambda storage: "cuda:0"      # how a GPU machine tags its storages
    try:
        torch.save({"linear.weight": torch.zeros(8, 8), "linear.bias": torch.zeros(8)}, d / "classifier.pt")
    finally:
        ser.location_tag = orig


FILES = {"load_head.py": '''import torch

sd = torch.load("classifier.pt")
head = torch.nn.Linear(8, 8)
head.load_state_dict({k.split(".", 1)[1]: v for k, v in sd.items()})
print("head loaded")
'''}
CMD = "python3 load_head.py"
