"""A synthetic English-like language: invented words, English word order, POS and NER tags, planted expressions.

No text is copied from any data set: invented word forms with Zipfian frequencies per part of speech, real
English function words, sentence templates with English word order and Penn Treebank tags, and planted
multi-word expressions (names carrying IOB2 NER tags, collocations, idioms) with their own Zipfian frequencies.

Generation is vectorised: a sentence is a *template* (a sequence of slot categories such as ``DT_SG``,
``JJ``, ``NN``, ``PER``) drawn from a table sampled once from a small probabilistic grammar; each slot
is then filled with a *unit* (a word, or a whole multi-word expression) drawn from its category's
distribution. Drawing templates and units for a whole chunk of paragraphs at once is a handful of
numpy calls per category.
"""

from __future__ import annotations

import functools
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from spanft.errors import SpanftError

log = logging.getLogger("spanft")


class Token(NamedTuple):
    word: str
    pos: str  # Penn Treebank tag
    ner: str  # IOB2 tag over PER/LOC/ORG/MISC


PTB_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH "
    "VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split()
) | frozenset([",", ".", ":", "``", "''", "-LRB-", "-RRB-", "$", "#"])
NER_TYPES = ("PER", "LOC", "ORG", "MISC")
MWE_KINDS = ("PER", "LOC", "ORG", "MISC", "collocation", "idiom")

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


def _draw(cdf: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Indices drawn from the distribution with cumulative probabilities ``cdf`` (inverse transform)."""
    return np.minimum(np.searchsorted(cdf, uniform, side="right"), len(cdf) - 1)


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
    """Lexicon sizes and frequency shape of the synthetic language."""

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
# The grammar that produces sentence templates (sequences of slot categories)

_LITERALS = {
    ".": "lit:./.", ",": "lit:,/,", "?": "lit:?/.", "was": "lit:was/VBD", "were": "lit:were/VBD",
    "is": "lit:is/VBZ", "are": "lit:are/VBP", "has": "lit:has/VBZ", "have": "lit:have/VBP",
    "not": "lit:not/RB", "there": "lit:there/EX", "to": "lit:to/TO", "which": "lit:which/WDT",
    "by": "lit:by/IN", "be": "lit:be/VB",
}


class _Grammar:
    """A small probabilistic grammar of English clauses; ``sentence()`` returns slot categories."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def pick(self, *options: tuple[float, Callable[[], list[str]]]) -> list[str]:
        weights = [w for w, _ in options]
        return self.rng.choices([f for _, f in options], weights=weights)[0]()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def sentence(self) -> list[str]:
        L = _LITERALS
        return self.pick(
            (62, lambda: self.clause() + [L["."]]),
            (8, lambda: self.front() + [L[","]] + self.clause() + [L["."]]),
            (8, lambda: self.clause() + [L[","], "CC"] + self.clause() + [L["."]]),
            (5, lambda: self.clause() + ["IDIOM_ADV", L["."]]),
            (4, self.existential),
            (4, self.question),
            (5, self.appositive),
            (4, self.pronoun_and_entity),
        )

    def pronoun_and_entity(self) -> list[str]:
        number = self.rng.choice(["sg", "pl"])
        pronoun = "PRP_SG" if number == "sg" else "PRP_PL"
        return [pronoun] + self.vp_past(number) + ["IN"] + self.entity() + [_LITERALS["."]]

    def clause(self) -> list[str]:
        number = "sg" if self.chance(0.6) else "pl"
        words = self.subject(number) + self.vp(number)
        if self.chance(0.35):
            words += self.pp()
        return words

    def front(self) -> list[str]:
        return self.pick((50, self.pp), (25, lambda: ["IDIOM_ADV"]), (25, lambda: ["RB"]))

    def existential(self) -> list[str]:
        L = _LITERALS
        be = L["was"] if self.chance(0.7) else L["is"]
        return [L["there"], be] + self.np_sg(depth=1) + self.pp() + [L["."]]

    def question(self) -> list[str]:
        number = "sg" if self.chance(0.6) else "pl"
        return ["MD"] + self.subject(number) + ["VB_T"] + self.obj() + [_LITERALS["?"]]

    def appositive(self) -> list[str]:
        L = _LITERALS
        head = self.pick((60, lambda: ["PER"]), (40, lambda: ["ORG"]))
        return head + [L[","], "DT_SG", "NN", "IN"] + self.entity() + [L[","]] + self.vp_past("sg") + [L["."]]

    def subject(self, number: str) -> list[str]:
        if number == "sg":
            return self.pick((55, lambda: self.np_sg(0)), (20, lambda: ["PRP_SG"]), (25, self.entity))
        return self.pick((70, lambda: self.np_pl(0)), (30, lambda: ["PRP_PL"]))

    def np_sg(self, depth: int) -> list[str]:
        deeper = depth < 1
        return self.pick(
            (30, lambda: ["DT_SG", "NN"]),
            (25, lambda: ["DT_SG", "JJ", "NN"]),
            (3, lambda: ["DT_SG", "JJ", "JJ", "NN"]),
            (8, lambda: ["DT_SG", "COLLOC"]),
            (10, lambda: ["PRP$", "NN"]),
            (4, lambda: ["DT_SG", "MISC_ADJ", "NN"]),
            (5, lambda: ["DT_SG", "NN", "NN"]),
            (10 * deeper, lambda: ["DT_SG", "NN"] + self.pp(depth + 1)),
            (5 * deeper, lambda: ["DT_SG", "NN", _LITERALS["which"]] + self.vp_past("sg", depth + 1)),
        )

    def np_pl(self, depth: int) -> list[str]:
        deeper = depth < 1
        return self.pick(
            (30, lambda: ["DT_PL", "NNS"]),
            (20, lambda: ["DT_PL", "JJ", "NNS"]),
            (15, lambda: ["NNS"]),
            (10, lambda: ["JJ", "NNS"]),
            (10, lambda: ["CD", "NNS"]),
            (8, lambda: ["PRP$", "NNS"]),
            (7 * deeper, lambda: ["DT_PL", "NNS"] + self.pp(depth + 1)),
        )

    def entity(self) -> list[str]:
        kinds = [("PER", 28), ("PER1", 8), ("LOC", 14), ("LOC1", 16), ("ORG", 20), ("MISC", 14)]
        return [self.rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]]

    def obj(self, depth: int = 1) -> list[str]:
        return self.pick(
            (45, lambda: self.np_sg(depth)),
            (25, lambda: self.np_pl(depth)),
            (10, lambda: ["PRP_O"]),
            (20, self.entity),
        )

    def pp(self, depth: int = 1) -> list[str]:
        return ["IN"] + self.obj(depth)

    def vp(self, number: str, depth: int = 0) -> list[str]:
        return self.pick(
            (55, lambda: self.vp_past(number, depth)),
            (25, lambda: self.vp_present(number, depth)),
            (12, lambda: self.vp_modal(depth)),
            (8, lambda: self.vp_perfect(number, depth)),
        )

    def vp_past(self, number: str, depth: int = 0) -> list[str]:
        L = _LITERALS
        be = L["was"] if number == "sg" else L["were"]
        return self.pick(
            (45, lambda: ["VBD_T"] + self.obj(depth + 1)),
            (15, lambda: ["VBD_I"]),
            (7, lambda: ["VBD_I", "RB"]),
            (5, lambda: ["RB", "VBD_T"] + self.obj(depth + 1)),
            (8, lambda: ["IDIOM_VP"]),
            (8, lambda: [be, "JJ"]),
            (5, lambda: [be, "VBG_T"] + self.obj(depth + 1)),
            (3, lambda: [be, "VBN_T", L["by"]] + self.obj(depth + 1)),
            (4 * (depth < 1), lambda: ["VBD_T"] + self.obj(depth + 1) + [L["to"], "VB_T"] + self.obj(depth + 1)),
        )

    def vp_present(self, number: str, depth: int = 0) -> list[str]:
        L = _LITERALS
        verb = "VBZ" if number == "sg" else "VBP"
        be = L["is"] if number == "sg" else L["are"]
        return self.pick(
            (50, lambda: [verb + "_T"] + self.obj(depth + 1)),
            (15, lambda: [verb + "_I"]),
            (15, lambda: [be, "JJ"]),
            (5, lambda: [be, _LITERALS["not"], "JJ"]),
            (5, lambda: ["RB", verb + "_T"] + self.obj(depth + 1)),
        )

    def vp_modal(self, depth: int = 0) -> list[str]:
        L = _LITERALS
        return self.pick(
            (60, lambda: ["MD", "VB_T"] + self.obj(depth + 1)),
            (20, lambda: ["MD", "VB_I"]),
            (10, lambda: ["MD", L["not"], "VB_I"]),
            (10, lambda: ["MD", L["be"], "JJ"]),
        )

    def vp_perfect(self, number: str, depth: int = 0) -> list[str]:
        have = _LITERALS["has"] if number == "sg" else _LITERALS["have"]
        return self.pick(
            (70, lambda: [have, "VBN_T"] + self.obj(depth + 1)),
            (10, lambda: [have, "RB", "VBN_T"] + self.obj(depth + 1)),
            (20, lambda: [have, "VBN_I"]),
        )


# --------------------------------------------------------------------------------------------------
# The lexicon: units (a word, or a whole multi-word expression) grouped in categories


@dataclass
class _Lexicon:
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


class _LexiconBuilder:
    """Builds every category of the synthetic language from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random, params: LanguageParams):
        self.rng = rng
        self.params = params
        self.lex = _Lexicon()
        self.used: set[str] = {w for _, entries in _FUNCTION_WORDS.values() for w, _ in entries}
        self.used |= set(_REAL_ADVERBS) | set(_NUMBER_WORDS) | {"an", "to", "be", "up", "out", "off"}
        self.used |= {lit.split(":")[1].rsplit("/", 1)[0] for lit in _LITERALS.values()}
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

    def build(self) -> _Lexicon:
        self.function_words()
        nouns = self.open_class_nouns()
        adjectives = self.open_class_adjectives()
        verbs = self.open_class_verbs()
        self.numbers()
        self.names()
        self.collocations(nouns, adjectives)
        self.idioms(nouns, verbs)
        for lit in _LITERALS.values():
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


# --------------------------------------------------------------------------------------------------
# The language


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
        lex = _LexiconBuilder(rng, params).build()
        self._lex = lex
        self.mwes: list[tuple[tuple[str, ...], str]] = list(lex.mwes)
        self._build_templates(_Grammar(rng), lex)
        self._build_unit_tables(lex)
        self.words_by_tag: dict[str, list[str]] = self._rank_words_by_tag()

    # -- construction -----------------------------------------------------------------------------

    def _build_templates(self, grammar: _Grammar, lex: _Lexicon) -> None:
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

    def _build_unit_tables(self, lex: _Lexicon) -> None:
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
