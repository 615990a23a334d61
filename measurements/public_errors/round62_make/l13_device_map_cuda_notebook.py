"""Look-alike, load, notebook cell: from_pretrained(device_map="cuda:0") on the CPU-only build of PyTorch."""
from _common import ipython_cell, tiny_hf_model, workdir

META = dict(id="made62-device-map-cuda-notebook", label="not_memory", phase="load",
            family="torch_no_cuda_device_map", runtime="transformers", wrapper="notebook cell (IPython)",
            cause="torch 2.13.0+cpu has no CUDA device")
BODY = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, dtype=torch.bfloat16, device_map="cuda:0")
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return ipython_cell(d, BODY.format(path=str(path)))
