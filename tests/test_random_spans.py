"""Random segmentation: exact uniform compositions, and as many spans as the greedy segmenter."""

from __future__ import annotations

import random
from itertools import product

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.text.greedy import GreedySegmenter
from spanft.text.random_spans import (
    RandomSegmenter,
    count_compositions,
    random_composition,
)

VOCAB = ["a", "b", "c", "d", "A", "B"]
word = st.sampled_from(VOCAB)
ngram = st.lists(word, min_size=1, max_size=6).map(tuple)


def test_count_compositions_by_enumeration():
    for total in range(0, 9):
        for parts in range(0, 9):
            brute = sum(1 for c in product(range(1, 4), repeat=parts) if sum(c) == total)
            assert count_compositions(total, parts, 3) == brute


def test_random_composition_is_uniform():
    rng = random.Random(0)
    draws = [tuple(random_composition(7, 3, 4, rng)) for _ in range(6000)]
    support = {c for c in product(range(1, 5), repeat=3) if sum(c) == 7}
    assert set(draws) == support
    counts = np.array([draws.count(c) for c in sorted(support)])
    expected = len(draws) / len(support)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 11 degrees of freedom: p < 0.002 only if the sampler is biased


@settings(max_examples=100, deadline=None)
@given(dictionary=st.lists(ngram, max_size=25), sentences=st.lists(st.lists(word, max_size=20), max_size=8),
       seed=st.integers(0, 10))
def test_random_segmenter_properties(dictionary, sentences, seed):
    greedy = GreedySegmenter(dictionary)
    rand = RandomSegmenter(greedy, seed=seed)
    spans = rand.segment_batch(sentences)
    for words, lengths, reference in zip(sentences, spans, greedy.segment_batch(sentences)):
        assert sum(lengths) == len(words)
        assert len(lengths) == len(reference)
        assert all(1 <= n <= 5 for n in lengths)
    # deterministic, independent of batch boundaries and order
    assert RandomSegmenter(greedy, seed=seed).segment_batch(sentences) == spans
    assert [rand.segment(s) for s in sentences] == spans
    assert rand.segment_batch(sentences[::-1]) == spans[::-1]


def test_random_segmenter_depends_on_seed():
    greedy = GreedySegmenter([])
    sentence = [f"w{i}" for i in range(30)]
    greedy_two = GreedySegmenter([(f"w{i}", f"w{i+1}") for i in range(0, 30, 2)])
    draws = {tuple(RandomSegmenter(greedy_two, seed=s).segment(sentence)) for s in range(10)}
    assert len(draws) > 1
    assert RandomSegmenter(greedy, seed=1).segment(sentence) == [1] * 30
