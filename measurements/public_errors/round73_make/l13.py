"""gguf-py's Q8_0 quantizer given a tensor whose rows (100 values) are not a multiple of the 32-value block."""
META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": None, "wrapper": "python traceback",
        "version": "produced here: gguf-py 0.19.0 (numpy quantizer), CPU",
        "cause": "rows of 100 values quantized to Q8_0 (block of 32): a shape error", "stage": "conversion"}
FILES = {"convert_head.py": '''import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import quantize

tensors = {"cls.weight": np.zeros((4096, 100), dtype=np.float32),
           "cls.bias": np.zeros((100,), dtype=np.float32)}
for name, t in tensors.items():
    q = quantize(t, GGMLQuantizationType.Q8_0)
    print(name, q.shape)
'''}
CMD = "python3 convert_head.py"
