"""A loopback HTTP server that serves files with byte ranges and counts the bytes it sends."""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@contextmanager
def serve_directory(root: Path, *, honour_ranges: bool = True):
    """Yields (base_url, stats) where stats['sent'] counts body bytes sent."""
    stats = {"sent": 0, "requests": 0}
    chunk = 1 << 20

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def do_GET(self):
            stats["requests"] += 1
            path = root / self.path.lstrip("/").split("?")[0]
            if not path.is_file():
                self.send_error(404)
                return
            size = path.stat().st_size
            m = _RANGE.fullmatch(self.headers.get("Range", "")) if honour_ranges else None
            start, end = 0, size - 1
            if m:
                start = int(m.group(1))
                end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            else:
                self.send_response(200)
            length = end - start + 1
            self.send_header("Content-Length", str(length))
            self.end_headers()
            with path.open("rb") as f:
                f.seek(start)
                left = length
                while left > 0:
                    data = f.read(min(chunk, left))
                    if not data:
                        break
                    try:
                        self.wfile.write(data)
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    stats["sent"] += len(data)
                    left -= len(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stats
    finally:
        server.shutdown()
        server.server_close()
