"""The word tokenizer: the fast BERT split must equal BertPreTokenizer on any text."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers.pre_tokenizers import BertPreTokenizer

from spanft.text.words import WordTokenizer, bert_words, has_letter_or_digit

_BERT = BertPreTokenizer()


def bert_oracle(text: str) -> list[str]:
    return [word for word, _ in _BERT.pre_tokenize_str(text)]


# characters where a regex or str.split shortcut is most likely to go wrong
_TRICKY = (
    string.printable
    + "\x00\x1c\x1d\x1e\x1f\x7f\x85\xa0\u1680\u2000\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
    + "«»¿¡—–‘’“”…、。「」・\u0301éßİ\U00010100\U0001f600"
)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_fast_split_equals_bert_on_arbitrary_unicode(text):
    assert bert_words(text) == bert_oracle(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=60))
def test_fast_split_equals_bert_on_tricky_characters(text):
    assert bert_words(text) == bert_oracle(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable + "\x1c\x1f", max_size=200))
def test_fast_split_equals_bert_on_ascii(text):
    assert bert_words(text) == bert_oracle(text)


def test_every_code_point_splits_like_bert():
    # each code point between letters, and at both ends of a string: covers all of Unicode in a few calls
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(points), 50_000):
        block = points[start : start + 50_000]
        text = "x" + "y".join(block) + "z"
        assert bert_words(text) == bert_oracle(text)
        edges = " ".join(f"{c}q {c}" for c in block[:2000])
        assert bert_words(edges) == bert_oracle(edges)


def test_word_tokenizer_modes():
    text = "New York's  \u00c9COLE, (1998)"
    assert WordTokenizer().words(text) == ["new", "york", "'", "s", "école", ",", "(", "1998", ")"]
    assert WordTokenizer(lowercase=False).words(text)[:2] == ["New", "York"]
    assert WordTokenizer(pretokenized=True).words(text) == ["new", "york's", "école,", "(1998)"]
    lines = ["A b.", "", "c"]
    expected = [["a", "b", "."], [], ["c"]]
    assert WordTokenizer().words_batch(lines) == expected
    assert list(WordTokenizer().iter_words(iter(lines), batch_size=2)) == expected


@given(st.text(max_size=20))
def test_has_letter_or_digit_matches_definition(word):
    assert has_letter_or_digit(word) == any(ch.isalnum() for ch in word)
