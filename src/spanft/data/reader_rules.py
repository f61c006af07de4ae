"""The rules every task reader (local files and hub) applies alike: sentences split into words with one
``WordTokenizer(lowercase=False)``; an example with an empty sentence dropped from training and counted, kept
and predicted in dev and test splits (the GLUE server wants every test index); a CoNLL-2003 row without tokens
a boundary, skipped and counted everywhere.
"""

from __future__ import annotations

import logging
from typing import Sequence

from spanft.data.registry import SplitSpec
from spanft.text.words import WordTokenizer

log = logging.getLogger("spanft")

WORDS = WordTokenizer(lowercase=False)


class EmptyCount:
    """Examples with an empty sentence (a blank question or hypothesis): dropped from training and counted;
    kept, and predicted, in every dev and test split (a score or a leaderboard file covers every row)."""

    def __init__(self, split: SplitSpec, origin: str) -> None:
        self.split, self.origin = split, origin
        self.training = split.name == "train"
        self.seen: list[str] = []

    def keeps(self, words: Sequence[Sequence[str]], location: str) -> bool:
        if all(words):
            return True
        self.seen.append(location)
        return not self.training

    def report(self) -> None:
        if not self.seen:
            return
        where = "; ".join(self.seen[:5]) + (" ..." if len(self.seen) > 5 else "")
        if self.training:
            log.warning("%s: dropped %d training example(s) with an empty sentence: %s", self.origin,
                        len(self.seen), where)
        else:
            log.info("%s: kept %d example(s) with an empty sentence (predicted like any other): %s", self.origin,
                     len(self.seen), where)


def report_boundaries(origin: str, count: int) -> None:
    """CoNLL-2003's one rule for a sentence without tokens, in every reader (NER and POS, files and hub): it
    is not a sentence but a boundary (the files' -DOCSTART- lines and runs of blank lines), skipped and counted;
    nothing is lost, as it has no token to label or predict."""
    if count:
        log.info("%s: skipped %d empty sentence(s): boundaries, not sentences (no tokens to tag)", origin, count)

