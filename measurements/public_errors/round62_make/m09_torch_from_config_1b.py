"""Memory, load: transformers builds a ~1.3B-parameter Llama from a config in float32 (5 GiB) under a cap of 1 GiB
above what the process has mapped after importing torch and transformers: PyTorch's CPU allocator refuses."""
from _common import python_script, workdir

META = dict(id="made62-torch-from-config-1b", label="oom_killer", phase="load",
            family="transformers_cpu_alloc_load_cap", runtime="transformers", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 1024 MiB; a 1.3B-parameter float32 model needs ~5 GiB of host RAM")
BODY = """\
import memcap62
import torch
from transformers import AutoConfig, AutoModelForCausalLM
memcap62.cap_address_space(1024)
config = AutoConfig.for_model("llama", hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                              num_attention_heads=32, num_key_value_heads=4, vocab_size=32000)
model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
print(model.num_parameters())
"""


def produce():
    d = workdir(META["id"])
    return python_script(d, BODY)
