"""Look-alike, CLI: `hf download` of a model repository with HF_HUB_OFFLINE=1 and nothing in the cache."""
from _common import ENV, run_user, workdir

META = dict(id="made62-hf-download-offline", label="not_memory", phase="load",
            family="hf_hub_offline_download", runtime="huggingface_hub", wrapper="CLI stderr (hf)",
            cause="offline mode with an empty cache: nothing can be downloaded")


def produce():
    d = workdir(META["id"])
    env = {**ENV, "HF_HOME": str(d / "hf-home")}
    return run_user(["hf", "download", "Qwen/Qwen3-0.6B", "--include", "*.safetensors"], d, env=env, timeout=120)
