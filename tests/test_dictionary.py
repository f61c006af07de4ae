"""The dictionary/counts file format."""

from __future__ import annotations

import pytest

from spanft.errors import SpanftError
from spanft.text.dictionary import read_dictionary, sort_key, write_entries


def test_round_trip_keeps_order(tmp_path):
    entries = [(("new", "york"), 50), (("of", "the"), 50), (("a", "lot", "of"), 12)]
    path = tmp_path / "dict.txt"
    assert write_entries(entries, path) == 3
    assert path.read_text(encoding="utf-8") == "new york\t50\nof the\t50\na lot of\t12\n"
    assert read_dictionary(path) == entries
    assert sorted(entries, key=sort_key) == entries


@pytest.mark.parametrize(
    "line, message",
    [
        ("new york 50", "dict.txt:2: expected 'ngram<TAB>count', found no tab"),
        ("new york\tmany", "dict.txt:2: count 'many' is not an integer"),
        ("new  york\t3", "dict.txt:2: empty n-gram or doubled space"),
        ("new york\t-1", "dict.txt:2: negative count -1"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "dict.txt"
    path.write_text(f"of the\t9\n{line}\n", encoding="utf-8")
    with pytest.raises(SpanftError, match=message):
        read_dictionary(path)
