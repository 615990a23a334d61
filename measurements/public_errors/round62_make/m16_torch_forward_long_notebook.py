"""Memory, RUN, notebook cell: a tiny random-weight Llama loads; the cap is then set 256 MiB above what the kernel
maps, and one forward pass over 4 sequences of 4,096 tokens with eager attention and output_attentions=True needs the
scores 4 x 4 heads x 4096 x 4096 x 4 B = 1 GiB per layer."""
from _common import ipython_cell, tiny_hf_model, workdir

META = dict(id="made62-torch-forward-long-notebook", label="oom_killer", phase="run",
            family="transformers_cpu_alloc_forward_cap", runtime="transformers", wrapper="notebook cell (IPython)",
            cause="after load, RLIMIT_AS = mapped + 256 MiB; eager attention over 4 x 4096 tokens needs 1 GiB "
                  "per layer")
SETUP = """\
import memcap62
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, attn_implementation="eager")
model.config.max_position_embeddings = 8192
memcap62.cap_address_space(256)
"""
BODY = """\
ids = torch.randint(3, 1000, (4, 4096))
with torch.no_grad():
    out = model(ids, output_attentions=True)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return ipython_cell(d, BODY.format(path=str(path)), setup=SETUP.format(path=str(path)))
