"""The synthetic language's vocabulary: invented word forms, real English function words and planted
multi-word expressions, each a *unit* (a word, or a whole expression, with its POS and NER tags) in a slot
category with Zipfian probabilities; :class:`UnitInventoryBuilder` builds the whole :class:`UnitInventory` from
one seeded ``random.Random``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from spanft.data.synthetic.grammar import LITERALS

NER_TYPES = ("PER", "LOC", "ORG", "MISC")

# --------------------------------------------------------------------------------------------------
# Invented word forms

_ONSETS = "b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr r s sh sk sl sn st t th tr v w z".split()
_VOWELS = "a a e e i o o u ai ea oa ou".split()
_CODAS = ["", "", "", "n", "r", "l", "m", "s", "t", "k", "nd", "rn", "st", "ll", "mp", "rk", "ng", "sk", "lt"]
_NAME_ENDINGS = ["", "", "a", "el", "or", "in", "ara", "en", "is", "wyn", "ard", "ell", "ia"]


def _invent_forms(rng: random.Random, count: int, max_syllables: int = 3) -> list[str]:
    """``count`` distinct invented lower-case word forms, shortest first (frequent words are short)."""
    forms: set[str] = set()
    while len(forms) < count:
        syllables = rng.choices(range(1, max_syllables + 1), weights=[3, 5, 2][:max_syllables])[0]
        # About one word in ten starts with a vowel (no onset), as in English.
        onsets = ["" if i == 0 and rng.random() < 0.1 else rng.choice(_ONSETS) for i in range(syllables)]
        word = "".join(onset + rng.choice(_VOWELS) + rng.choice(_CODAS) for onset in onsets)
        # Endings that read as inflections (plural, past, gerund, adverb) would blur the tags.
        if 3 <= len(word) <= 11 and not word.endswith(("s", "ed", "ing", "ly")):
            forms.add(word)
    # Sort by length with a random tie-break so that rank order correlates with shortness.
    ordered = sorted(forms)
    rng.shuffle(ordered)
    return sorted(ordered, key=lambda w: len(w) + rng.random() * 3)


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "sh", "ch", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _verb_forms(lemma: str) -> dict[str, str]:
    """Regular English inflection of an invented verb lemma, by PTB tag."""
    stem = lemma[:-1] if lemma.endswith("e") else lemma
    past = lemma + "d" if lemma.endswith("e") else lemma + "ed"
    return {"VB": lemma, "VBP": lemma, "VBZ": _plural(lemma), "VBD": past, "VBN": past, "VBG": stem + "ing"}


def _adverb(adjective: str) -> str:
    if adjective.endswith("y"):
        return adjective[:-1] + "ily"
    if adjective.endswith("le"):
        return adjective[:-1] + "y"
    return adjective + "ly"



def _zipf(n: int, exponent: float = 1.05, offset: float = 2.7) -> np.ndarray:
    """Zipf-Mandelbrot probabilities ``p(r) ∝ (r + offset) ** -exponent`` for ranks 1..n."""
    weights = (np.arange(1, n + 1) + offset) ** -exponent
    return weights / weights.sum()


# Real English function words with rough relative frequencies (most frequent first).
_FUNCTION_WORDS: dict[str, tuple[str, list[tuple[str, float]]]] = {
    "DT_SG": ("DT", [("the", 55), ("a", 30), ("this", 5), ("that", 3), ("each", 2), ("every", 2), ("another", 2),
                     ("no", 1)]),
    "DT_PL": ("DT", [("the", 60), ("some", 13), ("these", 10), ("those", 7), ("no", 3)]),
    "IN": ("IN", [("of", 30), ("in", 22), ("for", 9), ("on", 8), ("with", 7), ("at", 5), ("from", 5), ("by", 4),
                  ("into", 2), ("after", 2), ("about", 1.5), ("under", 1), ("over", 1), ("between", 1),
                  ("through", 1), ("during", 1), ("against", 0.8), ("without", 0.6), ("near", 0.5), ("before", 1)]),
    "CC": ("CC", [("and", 70), ("but", 20), ("or", 10)]),
    "MD": ("MD", [("would", 20), ("will", 18), ("could", 14), ("can", 14), ("may", 10), ("should", 8),
                  ("might", 8), ("must", 8)]),
    "PRP_SG": ("PRP", [("he", 45), ("it", 35), ("she", 20)]),
    "PRP_PL": ("PRP", [("they", 70), ("we", 30)]),
    "PRP_O": ("PRP", [("it", 40), ("them", 25), ("him", 20), ("her", 10), ("us", 5)]),
    "PRP$": ("PRP$", [("his", 40), ("their", 30), ("its", 20), ("her", 8), ("our", 2)]),
}
_REAL_ADVERBS = ["also", "then", "still", "often", "later", "never", "soon", "again", "always", "already"]
_NUMBER_WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "ten", "twelve", "twenty"]
_LOC_PREFIXES = ["Port", "Lake", "Mount", "North", "South", "New", "Cape", "Fort"]
_LOC_SUFFIXES = ["City", "Valley", "Island", "Bay", "River", "Heights"]
_ORG_SUFFIXES = ["Group", "Bank", "Council", "Party", "Institute", "Records", "Airlines", "Club"]
_ORG_PREFIXES = ["University", "Bank", "Council", "Church"]  # "<prefix> of <place>"
_MISC_SUFFIXES = ["Cup", "Prize", "Festival", "Games", "Award", "Treaty"]
_NATIONALITY_ENDINGS = ["ian", "ese", "ish", "an"]


@dataclass(frozen=True)
class LanguageParams:
    """Vocabulary sizes and frequency shape of the synthetic language."""

    zipf_exponent: float = 1.05  # open-class words: p(rank) ∝ (rank + 2.7) ** -exponent
    nouns: int = 6000
    verbs: int = 2000
    adjectives: int = 2500
    derived_adverbs: int = 400
    first_names: int = 120
    surnames: int = 400
    persons: int = 150
    multiword_locations: int = 80
    single_locations: int = 120
    organisations: int = 100
    events: int = 50
    nationalities: int = 40
    collocations: int = 120
    idioms: int = 50
    templates: int = 20000  # grammar draws that make the template table


# --------------------------------------------------------------------------------------------------
# The inventory: units (a word, or a whole multi-word expression) grouped in categories


@dataclass
class UnitInventory:
    """Every unit of the language (words, POS tags, NER tags) and the slot categories that draw them."""

    words: list[tuple[str, ...]] = field(default_factory=list)
    tags: list[tuple[str, ...]] = field(default_factory=list)
    ner: list[tuple[str, ...]] = field(default_factory=list)
    index: dict[tuple, int] = field(default_factory=dict)
    categories: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # name -> (unit ids, probs)
    mwes: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    def unit(self, words: Sequence[str], tags: Sequence[str], ner: Sequence[str] | None = None) -> int:
        ner = tuple(ner) if ner is not None else ("O",) * len(words)
        key = (tuple(words), tuple(tags), ner)
        if key not in self.index:
            self.index[key] = len(self.words)
            self.words.append(key[0])
            self.tags.append(key[1])
            self.ner.append(key[2])
        return self.index[key]

    def category(self, name: str, units: Sequence[int], probs: np.ndarray | Sequence[float]) -> None:
        probs = np.asarray(probs, dtype=np.float64)
        self.categories[name] = (np.asarray(units, dtype=np.int64), probs / probs.sum())


def _with_article(noun: str) -> list[str]:
    return ["an" if noun[0] in "aeiou" else "a", noun]


def _entity_tags(kind: str, n: int) -> list[str]:
    return [f"B-{kind}"] + [f"I-{kind}"] * (n - 1)


class UnitInventoryBuilder:
    """Builds every category of the synthetic language from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random, params: LanguageParams):
        self.rng = rng
        self.params = params
        self.lex = UnitInventory()
        self.used: set[str] = {w for _, entries in _FUNCTION_WORDS.values() for w, _ in entries}
        self.used |= set(_REAL_ADVERBS) | set(_NUMBER_WORDS) | {"an", "to", "be", "up", "out", "off"}
        self.used |= {lit.split(":")[1].rsplit("/", 1)[0] for lit in LITERALS.values()}
        self.pool = iter(_invent_forms(rng, 16000))
        self.name_pool = iter(_invent_forms(rng, 3000, max_syllables=2))

    def fresh(self, forms_of: Callable[[str], Iterable[str]] = lambda w: [w], pool: Iterator[str] | None = None) -> str:
        """The next invented lemma none of whose forms is already taken (lower-cased)."""
        for lemma in pool or self.pool:
            forms = [f.lower() for f in forms_of(lemma)]
            if not any(f in self.used for f in forms) and len(set(forms)) == len(forms):
                self.used.update(forms)
                return lemma
        raise RuntimeError("ran out of invented word forms")

    def fresh_name(self) -> str:
        ending = self.rng.choice(_NAME_ENDINGS)
        return self.fresh(lambda w: [w + ending], self.name_pool).capitalize() + ending

    def build(self) -> UnitInventory:
        self.function_words()
        nouns = self.open_class_nouns()
        adjectives = self.open_class_adjectives()
        verbs = self.open_class_verbs()
        self.numbers()
        self.names()
        self.collocations(nouns, adjectives)
        self.idioms(nouns, verbs)
        for lit in LITERALS.values():
            word, tag = lit.split(":", 1)[1].rsplit("/", 1)
            self.lex.category(lit, [self.lex.unit([word], [tag])], [1.0])
        return self.lex

    def function_words(self) -> None:
        for name, (tag, entries) in _FUNCTION_WORDS.items():
            units = [self.lex.unit([w], [tag]) for w, _ in entries]
            self.lex.category(name, units, [f for _, f in entries])

    def open_class_nouns(self) -> list[str]:
        nouns = [self.fresh(lambda w: [w, _plural(w)]) for _ in range(self.params.nouns)]
        probs = _zipf(len(nouns), self.params.zipf_exponent)
        self.lex.category("NN", [self.lex.unit([n], ["NN"]) for n in nouns], probs)
        self.lex.category("NNS", [self.lex.unit([_plural(n)], ["NNS"]) for n in nouns], probs)
        return nouns

    def open_class_adjectives(self) -> list[str]:
        adjectives = [self.fresh() for _ in range(self.params.adjectives)]
        units = [self.lex.unit([a], ["JJ"]) for a in adjectives]
        self.lex.category("JJ", units, _zipf(len(adjectives), self.params.zipf_exponent))
        derived = []
        for adjective in adjectives:
            if len(derived) == self.params.derived_adverbs:
                break
            if _adverb(adjective) not in self.used:
                derived.append(_adverb(adjective))
                self.used.add(derived[-1])
        adverbs = _REAL_ADVERBS + derived
        self.lex.category("RB", [self.lex.unit([a], ["RB"]) for a in adverbs], _zipf(len(adverbs), offset=1.0))
        return adjectives

    def open_class_verbs(self) -> list[str]:
        verbs = [self.fresh(lambda w: list(dict.fromkeys(_verb_forms(w).values()))) for _ in range(self.params.verbs)]
        # Seven verbs in ten take an object; the split keeps both classes Zipfian over the same ranks.
        transitive = [v for i, v in enumerate(verbs) if i % 10 < 7]
        intransitive = [v for i, v in enumerate(verbs) if i % 10 >= 7]
        for suffix, lemmas in (("_T", transitive), ("_I", intransitive)):
            probs = _zipf(len(lemmas), self.params.zipf_exponent)
            for tag in ("VB", "VBD", "VBZ", "VBP", "VBN", "VBG"):
                units = [self.lex.unit([_verb_forms(v)[tag]], [tag]) for v in lemmas]
                self.lex.category(tag + suffix, units, probs)
        return transitive

    def numbers(self) -> None:
        numbers = _NUMBER_WORDS + [str(n) for n in (3, 12, 15, 40, 100)] + [str(y) for y in range(1850, 2021)]
        # Words and small numbers first, then the years in a shuffled order.
        years = numbers[len(_NUMBER_WORDS) + 5 :]
        self.rng.shuffle(years)
        numbers = numbers[: len(_NUMBER_WORDS) + 5] + years
        self.lex.category("CD", [self.lex.unit([n], ["CD"]) for n in numbers], _zipf(len(numbers)))

    def names(self) -> None:
        single_places = self.persons_and_places()
        self.organisations(single_places)
        self.misc(single_places)

    def persons_and_places(self) -> list[str]:
        """Persons (first + last name), surnames alone, one- and two-word places; returns the one-word places."""
        p = self.params
        first = [self.fresh_name() for _ in range(p.first_names)]
        last = [self.fresh_name() for _ in range(p.surnames)]
        persons = sorted({(self.rng.choice(first), self.rng.choice(last)) for _ in range(p.persons * 2)})
        self.rng.shuffle(persons)
        self.mwe_category("PER", "PER", [(list(person), ["NNP", "NNP"]) for person in persons[: p.persons]])
        self.lex.category("PER1", [self.lex.unit([n], ["NNP"], ["B-PER"]) for n in last], _zipf(len(last)))
        places = [self.fresh_name() for _ in range(p.single_locations)]
        self.lex.category("LOC1", [self.lex.unit([n], ["NNP"], ["B-LOC"]) for n in places], _zipf(len(places)))
        multi = []
        for i in range(p.multiword_locations):
            place = self.rng.choice(places) if i % 3 == 0 else self.fresh_name()
            if i % 2:
                multi.append(([self.rng.choice(_LOC_PREFIXES), place], ["NNP", "NNP"]))
            else:
                multi.append(([place, self.rng.choice(_LOC_SUFFIXES)], ["NNP", "NNP"]))
        self.mwe_category("LOC", "LOC", self.distinct(multi))
        return places

    def organisations(self, places: list[str]) -> None:
        orgs = []
        for i in range(self.params.organisations):
            name = self.rng.choice(places) if i % 2 else self.fresh_name()
            if i % 4 == 3:
                orgs.append(([self.rng.choice(_ORG_PREFIXES), "of", name], ["NNP", "IN", "NNP"]))
            else:
                orgs.append(([name, self.rng.choice(_ORG_SUFFIXES)], ["NNP", "NNP"]))
        self.mwe_category("ORG", "ORG", self.distinct(orgs))

    def misc(self, places: list[str]) -> None:
        """Events and awards (two-word MISC names) and nationality adjectives (one-word MISC)."""
        events = [
            ([self.fresh_name(), self.rng.choice(_MISC_SUFFIXES)], ["NNP", "NNP"]) for _ in range(self.params.events)
        ]
        self.mwe_category("MISC", "MISC", self.distinct(events))
        nationalities = []
        for place in places[: self.params.nationalities]:
            adjective = re.sub(r"[aeiouy]+$", "", place) + self.rng.choice(_NATIONALITY_ENDINGS)
            if adjective.lower() not in self.used:
                self.used.add(adjective.lower())
                nationalities.append(self.lex.unit([adjective], ["JJ"], ["B-MISC"]))
        self.lex.category("MISC_ADJ", nationalities, _zipf(len(nationalities)))

    def distinct(self, entries: list[tuple[list[str], list[str]]]) -> list[tuple[list[str], list[str]]]:
        return list({tuple(w): (w, t) for w, t in entries}.values())

    def mwe_category(self, name: str, kind: str, entries: list[tuple[list[str], list[str]]]) -> None:
        """A category of multi-word units; NER kinds get IOB2 tags, others "O"."""
        units = []
        for words, tags in entries:
            ner = _entity_tags(kind, len(words)) if kind in NER_TYPES else None
            units.append(self.lex.unit(words, tags, ner))
            self.lex.mwes.append((tuple(words), kind))
        # A flat Zipf (large offset) keeps every planted expression frequent enough to be counted.
        self.lex.category(name, units, _zipf(len(units), exponent=1.0, offset=8.0))

    def collocations(self, nouns: list[str], adjectives: list[str]) -> None:
        def frequent(words: list[str], top: int) -> str:
            return words[int(self.rng.random() ** 2 * top)]  # skewed towards the frequent words

        entries = set()
        while len(entries) < self.params.collocations:
            noun = frequent(nouns, 1500)
            if self.rng.random() < 0.7:
                modifier, tag = frequent(adjectives, 800), "JJ"
            else:
                modifier, tag = frequent(nouns, 1500), "NN"
            if modifier != noun:
                entries.add(((modifier, noun), (tag, "NN")))
        ordered = sorted(entries)
        self.rng.shuffle(ordered)
        self.mwe_category("COLLOC", "collocation", [(list(w), list(t)) for w, t in ordered])

    def idioms(self, nouns: list[str], verbs: list[str]) -> None:
        rng = self.rng

        def noun() -> str:
            return nouns[rng.randrange(200, 3000)]

        def past() -> str:
            return _verb_forms(rng.choice(verbs[:400]))["VBD"]

        adverbial = [
            lambda: ([rng.choice(["at", "in", "on"]), "the", noun(), "of", *_with_article(noun())],
                     ["IN", "DT", "NN", "IN", "DT", "NN"]),
            lambda: ([rng.choice(["by", "in"]), noun(), "and", noun()], ["IN", "NN", "CC", "NN"]),
            lambda: ([rng.choice(["in", "on", "for"]), "the", noun()], ["IN", "DT", "NN"]),
            lambda: (["out", "of", "the", noun()], ["IN", "IN", "DT", "NN"]),
        ]
        verbal = [
            lambda: ([past(), "the", noun()], ["VBD", "DT", "NN"]),
            lambda: ([past(), rng.choice(["up", "out", "off"])], ["VBD", "RP"]),
            lambda: ([past(), rng.choice(["up", "out"]), "the", noun()], ["VBD", "RP", "DT", "NN"]),
        ]
        n_adv = self.params.idioms // 2
        adv = self.distinct([rng.choice(adverbial)() for _ in range(n_adv)])
        vp = self.distinct([rng.choice(verbal)() for _ in range(self.params.idioms - n_adv)])
        self.mwe_category("IDIOM_ADV", "idiom", adv)
        self.mwe_category("IDIOM_VP", "idiom", vp)

