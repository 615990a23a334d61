"""from_pretrained of a hub id with HF_ENDPOINT pointing at a closed local port (the hub unreachable; not offline
mode) and an empty cache."""
META = {"label": "not_memory", "family": None, "runtime": "huggingface_hub", "phase": "load", "wrapper": "python traceback",
        "cause": "the hub endpoint unreachable (connection refused), nothing cached", "stage": "download"}
FILES = {"load_hub.py": '''from transformers import AutoModelForCausalLM, AutoTokenizer

name = "acme-labs/tiny-chat-1b"
tok = AutoTokenizer.from_pretrained(name)
model = AutoModelForCausalLM.from_pretrained(name)
print(model.config)
'''}
CMD = "HF_HUB_OFFLINE=0 HF_ENDPOINT=http://127.0.0.1:9 HF_HOME=$PWD/hf-home python3 load_hub.py"
