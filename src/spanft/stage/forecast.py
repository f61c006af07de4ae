"""The time left of a dvc session: the stages ahead at this run's own pace, with DVC's own gaps between them.

Pure arithmetic over a session's plan and log (:mod:`spanft.stage.progress` reads them and the clock):

- **Expected times.** Each planned stage carries the seconds it is expected to take and their ``basis``:
  ``earlier`` (its time in an earlier session; a plan entry with seconds and no basis reads so) or ``model``
  (the cost model's, for a fine-tuning run never run here). A stage without seconds takes those of the stages of
  its group (``glue_sf@...``: the part before ``@``) that this session has run, else of its kind (``kind``: the
  stages of one script, every fine-tuning group), else the mean of every stage this session has run (from half
  to twice it); before any stage has ended it is never timed, and counted apart rather than guessed.
- **This run's pace, per kind.** The stages this session ran: their seconds over their expected seconds (a
  ratio of sums, so long stages weigh more), per basis and per kind within a basis. A stage ahead goes at the
  pace of the stages of its kind done here (a kind's stages share a script, so a load or a cost model's error
  tends to hit them alike, while start-up-bound segmenting and compute-bound fine-tuning need not slow alike),
  else at its basis's. A running stage that has outrun its paced time counts too, toward its basis and its
  kind, with the seconds it has taken so far. A basis with no stage done borrows the other's pace, else 1.
- **DVC's gaps.** Between one stage's end and the next one's start DVC saves the outputs, rewrites ``dvc.lock``
  and checks the stages it skips: this session's gaps per planned stage passed, times the planned stages ahead
  and one more (the last stage's save).
- **A range while most stages ahead were never timed** (no earlier time): for those, from the lowest to the
  highest ratio of actual to expected seconds of the stages done here of the same kind (where it goes at its
  kind's pace), else of the same basis (at least :data:`LEAST_SPREAD` either side of the pace); with fewer than
  two done, from half to twice the paced time (:data:`UNLEARNED_SPREAD`; one done: :data:`ONE_SEEN_SPREAD`).
"""

from __future__ import annotations

from dataclasses import dataclass

EARLIER, MODEL, GROUP = "earlier", "model", "group"  # where a stage's expected seconds come from
UNLEARNED_SPREAD = 2.0  # a never-timed stage's range, paced time / f .. x f, when none of its basis has run here
ONE_SEEN_SPREAD = 1.5  # ... when one has run here
LEAST_SPREAD = 1.1  # the narrowest range around the pace when two or more have run here


@dataclass(frozen=True)
class Forecast:
    """The time left, in seconds: ``middle`` at this run's pace, ``low`` .. ``high`` its range (equal when every
    stage ahead has a time of its own); all None when no stage ahead has a time to go by."""

    middle: float | None
    low: float | None
    high: float | None
    untimed: int  # stages still to run with no time to go by (not in the figures)
    fresh: int  # stages still to run with no earlier time (modelled, taken from their group, or untimed)
    timed: int  # stages still to run with an earlier time

    @property
    def ranged(self) -> bool:
        """Shown as a range: most stages still to run were never timed, and the range is not one figure."""
        return (self.low is not None and self.high is not None and self.fresh > self.timed
                and self.high > LEAST_SPREAD * max(self.low, 0.5))


@dataclass(frozen=True)
class _Done:
    stage: str
    seconds: float  # actual
    expected: float | None
    basis: str | None
    kind: str | None  # the plan entry's kind (its script), where it names one


def basis_of(entry: dict) -> str | None:
    """Where a plan entry's seconds come from (None: it has none)."""
    if entry.get("seconds") is None:
        return None
    return entry.get("basis") or EARLIER


def group_of(stage: str) -> str:
    return stage.partition("@")[0]


def done_stages(plan: list[dict], records: list[dict]) -> list[_Done]:
    """The stages of ``plan`` that this session ran and ended well, with their seconds and expected seconds."""
    entries = {entry["stage"]: entry for entry in plan}
    starts = {r["start"]: r["at"] for r in records if "start" in r}
    done = []
    for record in records:
        name = record.get("end")
        if name in entries and name in starts and record.get("status") == 0:
            entry = entries[name]
            done.append(_Done(name, max(record["at"] - starts[name], 0.0), entry.get("seconds"), basis_of(entry),
                              entry.get("kind")))
    return done


@dataclass(frozen=True)
class Paces:
    """This run's pace: seconds taken over seconds expected, per basis and per (basis, kind)."""

    basis: dict[str, float]
    kind: dict[tuple[str, str], float]

    def of(self, entry: dict) -> float:
        """The pace a planned stage goes at: that of its kind where some of it was done here, else its basis's."""
        basis = basis_of(entry) or EARLIER
        return self.kind.get((basis, entry.get("kind")), self.basis[basis])


def _sums(done: list[_Done]) -> dict[tuple[str, str | None], list[float]]:
    """Seconds taken and expected of the stages done, per (basis, None) and per (basis, kind)."""
    sums: dict[tuple[str, str | None], list[float]] = {}
    for d in done:
        if d.basis in (EARLIER, MODEL) and d.expected:
            for key in {(d.basis, None), (d.basis, d.kind)}:
                pair = sums.setdefault(key, [0.0, 0.0])
                pair[0] += d.seconds
                pair[1] += d.expected
    return sums


def _outrun(sums: list[float] | None, so_far: float, expected: float, pace: float) -> float:
    """A pace with a running stage's seconds so far counted as its whole time (never below ``pace``)."""
    taken, before = sums or (0.0, 0.0)
    return max(pace, (taken + so_far) / (before + expected))


def paces(done: list[_Done], running: tuple[dict, float] | None = None) -> Paces:
    """This run's pace per basis and per kind: seconds taken over seconds expected, of the stages done (and of the
    running stage ``(entry, seconds so far)`` once it has outrun its paced time, for its basis and its kind); a
    basis with none borrows the other's, a kind with none goes at its basis's pace."""
    sums = _sums(done)
    basis = {b: sums[(b, None)][0] / sums[(b, None)][1] for b in (EARLIER, MODEL) if (b, None) in sums}
    for b, other in ((EARLIER, MODEL), (MODEL, EARLIER)):
        basis.setdefault(b, basis.get(other, 1.0))
    kind = {(b, k): taken / expected for (b, k), (taken, expected) in sums.items() if k is not None}
    if running is not None:
        entry, so_far = running
        b, expected, k = basis_of(entry), entry.get("seconds"), entry.get("kind")
        if b in (EARLIER, MODEL) and expected:
            paced = kind.get((b, k), basis[b])  # the pace the stage goes at, before it outran it
            if so_far > expected * basis[b]:
                basis[b] = _outrun(sums.get((b, None)), so_far, expected, basis[b])
            if k is not None and so_far > expected * paced:
                kind[(b, k)] = _outrun(sums.get((b, k)), so_far, expected, paced)
    return Paces(basis, kind)


def gap_per_stage(plan: list[dict], records: list[dict]) -> float | None:
    """DVC's own seconds per planned stage passed: each gap from a stage's end to the next start in the log,
    over the planned stages between them (a stage DVC skipped is checked in that gap too); None before any."""
    names = [entry["stage"] for entry in plan]
    gaps = positions = 0.0
    last_end: dict | None = None
    for record in records:
        if "end" in record:
            last_end = record
        elif "start" in record and last_end is not None:
            if record["start"] in names and last_end["end"] in names:
                passed = names.index(record["start"]) - names.index(last_end["end"])
                if passed > 0:
                    gaps += max(record["at"] - last_end["at"], 0.0)
                    positions += passed
            last_end = None
    return gaps / positions if positions else None


def _ratios(done: list[_Done], basis: str, kind: str | None) -> list[float]:
    """Actual over expected seconds of the stages done of ``basis`` (and of ``kind``, unless None)."""
    return [d.seconds / d.expected for d in done if d.basis == basis and d.expected and kind in (None, d.kind)]


def _range_factors(done: list[_Done], pace: Paces, entry: dict) -> tuple[float, float]:
    """The multipliers of a never-timed stage's expected time that give the low and high end: from the ratios of
    the stages done of its kind (where it goes at its kind's pace), else of its basis."""
    basis, kind = basis_of(entry) or MODEL, entry.get("kind")
    ratios = _ratios(done, basis, kind if (basis, kind) in pace.kind else None)
    return _spread(ratios, pace.of(entry))


def _spread(ratios: list[float], pace: float) -> tuple[float, float]:
    if len(ratios) >= 2:
        return min(min(ratios), pace / LEAST_SPREAD), max(max(ratios), pace * LEAST_SPREAD)
    spread = ONE_SEEN_SPREAD if ratios else UNLEARNED_SPREAD
    return pace / spread, pace * spread


def forecast(plan: list[dict], records: list[dict], current: int, running: bool, so_far: float,
             since_end: float) -> Forecast:
    """The time left when the stage at ``current`` (an index into ``plan``) runs (``running``: for ``so_far``
    seconds) or has ended (``since_end`` seconds ago), from this session's ``records``."""
    done = done_stages(plan, records)
    here = plan[current]
    pace = paces(done, (here, so_far) if running else None)
    groups: dict[str, list[float]] = {}
    for d in done:
        groups.setdefault(group_of(d.stage), []).append(d.seconds)
        if d.kind:
            groups.setdefault(f"kind {d.kind}", []).append(d.seconds)
    middle = low = high = 0.0
    untimed = fresh = timed = 0
    for entry in ([here] if running else []) + plan[current + 1:]:
        basis = basis_of(entry)
        seen = groups.get(group_of(entry["stage"])) or groups.get(f"kind {entry.get('kind')}", [])
        if basis is None and not (seen or done):
            untimed += 1
            fresh += 1
            continue
        if basis is None and seen:  # the mean of its group's (kind's) stages done here; shortest to longest
            m, lo, hi = sum(seen) / len(seen), min(seen), max(seen)
        elif basis is None:  # nothing like it done: the mean stage of this run, half to twice it
            m = sum(d.seconds for d in done) / len(done)
            lo, hi = m / UNLEARNED_SPREAD, m * UNLEARNED_SPREAD
        else:
            m = entry["seconds"] * pace.of(entry)
            lo, hi = (m, m) if basis == EARLIER else (entry["seconds"] * f for f in _range_factors(done, pace, entry))
        if entry is here and running:
            m, lo, hi = (max(s - so_far, 0.0) for s in (m, lo, hi))
        timed += basis == EARLIER
        fresh += basis != EARLIER
        middle, low, high = middle + m, low + lo, high + hi
    gap = gap_per_stage(plan, records) or 0.0
    ahead = len(plan) - current - 1
    gaps = max(gap * (ahead + 1) - (0.0 if running else min(since_end, gap)), 0.0)
    if untimed == fresh + timed and gaps < 0.5:  # nothing ahead has a time to go by, nor DVC's gaps
        return Forecast(None, None, None, untimed, fresh, timed)
    return Forecast(middle + gaps, low + gaps, high + gaps, untimed, fresh, timed)
