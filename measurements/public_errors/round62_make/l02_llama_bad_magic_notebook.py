"""Look-alike, load, notebook cell: a GGUF whose first bytes are overwritten (a file saved over by an HTML error
page, as a failed download writes one)."""
from _common import ipython_cell, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-bad-magic-notebook", label="not_memory", phase="load",
            family="llamacpp_corrupt_file_magic", runtime="llamacpp", wrapper="notebook cell (IPython)",
            cause="the file's header is an HTML page's first bytes, not GGUF's magic")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    with open(path, "r+b") as f:
        f.write(b"<!DOCTYPE html>\n<html>")
    return ipython_cell(d, BODY.format(path=str(path)))
