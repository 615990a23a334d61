"""Look-alike, RUN, notebook cell: token ids passed as a float tensor to the model's forward."""
from _common import ipython_cell, tiny_hf_model, workdir

META = dict(id="made62-float-input-ids-notebook", label="not_memory", phase="run",
            family="torch_embedding_wrong_dtype", runtime="transformers", wrapper="notebook cell (IPython)",
            cause="input_ids is a float32 tensor; the embedding needs integer indices")
BODY = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r})
input_ids = torch.tensor([[5.0, 17.0, 42.0, 7.0]])
out = model(input_ids=input_ids)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return ipython_cell(d, BODY.format(path=str(path)))
