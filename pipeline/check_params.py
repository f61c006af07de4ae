"""Stage check_params: the whole params.yaml checked whenever it changes.

    python pipeline/check_params.py data/params-checked.txt

DVC keys this stage on the whole file (``params: [{params.yaml: }]``, every key), so a typo'd key added to an up-to-date
project (``dict_sise: 100000``, or ``dvc exp run -S +dict_sise=100000``) re-runs it, and its one-line error
stops ``dvc repro`` / ``dvc exp run``. It also stops on a stage that ``dvc.lock`` records with params other than
those it used (``spanft.stage.records``; every stage checks the stages whose outputs it reads, this one all):
an edit saved after that stage ended, before DVC wrote its lock, makes this stage run again. No stage depends on its output, so ``dvc repro -s STAGE`` does not need it.
"""

import argparse
import sys

from spanft.fileio import atomic_open
from spanft.stage.records import check_lock_records
from spanft.stage.run import run_stage

CHECKED = "params.yaml: checked (spanft check-params)\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the file written once params.yaml passes the check")
    args = parser.parse_args()

    def write(plan) -> None:
        check_lock_records()  # every stage's entry, not only those whose outputs a stage reads
        with atomic_open(args.out) as handle:
            handle.write(CHECKED)

    return run_stage(write)


if __name__ == "__main__":
    sys.exit(main())
