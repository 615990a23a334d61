"""Look-alike, load: from_pretrained of a local folder name with a typo while offline (HF_HUB_OFFLINE=1): the name is
read as a Hub repository id that cannot be fetched."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-transformers-wrong-path-offline", label="not_memory", phase="load",
            family="transformers_wrong_path_offline", runtime="transformers", wrapper="python traceback",
            cause="the folder is ./tiny-model, the code says ./tiny_model; the machine is offline")
BODY = """\
from transformers import AutoModelForCausalLM, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("./tiny_model")
model = AutoModelForCausalLM.from_pretrained("./tiny_model")
"""


def produce():
    d = workdir(META["id"])
    tiny_hf_model(d)
    return python_script(d, BODY)
