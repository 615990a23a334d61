"""Memory, RUN: a text-generation pipeline over a tiny random-weight Llama (eager attention); after it is built the
cap is set 384 MiB above what the process maps, and 16 prompts of ~1,500 words are generated in batches of 16: the
prefill's attention scores (16 x 4 heads x 1500^2 x 4 B = 576 MiB per layer) do not fit."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-transformers-pipeline-batch", label="oom_killer", phase="run",
            family="transformers_cpu_alloc_pipeline_cap", runtime="transformers", wrapper="python traceback",
            cause="after the pipeline is built, RLIMIT_AS = mapped + 384 MiB; a batch of 16 long prompts needs "
                  "~576 MiB of attention scores per layer")
BODY = """\
import memcap62
from transformers import pipeline
pipe = pipeline("text-generation", model={path!r}, model_kwargs={{"attn_implementation": "eager"}})
pipe.tokenizer.pad_token = pipe.tokenizer.eos_token
memcap62.cap_address_space(384)
prompts = [" ".join(f"w{{(i * 7 + j) % 990 + 5}}" for j in range(1500)) for i in range(16)]
outputs = pipe(prompts, batch_size=16, max_new_tokens=32, do_sample=False)
print(len(outputs))
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return python_script(d, BODY.format(path=str(path)))
