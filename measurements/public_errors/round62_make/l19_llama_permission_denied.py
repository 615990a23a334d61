"""Look-alike, load: the model file belongs to another user with mode 600, and the user's process (uid 'nobody',
set with setpriv) cannot read it."""
import os

from _common import ENV, run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-permission-denied", label="not_memory", phase="load",
            family="llamacpp_permission_denied", runtime="llamacpp", wrapper="python traceback",
            cause="the model file is mode 600, owned by root; the process runs as nobody")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    os.chmod(path, 0o600)
    (d / "user.py").write_text(BODY.format(path=str(path)))
    os.chmod(d, 0o755)
    os.chmod(d / "user.py", 0o644)
    env = {**ENV, "HOME": "/tmp"}
    return run_user(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "python3", "user.py"], d,
                    env=env)
