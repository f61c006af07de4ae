"""The sessions of dvc processes whose stages share a log: which dvc runs this stage, its log under DVC's
temporary folder, the stage times kept across sessions (see :mod:`spanft.stage.progress`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

log = logging.getLogger("spanft")

FOLDER = Path(".dvc") / "tmp" / "spanft-progress"  # DVC's temp folder (dvc/repo: Repo.tmp_dir), never tracked
TIMES = "stage-times.json"  # {stage: seconds of its last good run}, kept across sessions
_ANCESTORS = 8  # how far up from a stage to look for dvc (a shell, a launcher between them)


@dataclass(frozen=True)
class Session:
    """One ``dvc repro`` or ``dvc exp run`` process, and the log its stages share."""

    pid: int
    started: float  # the process's start time (epoch seconds)
    arguments: tuple[str, ...]  # dvc's own, after the program: ("repro", "dictionary")
    log: Path


def dvc_arguments(cmdline: list[str]) -> list[str] | None:
    """dvc's own arguments in a process's command line (``dvc repro x``, ``python /venv/bin/dvc repro x``,
    ``python -m dvc repro x``); None when the process is not dvc."""
    for i, arg in enumerate(cmdline[:3]):
        if Path(arg).name == "dvc":
            return cmdline[i + 1:]
        if arg == "-m" and cmdline[i + 1:i + 2] == ["dvc"]:
            return cmdline[i + 2:]
    return None


def session_log(folder: Path, pid: int, started: float) -> Path:
    return folder / f"{pid}-{round(started * 1000)}.jsonl"


def sessions(folder: Path) -> Iterator[tuple[Path, int, float, bool]]:
    """Each session log under ``folder``: its path, dvc's pid and start time, and whether that dvc still runs."""
    for path in sorted(folder.glob("*.jsonl")):
        pid, _, millis = path.stem.partition("-")
        if pid.isdigit() and millis.isdigit():
            yield path, int(pid), int(millis) / 1000, alive(int(pid), int(millis) / 1000)
        else:
            yield path, 0, 0.0, False


def find_session(folder: Path) -> Session | None:
    """The dvc process this one runs under (the nearest dvc above it), or None (a script run by hand)."""
    import psutil

    try:
        process = psutil.Process().parent()
        for _ in range(_ANCESTORS):
            if process is None:
                return None
            arguments = dvc_arguments(process.cmdline())
            if arguments is not None:
                started = process.create_time()
                return Session(process.pid, started, tuple(arguments), session_log(folder, process.pid, started))
            process = process.parent()
    except psutil.Error:
        return None
    return None


def alive(pid: int, started: float) -> bool:
    """Whether the process ``pid`` still runs and is the one that started at ``started`` (not a reused pid)."""
    import psutil

    try:
        return abs(psutil.Process(pid).create_time() - started) < 0.01
    except psutil.Error:
        return False


# ------------------------------------------------------------------------------------------- the log


def read_records(path: Path) -> list[dict]:
    """The log's records in order; a line that is not a JSON object (cut short by a crash) is left out."""
    records = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
    return records


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:  # one short write in append mode: whole lines
        handle.write(json.dumps(record) + "\n")


def read_times(folder: Path) -> dict[str, float]:
    with contextlib.suppress(OSError, ValueError):
        times = json.loads((folder / TIMES).read_text(encoding="utf-8"))
        if isinstance(times, dict):
            return {name: float(s) for name, s in times.items() if isinstance(s, (int, float))}
    return {}


def record_time(folder: Path, stage: str, seconds: float) -> None:
    """Keep ``stage``'s time for later sessions (written whole, then renamed: a reader sees old or new)."""
    times = read_times(folder)
    times[stage] = round(seconds, 3)
    partial = folder / f"{TIMES}.{os.getpid()}"
    partial.write_text(json.dumps(times, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(folder / TIMES)



def dvc_processes(root: Path) -> Iterator[tuple[int, float, list[str]]]:
    """``(pid, start time, dvc's arguments)`` of each ``dvc repro`` or ``dvc exp run`` working in ``root``."""
    import psutil

    real = Path(os.path.realpath(root))
    for process in psutil.process_iter():
        try:
            arguments = dvc_arguments(process.cmdline())
            command = [arg for arg in arguments or [] if not arg.startswith("-")][:2]
            if command[:1] == ["repro"] or command == ["exp", "run"]:
                cwd = Path(process.cwd())
                if cwd == real or real in cwd.parents:
                    yield process.pid, process.create_time(), arguments
        except psutil.Error:  # gone meanwhile, or another user's
            continue




# ------------------------------------------------------------------------------------------- said once


def first_time_this_session(key: str, root: Path | None = None) -> bool:
    """Whether ``key`` (a by-design warning, say) is new to the dvc session this process runs under: the first
    stage to ask marks it in the session folder, later stages of the same ``dvc repro`` get False. True outside
    a dvc session (a stage run by hand always speaks)."""
    import hashlib

    from spanft.fileio import repository_root

    root = root or repository_root()
    session = find_session(root / FOLDER) if root is not None else None
    if session is None:
        return True
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    marker = session.log.with_name(f"{session.log.stem}.said-{digest}")
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        with open(marker, "x", encoding="utf-8") as handle:  # "x": one stage of parallel ones wins
            handle.write(key + "\n")
    except FileExistsError:
        return False
    except OSError:
        return True  # a folder we cannot write: better said twice than never
    return True
