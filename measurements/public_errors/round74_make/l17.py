"""torch.onnx.export of a small model on a machine without onnx / onnxscript installed."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "version": "produced here: torch 2.13.0+cpu, CPU (onnx, onnxscript not installed)",
        "cause": "onnx / onnxscript not installed (missing dependency)", "stage": "export"}

FILES = {"export_onnx.py": '''import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).eval()
torch.onnx.export(model, (torch.randn(1, 64),), "classifier.onnx", input_names=["x"], output_names=["logits"])
print("wrote classifier.onnx")
'''}
CMD = "python3 export_onnx.py"
