"""Feeding the scanner (classify.Scanner): a pasted text, any iterable of lines, or a file or stream read in chunks,
each line cut at MAX_LINE characters. Split from classify.py (session 15) at the I/O edge: the classification rules are
there, unchanged."""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from .classify import Diagnosis, Scanner
from .extract import MAX_LINE


def _split(item: str) -> Iterator[str]:
    """One item of the iterable → its lines (items may hold several lines, or tqdm's bare \\r)."""
    if "\n" not in item and "\r" not in item:
        yield item
        return
    for line in _iter_text(item):
        if "\r" in line:
            yield from (p for p in line.split("\r") if p)
        elif line:
            yield line


def diagnose_lines(lines: Iterable[str], runtime: str | None = None) -> Diagnosis:
    """Diagnose a stream of log lines (any iterable; items may carry their newline)."""
    scan = Scanner(runtime)
    for item in lines:
        if isinstance(item, (bytes, bytearray)):
            item = item.decode("utf-8", errors="replace")
        for line in _split(item):
            scan.feed(line)
    return scan.finish()


def _iter_text(text: str) -> Iterator[str]:
    start, n = 0, len(text)
    while start < n:
        nl = text.find("\n", start)
        if nl < 0:
            nl = n
        yield text[start:min(nl, start + MAX_LINE)]
        start = nl + 1


def diagnose_text(text: str, runtime: str | None = None) -> Diagnosis:
    """Diagnose a pasted log or error message."""
    return diagnose_lines(_iter_text(text or ""), runtime)


def iter_lines(stream: IO[Any], chunk_size: int = 1 << 20, max_line: int = MAX_LINE) -> Iterator[str]:
    """Lines of a text or binary stream, read in chunks; each line is cut at ``max_line`` characters."""
    decoder = None
    buf: list[str] = []
    buf_len = 0
    while True:
        chunk = stream.read(chunk_size)
        if not chunk:
            break
        if isinstance(chunk, (bytes, bytearray)):
            if decoder is None:
                decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            chunk = decoder.decode(chunk)
        start = 0
        while True:
            nl = chunk.find("\n", start)
            end = len(chunk) if nl < 0 else nl
            if buf_len < max_line:
                piece = chunk[start:min(end, start + max_line - buf_len)]
                buf.append(piece)
                buf_len += len(piece)
            if nl < 0:
                break
            yield "".join(buf).rstrip("\r")
            buf, buf_len = [], 0
            start = nl + 1
    if decoder is not None:
        tail = decoder.decode(b"", final=True)
        if tail and buf_len < max_line:
            buf.append(tail[: max_line - buf_len])
    if buf and "".join(buf):
        yield "".join(buf).rstrip("\r")


def diagnose_file(path_or_stream: str | os.PathLike[str] | IO[Any], runtime: str | None = None) -> Diagnosis:
    """Diagnose a log file (a path, or an open text/binary stream), reading it in 1 MiB chunks."""
    if isinstance(path_or_stream, (str, os.PathLike)):
        with open(path_or_stream, "rb") as f:
            return diagnose_lines(iter_lines(f), runtime)
    if isinstance(path_or_stream, io.TextIOBase) or hasattr(path_or_stream, "read"):
        return diagnose_lines(iter_lines(path_or_stream), runtime)
    raise TypeError("diagnose_file: expected a path or a readable stream")


__all__ = ["diagnose_file", "diagnose_lines", "diagnose_text", "iter_lines"]
