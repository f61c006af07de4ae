"""The plan: ``params.yaml`` checked once and parsed into frozen dataclasses, read by every stage and report.

:func:`load_plan` is the one place params are read: it runs the schema check (:mod:`spanft.params.schema`),
whose errors name the file, and returns a :class:`Plan`. Past that point nothing names the file again.
The plan's studies expand through the variant table, :data:`VARIANTS`, into :class:`PlannedRun` records:
what each fine-tuning run reads and where it writes, ``data/runs/<study>/<backbone>/<task>/<variant>/seed<N>/``.

The variant table has one row per ``dvc.yaml`` fine-tuning group. The studies are the paper's comparisons:

- ``glue`` (Tables 1-3, the GLUE submission), ``backbones`` (Table 4), ``ner`` (Table 8): baseline and sf;
- ``snli`` (Tables 5 and 7): baseline, sf, and sf with each other span encoder (``sf-<encoder>``);
- ``ablation`` (Table 6): cnn-noseg, random-seg and chunker-seg (its baseline and sf rows are glue's runs);
- ``dictsize`` (Figure 4): the span-only head on ``<method>-<size>`` spans, every method x ``dict_sizes``.

The planned runs, the stage scripts' arguments (:mod:`spanft.stage.names`), ``dvc.yaml``'s fine-tuning
section (:mod:`spanft.stage.dvc_yaml`) and the report's rows (:mod:`spanft.report.context`) all read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings, settings_from_params
from spanft.params.hparams import HParams, checked_hparams
from spanft.params.local_sources import check_local_sources
from spanft.params.schema import FIXED_TASKS, check_params_file

CHANGED = "; changed: "  # in a profile label: the params that differ from the profile's file follow
PARAMS_FILE = "params.yaml"  # DVC runs every stage at the project root

# ---------------------------------------------------------------------------------------------- the variant table

RUNS_DIR = "data/runs"
BACKBONES_DIR = "data/backbones"
TASKS_DIR = "data/tasks"
SEGMENTED_DIR = "data/segmented"
CHECKPOINTS_DIR = "data/checkpoints"


@dataclass(frozen=True)
class Variant:
    """One kind of run of a study: a ``dvc.yaml`` group, its run directory's name, model and input."""

    group: str  # the dvc.yaml stage group
    study: str
    name: str  # the run directory's name; {encoder}, {method} and {size} are the member's values
    finetune: str  # FinetuneOptions.variant: baseline | sf | cnn-noseg | random-seg | chunker-seg
    input: str  # tasks (prepared) | ngram, random, chunker (segmented) | sweep (segmented/sweep/<method>-<size>)
    label: str  # the report's row label
    head: str | None = None
    axes: tuple[str, ...] = ()  # matrix axes between task and seed, in dvc.yaml's order

    def run_name(self, member: dict) -> str:
        return self.name.format(**member)

    def encoder(self, member: dict) -> str | None:
        return member.get("encoder")

    def data(self, task: str, member: dict) -> str:
        """The run's input directory, relative to the project root."""
        if self.input == "tasks":
            return f"{TASKS_DIR}/{task}"
        if self.input == "sweep":
            return f"{SEGMENTED_DIR}/sweep/{task}/{member['method']}-{member['size']}"
        return f"{SEGMENTED_DIR}/{self.input}/{task}"


VARIANTS: tuple[Variant, ...] = (
    Variant("glue_baseline", "glue", "baseline", "baseline", "tasks", "baseline"),
    Variant("glue_sf", "glue", "sf", "sf", "ngram", "+SF"),
    Variant("backbones_baseline", "backbones", "baseline", "baseline", "tasks", "baseline"),
    Variant("backbones_sf", "backbones", "sf", "sf", "ngram", "+SF"),
    Variant("snli_baseline", "snli", "baseline", "baseline", "tasks", "baseline"),
    Variant("snli_sf", "snli", "sf", "sf", "ngram", "+SF"),
    Variant("snli_sf_encoder", "snli", "sf-{encoder}", "sf", "ngram", "{encoder}", axes=("encoder",)),
    Variant("ablation_cnn_noseg", "ablation", "cnn-noseg", "cnn-noseg", "tasks", "+CNN (no segmentation)"),
    Variant("ablation_random_seg", "ablation", "random-seg", "random-seg", "random",
            "+random segmentation"),
    Variant("ablation_chunker_seg", "ablation", "chunker-seg", "chunker-seg", "chunker",
            "+chunker segmentation"),
    Variant("ner_baseline", "ner", "baseline", "baseline", "tasks", "baseline"),
    Variant("ner_sf", "ner", "sf", "sf", "ngram", "+SF"),
    Variant("dictsize_spanonly", "dictsize", "{method}-{size}", "sf", "sweep", "{method}-{size}", head="span-only",
            axes=("size", "method")),
)

# A variant's matrix axes besides backbone, task and seed, and the params list holding each one's values
# ({study}: the variant's study). The planned runs, dvc.yaml's matrices and the stage arguments all read it.
AXIS_PARAMS = {"encoder": "studies.{study}.encoders", "method": "studies.{study}.methods", "size": "dict_sizes"}

STUDIES: tuple[str, ...] = tuple(dict.fromkeys(v.study for v in VARIANTS))
GROUPS: dict[str, Variant] = {v.group: v for v in VARIANTS}


def study_variants(study: str) -> list[Variant]:
    return [v for v in VARIANTS if v.study == study]


def sweep_variant(method: str, size: int) -> str:
    """The dictsize study's variant (and sweep directory) name: segmentation method and dictionary size."""
    return GROUPS["dictsize_spanonly"].run_name({"method": method, "size": size})


# ---------------------------------------------------------------------------------------------- params, typed


@dataclass(frozen=True)
class Corpus:
    source: str
    tokens: int
    seed: int
    local_path: str
    hf_id: str
    hf_config: str
    hf_split: str
    hf_revision: str
    tagged_sentences: int


@dataclass(frozen=True)
class Ngrams:
    min_n: int
    max_n: int
    min_count: int


@dataclass(frozen=True)
class SyntheticSizes:
    train_size: int
    eval_size: int
    test_size: int
    seed: int


@dataclass(frozen=True)
class Data:
    source: str  # synthetic | hf | local
    dir: str
    revisions: dict[str, str]
    synthetic: SyntheticSizes


@dataclass(frozen=True)
class Chunker:
    tagger: str
    source: str  # synthetic | conll | nltk
    conll_dir: str


@dataclass(frozen=True)
class Backbone:
    """A backbone of params ``backbones.<source>.<name>``: built here, fetched from the hub or copied."""

    name: str
    source: str  # build | hub | local
    settings: dict[str, Any]


@dataclass(frozen=True)
class Study:
    name: str
    backbones: tuple[str, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    encoders: tuple[str, ...] = ()  # snli
    methods: tuple[str, ...] = ()  # dictsize


@dataclass(frozen=True)
class Reports:
    paper_names: dict[str, str]
    mcnemar_tasks: tuple[str, ...]
    bootstrap_resamples: int
    bootstrap_seed: int
    figure2_tasks: tuple[str, ...]
    figure2_examples: int


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


@dataclass(frozen=True)
class Plan:
    """Everything ``params.yaml`` says, typed; the studies expanded into runs on demand."""

    profile: str
    lowercase: bool  # words.lowercase: word splitting of n-gram counting and segmentation
    corpus: Corpus
    ngrams: Ngrams
    dict_size: int
    dict_sizes: tuple[int, ...]
    data: Data
    tasks: dict[str, str]  # task -> its folder under data.dir
    random_seed: int  # segmentation.random_seed
    chunker: Chunker
    backbones: dict[str, Backbone]
    hparams: dict[str, HParams]
    threads: int  # torch threads per training process (0: spanft.threads.thread_count's rule)
    studies: dict[str, Study]
    reports: Reports
    cluster: ClusterSettings
    origin: str = PARAMS_FILE  # the file the plan was read from: a run or backbone it lacks is named with it
    changed: tuple[str, ...] = ()  # ``key=value`` that differ from the profile's file (the reports name them)

    @property
    def synthetic(self) -> bool:
        """Synthetic task data: the reports give no verdict on the paper."""
        return self.data.source == "synthetic"

    @property
    def profile_label(self) -> str:
        """The profile's name, with the data sources that contradict it (a profile line must not mislead)."""
        synthetic_profile = self.profile == "embedded"
        contradicting = [f"{key} {value}" for key, value in (("data.source", self.data.source),
                                                             ("corpus.source", self.corpus.source))
                         if (value == "synthetic") != synthetic_profile]
        label = f"{self.profile} (edited: {', '.join(contradicting)})" if contradicting else self.profile
        return f"{label}{CHANGED}{', '.join(self.changed)}" if self.changed else label

    def study(self, name: str) -> Study:
        return self.studies[name]

    def paper_name(self, backbone: str) -> str:
        """The paper backbone ours stands in for: ``reports.paper_names``, else its ``hub_id``, else itself."""
        if backbone in self.reports.paper_names:
            return self.reports.paper_names[backbone]
        spec = self.backbones.get(backbone)
        return str(spec.settings.get("hub_id", backbone)) if spec and spec.source == "hub" else backbone

    def task_folder(self, task: str) -> Path:
        """The task's folder of official files: ``data.dir`` joined with ``tasks.<task>``."""
        if task not in self.tasks:
            raise SpanftError(f"{self.origin}: tasks: {task!r} is not among the prepared tasks ({', '.join(self.tasks)})")
        return Path(self.data.dir) / self.tasks[task]

    def axis_values(self, axis: str, study: str) -> list:
        """The values of one of a variant's axes: the params list :data:`AXIS_PARAMS` names."""
        node, *path = AXIS_PARAMS[axis].format(study=study).split(".")
        value = getattr(self, node)
        for part in path:
            value = value[part] if isinstance(value, dict) else getattr(value, part)
        return list(value)

    def members(self, variant: Variant) -> list[dict]:
        """One dict of axis values per run kind of ``variant`` ([{}] without axes). The last axis of dvc.yaml's
        matrix varies slowest, as the planned runs have always been listed (dictsize: methods, then sizes)."""
        axes = variant.axes[::-1]
        return [dict(zip(axes, values)) for values in product(*(self.axis_values(a, variant.study) for a in axes))]

    def runs(self, study: str | None = None) -> list[PlannedRun]:
        """Every fine-tuning run of every study (or of one): backbones x tasks x seeds x variants."""
        runs = []
        for name in self.studies if study is None else [study]:
            spec = self.studies[name]
            kinds = [(v, m) for v in study_variants(name) for m in self.members(v)]
            for backbone, task, seed in product(spec.backbones, spec.tasks, spec.seeds):
                runs.extend(PlannedRun(name, backbone, task, v.run_name(m), seed, v.finetune, v.encoder(m), v.head,
                                       v.data(task, m)) for v, m in kinds)
        return runs

    def variant_names(self, study: str) -> list[str]:
        """The run-directory names of the variants ``study`` runs."""
        return [v.run_name(m) for v in study_variants(study) for m in self.members(v)]

    def find_run(self, study: str, backbone: str, task: str, variant: str, seed: int) -> PlannedRun:
        """The planned run with this key; an error when the studies do not plan it."""
        if study not in self.studies:
            raise SpanftError(f"{self.origin}: no study {study!r} in studies (defined: {', '.join(self.studies)})")
        for run in self.runs(study):
            if run.key() == (study, backbone, task, variant, seed):
                return run
        raise SpanftError(f"{self.origin}: studies.{study} plans no run {backbone}/{task}/{variant}/seed{seed}")

    def backbone(self, name: str) -> Backbone:
        if name not in self.backbones:
            raise SpanftError(f"{self.origin}: backbone {name!r} is not defined under backbones "
                              f"(defined: {', '.join(self.backbones) or 'none'})")
        return self.backbones[name]


def load_plan(path: str | Path = PARAMS_FILE, check_sources: bool = False) -> Plan:
    """The plan of a params file, after the full check (unknown keys, types, references): one-line errors.
    ``check_sources``: its local sources must exist too, from the project it belongs to (:func:`project_of`)."""
    tree = check_params_file(path)
    if check_sources:
        check_local_sources(tree, path, project_of(path))
    return plan_from_tree(tree, str(path))


def project_of(path: str | Path) -> Path:
    """The project a params file belongs to, where DVC runs the stages and reads their paths from: the nearest
    folder at or above the file's that holds ``dvc.yaml`` (``params.yaml`` itself, a profile under
    ``profiles/``), else the file's folder."""
    folder = Path(path).parent
    for candidate in (folder, *Path(os.path.abspath(folder)).parents):
        if (candidate / "dvc.yaml").is_file():
            return candidate
    return folder


def plan_from_tree(tree: dict, origin: str = PARAMS_FILE) -> Plan:
    """The plan of a params tree that passed :func:`spanft.params.schema.check_params`."""
    corpus, data, reports = tree["corpus"], tree["data"], tree["reports"]
    hparams = {task: checked_hparams(block, f"{origin}: hparams.{task}") for task, block in tree["hparams"].items()}
    return Plan(
        profile=str(tree["profile"]),
        lowercase=tree["words"]["lowercase"],
        corpus=Corpus(**corpus),
        ngrams=Ngrams(**tree["ngrams"]),
        dict_size=tree["dict_size"],
        dict_sizes=tuple(tree["dict_sizes"]),
        data=Data(data["source"], data["dir"], dict(data["revisions"] or {}), SyntheticSizes(**data["synthetic"])),
        tasks=dict(tree["tasks"]),
        random_seed=tree["segmentation"]["random_seed"],
        chunker=Chunker(**tree["chunker"]),
        backbones={name: Backbone(str(name), source, dict(spec or {}))
                   for source, group in tree["backbones"].items() for name, spec in (group or {}).items()},
        hparams={task: HParams(**values) for task, values in hparams.items()},
        threads=tree["threads"],
        studies={name: _study(name, spec) for name, spec in tree["studies"].items()},
        reports=Reports(dict(reports["paper_names"] or {}), tuple(reports["mcnemar_tasks"]),
                        reports["bootstrap"]["resamples"], reports["bootstrap"]["seed"],
                        tuple(reports["figure2"]["tasks"]), reports["figure2"]["examples"]),
        cluster=settings_from_params(tree["cluster"], origin),
        origin=origin,
    )


def _study(name: str, spec: dict) -> Study:
    assert name in STUDIES, name  # the schema admits only these
    tasks = FIXED_TASKS.get(name) or tuple(spec["tasks"])
    return Study(name, tuple(spec["backbones"]), tuple(tasks), tuple(spec["seeds"]),
                 tuple(spec.get("encoders", ())), tuple(spec.get("methods", ())))
