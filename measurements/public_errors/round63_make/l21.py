"""llama_cpp.server started with --chat_format llama3 (a name its registry does not hold), then a chat request: the
server's log."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "run", "wrapper": "llama_cpp.server log",
        "cause": "a wrong chat format name given to the server"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


# revision 3: phase run (revision 1 moved the failure to a request after the server loaded); revision 1: the server starts with the bad name and fails only on a chat request: one is sent, then the server is
# stopped with SIGTERM (a background job ignores SIGINT) and the command exits 1 unless the request succeeded; the text is the server's log
CMD = """python3 -m llama_cpp.server --model ./model.gguf --n_ctx 1024 --chat_format llama3 --port 18763 & srv=$!
for i in $(seq 90); do curl -s localhost:18763/v1/models >/dev/null && break; sleep 1; done
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \\
  -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}' localhost:18763/v1/chat/completions)
kill -TERM $srv; wait $srv
[ "$code" = 200 ]"""
