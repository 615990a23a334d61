"""accelerate's load_checkpoint_in_model of a sharded checkpoint (50 MB shards, ~420 MB) into a model built under
init_empty_weights; the cap (mapped + 96 MiB, after the empty model) is short for the weights."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to accelerate's load_checkpoint_in_model of a 420 MB sharded checkpoint",
        "family": "transformers", "stage": "state dict"}


def fixture(d):
    from transformers import AutoModelForCausalLM
    tiny_hf(d / "full", layers=4, hidden=1024)
    AutoModelForCausalLM.from_pretrained(d / "full").save_pretrained(d / "sharded", max_shard_size="50MB")
    import shutil
    for f in ("tokenizer.json", "tokenizer_config.json"):
        if (d / "full" / f).exists():
            shutil.copy(d / "full" / f, d / "sharded" / f)
    shutil.rmtree(d / "full")


FILES = {"load_shards.py": '''from accelerate import init_empty_weights, load_checkpoint_in_model
from transformers import AutoConfig, AutoModelForCausalLM
from envsetup import cap

config = AutoConfig.from_pretrained("./sharded")
with init_empty_weights():
    model = AutoModelForCausalLM.from_config(config)
cap(96)
load_checkpoint_in_model(model, "./sharded", device_map={"": "cpu"})
print("loaded", sum(p.numel() for p in model.parameters()))
'''}
CMD = "python3 load_shards.py"
