"""``params.yaml``'s cross-references: studies name defined backbones and prepared tasks, reports name tasks
and backbones, task folders sit inside ``data.dir``, the tagger fits the task data (split from
:mod:`spanft.params.schema`, which runs these after its type and value checks)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from spanft.data.registry import TASKS, unknown_task
from spanft.data.tagger_sources import check_tagger_source
from spanft.errors import SpanftError
from spanft.params import ids
from spanft.params.hparams import HPARAM_FIELDS

ENCODERS = ("cnn-max", "attention-max", "attention-attention")  # the snli study's other span encoders
SEGMENTATION_METHODS = ("ngram", "random")  # the dictsize study's segmentations
FIXED_TASKS = {"snli": ("snli",), "ner": ("conll2003",)}  # studies of one task name no tasks list


def _get(tree: dict, dotted: str) -> Any:
    node = tree
    for part in dotted.split("."):
        node = node[part]
    return node


def _check_real_data(tree: dict, path) -> None:
    """The tagger must fit the task data; revisions name tasks."""
    try:
        check_tagger_source(tree["chunker"]["source"], tree["data"]["source"])
    except SpanftError as exc:
        raise SpanftError(f"{path}: {exc}") from None
    if tree["chunker"]["source"] == "synthetic" and tree["corpus"]["source"] != "synthetic":
        raise SpanftError(f"{path}: chunker.source synthetic needs corpus.source synthetic (the synthetic tags "
                          f"describe the synthetic language); with a real corpus use conll or nltk")
    for task in tree["data"]["revisions"]:
        if task not in TASKS:
            raise SpanftError(f"{path}: data.revisions: {unknown_task(task)}")


def _check_folders(tree: dict, path) -> None:
    """Task folders and the tagger's CoNLL-2003 folder: relative paths inside data.dir (each a stage's dep)."""
    folders = [(f"tasks.{task}", folder) for task, folder in tree["tasks"].items()]
    for dotted, folder in [*folders, ("chunker.conll_dir", tree["chunker"]["conll_dir"])]:
        problem = ids.folder_problem(folder)
        if problem:
            raise SpanftError(f"{path}: {dotted}: {folder!r} {problem}")
    conll = tree["tasks"].get("conll2003", tree["chunker"]["conll_dir"])
    same_files = Path(conll) == Path(tree["chunker"]["conll_dir"])
    if tree["chunker"]["source"] == "conll" and tree["data"]["source"] == "local" and not same_files:
        raise SpanftError(f"{path}: chunker.conll_dir {tree['chunker']['conll_dir']!r} differs from tasks.conll2003 "
                          f"{conll!r}: the tagger and the NER task must read the same CoNLL-2003 files")


def _check_references(tree: dict, path) -> None:
    backbones = _backbone_specs(tree, path)
    tasks = tree["tasks"]
    for task in tasks:
        if task not in TASKS:
            raise SpanftError(f"{path}: tasks: {unknown_task(task)}")
    for task in tree["hparams"]:
        if task not in TASKS:
            close = difflib.get_close_matches(str(task), list(TASKS), n=1)
            hint = f" (did you mean hparams.{close[0]}?)" if close else ""
            raise SpanftError(f"{path}: hparams.{task}: unknown task{hint}; valid tasks: {', '.join(TASKS)}")
    for study, spec in tree["studies"].items():
        for name in spec["backbones"]:
            if name not in backbones:
                raise SpanftError(f"{path}: studies.{study}.backbones: {name!r} is not defined under backbones "
                                  f"(defined: {', '.join(backbones)})")
        study_tasks = spec.get("tasks", FIXED_TASKS.get(study, []))
        if not spec["backbones"]:  # a study left out of a profile: it fine-tunes nothing
            continue
        for task in study_tasks:
            if task not in tasks:
                close = difflib.get_close_matches(str(task), list(tasks), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise SpanftError(f"{path}: studies.{study}.tasks: {task!r} is not in tasks{hint} (prepared tasks: "
                                  f"{', '.join(tasks)})")
            if task not in tree["hparams"]:
                raise SpanftError(f"{path}: hparams.{task} is missing (studies.{study} fine-tunes {task})")
    for study, spec in tree["studies"].items():
        if spec["backbones"] and "tasks" in spec and not spec["tasks"]:
            raise SpanftError(f"{path}: studies.{study}.tasks is empty but studies.{study}.backbones names "
                              f"{', '.join(map(repr, spec['backbones']))}: its tables would have no runs; name a "
                              f"task, or empty the backbones to leave the study out")
        if spec["backbones"] and not spec["seeds"]:
            raise SpanftError(f"{path}: studies.{study}.seeds is empty but studies.{study}.backbones names "
                              f"{', '.join(map(repr, spec['backbones']))}: its tables need at least one run per "
                              f"backbone; give a seed, or empty the backbones to leave the study out")
    _check_report_lists(tree, path)
    _check_max_seq_len(tree, backbones, path)
    for encoder in tree["studies"]["snli"]["encoders"]:
        if encoder not in ENCODERS:
            raise SpanftError(f"{path}: studies.snli.encoders: unknown encoder {encoder!r}; valid: {', '.join(ENCODERS)}")
    for method in tree["studies"]["dictsize"]["methods"]:
        if method not in SEGMENTATION_METHODS:
            raise SpanftError(f"{path}: studies.dictsize.methods: unknown method {method!r}; valid: "
                              f"{', '.join(SEGMENTATION_METHODS)}")


def _check_report_lists(tree: dict, path) -> None:
    """reports.* name prepared tasks (every one is segmented, studied or not: Figure 2 reads them) and
    backbones that are defined, each once."""
    for dotted in ("reports.mcnemar_tasks", "reports.figure2.tasks"):
        for task in _get(tree, dotted):
            if task not in TASKS:
                raise SpanftError(f"{path}: {dotted}: {unknown_task(task)}")
            if task not in tree["tasks"]:
                raise SpanftError(f"{path}: {dotted}: {task!r} is not in tasks (prepared tasks: "
                                  f"{', '.join(tree['tasks'])})")
    names = tree["reports"]["paper_names"]
    defined = {name for group in tree["backbones"].values() for name in (group or {})}
    for name in names:
        if name not in defined:
            raise SpanftError(f"{path}: reports.paper_names: {name!r} is not defined under backbones (defined: "
                              f"{', '.join(sorted(defined))})")


def _check_max_seq_len(tree: dict, backbones: dict, path) -> None:
    """A built backbone has ``max_len`` positions: no task it fine-tunes may ask for more tokens."""
    for study, spec in tree["studies"].items():
        for name in spec["backbones"]:
            source, settings = backbones[name]
            if source != "build" or "max_len" not in settings:
                continue
            for task in spec.get("tasks", FIXED_TASKS.get(study, [])):
                wanted = (tree["hparams"].get(task) or {}).get("max_seq_len", HPARAM_FIELDS["max_seq_len"].default)
                if isinstance(wanted, int) and wanted > settings["max_len"]:
                    raise SpanftError(f"{path}: hparams.{task}.max_seq_len {wanted} exceeds backbones.build.{name}."
                                      f"max_len {settings['max_len']} (studies.{study} fine-tunes {task} on {name}): "
                                      f"lower max_seq_len or raise max_len")


def _backbone_specs(tree: dict, path) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{name: (source, settings)}`` of every backbone; a name defined under two sources is an error."""
    specs: dict[str, tuple[str, dict[str, Any]]] = {}
    for kind, group in tree["backbones"].items():
        for name, spec in (group or {}).items():
            if name in specs:
                raise SpanftError(f"{path}: backbone {name!r} is defined under both backbones.{specs[name][0]} "
                                  f"and backbones.{kind}")
            specs[name] = (kind, dict(spec or {}))
    return specs
