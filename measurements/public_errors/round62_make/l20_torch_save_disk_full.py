"""Look-alike, save: torch.save of a model's state dict to a file that is full (/dev/full answers every write with
ENOSPC, the way a full disk does)."""
import os

from _common import python_script, workdir

META = dict(id="made62-torch-save-disk-full", label="not_memory", phase=None,
            family="disk_full_on_save", runtime="transformers", wrapper="python traceback",
            cause="the checkpoint path is /dev/full: every write fails with ENOSPC (no space left on device)")
BODY = """\
import torch
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.for_model("llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=4, vocab_size=1000)
model = AutoModelForCausalLM.from_config(config)
torch.save(model.state_dict(), "checkpoints/step-500.pt")
"""


def produce():
    d = workdir(META["id"])
    (d / "checkpoints").mkdir()
    os.symlink("/dev/full", d / "checkpoints" / "step-500.pt")
    return python_script(d, BODY)
