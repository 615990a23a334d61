"""Memory, load, notebook cell: a saved ~170M-parameter float32 model (680 MB of safetensors) is loaded with
from_pretrained in a notebook cell under a cap of 256 MiB above what the kernel maps after its imports."""
from _common import ipython_cell, tiny_hf_model, workdir

META = dict(id="made62-torch-from-pretrained-notebook", label="oom_killer", phase="load",
            family="transformers_cpu_alloc_from_pretrained_cap", runtime="transformers",
            wrapper="notebook cell (IPython)",
            cause="RLIMIT_AS = mapped + 256 MiB; the checkpoint's 680 MB of float32 weights do not fit")
SETUP = """\
import memcap62
import torch
from transformers import AutoModelForCausalLM
memcap62.cap_address_space(256)
"""
BODY = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, dtype=torch.float32)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d, layers=8, hidden=1024, vocab=32000)
    return ipython_cell(d, BODY.format(path=str(path)), setup=SETUP.format(path=str(path)))
