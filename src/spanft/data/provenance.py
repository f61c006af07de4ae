"""What a stage read, recorded beside what it wrote: a hub repository at a resolved commit, or a path and the
digest of its content.

One record per input, ``{"source", "id_or_path", "revision"}`` for hub inputs (``revision``: the commit hash
the requested branch or tag resolved to; ``requested_revision``: what was asked, None for the main branch) or
``{"source", "id_or_path", "digest"}`` for local files, built backbones and synthetic data (``digest``: SHA-256
over the relative paths and bytes of the files, so a replaced file changes it). Prepared task directories and
backbone directories hold theirs in ``provenance.json``; fine-tuning copies both into ``metrics.json``
(``inputs``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Iterable

from spanft.errors import SpanftError
from spanft.fileio import atomic_open, read_text

log = logging.getLogger("spanft")

PROVENANCE_FILE = "provenance.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def paths_digest(paths: Iterable[str | Path], root: str | Path | None = None) -> str:
    """SHA-256 over each file's name (relative to ``root``, else its base name) and bytes, in sorted order."""
    digest = hashlib.sha256()
    named = sorted((str(Path(p).relative_to(root)) if root is not None else Path(p).name, Path(p)) for p in paths)
    for name, path in named:
        digest.update(name.encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def directory_digest(directory: str | Path, exclude: Iterable[str] = (PROVENANCE_FILE,)) -> str:
    """:func:`paths_digest` of every file under ``directory`` (symlinks followed), minus ``exclude`` names."""
    directory = Path(directory)
    skip = set(exclude)
    files = [p for p in directory.rglob("*") if p.is_file() and p.name not in skip and ".git" not in p.parts]
    return paths_digest(files, directory)


def hub_commit(repo_id: str, revision: str | None = None, repo_type: str = "dataset") -> str | None:
    """The commit hash ``revision`` (None: main) of a hub repository resolves to; None when it cannot be told.

    Asks the hub; offline, reads the ref the hub cache recorded when the files were downloaded.
    """
    # The hub's modules only here: the report stage reads records and never resolves a commit.
    import huggingface_hub

    from spanft.data.hub import settle_offline_mode

    if revision and _COMMIT.match(revision):
        return revision
    if settle_offline_mode():
        return _cached_commit(repo_id, revision, repo_type)
    try:
        api = huggingface_hub.HfApi()
        info = (api.dataset_info if repo_type == "dataset" else api.model_info)(repo_id, revision=revision)
        if info.sha:
            return str(info.sha)
    except Exception as exc:  # offline, gated, rate-limited: fall back to the cache
        log.info("%s: commit of revision %s not resolved on the hub (%s); trying the cache", repo_id,
                 revision or "main", type(exc).__name__)
    return _cached_commit(repo_id, revision, repo_type)


def _cached_commit(repo_id: str, revision: str | None, repo_type: str) -> str | None:
    import huggingface_hub  # see hub_commit

    repo = Path(huggingface_hub.constants.HF_HUB_CACHE) / f"{repo_type}s--{repo_id.replace('/', '--')}"
    ref = repo / "refs" / (revision or "main")
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
        return commit if _COMMIT.match(commit) else None
    return None


def hub_record(repo_id: str, revision: str | None, repo_type: str, **extra) -> dict:
    """The record of a hub input, its revision resolved to a commit hash (None when it cannot be)."""
    commit = hub_commit(repo_id, revision, repo_type)
    if commit is None:
        log.warning("%s: the commit of revision %s could not be resolved; recorded as null", repo_id, revision or "main")
    return {"source": "hf" if repo_type == "dataset" else "hub", "id_or_path": repo_id, "revision": commit,
            "requested_revision": revision or None, **extra}


def local_record(source: str, path: str | Path, digest: str, **extra) -> dict:
    """The record of an input identified by its content: a local path, a built backbone, synthetic data."""
    return {"source": source, "id_or_path": str(path), "digest": digest, **extra}


def write_provenance(directory: str | Path, record: dict) -> None:
    with atomic_open(Path(directory) / PROVENANCE_FILE) as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")


def read_provenance(directory: str | Path) -> dict | None:
    """The record stored in ``directory`` (None when it has none)."""
    return read_record(Path(directory) / PROVENANCE_FILE, "provenance file")


def read_record(path: Path, what: str) -> dict | None:
    """A provenance record read from ``path`` (None when the file does not exist); ``what`` names it in errors."""
    if not path.is_file():
        return None
    try:
        record = json.loads(read_text(path, what=what))
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{path}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict) or "source" not in record:
        raise SpanftError(f"{path}: not a provenance record (expected an object with 'source')")
    return record


def read_corpus_record(path: str | Path) -> dict | None:
    """The corpus stage's provenance record (None when the file does not exist)."""
    return read_record(Path(path), "corpus provenance file")
