"""Memory (offload), load: from_pretrained with device_map="auto" and max_memory={"cpu": "20MiB"} for a ~50M-
parameter model: accelerate's map sends the rest to the disk, and no offload folder is given."""
from _common import python_script, tiny_hf_model, workdir

META = dict(id="made62-accelerate-offload-no-folder", label="offload_error", phase="load",
            family="accelerate_disk_offload_no_folder", runtime="transformers", wrapper="python traceback",
            cause="max_memory cpu 20 MiB for a 200 MB model: the device map offloads to the disk with no "
                  "offload_folder")
BODY = """\
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({path!r}, device_map="auto", max_memory={{"cpu": "20MiB"}})
print(model.hf_device_map)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d, layers=4, hidden=512, vocab=32000)
    return python_script(d, BODY.format(path=str(path)))
