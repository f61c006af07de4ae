"""The synthetic English-like language (:class:`SyntheticLanguage`), one per seed (:func:`language_for_seed`): it
draws tagged sentences and rendered corpus paragraphs. No text is copied from any data set: a sentence is a
*template* (a sequence of slot categories such as ``DT_SG``, ``JJ``, ``NN``, ``PER``) drawn from a table sampled
once from a small probabilistic grammar (:mod:`spanft.data.synthetic.grammar`); each slot is then filled with a
*unit* (a word, or a whole multi-word expression) drawn from its category's Zipfian distribution
(:mod:`spanft.data.synthetic.lexicon`). Generation is vectorised: drawing templates and units for a whole chunk
of paragraphs at once is a handful of numpy calls per category.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from typing import NamedTuple

import numpy as np

from spanft.data.synthetic.grammar import Grammar
from spanft.data.synthetic.lexicon import (
    LanguageParams,
    UnitInventory,
    UnitInventoryBuilder,
)
from spanft.errors import SpanftError


class Token(NamedTuple):
    word: str
    pos: str  # Penn Treebank tag
    ner: str  # IOB2 tag over PER/LOC/ORG/MISC


def _draw(cdf: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Indices drawn from the distribution with cumulative probabilities ``cdf`` (inverse transform)."""
    return np.minimum(np.searchsorted(cdf, uniform, side="right"), len(cdf) - 1)


class SyntheticLanguage:
    """A deterministic, seeded English-like language with POS and NER tags.

    ``sentence(rng)`` draws one sentence as a list of :class:`Token`; ``words_by_tag`` lists each PTB
    tag's words, most frequent first; ``mwes`` lists the planted multi-word expressions and their kind.
    """

    mean_sentences_per_paragraph = 5.0

    def __init__(self, seed: int = 0, params: LanguageParams = LanguageParams()):
        self.seed = seed
        self.params = params
        rng = random.Random(seed)
        lex = UnitInventoryBuilder(rng, params).build()
        self._lex = lex
        self.mwes: list[tuple[tuple[str, ...], str]] = list(lex.mwes)
        self._build_templates(Grammar(rng), lex)
        self._build_unit_tables(lex)
        self.words_by_tag: dict[str, list[str]] = self._rank_words_by_tag()

    # -- construction -----------------------------------------------------------------------------

    def _build_templates(self, grammar: Grammar, lex: UnitInventory) -> None:
        counts = Counter(tuple(grammar.sentence()) for _ in range(self.params.templates))
        templates = sorted(counts, key=lambda t: (-counts[t], t))
        names = sorted(lex.categories)
        self._category_names = names
        code = {name: i for i, name in enumerate(names)}
        self._templates = templates
        self._template_probs = np.array([counts[t] for t in templates], dtype=np.float64) / self.params.templates
        self._template_cdf = np.cumsum(self._template_probs)
        self._template_len = np.array([len(t) for t in templates], dtype=np.int64)
        self._template_start = np.concatenate([[0], np.cumsum(self._template_len)[:-1]])
        self._template_slots = np.array([code[c] for t in templates for c in t], dtype=np.int64)
        self._category_units = [lex.categories[n][0] for n in names]
        self._category_cdf = [np.cumsum(lex.categories[n][1]) for n in names]

    def _build_unit_tables(self, lex: UnitInventory) -> None:
        self._unit_a = lex.index[(("a",), ("DT",), ("O",))]
        self._unit_an = lex.unit(["an"], ["DT"])
        surface = [" ".join(words) for words in lex.words]
        capital = [s[:1].upper() + s[1:] for s in surface]
        self._n_units = len(surface)
        # Four renderings of each unit: (plain | capitalised) followed by (space | newline).
        self._render_table = np.array(
            [s + end for end in (" ", "\n") for forms in (surface, capital) for s in forms],
            dtype=object,
        )
        self._unit_words = np.array([len(w) for w in lex.words], dtype=np.int64)
        self._vowel_initial = np.array([s[:1].lower() in "aeiou" for s in surface], dtype=bool)

    def _rank_words_by_tag(self) -> dict[str, list[str]]:
        """Order each tag's words by their expected frequency under the generator."""
        per_sentence = np.zeros(len(self._category_names))
        np.add.at(per_sentence, self._template_slots, np.repeat(self._template_probs, self._template_len))
        expected: Counter[tuple[str, str]] = Counter()
        for c, name in enumerate(self._category_names):
            probs = np.diff(self._category_cdf[c], prepend=0.0)
            for unit, p in zip(self._category_units[c], probs):
                for word, tag in zip(self._lex.words[unit], self._lex.tags[unit]):
                    expected[(word, tag)] += per_sentence[c] * p
        # The determiner "a" of DT_SG becomes "an" before a vowel-initial unit: move that share.
        dt_sg = self._category_names.index("DT_SG")
        p_a = np.diff(self._category_cdf[dt_sg], prepend=0.0)[list(self._category_units[dt_sg]).index(self._unit_a)]
        moved = per_sentence[dt_sg] * p_a * self._an_share()
        expected[("a", "DT")] -= moved
        expected[("an", "DT")] += moved
        by_tag: dict[str, list[tuple[float, str]]] = {}
        for (word, tag), freq in expected.items():
            by_tag.setdefault(tag, []).append((-freq, word))
        return {tag: [w for _, w in sorted(entries)] for tag, entries in sorted(by_tag.items())}

    def _an_share(self) -> float:
        """Probability that a drawn "a" is followed by a vowel-initial unit (and so becomes "an")."""
        dt_sg = self._category_names.index("DT_SG")
        weight = vowel = 0.0
        slots, probs = self._template_slots, np.repeat(self._template_probs, self._template_len)
        for pos in np.flatnonzero(slots[:-1] == dt_sg):
            nxt = slots[pos + 1]
            probs_next = np.diff(self._category_cdf[nxt], prepend=0.0)
            p_vowel = float(probs_next @ self._vowel_initial[self._category_units[nxt]])
            weight += probs[pos]
            vowel += probs[pos] * p_vowel
        return vowel / weight if weight else 0.0

    # -- sampling ---------------------------------------------------------------------------------

    def sample_units(self, rng: np.random.Generator, n_sentences: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n_sentences`` sentences: flat unit ids and the number of units of each sentence."""
        t = _draw(self._template_cdf, rng.random(n_sentences))
        lengths = self._template_len[t]
        starts = np.cumsum(lengths) - lengths
        offsets = np.arange(int(lengths.sum())) - np.repeat(starts - self._template_start[t], lengths)
        slots = self._template_slots[offsets]
        units = np.empty(len(slots), dtype=np.int64)
        order = np.argsort(slots, kind="stable")
        bounds = np.searchsorted(slots[order], np.arange(len(self._category_names) + 1))
        for c in range(len(self._category_names)):
            where = order[bounds[c] : bounds[c + 1]]
            if len(where) == 0:
                continue
            members, cdf = self._category_units[c], self._category_cdf[c]
            if len(members) == 1:
                units[where] = members[0]
            else:
                units[where] = members[_draw(cdf, rng.random(len(where)))]
        # English article: "a" before a vowel sound becomes "an" (templates never end on "a").
        is_a = np.flatnonzero(units[:-1] == self._unit_a)
        units[is_a[self._vowel_initial[units[is_a + 1]]]] = self._unit_an
        return units, lengths

    def sentences(self, rng: np.random.Generator, n: int) -> list[list[Token]]:
        """``n`` sentences as lists of tokens (first word capitalised)."""
        units, lengths = self.sample_units(rng, n)
        result: list[list[Token]] = []
        position = 0
        for length in lengths.tolist():
            tokens = [
                Token(word, tag, ner)
                for unit in units[position : position + length].tolist()
                for word, tag, ner in zip(self._lex.words[unit], self._lex.tags[unit], self._lex.ner[unit])
            ]
            first = tokens[0]
            tokens[0] = first._replace(word=first.word[:1].upper() + first.word[1:])
            result.append(tokens)
            position += length
        return result

    def sentence(self, rng: np.random.Generator) -> list[Token]:
        """One sentence as a list of tokens (English word order, PTB tags, IOB2 NER tags)."""
        return self.sentences(rng, 1)[0]

    def render_paragraphs(
        self, rng: np.random.Generator, n_paragraphs: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n_paragraphs`` paragraphs as rendered pieces (strings with their separators).

        Returns ``(pieces, ends, words)``: ``"".join(pieces[ends[i-1]:ends[i]])`` is paragraph ``i``
        (ending in a newline), ``words[i]`` its number of words.
        """
        per_paragraph = 1 + rng.poisson(self.mean_sentences_per_paragraph - 1, n_paragraphs)
        units, lengths = self.sample_units(rng, int(per_paragraph.sum()))
        sentence_ends = np.cumsum(lengths)
        variant = np.zeros(len(units), dtype=np.int64)
        variant[sentence_ends - lengths] = 1  # capitalised sentence start
        ends = sentence_ends[np.cumsum(per_paragraph) - 1]
        variant[ends - 1] += 2  # newline after the paragraph's last unit
        pieces = self._render_table[units + variant * self._n_units]
        words = np.add.reduceat(self._unit_words[units], np.concatenate([[0], ends[:-1]]))
        return pieces, ends, words


def check_seed(seed: int) -> None:
    if seed < 0:
        raise SpanftError(f"corpus.seed must be >= 0, got {seed}")


@functools.lru_cache(maxsize=4)
def language_for_seed(seed: int) -> SyntheticLanguage:
    """The default-parameter language of ``seed``, built once per process (construction takes ~0.5 s)."""
    return SyntheticLanguage(seed)
