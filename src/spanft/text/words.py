"""The one word tokenizer shared by n-gram counting and task segmentation.

Dictionary entries can only match task text if both were split into words the same way, so the
corpus counter, the dictionary and every segmenter call this module. The default splitter is the
BERT pre-tokenizer from ``tokenizers`` (split on whitespace and on each punctuation character);
``pretokenized`` text (WikiText ``.tokens``, CoNLL words) is split on whitespace only.

Speed: calling ``BertPreTokenizer.pre_tokenize_str`` line by line costs far more than the split
itself, so :func:`bert_words` reproduces it with ``str.replace`` + ``str.split`` (ASCII lines) or
one compiled regular expression (other lines). Both are built from character classes probed from
``BertPreTokenizer`` itself on every code point, so they follow its Unicode tables exactly; the
test suite checks the equivalence on arbitrary Unicode text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from tokenizers.pre_tokenizers import BertPreTokenizer


@dataclass(frozen=True)
class WordTokenizer:
    """Split text into words. ``lowercase`` folds case before splitting (params: ``words.lowercase``)."""

    lowercase: bool = True
    pretokenized: bool = False

    def words(self, text: str) -> list[str]:
        """Words of one sentence or paragraph."""
        if self.lowercase:
            text = text.lower()
        if self.pretokenized:
            return text.split()
        return bert_words(text)

    def words_batch(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of many lines (one list per line)."""
        return [self.words(text) for text in texts]

    def iter_words(self, texts: Iterable[str], batch_size: int = 2048) -> Iterable[list[str]]:
        """Stream ``words`` over an iterable of lines (one list per line; ``batch_size`` is kept for callers)."""
        for text in texts:
            yield self.words(text)


def has_letter_or_digit(word: str) -> bool:
    """True when a word can take part in a dictionary n-gram (it holds a letter or a digit)."""
    return any(ch.isalnum() for ch in word)


def bert_words(text: str) -> list[str]:
    """The words ``BertPreTokenizer().pre_tokenize_str(text)`` returns, computed faster."""
    if text.isascii():
        spaced_punctuation, split_unsafe = _ascii_tables()
        if not any(char in text for char in split_unsafe):
            # pad each punctuation character with spaces, then let str.split do the work in C;
            # the membership test skips the copy for the characters a line does not hold
            for char, spaced in spaced_punctuation:
                if char in text:
                    text = text.replace(char, spaced)
            return text.split()
    return _unicode_pattern().findall(text)


def bert_words_reference(text: str) -> list[str]:
    """The words of the BERT pre-tokenizer itself (the slow reference for :func:`bert_words`)."""
    return [word for word, _ in _BERT_PRE_TOKENIZER.pre_tokenize_str(text)]


_BERT_PRE_TOKENIZER = BertPreTokenizer()
_PROBE_BATCH = 2048
_SURROGATES = range(0xD800, 0xE000)


def _probe_classes(code_points: Iterable[int]) -> tuple[list[int], list[int]]:
    """Ask the BERT pre-tokenizer how it treats each code point: (whitespace, punctuation) lists.

    Each code point c is probed as the word ``a c a``: whitespace splits it into two words,
    punctuation into three (c alone in the middle), anything else leaves one word.
    """
    whitespace: list[int] = []
    punctuation: list[int] = []
    points = [c for c in code_points if c not in _SURROGATES]
    for start in range(0, len(points), _PROBE_BATCH):
        batch = points[start : start + _PROBE_BATCH]
        words = bert_words_reference(" ".join(f"a{chr(c)}a" for c in batch))
        at = 0
        for c in batch:
            if words[at] == "a" and at + 1 < len(words) and words[at + 1] == "a":
                whitespace.append(c)
                at += 2
            elif words[at] == "a":
                punctuation.append(c)
                at += 3
            else:
                at += 1
    return whitespace, punctuation


def _char_class(code_points: list[int]) -> str:
    """A regex character-class body matching exactly ``code_points`` (sorted), as ranges."""
    parts: list[str] = []
    start = prev = None
    for c in sorted(code_points) + [None]:
        if start is not None and (c is None or c != prev + 1):
            parts.append(re.escape(chr(start)) if start == prev else f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = None
        if c is not None and start is None:
            start = c
        prev = c
    return "".join(parts)


@functools.lru_cache(maxsize=1)
def _ascii_tables() -> tuple[list[tuple[str, str]], list[str]]:
    """For ASCII text: (punctuation char, the char padded with spaces) pairs, and the split-unsafe chars.

    ``str.split`` splits on a few characters BERT keeps inside words (ASCII 0x1c-0x1f) and would
    keep any BERT whitespace it does not know: lines holding such a character take the regex path.
    """
    whitespace, punctuation = _probe_classes(range(128))
    spaced = [(chr(c), f" {chr(c)} ") for c in punctuation]
    python_space = [c for c in range(128) if chr(c).isspace()]
    unsafe = sorted(set(python_space).symmetric_difference(whitespace))
    return spaced, [chr(c) for c in unsafe]


@functools.lru_cache(maxsize=1)
def _unicode_pattern() -> re.Pattern[str]:
    """One regex giving BERT's words: a punctuation char alone, or a run of other non-space chars."""
    whitespace, punctuation = _probe_classes(range(0x110000))
    punct, space = _char_class(punctuation), _char_class(whitespace)
    return re.compile(f"[{punct}]|[^{punct}{space}]+")

