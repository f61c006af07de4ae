"""``dvc.lock`` kept recoverable through a run stopped at any moment: DVC's lock write made harmless.

DVC rewrites the whole of ``dvc.lock`` in place after every stage (``dvc.dvcfile.Lockfile.dump_stages``); a
Ctrl-C or SIGTERM during that write leaves it cut: either it no longer parses (every ``dvc`` command then says
``dvc.lock is invalid``), or it parses with records silently gone, and the next ``dvc repro`` runs their stages
again. Two pieces make that window harmless:

- :func:`remember_lock`: every stage, at its start (DVC has finished writing the previous stage's record by
  then), adds each record of ``dvc.lock`` to a history of candidates in ``.dvc/tmp/spanft-lock/records.json``
  (written to a temporary file and renamed): per stage, its record as DVC wrote it (the text), newest first,
  :data:`KEEP` distinct ones. A lock that has lost records adds nothing and removes nothing: the history of a
  stage is never replaced by a shorter lock's, only pushed down by a newer record of that stage.
- :func:`recover_lock` (``spanft recover-lock``): for each stage of ``dvc.yaml``, the candidates are the
  complete records still readable in ``dvc.lock`` (cut or not: they are the newest) and then the history; the
  first one whose every output is on disk with the hash it records (DVC's own ``Output.status``: hashed by
  DVC, with its state) is kept, one whose dependencies are also as recorded first. A record whose outputs
  differ is never kept. The lock is written whole to a temporary file, checked against DVC's lock schema, and
  renamed into place, while holding DVC's repo lock.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError
from spanft.stage.dvc_repo import (
    RECOVER,
    dvc_logs_quiet,
    dvc_yaml_read,
    first_line,
    open_repo,
    repo_locked,
    running_stage,
)

log = logging.getLogger("spanft")

LOCK_FILE = "dvc.lock"
BACKUP_DIR = ".dvc/tmp/spanft-lock"
HISTORY = f"{BACKUP_DIR}/records.json"
KEEP = 3  # distinct records per stage: a cut one read as newest never pushes the last true one out alone
BROKEN_ADVICE = (f"a run stopped while DVC wrote it leaves it so: `{RECOVER}` restores every record whose outputs "
                 f"are still as recorded (docs/errors.md)")
_HEADER = "schema: '2.0'\nstages:\n"
_RECORD_KEY = re.compile(r"^  (?! )(.+?):[ \t]*$")  # a stage's key under ``stages:``, as DVC writes it


def split_records(text: str) -> dict[str, str]:
    """``{stage: its record's text}`` from a ``dvc.lock`` text (whole or cut): each record is the lines from its
    key (two spaces in, under ``stages:``) up to the next key or top-level line. The last one of a cut file may
    be cut too: :func:`recover_lock` parses and checks every candidate."""
    records: dict[str, str] = {}
    name, lines, inside = None, [], False
    for line in text.splitlines(keepends=True):
        if not line.startswith(" "):
            if name is not None:
                records.setdefault(name, "".join(lines))
            name, lines, inside = None, [], line.rstrip() == "stages:"
            continue
        key = _RECORD_KEY.match(line) if inside else None
        if key:
            if name is not None:
                records.setdefault(name, "".join(lines))
            name, lines = _unquoted(key.group(1)), [line]
        elif name is not None:
            lines.append(line)
    if name is not None:
        records.setdefault(name, "".join(lines))
    return records


def _unquoted(key: str) -> str:
    if len(key) > 1 and key[0] == key[-1] == "'":
        return key[1:-1].replace("''", "'")
    if len(key) > 1 and key[0] == key[-1] == '"':
        try:
            return json.loads(key)
        except ValueError:
            return key
    return key


# ---------------------------------------------------------------------------------------------- the history


def read_history(root: Path) -> dict[str, list[str]]:
    """The history of candidate records under ``root`` (empty when there is none, or it does not read)."""
    try:
        tree = json.loads((root / HISTORY).read_text(encoding="utf-8"))
        stages = tree["stages"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(stages, dict):
        return {}
    return {name: [c for c in chunks if isinstance(c, str)] for name, chunks in stages.items() if
            isinstance(name, str) and isinstance(chunks, list)}


def merged_history(history: dict[str, list[str]], records: dict[str, str]) -> dict[str, list[str]]:
    """``history`` with each of ``records`` put first in its stage's list (at most :data:`KEEP` distinct);
    stages ``records`` lacks keep theirs."""
    merged = dict(history)
    for name, chunk in records.items():
        old = merged.get(name, [])
        merged[name] = [chunk, *(c for c in old if c != chunk)][:KEEP]
    return merged


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file beside it, renamed into place when complete (a reader
    or a signal at any moment finds the old file or the new one, never a part)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remember_lock(root: Path) -> None:
    """At a stage's start: add ``root``'s ``dvc.lock`` records to the history (written only when it grows)."""
    try:
        text = (root / LOCK_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # no lock yet (the first stage), or one DVC itself will not read
    records = split_records(text)
    if not records:
        return
    history = read_history(root)
    merged = merged_history(history, records)
    if merged != history:
        write_atomically(root / HISTORY, json.dumps({"stages": merged}, separators=(",", ":")))


def keep_lock(root: Path) -> None:
    """At a stage's start, under DVC: stop if ``dvc.lock`` was left cut mid-line by a stopped run (DVC read what
    was left, so stages whose records it lost would run again); else :func:`remember_lock`, which never stops
    the stage (a history it cannot write is said at debug level)."""
    check_lock_not_cut(root / LOCK_FILE)
    try:
        remember_lock(root)
    except (OSError, ValueError) as exc:
        log.debug("lock backup: %s", exc)


def check_lock_not_cut(lock: Path) -> None:
    """One line when ``lock`` ends inside a line: DVC ends every lock it writes with a line end."""
    try:
        with open(lock, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return
            handle.seek(-1, os.SEEK_END)
            last = handle.read(1)
    except OSError:
        return
    if last != b"\n":
        raise SpanftError(f"{lock} ends mid-line: a run stopped while DVC wrote it cut it, and the stages whose "
                          f"records it lost would run again; run `{RECOVER}` (it restores every record still "
                          f"true), then dvc repro")


# ---------------------------------------------------------------------------------------------- the recovery


@dataclass
class Recovery:
    """What :func:`recover_lock` did: stages kept as ``dvc.lock`` had them, restored (from the cut lock's
    readable part or the history), left as a readable lock had them though no candidate's outputs are as
    recorded (DVC's own record: dropping it would lose what ``dvc checkout`` restores), dropped (the rest);
    ``others``: records of stages ``dvc.yaml`` lacks now, put back from the history as last written."""
    kept: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    was_readable: bool = True
    written: bool = False
    nothing: bool = False
    rwlock_reset: bool = False

    def lines(self) -> list[str]:
        state = "read" if self.was_readable else "was cut (it does not read, or ends mid-line)"
        said = [f"dvc.lock {state}: {len(self.kept)} record(s) kept as they were"]
        if self.nothing:
            said = [f"nothing to recover: no record in dvc.lock and no backup in {BACKUP_DIR} (each stage writes it "
                    "at its start)"]
        if self.restored:
            said.append(f"restored {len(self.restored)} record(s) whose outputs are as recorded: "
                        f"{', '.join(self.restored)}")
        if self.unchecked:
            said.append(f"left {len(self.unchecked)} record(s) of the readable dvc.lock as they were, their outputs "
                        f"not as recorded (deleted, not checked out, changed: dvc status says): "
                        f"{', '.join(self.unchecked)}")
        if self.others:
            said.append(f"restored {len(self.others)} record(s) of stages dvc.yaml does not have now (another "
                        f"profile's or params': DVC checks them when they come back) as last written: "
                        f"{', '.join(self.others)}")
        if self.dropped:
            said.append(f"dropped {len(self.dropped)} record(s) whose outputs differ from every copy "
                        f"(dvc repro runs them, or restores them from the run-cache): {', '.join(self.dropped)}")
        if self.rwlock_reset:
            said.append("reset .dvc/tmp/rwlock, DVC's note of which process uses which output: cut by the same stop")
        said.append("dvc.lock written" if self.written else "dvc.lock unchanged")
        return said


def _load_record(name: str, chunk: str) -> dict | None:
    """The record in ``chunk`` as DVC reads it (YAML 1.2, its lock schema); None where it does not read."""
    from dvc.dvcfile import Lockfile
    from dvc.utils.serialize import loads_yaml

    try:
        tree = loads_yaml(_HEADER + (chunk if chunk.endswith("\n") else chunk + "\n"))
        Lockfile.validate(tree)
        stages = tree["stages"]
    except Exception:  # noqa: BLE001 - a cut record: ruamel's and voluptuous' many errors
        return None
    if not isinstance(stages, dict) or list(stages) != [name] or not isinstance(stages[name], dict):
        return None
    return stages[name]


def _verdict(stage: Any) -> int:
    """2: outputs, dependencies and command as the record says; 1: outputs as recorded; 0: not true."""
    if any(not out.hash_info for out in stage.outs) or stage.changed_outs():
        return 0
    return 1 if stage.cmd_changed or stage.changed_deps() else 2


def _true_record(dvcfile: Any, name: str, resolved: dict, chunks: list[str]) -> str | None:
    """The first of ``chunks`` that is true of the outputs on disk, preferring one DVC finds unchanged."""
    from dvc.stage.loader import StageLoader

    fallback = None
    for chunk in chunks:
        record = _load_record(name, chunk)
        if not record:
            continue
        recorded = {out.get("path") for out in record.get("outs") or [] if isinstance(out, dict)}
        try:
            stage = StageLoader.load_stage(dvcfile, name, resolved, record)
        except Exception as exc:  # noqa: BLE001 - DVC cannot take this record: not vouched for
            log.debug("recover-lock: %s: %s", name, exc)
            continue
        if any(out.def_path not in recorded for out in stage.outs):
            continue  # an output the record lacks (cut): DVC would take the stage as changed
        try:
            verdict = _verdict(stage)
        except Exception as exc:  # noqa: BLE001 - DVC cannot hash here: stop before writing anything
            raise SpanftError(f"stage {name}: DVC cannot check its outputs ({first_line(exc)}); dvc.lock unchanged") \
                from None
        if verdict == 2:
            return chunk
        if verdict == 1 and fallback is None:
            fallback = chunk
    return fallback


def recover_lock(root: Path) -> Recovery:
    """Rewrite ``root``'s ``dvc.lock`` with every record still true (see the module's text); what it did."""
    lock = root / LOCK_FILE
    try:
        text = lock.read_text(encoding="utf-8") if lock.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SpanftError(f"{lock}: cannot read it ({exc}); move it aside and run `{RECOVER}` again") from None
    current, history = split_records(complete_lines(text)), read_history(root)
    cut = next(reversed(current), None) if text and not text.endswith("\n") else None  # the record it went through
    # a lock that ends mid-line was cut, whether or not what is left reads (DVC ends every line it writes)
    intact = (not text or text.endswith("\n")) and _whole_lock_reads(text)
    result = Recovery(was_readable=intact, nothing=not current and not history)
    chosen: dict[str, str] = {}
    with open_repo(root) as repo, repo_locked(repo), dvc_logs_quiet():
        from dvc.dvcfile import ProjectFile

        result.rwlock_reset = repair_rwlock(repo)
        if result.nothing:
            return result
        dvcfile = ProjectFile(repo, os.path.join(repo.root_dir, "dvc.yaml"))
        with dvc_yaml_read():
            resolver = dvcfile.resolver  # dvc.yaml alone: dvcfile.stages would read the lock being recovered
            keys = set(resolver.get_keys())
        for name in [*current, *(n for n in history if n not in current)]:
            candidates = [*([current[name]] if name in current else []),
                          *(c for c in history.get(name, []) if c != current.get(name))]
            if name == cut and len(candidates) > 1:  # the record the cut went through, its last line dropped:
                candidates = [*candidates[1:], candidates[0]]  # a whole copy of it first
            if name not in keys:  # no stage of dvc.yaml now (another profile's): DVC checks it if it comes back
                other = next((c for c in candidates if _load_record(name, c)), None)
                if other is not None:
                    chosen[name] = other
                    if other != current.get(name) or not result.was_readable:
                        result.others.append(name)
                continue
            with dvc_yaml_read():
                resolved = resolver.resolve_one(name)[name]
            found = _true_record(dvcfile, name, resolved, candidates)
            if found is None and name in current and result.was_readable and _load_record(name, current[name]):
                chosen[name] = current[name]  # DVC's own record, outputs not here (a fresh clone): as it was
                result.unchecked.append(name)
                continue
            if found is None:
                result.dropped.append(name)
                continue
            chosen[name] = found
            (result.kept if found == current.get(name) and result.was_readable else result.restored).append(name)
        new_text = _HEADER + "".join(c if c.endswith("\n") else c + "\n" for c in chosen.values())
        if not chosen:
            new_text = ""
        if new_text != text:
            _write_lock(lock, new_text)
            result.written = True
    if result.written or result.restored:
        remember_lock(root)
    return result


def complete_lines(text: str) -> str:
    """``text`` up to its last line end: a line a stop cut short is no part of any record (``size: 12`` left of
    ``size: 1234`` still reads, as another value). DVC ends every line it writes."""
    return text[:text.rfind("\n") + 1]


def repair_rwlock(repo: Any) -> bool:
    """DVC's ``.dvc/tmp/rwlock`` (which process uses which output), written in place like the lock and cut by the
    same stop (every ``dvc repro`` then fails: "JSON structure is corrupted"), reset to no entry under DVC's own
    guard of it. Only a live dvc's entries matter, and a cut file holds none that can be read. True if reset.
    One that names a live dvc process is a stage running now: refused, in one line."""
    from dvc.lock import make_lock

    tmp = Path(repo.tmp_dir)
    path = tmp / "rwlock"
    hardlink = repo.config["core"].get("hardlink_lock", False)
    with make_lock(str(tmp / "rwlock.lock"), tmp_dir=str(tmp), hardlink_lock=hardlink):
        try:
            tree = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False
        except (ValueError, UnicodeDecodeError):
            write_atomically(path, "{}")
            return True
        running = running_stage(tree)
        if running:  # DVC lets go of its repo lock while a stage's command runs: this is where it says so
            raise SpanftError(f"dvc is running a stage here ({running}, noted in .dvc/tmp/rwlock): let it end "
                              f"(or stop it), then run `{RECOVER}` again; dvc.lock unchanged")
        return False


def _whole_lock_reads(text: str) -> bool:
    from dvc.utils.serialize import loads_yaml

    try:
        loads_yaml(text)
        return True
    except Exception:  # noqa: BLE001 - ruamel's many errors
        return False


def _write_lock(lock: Path, text: str) -> None:
    """``text`` as ``lock``, checked as DVC will read it first; an empty text removes the lock."""
    from dvc.dvcfile import Lockfile
    from dvc.utils.serialize import loads_yaml

    if not text:
        lock.unlink(missing_ok=True)
        return
    Lockfile.validate(loads_yaml(text))  # every record was checked alone: the whole reads as DVC reads it
    write_atomically(lock, text)


def broken_lock_line(lock: Path | str, problem: str) -> str:
    """The one line for a ``dvc.lock`` that does not read (spanft's own readers of it)."""
    return f"{lock} is invalid ({problem}): {BROKEN_ADVICE}"
