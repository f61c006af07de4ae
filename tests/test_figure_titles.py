"""Figure titles stay right after `dvc exp run -S` (issue 49): the profile's word, then the changed params,
never "embedded; changed: dict_size=100000 profile"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from spanft.params.plan import load_plan
from spanft.report import figures

ROOT = Path(__file__).resolve().parents[1]


def _plan(*changed: str):
    return dataclasses.replace(load_plan(ROOT / "profiles" / "embedded.yaml"), changed=changed)


def test_the_title_names_the_profile_then_what_changed():
    assert figures.figure_title(4, _plan().profile_label) == "Figure 4 — embedded profile"
    assert figures.figure_title(4, _plan("dict_size=100000").profile_label) == \
        "Figure 4 — embedded profile; changed: dict_size=100000"
    many = _plan(*(f"hparams.cola.lr=3e-0{n}" for n in range(1, 10))).profile_label
    title = figures.figure_title(3, many)
    assert title.startswith("Figure 3 — embedded profile; changed: hparams.cola.lr=3e-01")
    assert "profile" not in title.split("changed:")[1] and all(len(line) <= 110 for line in title.splitlines())


def test_both_figures_carry_the_title(monkeypatch):
    monkeypatch.setattr(figures, "render", lambda figure: figure._suptitle.get_text())
    label = _plan("dict_size=100000").profile_label
    assert figures.figure3(pd.DataFrame(columns=["task", "dict_size", "mean_spans"]), label) == "Figure 3 — embedded profile; changed: dict_size=100000"
    assert figures.figure4(pd.DataFrame(columns=["task", "backbone", "method", "dict_size", "score"]), label) == "Figure 4 — embedded profile; changed: dict_size=100000"
