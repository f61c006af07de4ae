"""What params each stage really used, as an output DVC hashes, and the check that finds a lying ``dvc.lock``.

DVC reads ``params.yaml`` for a stage's lock entry only after the stage's command has ended (and after it has
hashed the stage's file deps), so a params edit saved in that window is recorded beside outputs made from the
old values, and ``dvc status`` then says clean. No stage can stop DVC from writing that entry; what a stage can
do is say what it used. Every stage with params writes ``data/params-used/<stage>.yaml`` (an output in
``dvc.yaml``): the values of the keys it declares, as it read them before its work, in ``dvc.lock``'s own
layout. :func:`check_lock_records` compares every record that DVC recorded (its hash is the one in
``dvc.lock``) with the params DVC recorded beside it, and names a stage whose two differ. Every stage runs it
before its work (``stage.run.run_stage``: ``dvc repro dictionary`` after a lie in ``count_ngrams``' entry
stops in one line, although DVC calls ``count_ngrams`` unchanged), and so do the ``check_params`` stage, keyed
on the whole of ``params.yaml``, and ``spanft check-params``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML as RuamelYAML
from ruamel.yaml import YAMLError as RuamelYAMLError

from spanft.errors import Context, SpanftError, Value, parts
from spanft.fileio import atomic_open
from spanft.params.load import dvc_reading
from spanft.stage.lock_backup import broken_lock_line
from spanft.stage.lockfile import lock_stages

RECORDS_DIR = "data/params-used"
PARAMS_FILE = "params.yaml"
DVC_LOCK = "dvc.lock"


def record_path(stage: str) -> str:
    """Where the stage named ``stage`` (``count_ngrams``, ``prepare_task@cola``) records its params."""
    return f"{RECORDS_DIR}/{stage}.yaml"


def write_record(stage: str, used: dict[str, Any]) -> None:
    """Record ``used`` (declared key -> value read before the work) as ``dvc.lock`` lays params out."""
    dumper = RuamelYAML()  # as DVC writes dvc.lock (dvc/utils/serialize/_yaml.py), so both read back alike
    dumper.default_flow_style = False
    with atomic_open(record_path(stage)) as handle:
        dumper.dump({PARAMS_FILE: used}, handle)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()  # noqa: S324 - DVC 3's file hash, not security


def lying_stages(lock_path: str | Path = DVC_LOCK, root: str | Path = ".", exclude: str | None = None,
                 inputs: list[str] | None = None) -> list[tuple[str, str, Any, Any]]:
    """``(stage, key, value dvc.lock records, value the stage used)`` for each stage whose lock entry records
    other params than its record (the one whose hash that entry holds) says it used; but ``exclude``, and,
    given ``inputs`` (paths), only the stages with an output among them or inside or above one of them."""
    try:  # both read as DVC reads them (YAML 1.2: DVC writes lr 3e-05 so, which YAML 1.1 reads as text)
        stages = lock_stages(Path(root) / lock_path, Path(root))  # entries read once across stages (lockfile)
    except OSError:
        return []  # no lock yet
    except (ValueError, AttributeError, RuamelYAMLError) as exc:  # cut by a run stopped while DVC wrote it
        raise SpanftError(broken_lock_line(Path(root) / lock_path, _first_line(exc))) from None
    found = []
    for name, entry in stages.items():
        outs = {out.get("path"): out.get("md5") for out in (entry or {}).get("outs") or [] if isinstance(out, dict)}
        if name == exclude or (inputs is not None and not any(_overlap(o, i) for o in outs for i in inputs)):
            continue
        path = Path(root) / record_path(name)
        if record_path(name) not in outs or not path.is_file() or _md5(path) != outs[record_path(name)]:
            continue  # no record, or not the one this entry recorded (outputs not checked out): DVC says so
        used = (dvc_reading(path.read_text(encoding="utf-8")) or {}).get(PARAMS_FILE) or {}
        locked = ((entry.get("params") or {}).get(PARAMS_FILE)) or {}
        difference = leaf_difference(locked, used)
        if difference is not None:
            found.append((name, *difference))
    return found


def _first_line(exc: Exception) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def leaf_difference(locked: Any, used: Any, key: str = "") -> tuple[str, Any, Any] | None:
    """``(dotted leaf key, value recorded, value used)`` where two params trees first differ (``ngrams.min_count``,
    2, 3: a key one side lacks reads as None), descending into the sections both hold; None where equal."""
    if locked == used:
        return None
    if not (isinstance(locked, dict) and isinstance(used, dict)):
        return key, locked, used
    for child in [*used, *(k for k in locked if k not in used)]:
        found = leaf_difference(locked.get(child), used.get(child), f"{key}.{child}" if key else str(child))
        if found is not None:
            return found
    return None


def _overlap(out: Any, path: str) -> bool:
    if not isinstance(out, str):
        return False
    out, path = out.rstrip("/"), path.rstrip("/")
    return out == path or out.startswith(path + "/") or path.startswith(out + "/")


def check_lock_records(lock_path: str | Path = DVC_LOCK, root: str | Path = ".", exclude: str | None = None,
                       inputs: list[str] | None = None) -> None:
    """One line naming the first stage that ``dvc.lock`` records with params it did not use, and the fix.
    Every stage runs it before its work on the stages whose outputs it reads (``inputs``; not on itself,
    ``exclude``: that is the fix), so nothing is built on outputs that a lying entry vouches for, whichever
    single stage or target is asked for; the fix of the most upstream one is never refused."""
    found = lying_stages(lock_path, root, exclude, inputs)
    if not found:
        return
    stage, key, locked, used = found[0]
    more = f" (and {len(found) - 1} more stage(s))" if len(found) > 1 else ""
    raise SpanftError(parts(f"{lock_path}: stage {stage} is recorded with {key} ", Value(repr(locked)),
                            ", but its outputs were made with ", Value(repr(used)),
                            Context(f" (its record in {RECORDS_DIR}: params.yaml saved after it ended, before DVC's "
                                    f"lock)"), f"{more}; re-run it: dvc repro -f -s {stage}"))
