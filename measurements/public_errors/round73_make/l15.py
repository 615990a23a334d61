"""config.json carries a GPTQ quantization_config; no GPTQ backend (gptqmodel / optimum) is installed."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "a GPTQ checkpoint loaded without its quantization backend installed (missing dependency)",
        "stage": "weights"}


def fixture(d):
    tiny_hf(d / "tiny-gptq", layers=2, hidden=256,
            config_edit={"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                  "desc_act": False, "sym": True}})


FILES = {"load_gptq.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny-gptq", device_map="cpu")
print(model)
'''}
CMD = "python3 load_gptq.py"
