"""The variant table: every kind of fine-tuning run the studies make, the stage group that runs it, its input.

One row per ``dvc.yaml`` fine-tuning group. The studies are the paper's comparisons:

- ``glue`` (Tables 1-3, the GLUE submission), ``backbones`` (Table 4), ``ner`` (Table 8): baseline and sf;
- ``snli`` (Tables 5 and 7): baseline, sf, and sf with each other span encoder (``sf-<encoder>``);
- ``ablation`` (Table 6): cnn-noseg, random-seg and chunker-seg (its baseline and sf rows are glue's runs);
- ``dictsize`` (Figure 4): the span-only head on ``<method>-<size>`` spans, every method x ``dict_sizes``.

The planned runs (:mod:`spanft.params.plan`), the stage scripts' arguments (:mod:`spanft.params.dvc_stage`),
``dvc.yaml``'s fine-tuning section (:mod:`spanft.params.dvc_yaml`) and the report's row labels all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

ENCODERS = ("cnn-max", "attention-max", "attention-attention")  # the snli study's other span encoders
SEGMENTATION_METHODS = ("ngram", "random")  # the dictsize study's segmentations
FIXED_TASKS = {"snli": ("snli",), "ner": ("conll2003",)}  # studies of one task name no tasks list

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

STUDIES: tuple[str, ...] = tuple(dict.fromkeys(v.study for v in VARIANTS))
GROUPS: dict[str, Variant] = {v.group: v for v in VARIANTS}


def study_variants(study: str) -> list[Variant]:
    return [v for v in VARIANTS if v.study == study]


def variant(study: str, name: str) -> Variant:
    """The row of a fixed-name variant (``glue``, ``sf``)."""
    return next(v for v in VARIANTS if v.study == study and v.name == name)


def sweep_variant(method: str, size: int) -> str:
    """The dictsize study's variant (and sweep directory) name: segmentation method and dictionary size."""
    return GROUPS["dictsize_spanonly"].run_name({"method": method, "size": size})
