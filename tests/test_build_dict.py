"""Dictionaries: the top-K entries of a counts file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.text.dictionary import (
    build_dictionary,
    read_dictionary,
    sort_key,
    write_entries,
)

ENTRIES = [(("new", "york"), 50), (("of", "the"), 50), (("in", "the", "end"), 12), (("a", "b"), 10)]


def counts_file(tmp_path: Path, entries=ENTRIES) -> Path:
    path = tmp_path / "counts.txt"
    write_entries(entries, path)
    return path


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grams=st.dictionaries(
        st.lists(st.sampled_from(["a", "b", "é", "z9", "The"]), min_size=2, max_size=4).map(tuple),
        st.integers(1, 6),
        max_size=30,
    ),
    size=st.integers(1, 40),
)
def test_top_k_is_the_k_most_frequent(tmp_path, grams, size):
    canonical = sorted(grams.items(), key=sort_key)
    counts = counts_file(tmp_path, canonical)
    out = tmp_path / "dict.txt"
    out.unlink(missing_ok=True)  # tmp_path is shared by hypothesis examples
    if size > len(canonical):
        with pytest.raises(SpanftError, match=f"holds only {len(canonical)} n-grams"):
            build_dictionary(counts, size, out)
        assert not out.exists()
        return
    assert build_dictionary(counts, size, out) == size
    kept = read_dictionary(out)
    assert kept == canonical[:size]
    # no entry left out is more frequent than one kept
    if kept and len(canonical) > size:
        assert min(c for _, c in kept) >= max(c for _, c in canonical[size:])


def test_cli_writes_first_k_lines(tmp_path):
    counts = counts_file(tmp_path)
    out = tmp_path / "dict.txt"
    assert main(["-q", "build-dict", str(counts), "--size", "2", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "new york\t50\nof the\t50\n"


def test_more_than_available_is_an_error_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "dict.txt"
    assert main(["build-dict", str(counts_file(tmp_path)), "--size", "100", "--out", str(out)]) == 2
    assert "holds only 4 n-grams, fewer than the 100 asked for" in capsys.readouterr().err
    assert not out.exists()
    assert main(["build-dict", str(counts_file(tmp_path)), "--size", "4", "--out", str(out)]) == 0
    assert read_dictionary(out) == ENTRIES


@pytest.mark.parametrize("size", ["0", "-5"])
def test_size_must_be_positive(tmp_path, capsys, size):
    out = tmp_path / "dict.txt"
    assert main(["-q", "build-dict", str(counts_file(tmp_path)), "--size", size, "--out", str(out)]) == 2
    assert f"--size (dict_size) must be > 0, got {size}" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("new york\t50\nof the 50\n", "counts.txt:2: expected 'ngram<TAB>count', found no tab"),
        ("new york\t50\nof the\tmany\n", "counts.txt:2: count 'many' is not an integer"),
        ("a b\t5\nnew york\t50\n", "counts.txt:2: counts file not sorted"),
        ("b c\t5\na b\t5\n", "counts.txt:2: counts file not sorted"),
        ("a b\t5\na b\t5\n", "counts.txt:2: counts file not sorted"),
        ("a b\t5\n\xff\t3\n", "counts.txt:2: not valid UTF-8"),
    ],
)
def test_bad_counts_file(tmp_path, capsys, text, message):
    counts = tmp_path / "counts.txt"
    counts.write_bytes(text.encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    out = tmp_path / "dict.txt"
    assert main(["-q", "build-dict", str(counts), "--size", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists() and leftovers(tmp_path) == []


def test_missing_counts_file(tmp_path):
    with pytest.raises(SpanftError, match="nope.txt: n-gram file not found"):
        build_dictionary(tmp_path / "nope.txt", 3, tmp_path / "dict.txt")
    assert not (tmp_path / "dict.txt").exists()


def test_count_then_build_end_to_end(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("new york is big\nnew york , new york is big\nthe end\n", encoding="utf-8")
    counts, out = tmp_path / "counts.txt", tmp_path / "dict.txt"
    assert main(["-q", "count-ngrams", str(corpus), "--out", str(counts), "--min-count", "2"]) == 0
    assert main(["-q", "build-dict", str(counts), "--size", "3", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "new york\t3\nis big\t2\nnew york is\t2\n"
