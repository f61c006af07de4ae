"""Local sources that exist: every path ``params.yaml`` gives dvc.yaml as a stage dependency (the corpus file,
the task folders under ``data.dir``, the tagger's CoNLL-2003 folder, each ``backbones.local`` model) must be
there before any stage runs. DVC itself would stop on the first missing one with a bare ``[Errno 2]``; this
check names the key and the path. ``spanft check-params`` and every stage run it (:func:`load_plan`'s
``check_sources``)."""

from __future__ import annotations

from pathlib import Path

from spanft.errors import SpanftError


def _dependencies(tree: dict) -> list[tuple[str, str, bool, str | None]]:
    """``(params key, path, must hold data, its task)``: each path dvc.yaml lists as a stage dependency from
    params; the flag is set where the key's source is local (a folder of the repository's layout alone will not
    do); the task (a task folder's, ``corpus`` for the corpus) names the files it must hold."""
    data_local = tree["data"]["source"] == "local"
    found = [("corpus.local_path", tree["corpus"]["local_path"], tree["corpus"]["source"] == "local", "corpus")]
    data_dir = tree["data"]["dir"]
    found.append(("data.dir", data_dir, False, None))  # named itself when missing, before each folder under it
    found += [(f"data.dir / tasks.{task}", f"{data_dir}/{folder}", data_local, task)
              for task, folder in tree["tasks"].items()]
    conll_local = tree["chunker"]["source"] == "conll" and data_local
    found.append(("data.dir / chunker.conll_dir", f"{data_dir}/{tree['chunker']['conll_dir']}", conll_local,
                  "conll2003"))
    found += [(f"backbones.local.{name}.path", str((spec or {}).get("path", "")), True, None)
              for name, spec in (tree["backbones"].get("local") or {}).items()]
    return found


def _missing_files(folder: Path, task: str | None) -> str | None:
    """What is wrong with a local source's folder for its reader (a task's train and dev files, the corpus'
    WikiText file), as ``lacks its cola validation file (dev.tsv)``; None when nothing is, or nothing is known."""
    if task == "corpus":
        # numpy comes with it: imported for a local corpus only
        from spanft.data.corpus import WIKITEXT_TRAIN_FILES

        if folder.is_file() or any((folder / name).is_file() for name in WIKITEXT_TRAIN_FILES):
            return None
        return f"lacks its WikiText file ({' or '.join(WIKITEXT_TRAIN_FILES)})"
    from spanft.data.registry import TASKS

    spec = TASKS.get(task or "")
    if spec is not None and not folder.is_dir():
        return f"is a file, not the {spec.name} folder that holds its train and dev files"
    for name in spec.required_splits if spec is not None else []:
        names = spec.splits[name].local_names
        if not any((folder / file).is_file() for file in names):
            return f"lacks its {spec.name} {name} file ({' or '.join(names)})"
    return None


def _holds_data(path: Path) -> bool:
    """A file, or a folder holding more than the layout ships with (a .gitkeep; data/raw's notes, README*)."""
    return path.is_file() or any(child.name != ".gitkeep" and not child.name.upper().startswith("README")
                                 for child in path.iterdir())


def check_local_sources(tree: dict, path: str | Path, root: str | Path = ".") -> None:
    """Raise :class:`SpanftError` naming the first local source of a checked params tree that is missing under
    ``root`` (the project root, where DVC runs the stages), or that is an empty folder where data is needed."""
    from spanft.params.profiles import packaged_path

    for key, value, needs_data, task in _dependencies(tree):
        if value.startswith("pkg:"):
            module, _, relative = value.removeprefix("pkg:").partition("/")
            packaged_path(module, "/" + relative, f"{path}: {key}")  # its own one-line error when absent
            continue
        where = Path(root) / value
        if not where.exists():
            what = "a local source" if needs_data else "a stage dependency in dvc.yaml: an empty folder will do"
            raise SpanftError(f"{path}: {key}: {value} not found ({what}; create it, or correct the path)")
        if needs_data and where.is_dir() and not _holds_data(where):
            raise SpanftError(f"{path}: {key}: {value} holds no files (a local source: put the official files there; "
                              f"data/raw/ describes the layout)")
        wrong = _missing_files(where, task) if needs_data else None
        if wrong:  # the stage reading it would stop on it: named before any stage runs
            raise SpanftError(f"{path}: {key}: {value} {wrong} (a local source: put the official files there; "
                              f"data/raw/ describes the layout)")
