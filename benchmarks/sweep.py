"""Configurations tested per second by the vectorized fit sweep (models × quants × contexts × devices).

Target: ≥ 1,000,000 configurations per second.   Run: python benchmarks/sweep.py
"""

from __future__ import annotations

import time

import numpy as np

from runlocal.sweep import SWEEP_CONTEXTS, SWEEP_QUANTS, _table, catalog_lines, fits_matrix, models_that_fit


def main() -> None:
    t0 = time.perf_counter()
    aliases, a, b, w, lim = catalog_lines()
    build = time.perf_counter() - t0
    try:
        from runlocal.hardware.catalog import load_devices

        caps = np.array([d.gpu_usable_bytes for d in load_devices()], dtype=np.float64)
    except ImportError:
        caps = np.linspace(4, 192, 130) * 2**30
    contexts = np.array(SWEEP_CONTEXTS, dtype=np.float64)
    n = len(aliases) * len(SWEEP_QUANTS) * len(contexts) * len(caps)
    fits_matrix(a, b, contexts, caps, lim)  # warm up
    reps, t0 = 50, time.perf_counter()
    for _ in range(reps):
        ok = fits_matrix(a, b, contexts, caps, lim)
    dt = (time.perf_counter() - t0) / reps
    source = "read from data/sweep_lines.json" if _table() is not None else "planned (no valid table)"
    print(f"catalog lines         {len(aliases)} models × {len(SWEEP_QUANTS)} quants {source} in {build:.2f} s "
          "(once per process)")
    print(f"sweep                 {n:,} configurations ({len(aliases)}×{len(SWEEP_QUANTS)}×{len(contexts)}×{len(caps)})"
          f" in {dt * 1000:.2f} ms")
    print(f"throughput            {n / dt:,.0f} configurations/s; {int(ok.sum()):,} fit")
    print(f"end to end            {n / (build + dt):,.0f} configurations/s counting the one-off line build")
    t0 = time.perf_counter()
    for _ in range(reps):
        models_that_fit(24 * 2**30, 8192)
    print(f"models_that_fit       {(time.perf_counter() - t0) / reps * 1000:.2f} ms per query (runlocal models --fits)")
    print(f"target ≥ 1,000,000/s: {'PASS' if n / dt >= 1e6 else 'FAIL'}")


if __name__ == "__main__":
    main()
