"""safetensors.torch.save_file of a model's state_dict whose embeddings and lm_head are tied (the same storage)."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "cause": "save_file refuses tensors that share storage (tied weights)", "stage": "save"}

FILES = {"export.py": '''from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM

cfg = AutoConfig.for_model("llama", vocab_size=32000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=256, tie_word_embeddings=True)
model = AutoModelForCausalLM.from_config(cfg)
save_file(model.state_dict(), "model.safetensors")
print("exported")
'''}
CMD = "python3 export.py"
