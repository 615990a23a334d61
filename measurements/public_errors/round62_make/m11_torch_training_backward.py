"""Memory, RUN (a training step): a small random-weight Llama (vocab 32000) is built, then the cap is set 768 MiB
above what the process maps; one training step on a batch of 8 x 1024 tokens (logits alone 8 x 1024 x 32000 x 4 B =
1 GiB, kept for the backward pass) runs out in the forward or the loss.backward()."""
from _common import python_script, workdir

META = dict(id="made62-torch-training-step", label="oom_killer", phase="run",
            family="transformers_cpu_alloc_training_cap", runtime="transformers", wrapper="python traceback",
            cause="after the model is built, RLIMIT_AS = mapped + 768 MiB; a training step on 8 x 1024 tokens "
                  "with a 32000-token vocabulary needs > 1 GiB of activations and gradients")
BODY = """\
import memcap62
import torch
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.for_model("llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=4, vocab_size=32000)
model = AutoModelForCausalLM.from_config(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
memcap62.cap_address_space(768)
model.train()
batch = torch.randint(3, 32000, (8, 1024))
for step in range(3):
    loss = model(input_ids=batch, labels=batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print("step", step, "loss", loss.item())
"""


def produce():
    d = workdir(META["id"])
    return python_script(d, BODY)
