"""Look-alike, load: model.to("cuda") on the CPU-only build of PyTorch."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-torch-not-compiled-cuda", label="not_memory", phase="load",
            family="torch_not_compiled_with_cuda", runtime="transformers", wrapper="python traceback",
            cause="torch 2.13.0+cpu has no CUDA")
BODY = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, dtype=torch.float16)
model = model.to("cuda")
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return python_script(d, BODY.format(path=str(path)))
