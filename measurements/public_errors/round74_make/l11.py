"""from_pretrained("acme/tiny-chat") with HF_ENDPOINT set to a mirror whose host name does not resolve (offline mode
off)."""
META = {"label": "not_memory", "family": None, "runtime": "huggingface_hub", "phase": "load", "wrapper": "python traceback",
        "cause": "the Hub mirror's host name does not resolve (network / DNS)", "stage": "download"}

FILES = {"fetch.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("acme/tiny-chat")
print(model.config)
'''}
CMD = "HF_HUB_OFFLINE=0 HF_HOME=$PWD/hf HF_ENDPOINT=https://hf-mirror.corp.invalid python3 fetch.py"
