"""A run-config flattener recursing into a config that (by a copy-paste slip) contains itself: RecursionError."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: Python 3.11.7, CPU",
        "cause": "unbounded recursion over a self-referencing config (RecursionError)", "stage": "set-up"}

FILES = {"launch.py": '''def flatten(cfg, prefix=""):
    out = {}
    for k, v in cfg.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


config = {"model": {"name": "tiny", "n_ctx": 4096}, "train": {"lr": 3e-4, "batch": 8}}
config["train"]["defaults"] = config
print(flatten(config))
'''}
CMD = "python3 launch.py"
