"""A small OpenAI-compatible streaming server on loopback for the probe's fault cases.

It is a stand-in for behaviours a real server shows only under failure (a malformed stream, a
stall, a crash mid-probe); the probe's normal path is tested against real llama.cpp elsewhere."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def fake_server(*, mode: str = "ok", n_ctx: int = 4096, die_after: int | None = None, max_parallel: int = 1000,
                token_delay: float = 0.002, hostile_from: int = 0, model_id: str = "fake"):
    """``mode``: ok, stall, malformed, or for prompts of ``hostile_from`` tokens and more: endless (valid
    chunks forever), endless_line (one line that never ends), flood (valid chunks as fast as possible).
    ``model_id``: the name /v1/models and /api/tags report (llama-server's is its -m file's path)."""
    state = {"requests": 0, "active": 0}
    lock = threading.Lock()
    holder: dict = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            msg = json.dumps({"models": [{"name": model_id}]} if self.path == "/api/tags"
                             else {"data": [{"id": model_id}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with lock:
                state["requests"] += 1
                state["active"] += 1
                n = state["requests"]
                active = state["active"]
            try:
                prompt = body.get("prompt")
                tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
                if die_after is not None and n > die_after:
                    self.connection.shutdown(socket.SHUT_RDWR)  # the server "crashed"
                    self.close_connection = True
                    def die():
                        holder["server"].shutdown()
                        holder["server"].server_close()      # nothing listens any more
                    threading.Thread(target=die, daemon=True).start()
                    return
                if self.path == "/api/generate":      # Ollama: truncates to num_ctx, streams NDJSON
                    self._ollama(body, min(tokens, n_ctx))
                    return
                if tokens + body.get("max_tokens", 16) > n_ctx or active > max_parallel:
                    msg = json.dumps({"error": {"message": "the request exceeds the available context size"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                if not body.get("stream"):
                    msg = json.dumps({"choices": [{"text": " t0", "index": 0}],
                                      "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                if mode == "stall":
                    time.sleep(5)
                    return
                if mode == "malformed":
                    self.wfile.write(b"data: {this is not json\n\n")
                    return
                if mode in ("endless", "endless_line", "flood") and tokens >= hostile_from:
                    self._hostile(mode, token_delay)
                    return
                for i in range(body.get("max_tokens", 16)):
                    time.sleep(token_delay)
                    chunk = {"choices": [{"text": f" t{i}", "index": 0}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                usage = {"choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": body.get("max_tokens", 16)}}
                self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
            finally:
                with lock:
                    state["active"] -= 1

        def _hostile(self, mode, delay):
            chunk = f"data: {json.dumps({'choices': [{'text': ' t', 'index': 0}]})}\n\n".encode()
            try:
                if mode == "endless_line":
                    self.wfile.write(b"data: {\"choices\": [{\"text\": \"")
                while True:   # until the client hangs up
                    self.wfile.write(b"x" * 65536 if mode == "endless_line" else chunk * (64 if mode == "flood" else 1))
                    if mode == "endless":
                        self.wfile.flush()
                        time.sleep(delay)
            except OSError:
                return

        def _ollama(self, body, kept):
            n = body.get("options", {}).get("num_predict", 16)
            lines = [{"model": "fake", "response": f" t{i}", "done": False} for i in range(n)]
            lines.append({"model": "fake", "response": "", "done": True, "prompt_eval_count": kept, "eval_count": n})
            if not body.get("stream"):
                lines = [lines[-1]]
            msg = "".join(json.dumps(x) + "\n" for x in lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder["server"] = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
