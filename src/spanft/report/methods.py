"""Which runs are which row of which table: one plain data table, :data:`METHODS`, read by every table
builder. A row names the table, the row label the table prints, the paper rows' method it is compared with
(``key``), the study whose runs it reads and the run directory's variant name
(``<runs>/<study>/<backbone>/<task>/<variant>/seed<N>/``). A table's rows keep the order listed here; the
first is the arm the others are compared with. Tables 2 and 3 test and time Table 1's two arms; Table 7 shows
the encoders of ``studies.snli.encoders`` and CNN-CNN, the default encoder (the snli study's sf runs).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """A table row group: a label and where its runs live (study, variant)."""

    label: str
    key: str  # the paper rows' method
    study: str
    variant: str


# (table, row label, the paper rows' method, study, run-directory variant)
METHOD_ROWS: tuple[tuple[int, str, str, str, str], ...] = (
    (1, "baseline", "baseline", "glue", "baseline"),
    (1, "+SF", "sf", "glue", "sf"),
    (4, "baseline", "baseline", "backbones", "baseline"),
    (4, "+SF", "sf", "backbones", "sf"),
    (5, "baseline", "baseline", "snli", "baseline"),
    (5, "+SF", "sf", "snli", "sf"),
    (6, "baseline", "baseline", "glue", "baseline"),
    (6, "+CNN (no segmentation)", "cnn-noseg", "ablation", "cnn-noseg"),
    (6, "+random segmentation", "random-seg", "ablation", "random-seg"),
    (6, "+chunker segmentation", "chunker-seg", "ablation", "chunker-seg"),
    (6, "+SF (n-gram)", "sf", "glue", "sf"),
    (7, "CNN-Max", "cnn-max", "snli", "sf-cnn-max"),
    (7, "CNN-CNN", "cnn-cnn", "snli", "sf"),
    (7, "Attention-Max", "attention-max", "snli", "sf-attention-max"),
    (7, "Attention-Attention", "attention-attention", "snli", "sf-attention-attention"),
    (8, "baseline", "baseline", "ner", "baseline"),
    (8, "+SF", "sf", "ner", "sf"),
)
DEFAULT_ENCODER = "cnn-cnn"  # Table 7's row every other encoder is compared with


def methods(table: int) -> list[Method]:
    """Table ``table``'s row groups, in order."""
    return [Method(label, key, study, variant) for number, label, key, study, variant in METHOD_ROWS
            if number == table]
