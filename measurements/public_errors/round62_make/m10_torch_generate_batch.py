"""Memory, RUN: a tiny random-weight Llama (eager attention) loads and the cap is then set 512 MiB above what the
process maps; generate() on a batch of 32 prompts of 2,048 tokens needs the attention scores of 32 x 4 heads x
2048 x 2048 x 4 B = 2 GiB in the prefill: PyTorch's CPU allocator refuses during generation."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-torch-generate-batch", label="oom_killer", phase="run",
            family="transformers_cpu_alloc_generate_cap", runtime="transformers", wrapper="python traceback",
            cause="after load, RLIMIT_AS = mapped + 512 MiB; generate() prefill of 32 x 2048 tokens with eager "
                  "attention needs ~2 GiB of attention scores")
BODY = """\
import memcap62
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, attn_implementation="eager")
memcap62.cap_address_space(512)
input_ids = torch.randint(3, 1000, (32, 2048))
out = model.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=64, do_sample=False)
print(out.shape)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return python_script(d, BODY.format(path=str(path)))
