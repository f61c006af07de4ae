"""How long DVC's rewrite of ``dvc.lock`` takes (the window a Ctrl-C can cut it in), for the lock as it is and
for one with fewer, coarser dependencies per stage; and what keeping it costs each stage (issue 52).

After every stage DVC rewrites the whole lock (``dvc.dvcfile.Lockfile.dump_stages``: ``modify_yaml``, a ruamel
round-trip load and dump). This times exactly that, on a copy of the lock in a temporary folder, for:

- ``as is``: the lock given (by default the project's ``dvc.lock``);
- ``code deps merged``: the same records with each stage's ``src/spanft/...`` dependencies (files and folders,
  most of the entries) replaced by one entry, as one code dependency per stage would record them;
- ``no code deps``: without those entries at all (the floor of what fewer deps can give).

and spanft's own bookkeeping per stage start (``stage.lock_backup.remember_lock``: split the lock into records,
merge them into the history, write it). The figures depend on the machine's load: a busy machine's are
upper bounds, say so beside them.

    python benchmarks/bench_lock.py [--lock dvc.lock] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

CODE = "src/spanft"


def variants(lock: Path) -> dict[str, str]:
    """The lock's text as is, with each stage's code deps merged into one entry, and without them."""
    yaml = YAML()
    texts = {"as is": lock.read_text(encoding="utf-8")}
    for name, merge in (("code deps merged", True), ("no code deps", False)):
        copy = yaml.load(texts["as is"])
        for record in copy["stages"].values():
            deps = record.get("deps") or []
            code = [d for d in deps if str(d["path"]).startswith(CODE)]
            kept = [d for d in deps if not str(d["path"]).startswith(CODE)]
            if merge and code:
                kept.insert(0, {"path": CODE, "hash": "md5", "md5": "0" * 32 + ".dir",
                                "size": sum(int(d.get("size", 0)) for d in code),
                                "nfiles": sum(int(d.get("nfiles", 1)) for d in code)})
            record["deps"] = kept
        with tempfile.TemporaryFile("w+", encoding="utf-8") as handle:
            yaml.dump(copy, handle)
            handle.seek(0)
            texts[name] = handle.read()
    return texts


def time_dvc_dump(text: str, repeats: int) -> float:
    """Median seconds of DVC's own lock rewrite (load for update, dump) of ``text``."""
    from dvc.utils.serialize import modify_yaml

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dvc.lock"
        times = []
        for _ in range(repeats):
            path.write_text(text, encoding="utf-8")
            start = time.perf_counter()
            with modify_yaml(str(path)) as data:
                data["stages"] = data.get("stages", {})  # as Lockfile.dump_stages touches it
            times.append(time.perf_counter() - start)
        return statistics.median(times)


def time_remember(text: str, repeats: int) -> float:
    """Median seconds of spanft's backup at a stage start, the history already holding this lock but one
    record (the usual case: the previous stage's record is new)."""
    from spanft.stage.lock_backup import HISTORY, remember_lock

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "dvc.lock").write_text(text, encoding="utf-8")
        times = []
        for i in range(repeats):
            remember_lock(root)
            (root / "dvc.lock").write_text(text + f"  extra{i}:\n    cmd: echo {i}\n", encoding="utf-8")
            start = time.perf_counter()
            remember_lock(root)
            times.append(time.perf_counter() - start)
            (root / HISTORY).unlink()
            (root / "dvc.lock").write_text(text, encoding="utf-8")
        return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", default="dvc.lock", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if not args.lock.is_file():
        print(f"{args.lock}: no lock to time (run the graph first, or give --lock)", file=sys.stderr)
        return 2
    texts = variants(args.lock)
    print(f"{'lock':<18} {'lines':>7} {'bytes':>9} {'DVC rewrite s':>14} {'spanft backup s':>16}")
    for name, text in texts.items():
        print(f"{name:<18} {text.count(chr(10)):>7} {len(text.encode()):>9} "
              f"{time_dvc_dump(text, args.repeats):>14.3f} {time_remember(text, args.repeats):>16.4f}")
    print(f"(median of {args.repeats}; a busy machine's figures are upper bounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
