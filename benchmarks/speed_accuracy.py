"""Speed model vs public measurements; --fit / --write refit its constants (src/runlocal/data/speed_fit.json).

The records and their scoring are runlocal.evidence.speed_fit (its docstring says what is compared and how);
this script prints its report: python benchmarks/speed_accuracy.py [--help]
"""

import sys

from runlocal.evidence.speed_fit_faoff import report_faoff
from runlocal.evidence.speed_fit_history import report_history, report_scored_apart
from runlocal.evidence.speed_fit_hybrid import report_hybrid
from runlocal.evidence.speed_fit_moe import report_moe_prefill
from runlocal.evidence.speed_fit_spark import report as report_spark
from runlocal.evidence.speed_report import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], reports=(report_history, report_scored_apart, report_hybrid, report_faoff,
                                        report_moe_prefill, report_spark)))
