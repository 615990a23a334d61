"""Helpers that the tests and the benchmarks share (as numpy.testing does): a loopback HTTP server that serves
byte ranges (``range_server``) and the real app with a headless Chromium (``browser``). runlocal itself never
imports this package; it lives here so benchmarks/ imports it like any module, without ``sys.path`` edits."""
