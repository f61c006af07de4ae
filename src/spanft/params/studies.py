"""The studies: every fine-tuning run the graph makes and the table it feeds, from params ``studies``.

``studies.<study>`` lists backbones, tasks and seeds (and the snli study's encoders, the dictsize study's
segmentation methods); the variants each study runs are the paper's comparisons:

- ``glue`` (Tables 1-3, the GLUE submission), ``backbones`` (Table 4), ``ner`` (Table 8): baseline and sf;
- ``snli`` (Tables 5 and 7): baseline, sf, and sf with each other span encoder (``sf-<encoder>``);
- ``ablation`` (Table 6): cnn-noseg, random-seg and chunker-seg (its baseline and sf rows are glue's runs);
- ``dictsize`` (Figure 4): the span-only head on ``<method>-<size>`` spans, every method x ``dict_sizes``.

:func:`planned_runs` expands them; the fine-tuning stages, the reports and the cost model all read it.
A run reads its input under ``data/`` and writes ``data/runs/<study>/<backbone>/<task>/<variant>/seed<N>/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spanft.errors import SpanftError
from spanft.params.load import lookup

STUDIES = ("glue", "backbones", "snli", "ablation", "ner", "dictsize")
FIXED_TASKS = {"snli": ["snli"], "ner": ["conll2003"]}  # studies of one task name no tasks list

RUNS_DIR = "data/runs"
BACKBONES_DIR = "data/backbones"
TASKS_DIR = "data/tasks"
SEGMENTED_DIR = "data/segmented"
CHECKPOINTS_DIR = "data/checkpoints"


@dataclass(frozen=True)
class PlannedRun:
    """One fine-tuning run of a study: what it fine-tunes, on which input, and where it writes."""

    study: str
    backbone: str
    task: str
    variant: str  # the run directory's name: baseline, sf, sf-<encoder>, cnn-noseg, ..., <method>-<size>
    seed: int
    finetune_variant: str  # FinetuneOptions.variant
    encoder: str | None
    head: str | None
    data: str  # input directory, relative to the project root

    @property
    def out(self) -> str:
        return str(run_dir(RUNS_DIR, self.study, self.backbone, self.task, self.variant, self.seed))

    @property
    def checkpoint_dir(self) -> str:
        return f"{CHECKPOINTS_DIR}/{self.study}-{self.backbone}-{self.task}-{self.variant}-{self.seed}"

    @property
    def backbone_dir(self) -> str:
        return f"{BACKBONES_DIR}/{self.backbone}"

    def key(self) -> tuple[str, str, str, str, int]:
        return (self.study, self.backbone, self.task, self.variant, self.seed)


def run_dir(runs_dir: str | Path, study: str, backbone: str, task: str, variant: str, seed: int) -> Path:
    """``<runs_dir>/<study>/<backbone>/<task>/<variant>/seed<N>``: where a run's files live."""
    return Path(runs_dir) / study / backbone / task / variant / f"seed{seed}"


def _list(params: dict, dotted: str, kind: type, source: str) -> list:
    value = lookup(params, dotted, source)
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise SpanftError(f"{source}: {dotted} must be a list of {kind.__name__}, found {value!r}")
    return value


def study_names(params: dict, source: str = "params") -> list[str]:
    """The studies params defines, in file order; an unknown study is an error."""
    studies = lookup(params, "studies", source)
    if not isinstance(studies, dict):
        raise SpanftError(f"{source}: studies must be a mapping of study -> lists")
    for study in studies:
        if study not in STUDIES:
            raise SpanftError(f"{source}: studies.{study}: unknown study; known: {', '.join(STUDIES)}")
    return list(studies)


def study_backbones(params: dict, study: str, source: str = "params") -> list[str]:
    return _list(params, f"studies.{study}.backbones", str, source)


def task_folder(params: dict, task: str) -> Path:
    """The task's folder of official files: params ``data.dir`` joined with ``tasks.<task>``."""
    folders = params["tasks"]
    if task not in folders:
        raise SpanftError(f"params tasks: {task!r} is not among the prepared tasks ({', '.join(folders)})")
    return Path(params["data"]["dir"]) / folders[task]


def study_tasks(params: dict, study: str, source: str = "params") -> list[str]:
    """The study's tasks: ``studies.<study>.tasks``, or its one fixed task (snli, ner)."""
    return list(FIXED_TASKS[study]) if study in FIXED_TASKS else _list(params, f"studies.{study}.tasks", str, source)


def study_seeds(params: dict, study: str, source: str = "params") -> list[int]:
    return _list(params, f"studies.{study}.seeds", int, source)


@dataclass(frozen=True)
class _Variant:
    name: str
    finetune_variant: str
    encoder: str | None = None
    head: str | None = None
    input: str = "tasks"  # tasks | segmented/<method> | sweep/<method>-<size>

    def data(self, task: str) -> str:
        if self.input == "tasks":
            return f"{TASKS_DIR}/{task}"
        if self.input.startswith("sweep/"):
            return f"{SEGMENTED_DIR}/sweep/{task}/{self.input[len('sweep/'):]}"
        return f"{SEGMENTED_DIR}/{self.input}/{task}"


def _variants(params: dict, study: str, source: str) -> list[_Variant]:
    baseline, sf = _Variant("baseline", "baseline"), _Variant("sf", "sf", input="ngram")
    if study in ("glue", "backbones", "ner"):
        return [baseline, sf]
    if study == "snli":
        encoders = _list(params, "studies.snli.encoders", str, source)
        return [baseline, sf, *(_Variant(f"sf-{e}", "sf", encoder=e, input="ngram") for e in encoders)]
    if study == "ablation":
        return [_Variant("cnn-noseg", "cnn-noseg"), _Variant("random-seg", "random-seg", input="random"),
                _Variant("chunker-seg", "chunker-seg", input="chunker")]
    if study == "dictsize":
        methods = _list(params, "studies.dictsize.methods", str, source)
        sizes = _list(params, "dict_sizes", int, source)
        return [_Variant(sweep_variant(m, s), "sf", head="span-only", input=f"sweep/{sweep_variant(m, s)}")
                for m in methods for s in sizes]
    raise SpanftError(f"{source}: studies.{study}: unknown study; known: {', '.join(STUDIES)}")


def sweep_variant(method: str, size: int) -> str:
    """The dictsize study's variant (and sweep directory) name: segmentation method and dictionary size."""
    return f"{method}-{size}"


def study_variants(params: dict, study: str, source: str = "params") -> list[str]:
    """The run-directory names of the variants ``study`` runs."""
    return [variant.name for variant in _variants(params, study, source)]


def planned_runs(params: dict, source: str = "params", study: str | None = None) -> list[PlannedRun]:
    """Every fine-tuning run of every study (or of one), backbones x tasks x seeds x variants."""
    runs = []
    for name in study_names(params, source) if study is None else [study]:
        variants = _variants(params, name, source)
        for backbone in study_backbones(params, name, source):
            for task in study_tasks(params, name, source):
                for seed in study_seeds(params, name, source):
                    runs.extend(PlannedRun(name, backbone, task, v.name, seed, v.finetune_variant, v.encoder,
                                           v.head, v.data(task)) for v in variants)
    return runs


def find_run(params: dict, study: str, backbone: str, task: str, variant: str, seed: int,
             source: str = "params") -> PlannedRun:
    """The planned run with this key; an error when the studies do not plan it."""
    if study not in study_names(params, source):
        raise SpanftError(f"{source}: no study {study!r} in studies (defined: {', '.join(study_names(params, source))})")
    for run in planned_runs(params, source, study):
        if run.key() == (study, backbone, task, variant, seed):
            return run
    raise SpanftError(f"{source}: studies.{study} plans no run {backbone}/{task}/{variant}/seed{seed}")
