"""Issue 32, class 6: one line means one readable line.

Generated texts: every control, format (zero-width, bidi), separator, surrogate, private-use or unassigned
character is shown escaped; a huge value is shortened in the middle, saying how much went; the temporary
file beside an output never stands in for the path the user gave. End to end through the command line too.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft import errors
from spanft.errors import SpanftError, _fail, one_line
from spanft.fileio import atomic_open, atomic_path

UNSHOWN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
MAX_LINE = errors.MAX_LINE  # the longest error line, "spanft: error: " included
ROOT = Path(__file__).resolve().parents[1]


def _readable(line: str) -> bool:
    return len(f"{line}x".splitlines()) == 1 and not any(
        ch != " " and unicodedata.category(ch) in UNSHOWN for ch in line)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec=None), max_size=200))
def test_one_line_shows_no_invisible_or_control_character(text):
    shown = one_line(text)
    assert _readable(shown), ascii(shown)
    if _readable(text):
        assert shown == text  # nothing to escape: unchanged


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["\u200b", "\x1b[31m", "\u202e", "\ufeff", "\x07", "\u2028", "\ud800", "\ue000", "\x00"]),
       st.text(max_size=20))
def test_named_invisible_characters_are_escaped(invisible, around):
    assert ascii(invisible)[1:-1] in one_line(f"{around}{invisible}{around}")


@settings(max_examples=30, deadline=None)
@given(size=st.integers(MAX_LINE + 1, 3_000_000), ch=st.sampled_from("ax\u00e9\u200b"))
def test_a_huge_value_is_shortened_keeping_head_and_tail(size, ch):
    text = "params.yaml: corpus.hf_id: '" + ch * size + "' is not a hub id"
    shown = one_line(text)
    assert len(shown) <= MAX_LINE
    assert shown.startswith("params.yaml: corpus.hf_id: '") and shown.endswith("' is not a hub id")
    assert "characters left out" in shown


def test_fail_prints_one_short_line(capsys):
    _fail("key 'a\u200bb\x1b[2J' " + "v" * 2_000_000, 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\u200b" not in err and len(err.rstrip("\n")) <= MAX_LINE


@settings(max_examples=40, deadline=None)
@given(name=st.text(st.characters(min_codepoint=48, max_codepoint=122, categories=["L", "N"]), min_size=1,
                    max_size=12),
       code=st.sampled_from([errno.EACCES, errno.ENOSPC, errno.EROFS, errno.ENAMETOOLONG]),
       directory=st.booleans())
def test_a_temporary_name_never_stands_in_for_the_output(tmp_path_factory, name, code, directory):
    target = tmp_path_factory.mktemp("o") / f"out {name}"
    with pytest.raises(SpanftError) as caught:
        with atomic_path(target, made_by="x" if directory else None) as tmp:
            raise OSError(code, os.strerror(code), str(tmp / "inner" if directory else tmp))
    message = str(caught.value)
    assert ".tmp" not in message and str(target) in message, message
    with pytest.raises(SpanftError) as caught:
        with atomic_open(target) as handle:
            raise SpanftError(f"{handle.name}: not what was expected")
    assert str(caught.value) == f"{target}: not what was expected"


@pytest.mark.parametrize("odd", ["\t", "\x85", "\u2028"])
def test_a_temporary_name_is_replaced_even_in_a_path_that_is_shown_escaped(tmp_path, odd):
    target = tmp_path / f"a{odd}b" / "out.tsv"
    target.parent.mkdir()
    with pytest.raises(SpanftError) as caught:
        with atomic_path(target) as tmp:
            raise SpanftError(f"{tmp}: not what was expected")
    assert str(caught.value) == one_line(f"{target}: not what was expected")


@pytest.mark.parametrize("key", ["dict\u200b_size", "dict_size\x1b[2J", "\u202edict_size", "a" * 100_000],
                         ids=["zero-width-space", "esc-sequence", "bidi-override", "100k-key"])
def test_check_params_prints_one_readable_line(tmp_path, key):
    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    tree[key] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "check-params"], cwd=tmp_path, capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    err = done.stderr.decode("utf-8")
    assert done.returncode == 2 and err.count("\n") == 1 and err.startswith("spanft: error:"), err[:300]
    assert _readable(err.rstrip("\n")) and len(err.rstrip("\n")) <= MAX_LINE, ascii(err[:300])



def _params_with_long_value(folder: Path) -> str:
    """A params.yaml in ``folder`` whose hub id is 3,000 characters; the whole error message it gives."""
    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    tree["corpus"]["hf_id"] = "h" + "a" * 3000 + "z"
    (folder / "params.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")
    from spanft.params.plan import load_plan
    with pytest.raises(SpanftError) as caught:
        load_plan(folder / "params.yaml")
    return caught.value.message.replace(str(folder / "params.yaml"), "params.yaml")


@pytest.mark.parametrize("entry", ["cli", "stage"])
def test_a_long_error_line_is_at_most_300_characters_keeping_head_and_tail(tmp_path, entry):
    """Issue 43, item 7: the whole `spanft: error:` line, from the `spanft` command line and from a pipeline/
    stage script (both end in errors.run_command), is at most 300 characters: the message's head and tail, and
    between them how many characters were left out."""
    if entry == "cli":
        missing = "a/" * 1500 + "nope.txt"
        argv, full = ["count-ngrams", missing, "--out", "o.tsv"], f"{missing}: corpus file not found"
        argv = [sys.executable, "-m", "spanft.cli", *argv]
    else:
        full = _params_with_long_value(tmp_path)
        argv = [sys.executable, str(ROOT / "pipeline" / "check_params.py"), "out.txt"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    line = done.stderr.rstrip("\n")
    assert done.returncode == 2 and "\n" not in line and len(line) <= 300, (len(line), done.stderr[-500:])
    head, left_out, tail = re.fullmatch(r"spanft: error: (.+) \.\.\.\[(\d+) characters left out\]\.\.\. (.+)", line).groups()
    assert full.startswith(head) and full.endswith(tail) and len(head) + int(left_out) + len(tail) == len(full)
    assert min(len(head), len(tail)) >= 80, (head, tail)  # both ends readable: the key, and the reason or fix
