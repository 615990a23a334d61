"""Look-alike, load: a checkpoint whose config.json says model_type 'qwen9', which this transformers does not know."""
import json

from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-transformers-unknown-model-type", label="not_memory", phase="load",
            family="transformers_unknown_model_type", runtime="transformers", wrapper="python traceback",
            cause="config.json's model_type is 'qwen9', newer than transformers 5.24")
BODY = """\
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r})
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    cfg = json.loads((path / "config.json").read_text())
    cfg["model_type"] = "qwen9"
    cfg["architectures"] = ["Qwen9ForCausalLM"]
    (path / "config.json").write_text(json.dumps(cfg, indent=2))
    return python_script(d, BODY.format(path=str(path)))
