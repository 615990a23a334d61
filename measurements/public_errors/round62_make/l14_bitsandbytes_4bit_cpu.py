"""Look-alike, load: BitsAndBytesConfig(load_in_4bit=True) with device_map={"": "cuda"} on a machine whose PyTorch
has no CUDA (bitsandbytes 0.50.2 installed, its CUDA library absent)."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-bitsandbytes-4bit-no-cuda", label="not_memory", phase="load",
            family="bitsandbytes_no_cuda", runtime="transformers", wrapper="python traceback",
            cause="4-bit quantisation onto a CUDA device with a CPU-only torch")
BODY = """\
import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float16, bnb_4bit_quant_type="nf4")
model = AutoModelForCausalLM.from_pretrained({path!r}, quantization_config=bnb, device_map={{"": "cuda"}})
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return python_script(d, BODY.format(path=str(path)))
