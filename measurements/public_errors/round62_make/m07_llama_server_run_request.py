"""Memory, RUN, server log: llama-cpp-python's server loads a tiny model (n_ctx 4096, --logits_all True) and is
ready; then its address-space limit is lowered (prlimit --pid) to 48 MiB above what it maps, and a completion request
with a 3,900-byte text prompt (one token per byte: a byte-level tokenizer is added to the file) and logprobs
arrives: the output buffer for every token's logits no longer fits. The text is
the server's log as the terminal shows it."""
import json
import subprocess
import time
import urllib.request

from _common import ENV, byte_tokenizer_kv, copy_gguf, tiny_gguf_config, workdir, zero_gguf
from _server import wait_ready
from memcap62 import mapped_bytes

META = dict(id="made62-llama-server-run-request", label="llamacpp_alloc_fail", phase="run",
            family="llamacpp_server_run_output_buffer_cap", runtime="llamacpp",
            wrapper="server log (llama_cpp.server)",
            cause="after the server loaded and answered, RLIMIT_AS lowered to mapped + 48 MiB (prlimit); a "
                  "3,900-token prompt with logprobs needs ~476 MiB of logits")
PORT = 18463


def produce():
    d = workdir(META["id"])
    src = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    path = copy_gguf(src, d / "tiny-q4_0.gguf", extra=byte_tokenizer_kv())   # the server takes text prompts only
    log = open(d / "server.log", "w")
    proc = subprocess.Popen(["python3", "-m", "llama_cpp.server", "--model", str(path), "--n_ctx", "4096",
                             "--n_batch", "4096", "--logits_all", "True", "--n_threads", "2", "--port", str(PORT)],
                            cwd=d, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    try:
        if wait_ready(PORT, proc):
            limit = mapped_bytes(str(proc.pid)) + 48 * 2**20
            subprocess.run(["prlimit", f"--pid={proc.pid}", f"--as={limit}:{limit}"], check=True)
            text = " ".join(f"line {i}: the quick brown fox jumps over the lazy dog." for i in range(80))
            body = json.dumps({"prompt": text[:3900], "max_tokens": 16, "logprobs": 5}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=120).read()
            except Exception:
                pass
            time.sleep(2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    return (d / "server.log").read_text(errors="replace"), proc.returncode
