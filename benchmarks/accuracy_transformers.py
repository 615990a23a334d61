"""transformers planner against real CUDA runs: peak memory of `generate` above the weights.

The records and their scoring are runlocal.evidence.transformers_peak (its docstring says what is compared and how);
this script prints its report: python benchmarks/accuracy_transformers.py [--help]
"""

import sys

from runlocal.evidence.transformers_peak import main

if __name__ == "__main__":
    sys.exit(main())
