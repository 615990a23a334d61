"""Look-alike, load: attn_implementation="flash_attention_2" where the flash_attn package is not installed."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-flash-attn-absent", label="not_memory", phase="load",
            family="transformers_flash_attn_not_installed", runtime="transformers", wrapper="python traceback",
            cause="flash_attn is not installed (and there is no CUDA)")
BODY = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, dtype=torch.bfloat16,
                                             attn_implementation="flash_attention_2")
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return python_script(d, BODY.format(path=str(path)))
