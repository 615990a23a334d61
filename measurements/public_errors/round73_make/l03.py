"""model.safetensors is a git-lfs pointer file (the repository was cloned without git-lfs): from_pretrained."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "model.safetensors is a git-lfs pointer (cloned without git-lfs)", "stage": "weights"}


def fixture(d):
    tiny_hf(d / "tiny-chat", layers=2, hidden=256)
    (d / "tiny-chat" / "model.safetensors").write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4b1c8a3f0e2d9c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9f\nsize 1340612096\n")


FILES = {"load.py": '''from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny-chat")
model = AutoModelForCausalLM.from_pretrained("./tiny-chat")
print(model.config.model_type)
'''}
CMD = "python3 load.py"
