"""huggingface_hub offline: a download interrupted earlier left only a .incomplete blob in the cache; hf_hub_download
with HF_HUB_OFFLINE=1 finds no file."""
META = {"label": "not_memory", "family": None, "runtime": "huggingface_hub", "phase": "load",
        "wrapper": "python traceback", "cause": "an interrupted download (only a .incomplete blob) read offline"}


def fixture(d):
    blobs = d / "hfcache" / "models--acme--tiny-chat-GGUF" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / ("3f" * 32 + ".incomplete")).write_bytes(b"GGUF" + bytes(4096))


FILES = {"fetch.py": '''import os
from huggingface_hub import hf_hub_download

path = hf_hub_download("acme/tiny-chat-GGUF", "tiny-chat.Q4_K_M.gguf", cache_dir="./hfcache")
print(path)
'''}
CMD = "python3 fetch.py"
