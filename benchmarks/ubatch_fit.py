#!/usr/bin/env python3
"""Fit hardware/ubatch_speed.py's launch cost on the tuning rows only, or score a held-out round's micro-batch ratios:
runlocal.evidence.ubatch_fit (its docstring says how).

    python benchmarks/ubatch_fit.py
    python benchmarks/ubatch_fit.py --score round8
"""

import sys

from runlocal.evidence.ubatch_fit import main

if __name__ == "__main__":
    sys.exit(main())
