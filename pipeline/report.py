"""Stage report: every table and figure of the paper from the runs (params ``profile``, ``studies``,
``reports``, ``dict_sizes``, ``chunker``, ``backbones``); the header names every param that differs from
``profiles/<profile>.yaml``.

    python pipeline/report.py data/runs data/segmented reports --corpus-record data/corpus/provenance.json \
        --step-cost data/step_cost.json
"""

import argparse
import sys

from spanft.params.changes import with_changes
from spanft.stage.run import run_stage
from spanft.report.build import write_reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", help="runs root: <study>/<backbone>/<task>/<variant>/seed<N>/")
    parser.add_argument("segmented", help="segmented data root (ngram/, random/, chunker/, sweep/)")
    parser.add_argument("out", help="report directory to write")
    parser.add_argument("--corpus-record", default=None, help="the corpus stage's provenance record (JSON)")
    parser.add_argument("--step-cost", default=None, help="the step_cost stage's file: Table 3's side-by-side "
                                                          "step costs")
    args = parser.parse_args()
    return run_stage(lambda plan: write_reports(with_changes(plan), args.runs, args.segmented, args.out,
                                                corpus_record=args.corpus_record, step_cost_file=args.step_cost))


if __name__ == "__main__":
    sys.exit(main())
