"""The synthetic language's grammar: a small probabilistic grammar of English clauses whose sentences are
sequences of slot categories (``DT_SG``, ``JJ``, ``NN``, ``PER``, literal words such as ``lit:was/VBD``);
:class:`spanft.data.synthetic.language.SyntheticLanguage` samples its table of sentence templates from it once.
"""

from __future__ import annotations

import random
from typing import Callable

LITERALS = {
    ".": "lit:./.", ",": "lit:,/,", "?": "lit:?/.", "was": "lit:was/VBD", "were": "lit:were/VBD",
    "is": "lit:is/VBZ", "are": "lit:are/VBP", "has": "lit:has/VBZ", "have": "lit:have/VBP",
    "not": "lit:not/RB", "there": "lit:there/EX", "to": "lit:to/TO", "which": "lit:which/WDT",
    "by": "lit:by/IN", "be": "lit:be/VB",
}


class Grammar:
    """A small probabilistic grammar of English clauses; ``sentence()`` returns slot categories."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def pick(self, *options: tuple[float, Callable[[], list[str]]]) -> list[str]:
        weights = [w for w, _ in options]
        return self.rng.choices([f for _, f in options], weights=weights)[0]()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def sentence(self) -> list[str]:
        L = LITERALS
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
        return [pronoun] + self.vp_past(number) + ["IN"] + self.entity() + [LITERALS["."]]

    def clause(self) -> list[str]:
        number = "sg" if self.chance(0.6) else "pl"
        words = self.subject(number) + self.vp(number)
        if self.chance(0.35):
            words += self.pp()
        return words

    def front(self) -> list[str]:
        return self.pick((50, self.pp), (25, lambda: ["IDIOM_ADV"]), (25, lambda: ["RB"]))

    def existential(self) -> list[str]:
        L = LITERALS
        be = L["was"] if self.chance(0.7) else L["is"]
        return [L["there"], be] + self.np_sg(depth=1) + self.pp() + [L["."]]

    def question(self) -> list[str]:
        number = "sg" if self.chance(0.6) else "pl"
        return ["MD"] + self.subject(number) + ["VB_T"] + self.obj() + [LITERALS["?"]]

    def appositive(self) -> list[str]:
        L = LITERALS
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
            (5 * deeper, lambda: ["DT_SG", "NN", LITERALS["which"]] + self.vp_past("sg", depth + 1)),
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
        L = LITERALS
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
        L = LITERALS
        verb = "VBZ" if number == "sg" else "VBP"
        be = L["is"] if number == "sg" else L["are"]
        return self.pick(
            (50, lambda: [verb + "_T"] + self.obj(depth + 1)),
            (15, lambda: [verb + "_I"]),
            (15, lambda: [be, "JJ"]),
            (5, lambda: [be, LITERALS["not"], "JJ"]),
            (5, lambda: ["RB", verb + "_T"] + self.obj(depth + 1)),
        )

    def vp_modal(self, depth: int = 0) -> list[str]:
        L = LITERALS
        return self.pick(
            (60, lambda: ["MD", "VB_T"] + self.obj(depth + 1)),
            (20, lambda: ["MD", "VB_I"]),
            (10, lambda: ["MD", L["not"], "VB_I"]),
            (10, lambda: ["MD", L["be"], "JJ"]),
        )

    def vp_perfect(self, number: str, depth: int = 0) -> list[str]:
        have = LITERALS["has"] if number == "sg" else LITERALS["have"]
        return self.pick(
            (70, lambda: [have, "VBN_T"] + self.obj(depth + 1)),
            (10, lambda: [have, "RB", "VBN_T"] + self.obj(depth + 1)),
            (20, lambda: [have, "VBN_I"]),
        )
