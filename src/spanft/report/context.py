"""What every table builder shares: the plan, the runs and segmented directories, the paper's numbers, the
comparisons (McNemar, the two-level bootstrap) and the one place runs are looked up: :meth:`ReportContext.runs`
loads a study's runs of one backbone, task and variant once and keeps them, so :meth:`ReportContext.all_runs`
lists every run the report read. It also holds the row words the tables share: a backbone's label, whether
the data is synthetic (no verdict on the paper), the paper's row for a backbone and method.
"""

from __future__ import annotations

from pathlib import Path

from spanft.params.plan import Plan
from spanft.report.compare import Comparisons
from spanft.report.paper import Paper, PaperTable
from spanft.report.runs import Run, load_runs


class ReportContext:
    """The plan, directories, paper and comparisons of one report, and its runs, each loaded once."""

    def __init__(self, plan: Plan, runs_dir: Path, segmented_dir: Path, paper: Paper,
                 comparisons: Comparisons | None = None):
        self.plan = plan
        self.runs_dir = Path(runs_dir)
        self.segmented_dir = Path(segmented_dir)
        self.paper = paper
        self.comparisons = comparisons or Comparisons(plan.reports.bootstrap_resamples, plan.reports.bootstrap_seed)
        self._cache: dict[tuple, list[Run]] = {}

    def runs(self, study: str, backbone: str, task: str, variant: str, seeds: list[int]) -> list[Run]:
        key = (study, backbone, task, variant, tuple(seeds))
        if key not in self._cache:
            self._cache[key] = load_runs(self.runs_dir, study, backbone, task, variant, seeds)
        return self._cache[key]

    def all_runs(self) -> list[Run]:
        """Every run the tables read, once each."""
        return [run for runs in self._cache.values() for run in runs]

    @property
    def synthetic(self) -> bool:
        """Synthetic task data (params ``data.source``): no verdict on the paper."""
        return self.plan.synthetic

    def backbone_label(self, backbone: str) -> str:
        paper = self.plan.paper_name(backbone)
        return backbone if paper == backbone else f"{backbone} (for {paper})"

    def paper_row(self, paper_table: PaperTable | None, backbone: str, method: str, stand_in: bool = False):
        """The paper's row for our backbone (or, with ``stand_in``, the table's first backbone when it has none)."""
        if paper_table is None:
            return None
        name = self.plan.paper_name(backbone)
        if stand_in:
            name = paper_table.stand_in(name)
        return paper_table.find(name, method)

    def stand_in_words(self, paper_table: PaperTable, backbone: str, row) -> str:
        """Whose rows a paper number comes from: ours, another backbone's (ours has none), or unnamed."""
        ours = self.plan.paper_name(backbone)
        if row.backbone is None:
            return "backbone not named"
        if paper_table.find(ours, row.method) is row:
            return row.label.replace(" + SF", "") + " rows"
        return f"{row.label.replace(' + SF', '')} rows; the paper has none for {ours}"

