"""Pure-Python tokenization of a ~100 MB corpus into one list of ints under a cap (mapped + 128 MiB): Python itself
raises MemoryError."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: CPython 3.11.7, CPU",
        "cause": "host RAM refused (RLIMIT_AS) to Python lists of token ids: a bare MemoryError",
        "family": "python", "stage": "preprocessing"}


def fixture(d):
    line = " ".join(f"w{j}" for j in range(1000, 1050)) + "\n"
    with open(d / "corpus.txt", "w") as fh:
        for _ in range(400_000):
            fh.write(line)


FILES = {"build_dataset.py": '''from envsetup import cap

cap(128)
vocab = {}
all_ids = []
with open("corpus.txt") as fh:
    for n, line in enumerate(fh):
        all_ids.extend(vocab.setdefault(w, len(vocab)) for w in line.split())
        if n % 100000 == 0:
            print(f"{n} lines, {len(all_ids)} tokens", flush=True)
print(len(all_ids), "tokens,", len(vocab), "types")
'''}
CMD = "python3 build_dataset.py"
