"""A notebook: np.load of a .npy holding a ragged (object) array of token lists, with allow_pickle left False."""
META = {"label": "not_memory", "family": None, "runtime": "numpy", "phase": "load", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "an object array refused by np.load(allow_pickle=False)", "stage": "data loading"}


def fixture(d):
    import numpy as np
    arr = np.empty(3, dtype=object)
    arr[:] = [[1, 5, 9], [1, 7], [1, 2, 3, 4]]
    np.save(d / "tokens.npy", arr, allow_pickle=True)


CELLS = ['''import numpy as np''',
         '''tokens = np.load("tokens.npy")
len(tokens)''']
CMD = "python3 nb.py"
