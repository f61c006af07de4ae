"""Stage check_params: the whole params.yaml checked whenever it changes, before any other stage runs.

    python pipeline/check_params.py data/params-checked.txt

DVC keys this stage on the whole file (``params: [{params.yaml: }]``, every key), so a typo'd key added to an up-to-date
project (``dict_sise: 100000``, or ``dvc exp run -S +dict_sise=100000``) re-runs it, and its one-line error
stops ``dvc repro`` / ``dvc exp run`` before anything else. Every other stage depends on its output, whose
content never changes: a params change that passes re-runs only the stages whose own params changed.
"""

import argparse
import sys

from spanft.fileio import atomic_open
from spanft.params.stage import run_stage

CHECKED = "params.yaml: checked (spanft check-params)\n"  # the same bytes every time: nothing after it re-runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the file written once params.yaml passes the check")
    args = parser.parse_args()

    def write(plan) -> None:
        with atomic_open(args.out) as handle:
            handle.write(CHECKED)

    return run_stage(write)


if __name__ == "__main__":
    sys.exit(main())
