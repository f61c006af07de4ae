"""Which runs are which row of which table, derived from the variant table (:mod:`spanft.params.variants`).

:data:`TABLE_GROUPS` names, per table, the ``dvc.yaml`` fine-tuning groups whose runs are its rows, in order
(the first is the arm the others are compared with); a row's label, its paper method and where its runs
live (``<runs>/<study>/<backbone>/<task>/<variant>/seed<N>/``) come from the group's row of the variant table.
Tables 2 and 3 test and time Table 1's two arms. Table 7 shows one row per span encoder: CNN-CNN, the
default encoder, is the snli study's sf runs, and every other one its ``sf-<encoder>`` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from spanft.params.variants import GROUPS, Variant

DEFAULT_ENCODER = "cnn-cnn"  # Table 7's row every other encoder is compared with
ENCODER_LABELS = {"cnn-max": "CNN-Max", "cnn-cnn": "CNN-CNN", "attention-max": "Attention-Max",
                  "attention-attention": "Attention-Attention"}  # Table 7's rows, in the paper's order

# table -> its groups, in row order; a (group, label) pair words the row for that table only
TABLE_GROUPS: dict[int, tuple[str | tuple[str, str], ...]] = {
    1: ("glue_baseline", "glue_sf"),
    4: ("backbones_baseline", "backbones_sf"),
    5: ("snli_baseline", "snli_sf"),
    6: ("glue_baseline", "ablation_cnn_noseg", "ablation_random_seg", "ablation_chunker_seg",
        ("glue_sf", "+SF (n-gram)")),
    8: ("ner_baseline", "ner_sf"),
}


@dataclass(frozen=True)
class Method:
    """A table row group: a label and where its runs live (study, variant)."""

    label: str
    key: str  # the paper rows' method
    study: str
    variant: str


def _method(variant: Variant, label: str | None = None) -> Method:
    return Method(label or variant.label, variant.name, variant.study, variant.name)


def _encoder(encoder: str) -> Method:
    variant = GROUPS["snli_sf"] if encoder == DEFAULT_ENCODER else GROUPS["snli_sf_encoder"]
    name = variant.run_name({"encoder": encoder})
    return Method(ENCODER_LABELS[encoder], encoder, variant.study, name)


def methods(table: int) -> list[Method]:
    """Table ``table``'s row groups, in order."""
    if table == 7:
        return [_encoder(encoder) for encoder in ENCODER_LABELS]
    return [_method(GROUPS[entry]) if isinstance(entry, str) else _method(GROUPS[entry[0]], entry[1])
            for entry in TABLE_GROUPS[table]]
