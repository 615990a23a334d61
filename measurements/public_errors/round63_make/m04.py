"""accelerate's load_checkpoint_and_dispatch with max_memory {"cpu": "20MiB"} and no offload folder: the device map
sends layers to disk and dispatch needs an offload directory."""
from harness import tiny_hf

META = {"label": "offload_error", "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "accelerate dispatch with max_memory too small for the model and no offload_folder",
        "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


FILES = {"load.py": '''from accelerate import init_empty_weights, load_checkpoint_and_dispatch
from transformers import AutoConfig, AutoModelForCausalLM

config = AutoConfig.from_pretrained("./tiny")
with init_empty_weights():
    model = AutoModelForCausalLM.from_config(config)
model = load_checkpoint_and_dispatch(model, "./tiny/model.safetensors", device_map="auto",
                                     max_memory={"cpu": "20MiB"}, no_split_module_classes=["LlamaDecoderLayer"])
print(model.hf_device_map)
'''}
CMD = "python3 load.py"
