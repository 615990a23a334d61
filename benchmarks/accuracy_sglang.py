"""How close the SGLang planner comes to public SGLang start-up logs.

The records and their scoring are runlocal.evidence.sglang_logs (its docstring says what is compared and how);
this script prints its report: python benchmarks/accuracy_sglang.py [--help]
"""

import sys

from runlocal.evidence.sglang_logs import main

if __name__ == "__main__":
    sys.exit(main())
