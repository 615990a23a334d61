"""How close the vLLM planner comes to public vLLM start-up logs.

The records and their scoring are runlocal.evidence.vllm_logs (its docstring says what is compared and how);
this script prints its report: python benchmarks/accuracy_vllm.py [--help]
"""

import sys

from runlocal.evidence.vllm_logs import main

if __name__ == "__main__":
    sys.exit(main())
