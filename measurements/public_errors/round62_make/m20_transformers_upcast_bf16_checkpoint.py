"""Memory, load: a bfloat16 checkpoint of ~170M parameters (340 MB) loaded with dtype=torch.float32 (twice its size
on the host, 680 MB) under a cap of 448 MiB above what the process maps after its imports."""
from _common import python_script, workdir

META = dict(id="made62-transformers-upcast-bf16-checkpoint", label="oom_killer", phase="load",
            family="transformers_cpu_alloc_upcast_cap", runtime="transformers", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 448 MiB; the checkpoint upcast to float32 needs 680 MB besides its mapping")
BODY = """\
import memcap62
import torch
from transformers import AutoModelForCausalLM
memcap62.cap_address_space(448)
model = AutoModelForCausalLM.from_pretrained({path!r}, dtype=torch.float32)
print(model.dtype)
"""


def produce():
    import torch
    d = workdir(META["id"])
    path = d / "tiny-model"
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model("llama", hidden_size=1024, intermediate_size=2048, num_hidden_layers=8,
                               num_attention_heads=4, num_key_value_heads=4, vocab_size=32000,
                               max_position_embeddings=2048)
    AutoModelForCausalLM.from_config(cfg).to(torch.bfloat16).save_pretrained(path)
    return python_script(d, BODY.format(path=str(path)))
