"""Look-alike, load: the model file has mode 000 and the user's process may not override file permissions (root
without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH, dropped from its bounding set with setpriv), so it cannot read it.
(Revision: first written as uid 'nobody', which could not import llama_cpp from root's pyenv.)"""
import os

from _common import run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-permission-denied", label="not_memory", phase="load",
            family="llamacpp_permission_denied", runtime="llamacpp", wrapper="python traceback",
            cause="the model file is mode 000; the process may not override file permissions")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    os.chmod(path, 0o000)
    (d / "user.py").write_text(BODY.format(path=str(path)))
    return run_user(["setpriv", "--bounding-set=-dac_override,-dac_read_search", "python3", "user.py"], d)
