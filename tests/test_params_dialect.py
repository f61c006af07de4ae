"""One reading of params.yaml: spanft (PyYAML, YAML 1.1) and DVC (ruamel, YAML 1.2) agree on every value
spanft accepts, and a scalar they read apart is refused in one line naming the key, the line and both readings.

The oracle is DVC itself: ``dvc params diff --json`` in a scratch project, for every scalar form both dialects
parse (octal, sexagesimal, yes/no/on/off, exponents without digits, underscores, leading zeros, ``.inf``, ``~``).
"""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.params.load import parse_params

FORMS = [
    # octal and leading zeros
    "010", "017", "08", "09", "007", "0o17", "+0o7", "0o", "0_10", "00.5", "010.0", "-010", "0",
    # sexagesimal
    "1:30", "-1:30", "190:20:30", "0:30", "1:30.5",
    # booleans
    "yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n", "Y", "true", "True", "FALSE", "tRUE",
    # exponents, with and without digits around the dot
    ".5e1", "5e1", "1.e5", "1e5", "3e-05", "1E+3", "-.5e-1", "+.5", ".5", "-.5", "5.", "1e", "e5",
    # underscores, hex and binary
    "1_000", "1_0.5", "1__0", "0x1F", "0x_1F", "0b101", "0b1_0", "_1", "1_",
    # specials and nulls
    ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".nan", ".NaN", "~", "null", "Null", "NULL", "",
    # plain numbers and text
    "+12", "-0", "1.0", "0.", "'010'", '"yes"', "abc",
]


@pytest.fixture(scope="module")
def dvc_values(tmp_path_factory) -> dict:
    """``{form: value}`` as ``dvc params diff --json`` reports params.yaml holding every form."""
    root = tmp_path_factory.mktemp("dialect")
    run = lambda *argv: subprocess.run(argv, cwd=root, check=True, capture_output=True, text=True)  # noqa: E731
    run("git", "init", "-q")
    run("dvc", "init", "-q")
    (root / "dvc.yaml").write_text('stages:\n  s:\n    cmd: "true"\n    params: [{params.yaml: }]\n', encoding="utf-8")
    (root / "params.yaml").write_text("placeholder: 0\n", encoding="utf-8")
    run("git", "add", "-A")
    run("git", "-c", "user.email=t@spanft", "-c", "user.name=t", "commit", "-qm", "init")
    (root / "params.yaml").write_text("".join(f"f{i}: {form}\n" for i, form in enumerate(FORMS)), encoding="utf-8")
    diff = json.loads(run("dvc", "params", "diff", "--json", "--all").stdout)["params.yaml"]
    return {form: diff[f"f{i}"]["new"] for i, form in enumerate(FORMS)}


def _agree(mine, theirs) -> bool:
    if isinstance(mine, float) and isinstance(theirs, float) and math.isnan(mine):
        return math.isnan(theirs)
    return type(mine) is type(theirs) and mine == theirs


def test_spanft_and_dvc_params_diff_agree_on_every_accepted_scalar(dvc_values):
    refused, disagree = [], []
    for form in FORMS:
        try:
            mine = parse_params(f"k: {form}\n", "params.yaml")["k"]
        except SpanftError as exc:
            refused.append(form)
            assert str(exc).startswith("params.yaml:1: k: "), exc
            continue
        if not _agree(mine, dvc_values[form]):
            disagree.append((form, mine, dvc_values[form]))
    assert disagree == []
    # the forms the hostile sweep found read apart are among the refused (not read alike by accident)
    assert {"010", "1:30", "yes", ".5e1", "0o17"} <= set(refused)
    assert len(refused) < len(FORMS) / 2  # the usual spellings stay accepted


def test_a_split_reading_names_the_key_the_line_and_both_readings():
    text = "data:\n  source: synthetic\n  synthetic:\n    seed: 010\n"
    with pytest.raises(SpanftError) as info:
        parse_params(text, "params.yaml")
    assert str(info.value).startswith("params.yaml:4: data.synthetic.seed: '010' reads as 8 in spanft (YAML 1.1) "
                                      "but 10 in DVC (YAML 1.2")


def test_a_key_read_apart_is_refused_too():
    with pytest.raises(SpanftError, match=r"^params.yaml:2: a key under a: 'on' reads as True in spanft"):
        parse_params("a:\n  on: 1\n", "params.yaml")


SCALAR = st.text(alphabet="0123456789+-._:eEoxbyesnoOnf~", min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(form=SCALAR)
def test_every_accepted_scalar_reads_as_dvcs_own_loader_reads_it(form):
    from dvc.utils.serialize import parse_yaml  # what DVC reads params.yaml with

    text = f"k: {form}\n"
    try:
        mine = parse_params(text, "params.yaml")
    except SpanftError:
        return
    theirs = parse_yaml(text, "params.yaml")
    assert _agree(mine["k"], theirs["k"]), (form, mine, theirs)
