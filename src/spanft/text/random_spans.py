"""Random segmentation: as many spans as the greedy n-gram segmenter cuts, their lengths drawn at random.

The ablation's control (Table 6): a sentence keeps the number of spans the dictionary gives it, but where they
fall is a uniformly random composition of its length (parts of 1..max_n words), drawn exactly with big-integer
counts of compositions and seeded per sentence, so the result does not depend on batching or order.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Sequence

from spanft.text.greedy import GreedySegmenter


class RandomSegmenter:
    """Random spans with the n-gram segmenter's span counts.

    Rule: a sentence of ``n`` words that the greedy segmenter cuts into ``m`` spans is cut into ``m``
    spans drawn uniformly at random among all compositions of ``n`` into ``m`` parts of 1..max_n words
    (always possible, since the greedy spans are such a composition). The generator of each sentence
    is seeded from ``seed`` and the sentence's words, so the result does not depend on batching or order.
    """

    def __init__(self, reference: GreedySegmenter, seed: int = 0) -> None:
        self.reference = reference
        self.max_n = reference.max_n
        self.seed = seed

    def describe(self) -> dict:
        return {**self.reference.describe(), "method": "random", "seed": self.seed}

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
        counts = self.reference.segment_flat(sentences).counts().tolist()
        return [self._draw(words, m) for words, m in zip(sentences, counts)]

    def segment(self, words: Sequence[str]) -> list[int]:
        return self.segment_batch([words])[0]

    def _draw(self, words: Sequence[str], parts: int) -> list[int]:
        rng = random.Random(f"{self.seed}\x1f" + "\x1f".join(words))
        return random_composition(len(words), parts, self.max_n, rng)


@lru_cache(maxsize=None)
def count_compositions(total: int, parts: int, largest: int) -> int:
    """Number of ways to write ``total`` as an ordered sum of ``parts`` integers in 1..largest."""
    if parts == 0:
        return 1 if total == 0 else 0
    if not parts <= total <= parts * largest:
        return 0
    return sum(count_compositions(total - first, parts - 1, largest) for first in range(1, largest + 1))


def random_composition(total: int, parts: int, largest: int, rng: random.Random) -> list[int]:
    """A uniformly random composition of ``total`` into ``parts`` parts of 1..largest (exact big ints)."""
    if count_compositions(total, parts, largest) == 0:
        raise ValueError(f"no composition of {total} into {parts} parts of 1..{largest}")
    result = []
    for remaining_parts in range(parts, 0, -1):
        pick = rng.randrange(count_compositions(total, remaining_parts, largest))
        for first in range(1, largest + 1):
            ways = count_compositions(total - first, remaining_parts - 1, largest)
            if pick < ways:
                break
            pick -= ways
        result.append(first)
        total -= first
    return result

