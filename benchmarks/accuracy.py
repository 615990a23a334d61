"""runlocal's llama.cpp planner against real llama.cpp runs, then the public logs and one summary per engine.

The records and their scoring are runlocal.evidence.llamacpp_runs (its docstring says what is compared and how);
this script prints its report: python benchmarks/accuracy.py [--help]
"""

import sys

from runlocal.evidence.llamacpp_runs import main

if __name__ == "__main__":
    sys.exit(main())
