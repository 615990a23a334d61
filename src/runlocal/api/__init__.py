"""HTTP API (FastAPI) and the benchmark store behind it."""
