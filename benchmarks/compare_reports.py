"""Compare two `reports/` trees (two clean `dvc repro` runs): the determinism check of the embedded profile.

    python benchmarks/compare_reports.py RUN_A/reports RUN_B/reports

Tables, CSVs, Markdown and metrics must be byte-identical, except the columns of Table 3 (and the matching
metrics) that hold measured wall-clock seconds, which differ from run to run by nature: those are compared
with the seconds blanked out. PNG figures are compared pixel by pixel, PDF figures byte by byte. Exit status
0 when everything matches, 1 otherwise (each difference printed).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

TIMED = {"tables/table3.md", "tables/table3.csv", "tables/table3.tex"}
SECONDS = re.compile(r"\d+\.\d+")  # in Table 3 every decimal number is a measured time or a ratio of two


def comparable(relative: str, data: bytes) -> bytes:
    if relative in TIMED:  # times blanked, and the Markdown column padding that follows their width
        text = SECONDS.sub("#", data.decode("utf-8"))
        return re.sub(r"[ -]+", " ", text).encode("utf-8")
    return data


def same_png(a: Path, b: Path) -> bool:
    import matplotlib.image as mpimg
    import numpy as np

    return bool(np.array_equal(mpimg.imread(a), mpimg.imread(b)))


def compare(a: Path, b: Path) -> list[str]:
    files_a = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    problems = [f"only in {a}: {name}" for name in sorted(files_a - files_b)]
    problems += [f"only in {b}: {name}" for name in sorted(files_b - files_a)]
    for name in sorted(files_a & files_b):
        if name.endswith(".png"):
            if not same_png(a / name, b / name):
                problems.append(f"{name}: pixels differ")
        elif comparable(name, (a / name).read_bytes()) != comparable(name, (b / name).read_bytes()):
            problems.append(f"{name}: bytes differ")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args()
    problems = compare(args.a, args.b)
    for line in problems:
        print(line)
    count = sum(1 for p in args.a.rglob("*") if p.is_file())
    print(f"{count} files compared: {'identical' if not problems else f'{len(problems)} difference(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
